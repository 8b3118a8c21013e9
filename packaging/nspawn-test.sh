#!/usr/bin/env bash
# The Debian package under a real systemd: boots systemd as PID 1 with
# systemd-nspawn on a minimal Debian tree, installs the package built from
# this checkout, and checks what docs/operating.md promises of the unit.
#   bash packaging/nspawn-test.sh        (as root; .ci/run runs it)
#
# Cached between runs under $SVCRUN_CI_CACHE (as .ci/run's): the tree, as a
# tarball per Debian release and package list (the first run downloads it
# from $SVCRUN_NSPAWN_MIRROR, default deb.debian.org). Each run unpacks a
# fresh copy, so nothing of a run is left for the next one.
#
# What the host needs is worked out here, never changed on the host:
#   - systemd-container, pinned to the host's systemd version (an unpinned
#     install would upgrade systemd), and mmdebstrap, installed if missing;
#   - without systemd as the host's PID 1 (no D-Bus, no machined),
#     --register=no --keep-unit: nspawn runs in the cgroup it is started in,
#     so it gets one of its own, made here, in the cgroup2 hierarchy and,
#     on a hybrid host (cgroup2 at /sys/fs/cgroup/unified), in the name=systemd
#     one too; the container gets a unified hierarchy inside
#     (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1), which svcrun needs;
#   - nspawn's system call filter denies Landlock, which svcrun's sandbox
#     needs: --system-call-filter adds the three landlock_* calls.
#
# A drop-in shortens WatchdogSec= and TimeoutAbortSec= so that the watchdog
# case takes seconds, not minutes. On a failure the container's journal
# tail is printed. Each phase prints its seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "nspawn-test: needs root (it boots a container)" >&2; exit 1; }

cache=${SVCRUN_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svcrun-ci}
mirror=${SVCRUN_NSPAWN_MIRROR:-http://deb.debian.org/debian}
release=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
# What the tree holds besides Debian's essential packages: systemd as init,
# procps (the unit's ExecReload runs /bin/kill), the daemons of the example
# modules, and what their jobs use.
include=systemd,systemd-sysv,procps,redis-server,postgresql,curl,jq
bound=${SVCRUN_NSPAWN_WAIT:-120} # seconds: a failure cutoff, never the expected wait
node=nspawn                      # the node_id of the test config
examples=/opt/svcrun-test        # the checkout's examples/ and sdk/ inside the tree

t0=$SECONDS phase_name='' phase_t0=0 timings=''
phase() {
	if [ -n "$phase_name" ]; then
		timings+=$(printf '%5d s  %s' $((SECONDS - phase_t0)) "$phase_name")$'\n'
	fi
	phase_name=$1 phase_t0=$SECONDS
	echo "== nspawn-test: $1"
}

work=$(mktemp -d /var/tmp/svcrun-nspawn.XXXXXX)
chmod 0755 "$work"
root=$work/root
nspawn_pid='' leader='' cg2='' cg1=''

fail() {
	echo "nspawn-test: FAIL: $*" >&2
	exit 1
}

# ct CMD...: runs CMD inside the container, as root, in all its namespaces
# (its cgroup stays the test's, outside the container's units).
ct() {
	nsenter -t "$leader" -m -u -i -n -p -C -r -w \
		env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root "$@"
}

# wait_for WHAT CMD...: polls CMD until it succeeds; fails naming WHAT after
# $bound seconds.
wait_for() {
	local what=$1 deadline=$((SECONDS + bound))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$deadline" ] || fail "$what: not so after ${bound} s"
		sleep 0.2
	done
}

cleanup() {
	local rc=$?
	if [ "$rc" -ne 0 ] && [ -n "$leader" ] && kill -0 "$leader" 2>/dev/null; then
		echo "== nspawn-test: the container's journal, last 150 lines" >&2
		ct journalctl -q --no-pager -n 150 -o short-monotonic >&2 || true
		echo "== nspawn-test: svcrun status" >&2
		ct svcrun status >&2 || true
	fi
	if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
		# The container's PID 1 dies, and with it its PID namespace: every
		# process in it, the services svcrun left running included.
		[ -z "$leader" ] || kill -KILL "$leader" 2>/dev/null || true
		kill -KILL "$nspawn_pid" 2>/dev/null || true
		wait "$nspawn_pid" 2>/dev/null || true
	fi
	local d
	for d in "$cg2" "$cg1"; do
		[ -n "$d" ] && [ -d "$d" ] || continue
		# A cgroup goes once its processes are gone (the namespace's end
		# kills them, not at once): leaves first, polled for 10 s.
		local i=0
		until find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; do
			i=$((i + 1))
			[ "$i" -lt 50 ] || { echo "nspawn-test: could not remove $d" >&2; break; }
			sleep 0.2
		done
	done
	rm -rf "$work"
	phase done
	printf '== nspawn-test: seconds per phase\n%s%5d s  total\n' "$timings" $((SECONDS - t0))
	return "$rc"
}
trap cleanup EXIT

phase "host: systemd-nspawn and mmdebstrap"
need=()
if ! command -v systemd-nspawn >/dev/null; then
	v=$(dpkg-query -W -f='${Version}' systemd 2>/dev/null) ||
		fail "systemd-nspawn is missing and the host has no systemd package to pin systemd-container to"
	need+=("systemd-container=$v")
fi
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
if [ ${#need[@]} -gt 0 ]; then
	apt() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0 -y -qq "$@"; }
	apt install --no-install-recommends "${need[@]}" || { apt update && apt install --no-install-recommends "${need[@]}"; }
fi

phase "tree: Debian $release with $include"
tarball=$cache/nspawn-$release-$(printf '%s %s' "$include" "$mirror" | sha256sum | cut -c1-12).tar
if [ ! -s "$tarball" ]; then
	mkdir -p "$cache"
	rm -f "$cache"/nspawn-"$release"-*.tar.new
	mmdebstrap --quiet --format=tar --variant=essential --include="$include" "$release" "$tarball.new" "$mirror"
	mv "$tarball.new" "$tarball"
fi
mkdir "$root"
tar -C "$root" --numeric-owner -xf "$tarball"
# Debian's own units of the daemons stay off: the modules run them.
systemctl --root="$root" --quiet mask redis-server.service postgresql.service

phase "package: build two versions (the second is the upgrade)"
deb1=$(bash packaging/build-deb.sh "$work/dist")
v1=$(dpkg-deb -f "$deb1" Version)
# The upgrade: the same files under a later version (a second build would
# only cost a link).
v2=$v1+nspawn
dpkg-deb -R "$deb1" "$work/v2"
sed -i "s/^Version: .*/Version: $v2/" "$work/v2/DEBIAN/control"
deb2=$work/dist/svcrun_${v2}_$(dpkg-deb -f "$deb1" Architecture).deb
dpkg-deb --root-owner-group --build "$work/v2" "$deb2" >/dev/null
cp "$deb1" "$deb2" "$root/root/"
deb1=/root/${deb1##*/} deb2=/root/${deb2##*/}
# The example modules as shipped in the checkout; kvfile's binary is built
# (it is never committed), as .ci/run builds it.
mkdir -p "$root$examples/examples/modules" "$root$examples/sdk"
for m in demo redis postgres kvfile; do
	cp -a "examples/modules/$m" "$root$examples/examples/modules/"
done
cp -a sdk/sh "$root$examples/sdk/"
CGO_ENABLED=0 go build -o "$root$examples/examples/modules/kvfile/bin/kvfile" ./examples/modules/kvfile
chmod -R a+rX "$root$examples"

phase "boot: systemd in systemd-nspawn"
# The cgroups nspawn runs in: its own, in each hierarchy systemd inside
# needs (see the top of this file).
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$cg2" ] || fail "no cgroup2 mount on this host: svcrun needs cgroup v2"
cg2=$cg2/${work##*/}
cg1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)name=systemd(,|$)/ { print $2; exit }' /proc/self/mounts)
[ -z "$cg1" ] || cg1=$cg1/${work##*/}
mkdir "$cg2"
[ -z "$cg1" ] || mkdir "$cg1"
(
	echo "$BASHPID" >"$cg2/cgroup.procs"
	[ -z "$cg1" ] || echo "$BASHPID" >"$cg1/cgroup.procs"
	SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 exec systemd-nspawn --quiet --boot --register=no --keep-unit \
		--directory="$root" --machine=svcrun-nspawn --private-network --console=read-only \
		--system-call-filter='landlock_create_ruleset landlock_add_rule landlock_restrict_self' \
		</dev/null >"$work/console.log" 2>&1
) &
nspawn_pid=$!
# The container's PID 1: nspawn's child that runs systemd.
find_leader() {
	local p
	for p in $(pgrep -P "$nspawn_pid"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = systemd ] && leader=$p && return 0
	done
	kill -0 "$nspawn_pid" 2>/dev/null || { cat "$work/console.log" >&2; fail "systemd-nspawn exited"; }
	return 1
}
wait_for "the container's systemd started" find_leader
booted() {
	local s
	s=$(ct systemctl is-system-running 2>/dev/null) || true
	case $s in running | degraded) return 0 ;; esac
	return 1
}
wait_for "the container booted" booted
ct systemctl is-system-running >/dev/null || {
	ct systemctl --failed --no-pager >&2
	echo "nspawn-test: the container booted degraded (above); going on" >&2
}

# --- helpers on the booted container ---

main_pid() { ct systemctl show -p MainPID --value svcrun; }
active() { [ "$(ct systemctl show -p ActiveState --value svcrun)" = active ]; }
journal() { ct journalctl -q --no-pager -u svcrun -o cat "$@"; }
# count PATTERN: how many of the unit's journal lines match (grep -F).
count() { journal | grep -cF -- "$1" || true; }
# has PATTERN [JOURNALCTL ARGS]: a line of the journal (default: the
# unit's) matches the regular expression; read whole, as grep -q would
# leave journalctl to a SIGPIPE that pipefail takes for a failure.
has() {
	local lines
	lines=$(ct journalctl -q --no-pager -o cat "${@:2}")
	grep -q -- "$1" <<<"$lines"
}
svc_cgroup=/sys/fs/cgroup/system.slice/svcrun.service/svcrun-$node/demo/kv
daemon_pid() { ct cat /var/lib/svcrun/modules/demo/kv.pid; }
lease_admitted() {
	[ "$(ct svcrun status --json | ct jq -r --arg id "$1" '.leases[] | select(.id == $id) | .admitted')" = true ]
}
# contained NAME: the service's container is a cgroup that holds its daemon
# (not the process-group fallback, which a filtered clone3 would cause).
contained() {
	[ "$(ct svcrun status --json | ct jq -r --arg n "$1" '.services[] | select(.name == $n) | .contained')" = true ]
}
service_ready() {
	[ "$(ct svcrun status --json | ct jq -r --arg n "$1" '.services[] | select(.name == $n) | .ready')" = true ]
}

# the_daemon_stays WHAT: after WHAT, the demo's daemon is the one from
# before ($daemon), alone in its container, under svcrun.service's
# delegated cgroup.
the_daemon_stays() {
	local what=$1 pid procs
	pid=$(daemon_pid)
	[ "$pid" = "$daemon" ] || fail "$what: the demo's daemon is pid $pid, was $daemon: started anew"
	ct kill -0 "$pid" || fail "$what: the demo's daemon (pid $pid) is gone"
	procs=$(ct cat "$svc_cgroup/cgroup.procs") || fail "$what: no container $svc_cgroup"
	[ "$procs" = "$pid" ] || fail "$what: the container $svc_cgroup holds [$procs], not the one daemon $pid"
}

# adopted WHAT OLD_MAIN ADOPTED_BEFORE: after WHAT, a new svcrun (not
# OLD_MAIN) is active, logged the demo's service adopted once more than
# ADOPTED_BEFORE, kept the daemon and the held lease.
adopted() {
	local what=$1 old=$2 before=$3
	new_main() { local p; p=$(main_pid) && [ "$p" != 0 ] && [ "$p" != "$old" ] && active; }
	wait_for "$what: svcrun active again, as a new process" new_main
	more_adopted() { [ "$(count '"msg":"adopted: already running","subject":"demo/kv"')" -gt "$before" ]; }
	wait_for "$what: the journal says demo/kv adopted" more_adopted
	the_daemon_stays "$what"
	lease_admitted "$lease" || fail "$what: the lease $lease held before is not admitted now"
	echo "   $what: svcrun pid $old -> $(main_pid), daemon $daemon adopted, lease $lease held"
}

phase "install: the package as built, then the test configuration"
ct dpkg -i "$deb1" >/dev/null
[ "$(ct systemctl is-enabled svcrun || true)" = disabled ] || fail "installing the package enabled svcrun"
[ "$(ct systemctl is-active svcrun || true)" = inactive ] || fail "installing the package started svcrun"
ct systemd-analyze verify /usr/lib/systemd/system/svcrun.service

# The exposure score of the unit as shipped: at most 5.0 (docs/operating.md,
# Hardening, says what is restricted and why the rest is needed).
score=$(ct systemd-analyze security --no-pager svcrun.service | sed -n 's/^→ Overall exposure level for svcrun.service: \([0-9.]*\) .*/\1/p')
[ -n "$score" ] || fail "systemd-analyze security svcrun.service printed no exposure level"
awk -v s="$score" 'BEGIN { exit !(s <= 5.0) }' || fail "systemd-analyze security svcrun.service: exposure $score, more than 5.0"
echo "   systemd-analyze security svcrun.service: $score"

# The package made the account its packaged run_as names.
ct getent passwd svcrun-ops >/dev/null || fail "the package did not create the run_as account svcrun-ops"
# write_config MODULE...: the node configuration with those example modules.
write_config() {
	{
		printf 'node_id = "%s"\nsocket = "/run/svcrun/svcrun.sock"\nsandbox = "require"\nrun_as = "svcrun-ops"\n' "$node"
		local m
		for m in "$@"; do
			printf '\n[[modules]]\nbundle = "%s/examples/modules/%s"\n' "$examples" "$m"
		done
	} >"$root/etc/svcrun/svcrun.toml"
	ct svcrun validate --config /etc/svcrun/svcrun.toml
}
write_config demo
# Seconds, not minutes, for the watchdog case: a SIGSTOPped svcrun ignores
# the SIGABRT and dies at the SIGKILL TimeoutAbortSec= later.
mkdir -p "$root/etc/systemd/system/svcrun.service.d"
printf '[Service]\nWatchdogSec=10s\nTimeoutAbortSec=5s\n' >"$root/etc/systemd/system/svcrun.service.d/nspawn-test.conf"
ct systemctl daemon-reload

phase "start: active once READY=1, in the journal, a lease and svcrun run"
ct systemctl enable --now svcrun
# Type=notify: start returns once svcrun sent READY=1, after its socket
# listens, so a command right after it reaches svcrun (one try, no wait).
active || fail "systemctl start returned and svcrun.service is $(ct systemctl show -p ActiveState --value svcrun)"
ct svcrun status >/dev/null || fail "svcrun status right after systemctl start: svcrun not reachable, so systemd took it for ready too early"
[ "$(ct systemctl show -p NRestarts --value svcrun)" = 0 ] || fail "svcrun restarted while starting"
# The journal commands docs/operating.md gives: the unit's (svcrun's lines
# and systemd's about it), and svcrun's own.
has '"msg":"API listening"' -u svcrun.service || fail "journalctl -u svcrun.service lacks svcrun's JSON lines"
has '^Started svcrun.service' -u svcrun.service || fail "journalctl -u svcrun.service lacks systemd's 'Started' line"
has '"msg":"API listening"' -t svcrun || fail "journalctl -t svcrun lacks svcrun's JSON lines"
has '^Started svcrun.service' -t svcrun && fail "journalctl -t svcrun has systemd's lines too"
lease=$(ct svcrun acquire --capability kv --wait 60s) || fail "svcrun acquire --capability kv"
wait_for "demo/kv ready for the lease $lease" service_ready demo/kv
lease_admitted "$lease" || fail "the lease $lease is not admitted"
out=$(ct svcrun run --capability kv -- sh "$examples/examples/modules/demo/job.sh") || fail "svcrun run of the demo's job: $out"
case $out in *"job: made"*) ;; *) fail "the demo's job said: $out" ;; esac
daemon=$(daemon_pid)
[ "$(ct grep '^0::' "/proc/$daemon/cgroup")" = "0::/system.slice/svcrun.service/svcrun-$node/demo/kv" ] ||
	fail "the demo's daemon is in $(ct grep '^0::' "/proc/$daemon/cgroup"), not in svcrun.service's delegated cgroup"
[ "$(ct systemctl show -p Delegate --value svcrun)" = yes ] || fail "svcrun.service is not delegated its cgroup"
contained demo/kv || fail "demo/kv is not contained: $(ct svcrun status demo/kv)"
the_daemon_stays "start"

phase "reload: every example module added, each one's job works under the unit"
write_config demo redis postgres kvfile
ct systemctl reload svcrun
for m in redis/redis postgres/postgres kvfile/kv; do
	listed() { ct svcrun status --json | ct jq -e --arg n "$1" '.services[] | select(.name == $n)'; }
	wait_for "after systemctl reload, $m is listed" listed "$m"
done
for c in redis postgres kvfile; do
	out=$(ct svcrun run --capability "$c" --wait 180s -- sh "$examples/examples/modules/$c/job.sh" 2>&1) ||
		fail "svcrun run of the $c module's job under the hardened unit: $out"
	case $out in *"job: made"*) echo "   $c: $(echo "$out" | grep 'job: made')" ;; *) fail "the $c module's job said: $out" ;; esac
done
for m in redis/redis postgres/postgres kvfile/kv; do
	contained "$m" || fail "$m is not contained: $(ct svcrun status "$m")"
done
# A reload svcrun refuses fails systemctl reload (ExecReload waits for the
# verdict), is an event, and changes nothing.
cp "$root/etc/svcrun/svcrun.toml" "$work/good.toml"
printf 'max_concurrent_ops = "many"\n' >>"$root/etc/svcrun/svcrun.toml"
if out=$(ct systemctl reload svcrun 2>&1); then
	fail "systemctl reload of a configuration svcrun refuses exited 0: $out"
fi
cp "$work/good.toml" "$root/etc/svcrun/svcrun.toml"
ct svcrun events | grep -q "refused, the running configuration stays" || fail "a refused reload is not in svcrun events: $(ct svcrun events | tail -5)"
for m in redis/redis postgres/postgres kvfile/kv; do
	ct svcrun status --json | ct jq -e --arg n "$m" '.services[] | select(.name == $n)' >/dev/null ||
		fail "after a refused reload, $m is no longer listed"
done

phase "restarts: systemctl restart, the watchdog, a stray SIGTERM, an upgrade"
# A job that spans them all: it holds its lease and runs until told.
ct svcrun run --capability kv -- sh -c 'touch /root/span.started; until [ -e /root/span.go ]; do sleep 0.1; done; echo span: done' \
	>"$work/span.out" 2>&1 &
span=$!
wait_for "the spanning job started" test -e "$root/root/span.started"

old=$(main_pid) before=$(count '"msg":"adopted: already running","subject":"demo/kv"')
ct systemctl restart svcrun
adopted "systemctl restart" "$old" "$before"

old=$(main_pid) before=$(count '"msg":"adopted: already running","subject":"demo/kv"') wd=$(count 'Watchdog timeout')
ct kill -STOP "$old"
adopted "the watchdog (svcrun stopped by SIGSTOP)" "$old" "$before"
[ "$(count 'Watchdog timeout')" -gt "$wd" ] || fail "the watchdog case: no 'Watchdog timeout' line from systemd"

# Not from systemd: svcrun exits 0 as at any SIGTERM, and Restart=always
# brings it back.
old=$(main_pid) before=$(count '"msg":"adopted: already running","subject":"demo/kv"')
ct kill -TERM "$old"
adopted "a SIGTERM not sent by systemd" "$old" "$before"

old=$(main_pid) before=$(count '"msg":"adopted: already running","subject":"demo/kv"')
ct dpkg -i "$deb2" >/dev/null
[ "$(ct dpkg-query -W -f='${Version}' svcrun)" = "$v2" ] || fail "the upgrade to $v2 did not install"
adopted "the package upgrade to $v2" "$old" "$before"

touch "$root/root/span.go"
wait "$span" || fail "the job spanning the restarts failed: $(cat "$work/span.out")"
grep -q 'span: done' "$work/span.out" || fail "the job spanning the restarts said: $(cat "$work/span.out")"

phase "stop: the daemon stays, systemd says so, the next start adopts it"
ct systemctl stop svcrun
active && fail "svcrun.service still active after systemctl stop"
the_daemon_stays "systemctl stop"
old=$(main_pid) before=$(count '"msg":"adopted: already running","subject":"demo/kv"')
ct systemctl start svcrun
adopted "systemctl start after a stop" "$old" "$before"
# With KillMode=process systemd names each process left in the unit's
# cgroup, at the stop and at the next start (docs/operating.md).
has "Unit process $daemon (sleep) remains running after unit stopped" -u svcrun.service ||
	fail "no 'remains running after unit stopped' line for the daemon"
has "Found left-over process $daemon (sleep) in control group while starting unit" -u svcrun.service ||
	fail "no 'Found left-over process' line for the daemon"

phase "remove: dpkg -r leaves the services, the configuration and the state"
ct dpkg -r svcrun >/dev/null
ct test ! -e /usr/bin/svcrun || fail "dpkg -r left /usr/bin/svcrun"
active && fail "svcrun.service active after dpkg -r"
ct test -f /etc/svcrun/svcrun.toml || fail "dpkg -r removed /etc/svcrun/svcrun.toml"
ct test -f /var/lib/svcrun/state.db || fail "dpkg -r removed /var/lib/svcrun/state.db"
the_daemon_stays "dpkg -r"

phase "--stop-services-on-exit: installed again, the next stop ends the services"
ct dpkg -i "$deb2" >/dev/null
ct grep -qx "node_id = \"$node\"" /etc/svcrun/svcrun.toml || fail "installing again did not keep /etc/svcrun/svcrun.toml"
old=$(main_pid) before=$(count '"msg":"adopted: already running","subject":"demo/kv"')
ct systemctl start svcrun
adopted "a start after dpkg -r and a new install" "$old" "$before"
sed -i 's/^SVCRUN_SERVE_FLAGS=.*/SVCRUN_SERVE_FLAGS="--stop-services-on-exit"/' "$root/etc/default/svcrun"
old=$(main_pid) before=$(count '"msg":"adopted: already running","subject":"demo/kv"')
ct systemctl restart svcrun # the svcrun started before the edit stops without stopping them
adopted "systemctl restart with --stop-services-on-exit set" "$old" "$before"
ct systemctl stop svcrun
ct kill -0 "$daemon" 2>/dev/null && fail "--stop-services-on-exit: the demo's daemon $daemon still runs after systemctl stop"
ct test ! -s "$svc_cgroup/cgroup.procs" || fail "--stop-services-on-exit: $svc_cgroup still holds $(ct cat "$svc_cgroup/cgroup.procs")"

phase "purge: dpkg -P removes the configuration and the state"
ct dpkg -P svcrun >/dev/null
ct test ! -e /etc/svcrun || fail "dpkg -P left /etc/svcrun"
ct test ! -e /var/lib/svcrun || fail "dpkg -P left /var/lib/svcrun"
ct test ! -e /etc/systemd/system/multi-user.target.wants/svcrun.service || fail "dpkg -P left svcrun enabled"
echo "nspawn-test: ok"
