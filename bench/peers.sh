#!/bin/sh
# svcrun beside Debian's supervisor, s6 and runit (issue 14, point 1). Each
# supervises the same static C daemon (bench/peers/daemon.c), one peer at a
# time, each in its own temporary directory, everything stopped and cleaned
# before the next. Run as root from the repository root:
#
#	sh bench/peers.sh              # 1,000 daemons
#	N=100 sh bench/peers.sh        # quick mode
#
# Knobs (environment): N daemons (1000), KILLS crashes timed (20), CALLS
# "is it up" calls timed (200), IDLE seconds of idle CPU for the peers (10),
# IDLE_SVCRUN the same for svcrun (600: one whole period of its slowest
# periodic work, the reap sweep, which lists every running service; the
# window, from just after the boot, then holds the boot's own first reap
# round, which lists them all, and no sweep, as every 600 s of a steady
# node holds one sweep, and two of each service's status and fingerprint,
# 300 s apart: a shorter window sees a burst or none of them), PEERS the
# peers to run, in order (svcrun supervisord s6 runit), BACKOFF svcrun's
# backoff_initial_s (0: the first retry at once, as runsv restarts a
# crashed daemon; the peers back off no more), FLOORS 0 to skip the floors
# (below), SVCRUN a svcrun binary to run instead of building this tree's
# (another commit's, for a side-by-side run), PROFILE 0 to build svcrun
# without bench/peers/profile (no CPU split, no heap profile), OUT a
# directory to keep the idle window's profiles and scrapes in,
# START_TIMEOUT the services' start_timeout_s (unset: the default; a boot
# on a machine loaded by other work may need more, or no service gets
# ready). Loopback only: nothing leaves the machine.
#
# svcrun's idle window is accounted for in "idle:" lines, one thing a line,
# so that two runs on two machines diff line by line: the host (kernel,
# cores, cgroup layout, what svcrun enforces there), the ops run in the
# window by kind (count, a second, wall and CPU each: svcrun's metrics, and
# each op's own CPU as bench/peers/peer-service records it), svcrun's own
# CPU by what it did (a CPU profile of the window: engine loop, snapshot,
# GC, reaper...) and its Go runtime (GC, goroutines, heap), its memory
# (PSS anon and file, threads, descriptors) and the heap by allocation
# site.
#
# The floors are what no design of svcrun could go below here, measured in
# the same run: the boot as the module's own fingerprint and start ops of
# the N services, run by xargs as many at a time as there are CPUs, with no
# supervisor (the protocol runs both before a service starts); the job call
# as a Go program that only execs true, and as one that acquires a lease
# with a single HTTP request on svcrun's socket and then execs true (the
# least an exec-in-place `run` would do: bench/peers/floor).
set -eu
cd "$(dirname "$0")/.."
N=${N:-1000}
KILLS=${KILLS:-20}
CALLS=${CALLS:-200}
IDLE=${IDLE:-10}
IDLE_SVCRUN=${IDLE_SVCRUN:-600}
PEERS=${PEERS:-svcrun supervisord s6 runit}
BACKOFF=${BACKOFF:-0}
FLOORS=${FLOORS:-1}
SVCRUN=${SVCRUN:-}
PROFILE=${PROFILE:-1}
OUT=${OUT:-}
START_TIMEOUT=${START_TIMEOUT:-}
[ "$KILLS" -le "$N" ] || KILLS=$N

die() {
	echo "peers.sh: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "run as root (the peers supervise from /tmp, svcrun makes cgroups)"

T=$(mktemp -d /tmp/svcrun-peers.XXXXXX)
NODE=peers-bench-$$
SUP= # pid of the running peer's supervisor, for the trap

# clean kills whatever the current peer left: its supervisor and that
# supervisor's children, every peerd started from $T, svcrun's cgroups.
clean() {
	if [ -n "$SUP" ]; then
		for p in $(ps -o pid= --ppid "$SUP" 2>/dev/null) $SUP; do
			kill -9 "$p" 2>/dev/null || :
		done
		SUP=
	fi
	# One find, not a readlink per process: with thousands of daemons on a
	# loaded machine the loop took minutes.
	for e in $(find /proc -mindepth 2 -maxdepth 2 -name exe -lname "$T/*" 2>/dev/null); do
		p=${e#/proc/}
		kill -9 "${p%/exe}" 2>/dev/null || :
	done
	for base in $(find /sys/fs/cgroup -maxdepth 3 -type d -name "svcrun-$NODE" 2>/dev/null); do
		[ -e "$base/cgroup.kill" ] && echo 1 >"$base/cgroup.kill" 2>/dev/null || :
		# Deepest first; a cgroup is removable once its processes are gone.
		for i in 1 2 3 4 5 6 7 8 9 10; do
			find "$base" -depth -type d -exec rmdir {} + 2>/dev/null || :
			[ -d "$base" ] || break
			sleep 0.1
		done
	done
}
trap 'clean; rm -rf "$T"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
now() { "$T/bin/peerclock" now; }

# --- install and build -----------------------------------------------------
if ! command -v supervisord >/dev/null || ! command -v s6-svscan >/dev/null || ! command -v runsvdir >/dev/null; then
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y supervisor s6 runit
fi
mkdir -p "$T/bin"
gcc -static -O2 -Wall -o "$T/bin/peerd" bench/peers/daemon.c
gcc -static -O2 -Wall -o "$T/bin/peerclock" bench/peers/clock.c
# As the Debian package builds it: static, no cgo (fewer page faults per
# start). The profile file adds a socket that serves only when svcrun is
# started with SVCRUN_PEERS_PROFILE (about 0.4 MB of binary, runtime/pprof).
if [ -n "$SVCRUN" ]; then
	cp "$SVCRUN" "$T/bin/svcrun"
elif [ "$PROFILE" != 0 ]; then
	printf '{"Replace":{"%s":"%s"}}\n' "$PWD/cmd/svcrun/zz_peersprofile.go" "$PWD/bench/peers/profile/profile.go" >"$T/overlay.json"
	CGO_ENABLED=0 go build -trimpath -tags peersprofile -overlay "$T/overlay.json" -o "$T/bin/svcrun" ./cmd/svcrun
else
	CGO_ENABLED=0 go build -trimpath -o "$T/bin/svcrun" ./cmd/svcrun
fi
CGO_ENABLED=0 go build -trimpath -o "$T/bin/floor" ./bench/peers/floor
CGO_ENABLED=0 go build -trimpath -o "$T/bin/idle" ./bench/peers/idle
[ -z "$OUT" ] || mkdir -p "$OUT"

LOAD0=$(loadavg)
echo "peers.sh: N=$N KILLS=$KILLS CALLS=$CALLS IDLE=${IDLE}s IDLE_SVCRUN=${IDLE_SVCRUN}s; load average at start: $LOAD0"
# calibrate CMD prints the CPU, in us, of one run of CMD, the mean of 200
# run by sh in a row (its own times and its children's, from times).
calibrate() {
	/bin/sh -c "i=0; while [ \$i -lt 200 ]; do $1; i=\$((i + 1)); done; times" | tr 'ms\n' '   ' |
		awk '{t = 0; for (i = 1; i < NF; i += 2) t += $i * 60 + $(i + 1); printf "%.0f", t / 200 * 1e6}'
}

# host prints the facts that make two machines' figures differ, one a line.
host() {
	echo "idle: host kernel $(uname -r), $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1), $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
	case $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) in
	cgroup2fs) layout="v2 (unified at /sys/fs/cgroup), controllers: $(cat /sys/fs/cgroup/cgroup.controllers)" ;;
	tmpfs)
		if [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
			layout="hybrid (v1 controllers, v2 at /sys/fs/cgroup/unified), v2 controllers: $(cat /sys/fs/cgroup/unified/cgroup.controllers)"
		else
			layout="v1"
		fi
		;;
	*) layout="none" ;;
	esac
	echo "idle: host cgroup layout $layout"
	# Process creation is what an op costs, and what a VM can make dear:
	# a paravirtual guest (PVM) enters its kernel and changes its page
	# tables through the hypervisor, page table isolation (the meltdown
	# line) switches page tables at every entry. The calibration is the
	# CPU of a process's life, the shell's and its children's times over
	# 200 in a row: an op costs at least the first, and its CPU over it
	# is what the op's script adds.
	virt="none seen"
	if grep -q ' pvm_' /proc/kallsyms 2>/dev/null; then
		virt="pvm (paravirtual: kernel entries and page tables through the hypervisor)"
	elif grep -qw hypervisor /proc/cpuinfo; then
		virt="a hypervisor (cpuinfo's flag)"
	fi
	echo "idle: host virtualization $virt; meltdown: $(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null || echo -)"
	echo "idle: host calibration CPU us each, mean of 200: fork, exec and exit of sh -c : $(calibrate '/bin/sh -c :')," \
		"of /bin/true $(calibrate /bin/true); fork and exit of a subshell $(calibrate '( : )')"
	echo "idle: host sched_autogroup $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo -), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo -), HZ $(getconf CLK_TCK)"
	# What svcrun itself finds and uses here (Landlock, its containers).
	"$T/bin/svcrun" sandbox 2>&1 | sed -n 's/^ *//; /^landlock:/p; /^process containers: ./p; /^cgroup v2 mount/p; /^member exits/p; /^memory.max/p' | sed 's/^/idle: host svcrun sees /'
}
echo "versions: supervisor $(supervisord --version), s6 $(dpkg-query -W -f '${Version}' s6), runit $(dpkg-query -W -f '${Version}' runit), $(go version | cut -d' ' -f3)"
host

# --- measures shared by every peer -----------------------------------------

# wait_up DIR COUNT waits until COUNT timestamp files d1.ts.. exist in DIR
# (60 s plus 0.6 s a daemon at most: a failure guard, not a deadline).
wait_up() {
	i=0
	while [ "$(find "$1" -maxdepth 1 -name 'd*.ts' 2>/dev/null | wc -l)" -lt "$2" ]; do
		i=$((i + 1))
		[ "$i" -lt $((600 + 6 * $2)) ] || die "only $(find "$1" -maxdepth 1 -name 'd*.ts' | wc -l) of $2 daemons came up in $1"
		sleep 0.1
	done
}

# secs T0 T1 prints the seconds from T0 to T1 (both ns), two decimals.
secs() {
	echo "$1 $2" | awk '{printf "%.2f", ($2 - $1) / 1e9}'
}

# calls CMD... prints "p50_us max_us" of CALLS runs of CMD after 5 warm-up runs.
calls() {
	"$T/bin/peerclock" calls 5 "$@" >/dev/null
	"$T/bin/peerclock" calls "$CALLS" "$@"
}

# last_start DIR prints the latest start time (ns) among DIR's daemons.
last_start() {
	cat "$1"/d*.ts | sort -n | tail -n 1 | cut -d' ' -f1
}

# pss PID... prints the summed PSS of the processes, in kB.
pss() {
	for p in "$@"; do
		sed -n 's/^Pss: *\([0-9]*\) kB/\1/p' "/proc/$p/smaps_rollup" 2>/dev/null
	done | awk '{s += $1} END {print s + 0}'
}

# ticks PID... prints utime+stime of the processes, in clock ticks.
ticks() {
	for p in "$@"; do
		# Fields after the ")" closing comm: utime is the 12th, stime the 13th.
		sed 's/.*) //' "/proc/$p/stat" 2>/dev/null
	done | awk '{s += $12 + $13} END {print s + 0}'
}

# crashes DIR kills daemons d1..dKILLS of DIR in turn and prints, one per
# line, the ms from the SIGKILL to the new process's own start time. The
# kill times go to $T/kills ("dK NS" lines).
crashes() {
	k=1
	while [ "$k" -le "$KILLS" ]; do
		read -r t pid <"$1/d$k.ts"
		tk=$("$T/bin/peerclock" kill "$pid")
		echo "d$k $tk" >>"$T/kills"
		i=0
		while :; do
			read -r t pid <"$1/d$k.ts" || t=0
			[ "$t" -le "$tk" ] || break
			i=$((i + 1))
			[ "$i" -lt 6000 ] || die "d$k in $1 did not come back within 60 s of its kill"
			sleep 0.01
		done
		echo "$t $tk" | awk '{printf "%.2f\n", ($1 - $2) / 1e6}'
		k=$((k + 1))
	done
}

# p50max prints "p50 max p90" of the numbers on stdin (p90 last, so that
# the fields of "p50 max" keep their places).
p50max() {
	sort -n | awk '{v[NR] = $1} END {printf "%s %s %s\n", v[int((NR + 1) / 2)], v[NR], v[int((9 * NR + 9) / 10)]}'
}

# measure PEER TSDIR T0 STATUS-CMD... runs the measures on a booted peer
# whose supervisor's own processes sup_pids prints, and records them as
# R_PEER_*. T0 is when the supervisor was started (ns).
measure() {
	peer=$1 dir=$2 t0=$3
	shift 3
	wait_up "$dir" "$N"
	boot=$(secs "$t0" "$(last_start "$dir")")
	eval "R_${peer}_boot=\$boot"
	[ "$peer" != svcrun ] || svcrun_ready "$t0"
	sleep 2 # let the boot settle before idle is measured
	pids=$(sup_pids)
	mem=$(pss $pids)
	c0=$(ticks $pids) u0=$(ops_usec) w0=$(now)
	if [ "$peer" = svcrun ]; then
		idle_begin
		sleep "$IDLE_SVCRUN"
	else
		sleep "$IDLE"
	fi
	c1=$(ticks $pids) u1=$(ops_usec) w1=$(now)
	[ "$peer" != svcrun ] || idle_end "$c0" "$c1" "$u0" "$u1" "$w0" "$w1"
	cpu=$(echo "$c0 $c1 $u0 $u1 $w0 $w1 $(getconf CLK_TCK)" |
		awk '{w = ($6 - $5) / 1e9; a = 100 * ($2 - $1) / $7 / w; b = 100 * ($4 - $3) / 1e6 / w; printf "%.1f %.1f %.1f", a, b, a + b}')
	rm -f "$T/kills"
	crash=$(crashes "$dir" | p50max)
	"$@" >/dev/null 2>&1 || die "$peer: the status call failed: $*"
	call=$(calls "$@")
	eval "R_${peer}_pss=\$mem R_${peer}_cpu=\$cpu R_${peer}_crash=\$crash R_${peer}_call=\$call"
	echo "$peer: boot $boot s, PSS $mem kB, idle CPU % (own, ops, total) $cpu, crash ms (p50 max p90) $crash, call us (p50 max p90) $call; load $(loadavg)"
}

ops_usec() { echo 0; }

# idle_begin starts the account of svcrun's idle window: the metrics, the
# op log's length, the runtime's counters, and a CPU profile of the window
# in the background (with PROFILE).
idle_begin() {
	I=$T/idle
	mkdir -p "$I"
	echo "idle: window ${IDLE_SVCRUN} s from 2 s after all ready; load average at its start $(loadavg)"
	"$T/bin/idle" get "$SOCK" /metrics >"$I/metrics0"
	wc -l <"$OPCPU" 2>/dev/null >"$I/opcpu0" || echo 0 >"$I/opcpu0"
	# The journal is written behind the steps: its window is by time, to
	# the second, not by its length now.
	date -u +%Y-%m-%dT%H:%M:%S >"$I/journal0"
	PROF_PID=
	if [ -S "$PROF" ]; then
		"$T/bin/idle" get "$PROF" /runtime >"$I/runtime0"
		"$T/bin/idle" get "$PROF" "/cpu?seconds=$IDLE_SVCRUN" >"$I/cpu.pprof" &
		PROF_PID=$!
	fi
}

# idle_end C0 C1 U0 U1 W0 W1 prints the account of the window whose
# svcrun ticks, ops' usec and clock (ns) were read at its ends.
idle_end() {
	echo "idle: load average at the window's end $(loadavg)"
	w=$(echo "$5 $6" | awk '{printf "%.3f", ($2 - $1) / 1e9}')
	"$T/bin/idle" get "$SOCK" /metrics >"$I/metrics1"
	n0=$(cat "$I/opcpu0")
	n1=$(wc -l <"$OPCPU" 2>/dev/null || echo 0)
	sed -n "$((n0 + 1)),${n1}p" "$OPCPU" 2>/dev/null >"$I/opcpu" || :
	"$T/bin/idle" ops "$I/metrics0" "$I/metrics1" "$I/opcpu" "$w"
	# The engine's steps in the window by event, from its journal: what
	# woke svcrun besides the ops' ends (timers, containers, the API, a
	# doctor event after a clock jump, which fingerprints every service).
	cat "$JOURNAL"/*.jsonl 2>/dev/null | awk -v from="$(cat "$I/journal0")" -v to="$(date -u +%Y-%m-%dT%H:%M:%S)" \
		'{at = substr($0, 8, 19)} at >= from && at < to' >"$I/journal"
	sed -n 's/^{"at":"[^"]*","event":"\([^"]*\)".*/\1/p' "$I/journal" | sort | uniq -c |
		awk -v w="$w" '{printf "idle: steps %-24s %6d  %7.3f/s\n", $2, $1, $1 / w}'
	# And what the steps did, by effect: "run peers/d1 status #12" counts
	# as "run status", "timer status peers/d1 at ..." as "timer status".
	sed -n 's/.*"effects":\["\(.*\)"\]}$/\1/p' "$I/journal" | sed 's/","/\n/g' |
		awk '$1 == "run" {print "run", $3; next} {print $1, ($1 == "persist" ? "" : $2)}' | sort | uniq -c | sort -rn |
		awk -v w="$w" '{printf "idle: effects %-22s %6d  %7.3f/s\n", $2 " " $3, $1, $1 / w}'
	echo "$1 $2 $3 $4 $w $(getconf CLK_TCK)" |
		awk '{printf "idle: CPU %% of a core: svcrun %.3f (%.1f s), its base cgroup (the ops, their forks and exits) %.3f\n", 100 * ($2 - $1) / $6 / $5, ($2 - $1) / $6, 100 * ($4 - $3) / 1e6 / $5}'
	if [ -n "$PROF_PID" ]; then
		wait "$PROF_PID" || echo "idle: the CPU profile failed" >&2
		"$T/bin/idle" get "$PROF" /runtime >"$I/runtime1"
		"$T/bin/idle" runtime "$I/runtime0" "$I/runtime1" "$w"
		go tool pprof -traces "$T/bin/svcrun" "$I/cpu.pprof" 2>/dev/null >"$I/cpu.traces" || :
		"$T/bin/idle" split "$I/cpu.traces" "$w"
		go tool pprof -top -nodecount 12 "$T/bin/svcrun" "$I/cpu.pprof" 2>/dev/null |
			sed -n '/flat%/,$p' | sed 's/^/idle: own top /'
	fi
	svcrun_memory
	[ -z "$OUT" ] || cp -r "$I/." "$OUT/"
}

# svcrun_memory prints where svcrun's memory is: PSS anon and file,
# threads, descriptors (the pidfds among them), and with PROFILE the
# heap in use by allocation site.
svcrun_memory() {
	awk '/^Pss:|^Pss_Anon:|^Pss_File:|^Rss:/ {printf "%s %.1f MB, ", $1, $2 / 1000}' "/proc/$SUP/smaps_rollup" |
		sed 's/, $//; s/^/idle: memory /'
	echo
	echo "idle: memory threads $(sed -n 's/^Threads:\t*//p' "/proc/$SUP/status"), descriptors $(ls "/proc/$SUP/fd" | wc -l) ($(ls -l "/proc/$SUP/fd" 2>/dev/null | grep -c 'anon_inode:\[pidfd\]') pidfds), mappings $(wc -l <"/proc/$SUP/maps")"
	# The largest file mappings (the binary, the store's bbolt file).
	awk '/^[0-9a-f]+-[0-9a-f]+ / {f = $6} /^Pss:/ && f != "" {p[f] += $2} END {for (f in p) if (p[f] >= 500) printf "idle: memory mapped %s %.1f MB PSS\n", f, p[f] / 1000}' "/proc/$SUP/smaps" |
		sed "s|$T/svcrun/|DIR/|; s|$T/bin/|BIN/|" | sort
	if [ -S "$PROF" ]; then
		"$T/bin/idle" get "$PROF" /heap >"$I/heap.pprof"
		go tool pprof -sample_index=inuse_space -top -nodecount 12 "$T/bin/svcrun" "$I/heap.pprof" 2>/dev/null |
			sed -n '/flat%/,$p' | sed 's/^/idle: heap top /'
		"$T/bin/idle" get "$PROF" /goroutine >"$I/goroutines.txt"
	fi
}

# --- svcrun ------------------------------------------------------------------
svcrun_ready() {
	i=0
	while [ "$("$T/bin/svcrun" status --json --socket "$T/svcrun/state/svcrun.sock" | grep -o '"ready": *true' | wc -l)" -lt "$N" ]; do
		i=$((i + 1))
		[ "$i" -lt $((600 + 6 * N)) ] || die "svcrun: not every service became ready"
		sleep 0.1
	done
	R_svcrun_ready=$(secs "$1" "$(now)")
}

run_svcrun() {
	d=$T/svcrun
	mkdir -p "$d/bundle/bin" "$d/state"
	cp bench/peers/peer-service "$d/bundle/bin/"
	cp "$T/bin/peerd" "$d/bundle/bin/"
	{
		echo '[module]'
		echo 'name = "peers"'
		echo 'version = "1"'
		k=1
		while [ "$k" -le "$N" ]; do
			printf '[[services]]\nname = "d%s"\nexec = ["bin/peer-service", "d%s"]\nlifecycle = "always"\ncapabilities = ["d%s"]\nrestart = { backoff_initial_s = %s }\n' "$k" "$k" "$k" "$BACKOFF"
			[ -z "$START_TIMEOUT" ] || printf 'start_timeout_s = %s\n' "$START_TIMEOUT"
			k=$((k + 1))
		done
	} >"$d/bundle/module.toml"
	cat >"$d/node.toml" <<-EOF
		node_id = "$NODE"
		data_dir = "state"
		sandbox = "best_effort"
		[[modules]]
		bundle = "bundle"
	EOF
	sup_pids() { echo "$SUP"; }
	# The ops run in the services' containers under svcrun's base cgroup;
	# the daemons there sleep, so its usage is the ops'.
	ops_usec() {
		f=$(find /sys/fs/cgroup -maxdepth 3 -type d -name "svcrun-$NODE" 2>/dev/null | head -n 1)
		if [ -n "$f" ] && [ -r "$f/cpu.stat" ]; then
			sed -n 's/^usage_usec //p' "$f/cpu.stat"
		else
			# No cgroup: the ops are svcrun's children, reaped by it.
			sed 's/.*) //' "/proc/$SUP/stat" | awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) * 1e6 / hz}'
		fi
	}
	SOCK=$d/state/svcrun.sock PROF=$T/profile.sock OPCPU=$d/state/modules/peers/opcpu.log JOURNAL=$d/state/journal
	t0=$(now)
	SVCRUN_PEERS_PROFILE=$PROF "$T/bin/svcrun" serve --config "$d/node.toml" --log-format json --log-level warn >"$d/serve.log" 2>&1 &
	SUP=$!
	measure svcrun "$d/state/modules/peers" "$t0" \
		"$T/bin/svcrun" run --socket "$d/state/svcrun.sock" --capability d1 -- true
	if [ "$FLOORS" != 0 ]; then
		f="$T/bin/floor acquire $d/state/svcrun.sock d1 true"
		$f || die "floor: the acquire failed"
		R_floor_acquire=$(calls $f)
	fi
	kill "$SUP"
	wait "$SUP" || :
	SUP=
	ops_usec() { echo 0; }
	# When svcrun saw each crash: its journal's container-emptied step.
	R_svcrun_seen=$(while read -r name tk; do
		at=$(grep -F "\"event\":\"container-emptied\",\"data\":{\"Service\":\"peers/$name\"}" "$d"/state/journal/*.jsonl |
			sed -n 's/^{"at":"\([^"]*\)".*/\1/p' | head -n 1)
		[ -z "$at" ] || echo "$(date -d "$at" +%s%N) $tk" | awk '{printf "%.2f\n", ($1 - $2) / 1e6}'
	done <"$T/kills" | p50max)
}

# --- supervisord ---------------------------------------------------------------
run_supervisord() {
	d=$T/supervisord
	mkdir -p "$d/ts"
	{
		cat <<-EOF
			[supervisord]
			nodaemon = true
			logfile = $d/supervisord.log
			pidfile = $d/supervisord.pid
			childlogdir = $d
			minfds = $((4 * N + 1024))
			[unix_http_server]
			file = $d/supervisor.sock
			[rpcinterface:supervisor]
			supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface
			[supervisorctl]
			serverurl = unix://$d/supervisor.sock
		EOF
		k=1
		while [ "$k" -le "$N" ]; do
			printf '[program:d%s]\ncommand = %s %s\nautorestart = true\nstdout_logfile = NONE\nstderr_logfile = NONE\n' "$k" "$T/bin/peerd" "$d/ts/d$k.ts"
			k=$((k + 1))
		done
	} >"$d/supervisord.conf"
	sup_pids() { echo "$SUP"; }
	t0=$(now)
	supervisord -c "$d/supervisord.conf" >/dev/null 2>&1 &
	SUP=$!
	measure supervisord "$d/ts" "$t0" supervisorctl -c "$d/supervisord.conf" status d1
	kill "$SUP"
	wait "$SUP" || :
	SUP=
}

# --- s6 and runit: a scan directory of run scripts -------------------------------
scandir() {
	mkdir -p "$1/ts" "$1/scan"
	k=1
	while [ "$k" -le "$N" ]; do
		mkdir "$1/scan/d$k"
		printf '#!/bin/sh\nexec %s %s\n' "$T/bin/peerd" "$1/ts/d$k.ts" >"$1/scan/d$k/run"
		chmod +x "$1/scan/d$k/run"
		k=$((k + 1))
	done
}

run_s6() {
	d=$T/s6
	scandir "$d"
	sup_pids() { echo "$SUP" $(ps -o pid= --ppid "$SUP"); }
	t0=$(now)
	# -c: s6-svscan supervises at most 500 services unless told more.
	s6-svscan -c "$((N + 100))" "$d/scan" >"$d/s6-svscan.log" 2>&1 &
	SUP=$!
	measure s6 "$d/ts" "$t0" s6-svstat "$d/scan/d1"
	s6-svscanctl -t "$d/scan" || :
	wait "$SUP" || :
	SUP=
}

run_runit() {
	d=$T/runit
	scandir "$d"
	sup_pids() { echo "$SUP" $(ps -o pid= --ppid "$SUP"); }
	t0=$(now)
	runsvdir "$d/scan" >"$d/runsvdir.log" 2>&1 &
	SUP=$!
	measure runit "$d/ts" "$t0" sv status "$d/scan/d1"
	kill -HUP "$SUP"
	wait "$SUP" || :
	SUP=
}

# --- the floors: no supervisor -----------------------------------------------------
run_floor() {
	d=$T/floor
	mkdir -p "$d/bundle/bin" "$d/data"
	cp bench/peers/peer-service "$T/bin/peerd" "$d/bundle/bin/"
	t0=$(now)
	(
		cd "$d/bundle"
		export OARBANK_MODULE_DATA="$d/data"
		for op in fingerprint start; do
			seq "$N" | sed 's/^/d/' | xargs -P "$(nproc)" -I{} bin/peer-service {} "$op" >/dev/null
		done
	)
	wait_up "$d/data" "$N"
	R_floor_boot=$(secs "$t0" "$(last_start "$d/data")")
	# The ops' own CPU run by hand (no svcrun, no sandbox, no container):
	# what the same op costs under svcrun is in the idle lines above.
	sort -k1,1 -k2,2n "$d/data/opcpu.log" | awk '{n[$1]++; s[$1] += $2; v[$1, n[$1]] = $2}
		END {for (k in n) printf "idle: floor op %-12s CPU %.0f us p50, %.0f us mean; n %d\n", k, v[k, int((n[k] + 1) / 2)] / 1e3, s[k] / n[k] / 1e3, n[k]}' | sort
	R_floor_exec=$(calls "$T/bin/floor" exec true)
	echo "floor: boot $R_floor_boot s, exec call us (p50 max p90) $R_floor_exec, acquire call us (p50 max p90) ${R_floor_acquire:--}; load $(loadavg)"
}

for peer in $PEERS; do
	case $peer in svcrun | supervisord | s6 | runit) ;; *) die "unknown peer $peer (svcrun supervisord s6 runit)" ;; esac
	"run_$peer"
	clean
done
if [ "$FLOORS" != 0 ]; then
	run_floor
	clean
fi

# --- the table ---------------------------------------------------------------------
# get PEER METRIC [FIELD] prints a recorded number, or "-".
get() {
	eval "v=\${R_$1_$2:-}"
	[ -n "$v" ] || { echo -; return; }
	echo "$v" | cut -d' ' -f"${3:-1}"
}
# cell PEER METRIC FIELD UNIT SCALE prints a value and, for a peer, svcrun / peer.
cell() {
	v=$(get "$1" "$2" "$3") s=$(get svcrun "$2" "$3")
	if [ "$v" = - ]; then printf ' - |'; return; fi
	if [ "$1" = svcrun ] || [ "$s" = - ]; then
		echo "$v $5" | awk -v u="$4" '{printf " %.4g %s |", $1 * $2, u}'
	else
		echo "$v $5 $s" | awk -v u="$4" '{q = $1 > 0 ? $3 / $1 : -1; r = q < 0 ? "-" : sprintf(q >= 10 ? "%.0fx" : "%.2gx", q); printf " %.4g %s (svcrun %s) |", $1 * $2, u, r}'
	fi
}
echo
echo "N=$N daemons; load average at start $LOAD0, at end $(loadavg)"
echo
printf '| |'
for p in $PEERS; do printf ' %s |' "$p"; done
printf '\n|---|'
for p in $PEERS; do printf -- '---|'; done
echo
row() {
	printf '| %s |' "$1"
	for p in $PEERS; do cell "$p" "$2" "$3" "$4" "$5"; done
	echo
}
row "crash to running again, p50" crash 1 ms 1
row "crash to running again, p90" crash 3 ms 1
row "crash to running again, max of $KILLS" crash 2 ms 1
[ -z "${R_svcrun_seen:-}" ] || echo "| crash seen by svcrun (its journal), p50 and max | $(get svcrun seen 1) ms, $(get svcrun seen 2) ms |"
row "$N daemons: boot until all up" boot 1 s 1
[ -z "${R_svcrun_ready:-}" ] || echo "| $N daemons: boot until all ready (svcrun status) | $R_svcrun_ready s |"
row "$N daemons: supervisor PSS" pss 1 MB 0.001
row "$N daemons: idle CPU (svcrun over ${IDLE_SVCRUN} s, the peers over ${IDLE} s), % of a core" cpu 3 % 1
[ -z "${R_svcrun_cpu:-}" ] || echo "| svcrun's idle CPU: svcrun itself + its ops (its base cgroup) | $(get svcrun cpu 1) % + $(get svcrun cpu 2) % |"
row "\"is it up\" call, p50 of $CALLS" call 1 ms 0.001
row "\"is it up\" call, max of $CALLS" call 2 ms 0.001
if [ "$FLOORS" != 0 ]; then
	echo
	echo "| floors: no supervisor | | the floor / s6 | svcrun / the floor |"
	echo "|---|---|---|---|"
	# floor LABEL METRIC UNIT SCALE SVCRUN-METRIC prints a floor, its ratio
	# to s6 and svcrun's to it.
	floor() {
		v=$(get floor "$2") s6=$(get s6 "$5") sv=$(get svcrun "$5")
		echo "$v $4 $s6 $sv" | awk -v l="$1" -v u="$3" 'function r(a, b) { return (a == "-" || b == "-" || b <= 0) ? "-" : sprintf("%.2gx", a / b) }
			{printf "| %s | %s | %s | %s |\n", l, ($1 == "-" ? "-" : sprintf("%.4g %s", $1 * $2, u)), r($1, $3), r($4, $1)}'
	}
	floor "$N daemons: the module's fingerprint and start ops, $(nproc) at a time, until all up" boot s 1 boot
	floor "a Go program that only execs true, p50 of $CALLS" exec ms 0.001 call
	floor "a Go client that acquires a lease (one request) and execs true, p50 of $CALLS" acquire ms 0.001 call
fi
echo
echo "calls: svcrun run --capability d1 -- true; supervisorctl status d1; s6-svstat DIR; sv status DIR"
