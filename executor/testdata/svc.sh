#!/bin/sh
# svc.sh MODE OP [ARGS]: a service for the executor's tests. MODE picks a
# behaviour, well-behaved or hostile; files it reports go to
# $OARBANK_MODULE_DATA (the only place it may write).
mode=$1
shift
data=$OARBANK_MODULE_DATA
case $mode in
env)
	# The exact environment, cwd, stdin and argv the op got, seen by the
	# kernel rather than by the shell (which adds PWD and friends).
	tr '\0' '\n' </proc/$$/environ >"$data/environ"
	readlink /proc/$$/cwd >"$data/cwd"
	readlink /proc/$$/fd/0 >"$data/stdin"
	printf '%s\n' "$0" "$@" >"$data/argv"
	printf '{"healthy":true,"running":false}\n'
	;;
ok)
	printf '{"healthy":true,"running":false,"pools":{"slots":2}}\n'
	;;
flood)
	# 1 GiB on stdout.
	exec head -c 1073741824 /dev/zero
	;;
hang)
	# Never exits; leaves a child in its group.
	sleep 1000 &
	echo $! >"$data/child.pid"
	echo "hanging" >&2
	sleep 1000
	;;
polite)
	# Exits at SIGTERM.
	trap 'echo "bye" >&2; exit 0' TERM
	sleep 1000 &
	wait
	;;
stubborn)
	# Ignores SIGTERM, and so do its children.
	trap '' TERM
	sleep 1000 &
	echo $! >"$data/child.pid"
	while :; do sleep 1; done
	;;
daemon)
	# Leaves a daemon holding stdout and stderr, then succeeds.
	sleep 1000 &
	echo $! >"$data/child.pid"
	printf '{"healthy":true,"running":true}\n'
	;;
doublefork)
	# A daemon that the op abandons (double fork: its parent exits at
	# once) and that exits when the test writes to the fifo.
	( (read x <"$data/fifo"; exit 0) </dev/null >/dev/null 2>&1 &
	  echo $! >"$data/daemon.pid") &
	wait
	printf '{"ok":true,"changed":true}\n'
	;;
shortdaemon)
	# Abandons a daemon that dies soon after.
	( (sleep 0.$(( $$ % 5 + 1 )); exit 0) </dev/null >/dev/null 2>&1 & ) &
	wait
	printf '{"ok":true,"changed":true}\n'
	;;
pidfile)
	# A start that finds the daemon of its pid file alive (kill -0, as
	# many services do) changes nothing.
	pid=$(cat "$data/pidfile.pid" 2>/dev/null)
	if [ "${1:-}" != start ]; then
		printf '{"healthy":true,"running":false}\n'
	elif [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		printf '{"ok":true,"changed":false,"message":"already running"}\n'
	else
		sleep 1000 </dev/null >/dev/null 2>&1 &
		echo $! >"$data/pidfile.pid"
		printf '{"ok":true,"changed":true}\n'
	fi
	;;
leavedaemon)
	# A start that leaves a daemon in its process group, with its output
	# redirected as it should be.
	sleep 1000 </dev/null >/dev/null 2>&1 &
	echo $! >"$data/daemon.pid"
	printf '{"ok":true,"changed":true}\n'
	;;
slowstatus)
	# A start that leaves a daemon in its process group; a status that
	# takes a second (as one that queries the daemon may) and leaves none.
	if [ "${1:-}" = status ]; then
		sleep 1
		printf '{"running":true,"ready":true}\n'
		exit 0
	fi
	sleep 1000 </dev/null >/dev/null 2>&1 &
	echo $! >"$data/daemon.pid"
	printf '{"ok":true,"changed":true}\n'
	;;
spread)
	# A start that leaves a daemon in its group, a double-forked
	# grandchild (its parent, a subshell, exits at once), and a setsid'd
	# process in a session and group of its own, out of reach of the
	# op's process group.
	sleep 1000 </dev/null >/dev/null 2>&1 &
	echo $! >"$data/daemon.pid"
	( sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >"$data/grandchild.pid" )
	setsid sleep 1000 </dev/null >/dev/null 2>&1 &
	echo $! >"$data/setsid.pid"
	printf '{"ok":true,"changed":true}\n'
	;;
cgroup)
	# Where the op runs: its cgroup v2 path.
	sed -n 's/^0:://p' /proc/$$/cgroup >"$data/cgroup"
	printf '{"healthy":true,"running":false}\n'
	;;
twodocs)
	printf '{"healthy":true,"running":false}\n{"healthy":true,"running":false}\n'
	;;
badutf8)
	printf '{"healthy":true,"running":false,"message":"caf\351"}\n'
	;;
okfalse)
	printf '{"ok":false,"message":"could not start"}\n'
	;;
exit3ok)
	printf '{"ok":true}\n'
	exit 3
	;;
dashid)
	printf '{"objects":[{"id":"-rf","kind":"volume","labels":{}},{"id":"vol-1","kind":"volume","labels":{"oarbank.node":"n1"}}]}\n'
	;;
fail)
	echo "starting the daemon" >&2
	echo "error: port 8080 is taken" >&2
	printf '{"ok":false,"message":"port taken"}\n'
	exit 1
	;;
segv)
	echo "about to crash" >&2
	kill -SEGV $$
	;;
stderrflood)
	# 200 KiB of stderr, then a known last line: only the tail is kept,
	# and the op is never blocked on stderr.
	head -c 204800 /dev/zero | tr '\0' 'e' >&2
	echo >&2
	echo "the last line" >&2
	printf '{"healthy":true,"running":false}\n'
	;;
concurrency)
	# Counts the ops running at once, in a shared directory.
	dir=$data/running
	mkdir -p "$dir"
	touch "$dir/$$"
	ls "$dir" | wc -l >>"$data/counts"
	sleep 0.2
	rm -f "$dir/$$"
	printf '{"healthy":true,"running":false}\n'
	;;
slowstart)
	# A start that takes as long as the test says (until it writes the
	# fifo "release"), like a VM's: its daemon is up at once, and the
	# pid file that fingerprint goes by is written at the end.
	case ${1:-} in
	start)
		echo $$ >"$data/start.pid"
		sleep 1000 </dev/null >/dev/null 2>&1 &
		d=$!
		read x <"$data/release"
		echo $d >"$data/daemon.pid"
		printf '{"ok":true,"changed":true}\n'
		;;
	*)
		running=false
		[ -f "$data/daemon.pid" ] && running=true
		printf '{"healthy":true,"running":%s}\n' $running
		;;
	esac
	;;
nginx)
	# Debian's nginx: a master and a worker that ignores SIGTERM; the
	# stop kills the master only, and a start fails while a worker holds
	# the port.
	case ${1:-} in
	start)
		w=$(cat "$data/worker.pid" 2>/dev/null)
		if [ -n "$w" ] && [ -r "/proc/$w/stat" ] && ! grep -q ') Z' "/proc/$w/stat"; then
			echo "bind() to 0.0.0.0:8080 failed: held by pid $w" >&2
			printf '{"ok":false,"message":"port taken"}\n'
			exit 1
		fi
		rm -f "$data/worker.pid"
		sh -c 'trap "" TERM; sleep 1000 & echo $! >"$1/worker.pid"; exec sleep 1000' sh "$data" </dev/null >/dev/null 2>&1 &
		echo $! >"$data/master.pid"
		while [ ! -s "$data/worker.pid" ]; do sleep 0.005; done
		printf '{"ok":true,"changed":true}\n'
		;;
	stop)
		# Like nginx -s stop: the master is gone when the stop returns
		# (dead or a zombie for the subreaper); its worker stays.
		m=$(cat "$data/master.pid")
		kill -KILL "$m"
		while [ -r "/proc/$m/stat" ] && ! grep -q ') Z' "/proc/$m/stat"; do sleep 0.005; done
		printf '{"ok":true,"changed":true}\n'
		;;
	*)
		printf '{"running":true,"ready":true}\n'
		;;
	esac
	;;
handoff)
	# A master that ends by itself (exit 0) when told (USR1), as nginx's
	# old master hands over to its new one after a binary upgrade; its
	# worker lives on. What the stop leaves svcrun kills.
	case ${1:-} in
	start)
		rm -f "$data/master.pid"
		sh -c 'trap "exit 0" USR1; sleep 1000 & echo $$ >"$1/master.pid.new"; mv "$1/master.pid.new" "$1/master.pid"; wait' sh "$data" </dev/null >/dev/null 2>&1 &
		while [ ! -s "$data/master.pid" ]; do sleep 0.005; done
		printf '{"ok":true,"changed":true}\n'
		;;
	stop)
		printf '{"ok":true,"changed":true}\n'
		;;
	*)
		printf '{"running":true,"ready":true}\n'
		;;
	esac
	;;
*)
	echo "svc.sh: unknown mode $mode" >&2
	exit 64
	;;
esac
