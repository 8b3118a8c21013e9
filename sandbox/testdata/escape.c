/* escape: a service that tries what the sandbox must stop (and what it
 * must allow) and reports each outcome in its fingerprint.
 *
 *   escape ... fingerprint CHECK ARG [CHECK ARG]...
 *
 * Each CHECK is tried in order; attrs["<i>-<check>"] is "ok" or the error
 * (strerror) or a value. An ARG starting with $NAME/ is expanded from the
 * environment. Checks:
 *
 *   read PATH       open O_RDONLY and read a byte
 *   write PATH      open O_WRONLY|O_CREAT|O_TRUNC and write a byte
 *   append PATH     open O_WRONLY|O_APPEND (no create) and write a byte
 *   mkdir PATH      mkdir 0700
 *   writepid PATH   write our pid to PATH (cgroup.procs)
 *   exec PATH       posix_spawn PATH with no argument: "ok" on exit 0
 *   tcp PORT        connect to 127.0.0.1:PORT
 *   unix PATH       connect to the pathname Unix socket PATH
 *   abstract NAME   connect to the abstract Unix socket @NAME
 *   kill PID        kill(PID, 0); PID "ppid" is our parent
 *   env NAME        "set" or "unset"
 *   value WHAT      "uid" (uid:gid:groups), "nnp", "core" (soft/hard),
 *                   "lo" (up/down), "cgroup" (the 0:: line)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char out[1 << 16];
static size_t outlen;

static void put(const char *s) {
	size_t n = strlen(s);
	if (outlen + n < sizeof out) {
		memcpy(out + outlen, s, n);
		outlen += n;
	}
}

static void putq(const char *s) {
	put("\"");
	for (; *s; s++) {
		char c[8];
		if (*s == '"' || *s == '\\') {
			c[0] = '\\', c[1] = *s, c[2] = 0;
		} else if ((unsigned char)*s < 0x20) {
			snprintf(c, sizeof c, "\\u%04x", *s);
		} else {
			c[0] = *s, c[1] = 0;
		}
		put(c);
	}
	put("\"");
}

static const char *err(void) { return strerror(errno); }

static const char *expand(const char *arg, char *buf, size_t cap) {
	if (arg[0] != '$')
		return arg;
	const char *slash = strchr(arg, '/');
	size_t n = slash ? (size_t)(slash - arg - 1) : strlen(arg + 1);
	char name[256];
	if (n >= sizeof name)
		return arg;
	memcpy(name, arg + 1, n);
	name[n] = 0;
	const char *v = getenv(name);
	snprintf(buf, cap, "%s%s", v ? v : "", slash ? slash : "");
	return buf;
}

static const char *check(const char *what, const char *arg, char *val, size_t cap) {
	int fd;
	char c = 'x';
	if (!strcmp(what, "read")) {
		if ((fd = open(arg, O_RDONLY | O_CLOEXEC)) < 0)
			return err();
		if (read(fd, &c, 1) < 0) {
			close(fd);
			return err();
		}
		close(fd);
		return "ok";
	}
	if (!strcmp(what, "write") || !strcmp(what, "append") || !strcmp(what, "writepid")) {
		int flags = O_WRONLY | O_CLOEXEC;
		if (!strcmp(what, "write"))
			flags |= O_CREAT | O_TRUNC;
		else if (!strcmp(what, "append"))
			flags |= O_APPEND;
		if ((fd = open(arg, flags, 0644)) < 0)
			return err();
		char buf[32];
		int n = 1;
		if (!strcmp(what, "writepid"))
			n = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
		else
			buf[0] = c;
		if (write(fd, buf, n) != n) {
			close(fd);
			return err();
		}
		close(fd);
		return "ok";
	}
	if (!strcmp(what, "mkdir"))
		return mkdir(arg, 0700) ? err() : "ok";
	if (!strcmp(what, "exec")) {
		pid_t pid;
		char *argv[] = {(char *)arg, NULL};
		int rc = posix_spawn(&pid, arg, NULL, NULL, argv, environ);
		if (rc) {
			errno = rc;
			return err();
		}
		int st;
		if (waitpid(pid, &st, 0) != pid)
			return err();
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			return "ok";
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
			return "exit 127 (exec failed)";
		snprintf(val, cap, "status %d", st);
		return val;
	}
	if (!strcmp(what, "tcp")) {
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(arg))};
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			return err();
		int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
		const char *r = rc ? err() : "ok";
		close(fd);
		return r;
	}
	if (!strcmp(what, "unix") || !strcmp(what, "abstract")) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		socklen_t len;
		if (!strcmp(what, "unix")) {
			snprintf(sa.sun_path, sizeof sa.sun_path, "%s", arg);
			len = sizeof sa;
		} else {
			snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "%s", arg);
			len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(arg);
		}
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			return err();
		int rc = connect(fd, (struct sockaddr *)&sa, len);
		const char *r = rc ? err() : "ok";
		close(fd);
		return r;
	}
	if (!strcmp(what, "kill")) {
		pid_t pid = !strcmp(arg, "ppid") ? getppid() : atoi(arg);
		return kill(pid, 0) ? err() : "ok";
	}
	if (!strcmp(what, "env"))
		return getenv(arg) ? "set" : "unset";
	if (!strcmp(what, "value")) {
		if (!strcmp(arg, "uid")) {
			gid_t gs[64];
			int n = getgroups(64, gs);
			int off = snprintf(val, cap, "%d:%d:", (int)getuid(), (int)getgid());
			for (int i = 0; i < n && off < (int)cap - 12; i++)
				off += snprintf(val + off, cap - off, "%s%d", i ? "," : "", (int)gs[i]);
			return val;
		}
		if (!strcmp(arg, "nnp")) {
			snprintf(val, cap, "%d", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
			return val;
		}
		if (!strcmp(arg, "core")) {
			struct rlimit rl;
			if (getrlimit(RLIMIT_CORE, &rl))
				return err();
			snprintf(val, cap, "%lld/%lld", (long long)rl.rlim_cur, (long long)rl.rlim_max);
			return val;
		}
		if (!strcmp(arg, "lo")) {
			struct ifreq ifr = {0};
			strcpy(ifr.ifr_name, "lo");
			if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
				return err();
			int rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
			close(fd);
			if (rc)
				return err();
			return ifr.ifr_flags & IFF_UP ? "up" : "down";
		}
		if (!strcmp(arg, "cgroup")) {
			FILE *f = fopen("/proc/self/cgroup", "r");
			if (!f)
				return err();
			char line[4096];
			val[0] = 0;
			while (fgets(line, sizeof line, f))
				if (!strncmp(line, "0::", 3)) {
					line[strcspn(line, "\n")] = 0;
					snprintf(val, cap, "%s", line + 3);
				}
			fclose(f);
			return val;
		}
	}
	return "unknown check";
}

int main(int argc, char **argv) {
	int i = 1;
	while (i < argc && strcmp(argv[i], "fingerprint"))
		i++;
	if (i == argc)
		return 64;
	put("{\"healthy\":true,\"running\":true,\"attrs\":{");
	int n = 0;
	for (i++; i + 1 < argc; i += 2) {
		char key[300], buf[4096], val[4096];
		const char *arg = expand(argv[i + 1], buf, sizeof buf);
		snprintf(key, sizeof key, "%d-%s", n, argv[i]);
		if (n++)
			put(",");
		putq(key);
		put(":");
		putq(check(argv[i], arg, val, sizeof val));
	}
	put("}}\n");
	return write(1, out, outlen) == (ssize_t)outlen ? 0 : 1;
}
