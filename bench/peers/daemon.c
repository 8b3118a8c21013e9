/*
 * peerd: the one daemon every supervisor in bench/peers.sh runs. When it
 * starts it writes "NS PID\n" to the file named by argv[1], NS being its
 * own CLOCK_REALTIME start time in nanoseconds, so that a restart is timed
 * by the new process itself, not by whoever notices it. The file is
 * written beside and renamed, so a reader never sees half a line. Then it
 * sleeps in pause() until a signal ends it.
 *
 * Built static (gcc -static -O2) so that every peer execs the same binary
 * with no dynamic loader in the way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec ts;
	char tmp[4096];
	FILE *f;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (argc != 2) {
		fprintf(stderr, "usage: peerd TIMESTAMP-FILE\n");
		return 64;
	}
	if (snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]) >= (int)sizeof tmp) {
		fprintf(stderr, "peerd: %s: path too long\n", argv[1]);
		return 64;
	}
	f = fopen(tmp, "w");
	if (f == NULL) {
		perror(tmp);
		return 1;
	}
	fprintf(f, "%lld %ld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, (long)getpid());
	if (fclose(f) != 0 || rename(tmp, argv[1]) != 0) {
		perror(argv[1]);
		return 1;
	}
	for (;;)
		pause();
}
