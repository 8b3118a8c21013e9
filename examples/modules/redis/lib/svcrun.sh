# svcrun.sh: a POSIX sh library for the services and probes of svcrun
# modules (service protocol 1, docs/protocol.md). Copy it into the bundle
# and source it:
#
#	. "${0%/*}/../lib/svcrun.sh"
#
# It needs only POSIX sh, awk, grep, kill and sleep (setsid when a daemon is
# started: util-linux on Linux), and no jq. Every function is named svcrun_*
# and every variable it sets _svcrun_* or SVCRUN_*.
#
# Printing: each svcrun_<result> function builds its whole document first
# and prints it in one line only when every argument was valid, so a bad
# argument never leaves half a document on stdout: it says why on stderr
# and returns 2. svcrun_fail prints a failure and exits.

# svcrun_json_string STR prints STR as a JSON string, quotes included:
# quotes, backslashes and every control character escaped, all other bytes
# (UTF-8 text) passed through as they are.
svcrun_json_string() {
	printf '%s\n' "$1" | LC_ALL=C awk '
	BEGIN {
		for (i = 1; i < 32; i++) esc[sprintf("%c", i)] = sprintf("\\u%04x", i)
		esc["\t"] = "\\t"; esc["\r"] = "\\r"; esc["\b"] = "\\b"; esc["\f"] = "\\f"
		esc["\""] = "\\\""; esc["\\"] = "\\\\"; esc[sprintf("%c", 127)] = "\\u007f"
		printf "\""
	}
	{
		if (NR > 1) printf "\\n"
		n = length($0); out = ""
		for (i = 1; i <= n; i++) {
			c = substr($0, i, 1)
			out = out ((c in esc) ? esc[c] : c)
		}
		printf "%s", out
	}
	END { printf "\"" }'
}

# _svcrun_err prints an error of the library on stderr and returns 2.
_svcrun_err() {
	printf 'svcrun.sh: %s\n' "$*" >&2
	return 2
}

_svcrun_bool() {
	case $2 in
	true | false) ;;
	*) _svcrun_err "$1 must be true or false, not '$2'" ;;
	esac
}

_svcrun_number() {
	printf '%s\n' "$2" | grep -Eqx -- '-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?' ||
		_svcrun_err "$1 must be a JSON number, not '$2'"
}

_svcrun_count() {
	case $2 in
	'' | *[!0-9]* | 0?*) _svcrun_err "$1 must be a whole number, not '$2'" ;;
	esac
}

# svcrun_fingerprint --healthy true|false [--running true|false]
#	[--message M] [--attr K STRING] [--attr-num K N] [--attr-bool K B]
#	[--pool NAME N] [--mem-gb X]
# prints a fingerprint. A service must give --running; a probe may not.
svcrun_fingerprint() {
	_svcrun_h= _svcrun_r= _svcrun_m= _svcrun_a= _svcrun_p= _svcrun_g=
	while [ $# -gt 0 ]; do
		case $1 in
		--healthy) _svcrun_bool healthy "${2-}" || return; _svcrun_h=$2; shift 2 ;;
		--running) _svcrun_bool running "${2-}" || return; _svcrun_r=$2; shift 2 ;;
		--message) _svcrun_m=$(svcrun_json_string "${2-}"); shift 2 ;;
		--attr) [ $# -ge 3 ] || { _svcrun_err "--attr needs a key and a value"; return; }
			_svcrun_a="$_svcrun_a${_svcrun_a:+,}$(svcrun_json_string "$2"):$(svcrun_json_string "$3")"; shift 3 ;;
		--attr-num) [ $# -ge 3 ] || { _svcrun_err "--attr-num needs a key and a value"; return; }
			_svcrun_number "attr $2" "$3" || return
			_svcrun_a="$_svcrun_a${_svcrun_a:+,}$(svcrun_json_string "$2"):$3"; shift 3 ;;
		--attr-bool) [ $# -ge 3 ] || { _svcrun_err "--attr-bool needs a key and a value"; return; }
			_svcrun_bool "attr $2" "$3" || return
			_svcrun_a="$_svcrun_a${_svcrun_a:+,}$(svcrun_json_string "$2"):$3"; shift 3 ;;
		--pool) [ $# -ge 3 ] || { _svcrun_err "--pool needs a name and a count"; return; }
			_svcrun_count "pool $2" "$3" || return
			_svcrun_p="$_svcrun_p${_svcrun_p:+,}$(svcrun_json_string "$2"):$3"; shift 3 ;;
		--mem-gb) _svcrun_number mem_gb "${2-}" || return
			case $2 in -*) _svcrun_err "mem_gb must be >= 0, not '$2'"; return ;; esac
			_svcrun_g=$2; shift 2 ;;
		*) _svcrun_err "svcrun_fingerprint: unknown argument '$1'"; return ;;
		esac
	done
	[ -n "$_svcrun_h" ] || { _svcrun_err "svcrun_fingerprint: --healthy is required"; return; }
	printf '{"healthy":%s%s%s%s%s%s}\n' "$_svcrun_h" \
		"${_svcrun_r:+,\"running\":$_svcrun_r}" \
		"${_svcrun_m:+,\"message\":$_svcrun_m}" \
		"${_svcrun_a:+,\"attrs\":{$_svcrun_a\}}" \
		"${_svcrun_p:+,\"pools\":{$_svcrun_p\}}" \
		"${_svcrun_g:+,\"reserve\":{\"mem_gb\":$_svcrun_g\}}"
}

# svcrun_result [--changed true|false] [--escalated true|false] [--message M]
# prints the op result of a successful start, stop or destroy (ok true;
# changed defaults to false).
svcrun_result() {
	_svcrun_c=false _svcrun_e= _svcrun_m=
	while [ $# -gt 0 ]; do
		case $1 in
		--changed) _svcrun_bool changed "${2-}" || return; _svcrun_c=$2; shift 2 ;;
		--escalated) _svcrun_bool escalated "${2-}" || return; _svcrun_e=$2; shift 2 ;;
		--message) _svcrun_m=$(svcrun_json_string "${2-}"); shift 2 ;;
		*) _svcrun_err "svcrun_result: unknown argument '$1'"; return ;;
		esac
	done
	printf '{"ok":true,"changed":%s%s%s}\n' "$_svcrun_c" \
		"${_svcrun_e:+,\"escalated\":$_svcrun_e}" "${_svcrun_m:+,\"message\":$_svcrun_m}"
}

# svcrun_status RUNNING READY [MESSAGE] prints the result of status or ready.
svcrun_status() {
	_svcrun_bool running "${1-}" || return
	_svcrun_bool ready "${2-}" || return
	_svcrun_m=
	[ $# -ge 3 ] && _svcrun_m=$(svcrun_json_string "$3")
	printf '{"running":%s,"ready":%s%s}\n' "$1" "$2" "${_svcrun_m:+,\"message\":$_svcrun_m}"
}

# svcrun_fail MESSAGE [CODE] fails the op: it prints {"ok":false,...} (svcrun
# takes the message from it, for every op), says MESSAGE on stderr and exits
# with CODE (default 1). Call it directly, not in $(...), or only the
# subshell exits.
svcrun_fail() {
	printf '{"ok":false,"message":%s}\n' "$(svcrun_json_string "$1")"
	printf '%s: %s\n' "${OARBANK_SERVICE:-svcrun.sh}" "$1" >&2
	exit "${2:-1}"
}

# svcrun_valid_id ID succeeds when ID may be an owned object's id: not empty,
# at most 256 bytes, not starting with '-', no white space or control
# characters. (svcrun also refuses non-printable Unicode characters such as
# U+202E; keep ids to letters, digits and . _ : - to be safe.)
svcrun_valid_id() {
	case $1 in '' | -*) return 1 ;; esac
	[ "$(printf '%s' "$1" | LC_ALL=C wc -c)" -le 256 ] || return 1
	! printf '%s\n' "$1" | LC_ALL=C grep -q '[[:space:][:cntrl:]]'
}

# svcrun_labels ATTEMPT prints the JSON object of the three labels of an
# object this service made for ATTEMPT on this node.
svcrun_labels() {
	printf '{"oarbank.attempt_id":%s,"oarbank.node":%s,"oarbank.service":%s}' \
		"$(svcrun_json_string "$1")" "$(svcrun_json_string "${OARBANK_NODE_ID-}")" \
		"$(svcrun_json_string "$(svcrun_service_label)")"
}

# svcrun_service_label prints this service's oarbank.service label,
# <module>/<service>.
svcrun_service_label() {
	printf '%s/%s' "${OARBANK_MODULE-}" "${OARBANK_SERVICE-}"
}

# svcrun_owns NODE SERVICE ATTEMPT succeeds when labels with these values
# are this node's and this service's, with an attempt.
svcrun_owns() {
	[ -n "${3-}" ] && [ "$1" = "${OARBANK_NODE_ID-}" ] && [ "$2" = "$(svcrun_service_label)" ]
}

# Owned lists are built object by object, then printed:
#
#	svcrun_owned_reset
#	svcrun_owned_add ID KIND [--attempt A] [--label K V]... [--created-at T] [--busy true|false]
#	svcrun_owned_print
#
# --attempt A gives the object the three labels of this node and service.
svcrun_owned_reset() { SVCRUN_OWNED=; }

svcrun_owned_add() {
	svcrun_valid_id "${1-}" || { _svcrun_err "invalid object id '${1-}'"; return; }
	case ${2-} in
	container | vm | volume | process | other) ;;
	*) _svcrun_err "object $1: kind must be container, vm, volume, process or other, not '${2-}'"; return ;;
	esac
	_svcrun_o="{\"id\":$(svcrun_json_string "$1"),\"kind\":\"$2\"" _svcrun_l= _svcrun_x=
	shift 2
	while [ $# -gt 0 ]; do
		case $1 in
		--attempt) _svcrun_l=$(svcrun_labels "${2-}"); _svcrun_l=${_svcrun_l#\{}; _svcrun_l=${_svcrun_l%\}}
			_svcrun_x="$_svcrun_x${_svcrun_x:+,}$_svcrun_l"; shift 2 ;;
		--label) [ $# -ge 3 ] || { _svcrun_err "--label needs a key and a value"; return; }
			_svcrun_x="$_svcrun_x${_svcrun_x:+,}$(svcrun_json_string "$2"):$(svcrun_json_string "$3")"; shift 3 ;;
		--created-at) printf '%s\n' "${2-}" | grep -Eqx '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})' ||
			{ _svcrun_err "created-at must be an RFC 3339 time, not '${2-}'"; return; }
			_svcrun_o="$_svcrun_o,\"created_at\":\"$2\""; shift 2 ;;
		--busy) _svcrun_bool busy "${2-}" || return; _svcrun_o="$_svcrun_o,\"busy\":$2"; shift 2 ;;
		*) _svcrun_err "svcrun_owned_add: unknown argument '$1'"; return ;;
		esac
	done
	SVCRUN_OWNED="${SVCRUN_OWNED-}${SVCRUN_OWNED:+,}$_svcrun_o,\"labels\":{$_svcrun_x}}"
}

svcrun_owned_print() { printf '{"objects":[%s]}\n' "${SVCRUN_OWNED-}"; }

# svcrun_setting KEY [DEFAULT] prints the value of the top-level KEY of
# $OARBANK_SETTINGS_FILE: a string unescaped (\uXXXX too, as UTF-8), a
# number as written, a boolean as true or false. An absent key, or null,
# prints DEFAULT and succeeds when one is given, else prints nothing and
# returns 1. An object or array value is not handled (use the Go SDK or jq):
# it returns 2 with a message, as does a file that is not a JSON object.
# Keys are matched after unescaping; of duplicate keys the last wins.
svcrun_setting() {
	svcrun_json_get "${OARBANK_SETTINGS_FILE:?OARBANK_SETTINGS_FILE is not set}" "$@"
}

# svcrun_tool NAME [DEFAULT] prints the absolute path of the granted tool
# NAME of $OARBANK_TOOLS_FILE, as svcrun_setting does.
svcrun_tool() {
	svcrun_json_get "${OARBANK_TOOLS_FILE:?OARBANK_TOOLS_FILE is not set}" "$@"
}

# svcrun_json_get FILE KEY [DEFAULT] reads the top-level KEY of the JSON
# object in FILE, as svcrun_setting does: for the module's own small JSON
# files, such as an object's labels.
svcrun_json_get() {
	_svcrun_f=$1
	shift
	_svcrun_json "$_svcrun_f" "$1" && return
	_svcrun_rc=$?
	[ "$_svcrun_rc" = 1 ] && [ $# -ge 2 ] || return "$_svcrun_rc"
	printf '%s' "$2"
}

# svcrun_json_at FILE STEP... prints the value at a path in the JSON object
# in FILE, each STEP a key of an object or an index (from 0) of an array,
# as svcrun_json_get prints it; absent or null returns 1. For a job's
# $OARBANK_SERVICES_FILE:
#
#	sock=$(svcrun_json_at "$OARBANK_SERVICES_FILE" services 0 attrs socket)
#	svc=$(svcrun_json_at "$OARBANK_SERVICES_FILE" labels oarbank.service)
svcrun_json_at() {
	_svcrun_f=$1 _svcrun_p=
	shift
	[ $# -ge 1 ] || { _svcrun_err "svcrun_json_at: give FILE and at least one step"; return; }
	# The steps travel to awk joined by a byte no key of ours holds.
	for _svcrun_s in "$@"; do
		_svcrun_p="$_svcrun_p${_svcrun_p:+$(printf '\034')}$_svcrun_s"
	done
	_svcrun_json "$_svcrun_f" "$_svcrun_p"
}

# _svcrun_json FILE PATH prints the value at PATH (steps joined by \034);
# 1 when it is absent or null, 2 when FILE is not a JSON object or the
# value is an object or array.
_svcrun_json() {
	_svcrun_f=$1
	shift
	_svcrun_v=$(LC_ALL=C awk -v want="$1" '
	# Not > "/dev/stderr": an awk that opens it as a file meets the sandbox,
	# which grants no /dev but null, zero and urandom.
	function warn(m) { print "svcrun.sh: " m | "cat 1>&2"; close("cat 1>&2") }
	function fail(m) { warn(FILENAME ": " m); bad = 1; exit 2 }
	function ws() { while (p <= n && index(" \t\r\n", substr(s, p, 1))) p++ }
	function utf8(c) {
		if (c < 128) return sprintf("%c", c)
		if (c < 2048) return sprintf("%c%c", 192 + int(c / 64), 128 + c % 64)
		if (c < 65536) return sprintf("%c%c%c", 224 + int(c / 4096), 128 + int(c / 64) % 64, 128 + c % 64)
		return sprintf("%c%c%c%c", 240 + int(c / 262144), 128 + int(c / 4096) % 64, 128 + int(c / 64) % 64, 128 + c % 64)
	}
	function hex4(   h, i, v) {
		h = substr(s, p, 4); v = 0
		if (h !~ /^[0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f][0-9A-Fa-f]$/) fail("bad \\u escape")
		for (i = 1; i <= 4; i++) v = v * 16 + index("0123456789abcdef", tolower(substr(h, i, 1))) - 1
		p += 4
		return v
	}
	function str(   out, c, e, u, lo) {
		p++; out = ""
		while (p <= n) {
			c = substr(s, p, 1)
			if (c == "\"") { p++; return out }
			if (c != "\\") { out = out c; p++; continue }
			e = substr(s, p + 1, 1); p += 2
			if (e == "n") out = out "\n"; else if (e == "t") out = out "\t"
			else if (e == "r") out = out "\r"; else if (e == "b") out = out "\b"
			else if (e == "f") out = out "\f"; else if (e == "/" || e == "\\" || e == "\"") out = out e
			else if (e == "u") {
				u = hex4()
				if (u >= 55296 && u < 56320 && substr(s, p, 2) == "\\u") {
					p += 2; lo = hex4(); u = 65536 + (u - 55296) * 1024 + (lo - 56320)
				}
				out = out utf8(u)
			} else fail("bad escape \\" e)
		}
		fail("unterminated string")
	}
	# skip passes over one value; kind says what it was.
	function skip(   c, depth, start) {
		ws(); c = substr(s, p, 1); start = p
		if (c == "\"") { val = str(); kind = "string"; return }
		if (c == "{" || c == "[") {
			depth = 0
			while (p <= n) {
				c = substr(s, p, 1)
				if (c == "\"") { str(); continue }
				if (c == "{" || c == "[") depth++
				if (c == "}" || c == "]") depth--
				p++
				if (depth == 0) { kind = "composite"; return }
			}
			fail("unterminated object or array")
		}
		while (p <= n && index(",}] \t\r\n", substr(s, p, 1)) == 0) p++
		val = substr(s, start, p - start)
		if (val == "true" || val == "false") kind = "bool"
		else if (val == "null") kind = "null"
		else if (val ~ /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/) kind = "number"
		else fail("bad value " val)
	}
	# at reads the value at p, d steps of the path down: the one wanted
	# when d is the length of the path, else the object or array to go into;
	# every other value is skipped.
	function at(d,   c, key, i) {
		ws()
		if (d == np) { skip(); found = 1; fkind = kind; fval = val; return }
		c = substr(s, p, 1)
		if (c == "{") {
			p++; ws()
			if (substr(s, p, 1) == "}") { p++; return }
			while (1) {
				ws()
				if (substr(s, p, 1) != "\"") fail("expected a key")
				key = str(); ws()
				if (substr(s, p, 1) != ":") fail("expected : after key " key)
				p++
				if (key == step[d + 1]) at(d + 1); else skip()
				ws(); c = substr(s, p, 1); p++
				if (c == ",") continue
				if (c == "}") return
				fail("expected , or }")
			}
		}
		if (c == "[") {
			p++; ws()
			if (substr(s, p, 1) == "]") { p++; return }
			for (i = 0; ; i++) {
				if (step[d + 1] == i "") at(d + 1); else skip()
				ws(); c = substr(s, p, 1); p++
				if (c == ",") continue
				if (c == "]") return
				fail("expected , or ]")
			}
		}
		skip()
	}
	{ s = s $0 "\n" }
	END {
		if (bad) exit 2
		n = length(s); p = 1; ws()
		if (substr(s, p, 1) != "{") fail("not a JSON object")
		np = split(want, step, "\034"); found = 0
		at(0)
		if (!found || fkind == "null") exit 1
		if (fkind == "composite") { gsub("\034", " ", want); warn(want " is an object or array, which svcrun.sh does not read"); exit 2 }
		# The x keeps trailing newlines of the value from $(...).
		printf "%sx", fval
	}' "$_svcrun_f")
	_svcrun_rc=$?
	[ "$_svcrun_rc" = 0 ] || return "$_svcrun_rc"
	printf '%s' "${_svcrun_v%x}"
}

# Daemons. A daemon is known by its pid file, which lies under the module
# data dir like every file of the module.

# svcrun_daemon_start PIDFILE LOGFILE CMD [ARGS...] starts CMD as a daemon
# unless the one of PIDFILE is alive (then it returns 1): in a session of
# its own (setsid), stdin /dev/null, stdout and stderr appended to LOGFILE
# (never the op's pipes, which svcrun would wait for), its pid in PIDFILE.
svcrun_daemon_start() {
	_svcrun_pf=$1 _svcrun_lf=$2
	shift 2
	svcrun_daemon_alive "$_svcrun_pf" && return 1
	if command -v setsid >/dev/null 2>&1; then
		# A background job of a non-interactive shell is no group leader,
		# so setsid does not fork again: $! is the daemon's pid.
		setsid "$@" </dev/null >>"$_svcrun_lf" 2>&1 &
		_svcrun_new=$!
		# Return only once it leads its own session (field 6 of
		# /proc/PID/stat, where there is one): an op that ended first
		# would find it still in the op's process group.
		_svcrun_i=0
		while [ -r "/proc/$_svcrun_new/stat" ] && [ $_svcrun_i -lt 200 ] &&
			[ "$(cut -d' ' -f6 "/proc/$_svcrun_new/stat" 2>/dev/null)" != "$_svcrun_new" ]; do
			_svcrun_i=$((_svcrun_i + 1))
			sleep 0.01
		done
	else
		"$@" </dev/null >>"$_svcrun_lf" 2>&1 &
		_svcrun_new=$!
	fi
	if ! { printf '%s\n' "$_svcrun_new" >"$_svcrun_pf.tmp" && mv -f "$_svcrun_pf.tmp" "$_svcrun_pf"; }; then
		# Without its pid file no later op would find it, and the next
		# start would run a second one: it goes.
		kill -KILL "-$_svcrun_new" 2>/dev/null || kill -KILL "$_svcrun_new" 2>/dev/null
		wait "$_svcrun_new" 2>/dev/null
		printf 'svcrun_daemon_start: cannot write the pid file %s: the daemon was killed\n' "$_svcrun_pf" >&2
		return 2
	fi
}

# svcrun_daemon_pid PIDFILE prints the pid of PIDFILE; it fails when there is
# none or it is garbled.
svcrun_daemon_pid() {
	[ -f "$1" ] || return 1
	_svcrun_pid=$(cat "$1" 2>/dev/null) || return 1
	case $_svcrun_pid in '' | *[!0-9]* | 0*) return 1 ;; esac
	printf '%s' "$_svcrun_pid"
}

# _svcrun_pid_alive PID: the process exists (kill -0, EPERM included) and is
# not a zombie.
_svcrun_pid_alive() {
	if ! kill -0 "$1" 2>/dev/null; then
		# kill -0 fails for another user's process too; /proc tells.
		[ -d "/proc/$1" ] || return 1
	fi
	if [ -r "/proc/$1/stat" ]; then
		_svcrun_st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
		_svcrun_st=${_svcrun_st##*) }
		case $_svcrun_st in Z* | X*) return 1 ;; esac
	fi
	return 0
}

# svcrun_daemon_alive PIDFILE succeeds when the daemon of PIDFILE runs.
svcrun_daemon_alive() {
	_svcrun_pid=$(svcrun_daemon_pid "$1") || return 1
	_svcrun_pid_alive "$_svcrun_pid"
}

_svcrun_sleep() { sleep 0.05 2>/dev/null || sleep 1; }

# svcrun_daemon_wait PIDFILE [SECONDS] waits until the daemon of PIDFILE is
# gone (the default bound is 60 s); it returns 1 if it is still alive then.
svcrun_daemon_wait() {
	_svcrun_pid=$(svcrun_daemon_pid "$1") || return 0
	_svcrun_wait_pid "$_svcrun_pid" "${2:-60}"
}

_svcrun_wait_pid() {
	# About 20 looks a second; the bound counts looks, not the clock.
	_svcrun_n=$(($2 * 20))
	while _svcrun_pid_alive "$1"; do
		[ "$_svcrun_n" -gt 0 ] || return 1
		_svcrun_n=$((_svcrun_n - 1))
		_svcrun_sleep
	done
}

# _svcrun_signal SIG PID signals PID's process group when PID leads one (the
# daemon's own children end with it), else PID.
_svcrun_signal() {
	_svcrun_pg=
	if [ -r "/proc/$2/stat" ]; then
		_svcrun_pg=$(cat "/proc/$2/stat" 2>/dev/null)
		_svcrun_pg=${_svcrun_pg##*) }
		set -- "$1" "$2" $_svcrun_pg
		_svcrun_pg=${5-}
		set -- "$1" "$2"
	fi
	if [ "$_svcrun_pg" = "$2" ]; then
		kill -s "$1" -- "-$2" 2>/dev/null || kill -s "$1" "$2" 2>/dev/null
	else
		kill -s "$1" "$2" 2>/dev/null
	fi
}

# svcrun_daemon_stop PIDFILE [GRACE_SECONDS [SIGNAL]] stops the daemon of
# PIDFILE: SIGNAL (default TERM; postgres shuts down fast on INT), then
# after GRACE_SECONDS (default 10) SIGKILL, and removes the pid file. It sets SVCRUN_STOPPED (false when it was not running) and
# SVCRUN_ESCALATED (true when SIGKILL was needed), and fails only when the
# daemon outlives SIGKILL by 30 s.
svcrun_daemon_stop() {
	SVCRUN_STOPPED=false SVCRUN_ESCALATED=false
	if ! svcrun_daemon_alive "$1"; then
		rm -f "$1"
		return 0
	fi
	_svcrun_p=$_svcrun_pid
	SVCRUN_STOPPED=true
	_svcrun_signal "${3:-TERM}" "$_svcrun_p"
	if ! _svcrun_wait_pid "$_svcrun_p" "${2:-10}"; then
		SVCRUN_ESCALATED=true
		_svcrun_signal KILL "$_svcrun_p"
		_svcrun_wait_pid "$_svcrun_p" 30 || return 1
	fi
	rm -f "$1"
}
