#!/bin/sh
# svcrun's speed targets (issue: svcrun), side by side in one run. Each line
# is a `go test -bench` whose numbers bench/README.md records. Run from the
# repository root, as root where cgroup v2 and Landlock are wanted:
#
#	sh bench/svcrun.sh
set -eu
cd "$(dirname "$0")/.."
run() {
	echo "== $*"
	"$@" 2>&1 | grep -E '^(Benchmark|ok|FAIL|PASS)|--- (FAIL|SKIP)'
}
# A fingerprint op through the executor vs a C posix_spawn loop on the same
# static binary (the ratio is reported): target <= 1.2x.
run go test ./executor -run '^$' -bench FingerprintOp -benchtime 3000x
# API acquire + release round trip with a ready service: target p99 <= 1 ms.
run go test ./api/server -run '^$' -bench APIAcquireRelease -benchtime 3s
# A daemon killed from outside to the engine's decision: target <= 100 ms.
run go test ./agent -run '^$' -bench CrashToRestart -benchtime 20x
# 1,000 services and 1,000 probes: boot, idle CPU, RSS, bytes per service.
run go test ./agent -run '^$' -bench Scale1000 -benchtime 1x
