#!/bin/bash
# CI beside a busy machine: N runs of .ci/run in a row, each on a fresh
# clone of this checkout's HEAD, beside BURNERS busy loops (default two, as
# many as a 2-core CI machine has cores). The first run is cold (its Go build
# cache and the CI tool cache are new); the later ones reuse them (warm).
# Prints one line a run: commit, exit status, seconds, load.
#
#	bash bench/ci-under-load.sh [N]          e.g. 3 (the default)
#	BURNERS=0 bash bench/ci-under-load.sh 1  a cold run on a quiet machine
set -u
n=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
burners=()
trap 'kill "${burners[@]}" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 "${BURNERS:-2}"); do
	(while :; do :; done) &
	burners+=($!)
done
fail=0
for r in $(seq 1 "$n"); do
	git clone -q "$root" "$work/run-$r"
	commit=$(git -C "$work/run-$r" rev-parse --short HEAD)
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	t0=$SECONDS
	(cd "$work/run-$r" && GOCACHE="$work/gocache" XDG_CACHE_HOME="$work/cache" CI=true bash .ci/run) >"$work/run-$r.log" 2>&1
	rc=$?
	line="run $r: $commit exit $rc, $((SECONDS - t0)) s, load $load0 -> $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ "$rc" -ne 0 ]; then
		fail=1
		cp "$work/run-$r.log" "${TMPDIR:-/tmp}/ci-under-load-$r.log"
		line+=", log in ${TMPDIR:-/tmp}/ci-under-load-$r.log"
	fi
	echo "$line"
	rm -rf "$work/run-$r"
done
exit $fail
