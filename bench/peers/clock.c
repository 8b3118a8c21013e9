/*
 * peerclock: the timing helper of bench/peers.sh, so that no fork of
 * date(1) sits inside a measured interval.
 *
 *   peerclock now              print CLOCK_REALTIME in nanoseconds
 *   peerclock kill PID         print the time, then SIGKILL PID at once
 *   peerclock calls N CMD...   run CMD N times (stdout, stderr to
 *                              /dev/null), print "p50_us max_us" of the
 *                              wall time of each run; exit 1 naming the
 *                              first run that failed
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "now") == 0) {
		printf("%lld\n", now());
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "kill") == 0) {
		pid_t pid = (pid_t)atol(argv[2]);
		long long t;
		if (pid <= 1) {
			fprintf(stderr, "peerclock kill: bad pid %s\n", argv[2]);
			return 64;
		}
		t = now();
		if (kill(pid, SIGKILL) != 0) {
			fprintf(stderr, "peerclock kill %ld: %s\n", (long)pid, strerror(errno));
			return 1;
		}
		printf("%lld\n", t);
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "calls") == 0) {
		int n = atoi(argv[2]), i;
		long long *d;
		posix_spawn_file_actions_t fa;
		if (n <= 0) {
			fprintf(stderr, "peerclock calls: bad count %s\n", argv[2]);
			return 64;
		}
		d = calloc((size_t)n, sizeof *d);
		if (d == NULL)
			return 1;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
		for (i = 0; i < n; i++) {
			pid_t pid;
			int st, err;
			long long t0 = now();
			err = posix_spawnp(&pid, argv[3], &fa, NULL, argv + 3, environ);
			if (err != 0) {
				fprintf(stderr, "peerclock calls: %s: %s\n", argv[3], strerror(err));
				return 1;
			}
			if (waitpid(pid, &st, 0) < 0) {
				perror("waitpid");
				return 1;
			}
			d[i] = now() - t0;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "peerclock calls: run %d of %s failed (wait status %d)\n", i + 1, argv[3], st);
				return 1;
			}
		}
		qsort(d, (size_t)n, sizeof *d, cmp);
		printf("%.1f %.1f\n", d[(n - 1) / 2] / 1e3, d[n - 1] / 1e3);
		return 0;
	}
	fprintf(stderr, "usage: peerclock now | kill PID | calls N CMD [ARG...]\n");
	return 64;
}
