/* spawnloop N DIR PATH [ARGS...]: the C floor of one op. Runs PATH ARGS N
 * times the way the executor does (posix_spawn, cwd DIR, this process's
 * environment, stdin /dev/null, stdout and stderr pipes read to EOF, a
 * process group of its own, waitpid), checks each run exited 0 with output,
 * and prints the mean nanoseconds per run on stdout. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int drain(int fd, char *buf, size_t cap) {
	size_t got = 0;
	for (;;) {
		ssize_t n = read(fd, buf + got, got < cap ? cap - got : 0);
		if (n <= 0)
			return n < 0 ? -1 : (int)got;
		got += (size_t)n;
		if (got == cap)
			got = 0; /* keep reading, as a tail would */
	}
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: spawnloop N DIR PATH [ARGS...]\n");
		return 2;
	}
	long n = atol(argv[1]);
	const char *dir = argv[2];
	char **child = argv + 3;
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0) {
		perror("open /dev/null");
		return 1;
	}
	static char out[1 << 16], errbuf[1 << 16];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		int po[2], pe[2];
		if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
			perror("pipe2");
			return 1;
		}
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, devnull, 0);
		posix_spawn_file_actions_adddup2(&fa, po[1], 1);
		posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
		posix_spawn_file_actions_addchdir_np(&fa, dir);
		posix_spawnattr_t at;
		posix_spawnattr_init(&at);
		posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
		posix_spawnattr_setpgroup(&at, 0);
		pid_t pid;
		int rc = posix_spawn(&pid, child[0], &fa, &at, child, environ);
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&at);
		close(po[1]);
		close(pe[1]);
		if (rc != 0) {
			fprintf(stderr, "posix_spawn %s: error %d\n", child[0], rc);
			return 1;
		}
		int got = drain(po[0], out, sizeof out);
		drain(pe[0], errbuf, sizeof errbuf);
		close(po[0]);
		close(pe[0]);
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || got <= 0) {
			fprintf(stderr, "run %ld failed (status %d, %d bytes)\n", i, st, got);
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("%.0f\n", n > 0 ? ns / (double)n : 0.0);
	return 0;
}
