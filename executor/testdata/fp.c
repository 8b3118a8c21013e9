/* fp: the cheapest possible service for benchmarks. "fp fingerprint"
 * prints a valid fingerprint and exits 0; any other op exits 64. Built
 * static (gcc -static -O2) so that dynamic loading does not dominate. */
#include <string.h>
#include <unistd.h>

static const char doc[] =
	"{\"healthy\":true,\"running\":false,\"pools\":{\"slots\":4},"
	"\"attrs\":{\"impl\":\"c\"},\"reserve\":{\"mem_gb\":0.5}}\n";

int main(int argc, char **argv) {
	if (argc < 2 || strcmp(argv[argc - 1], "fingerprint") != 0)
		return 64;
	ssize_t n = write(1, doc, sizeof doc - 1);
	return n == (ssize_t)(sizeof doc - 1) ? 0 : 1;
}
