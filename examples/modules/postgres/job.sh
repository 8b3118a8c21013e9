#!/bin/sh
# job.sh: a job that uses postgres, as `svcrun run --capability postgres --
# sh job.sh` runs it. Everything it needs comes from $OARBANK_SERVICES_FILE:
# the socket directory, port and superuser (the fingerprint's attrs
# socket_dir, port, superuser) and the three labels. It creates the
# database job_<attempt> with the labels in its comment, so that the
# service's list_owned reports it and svcrun reaps it once the attempt has
# ended. The lease asks for one capability, which one service gives: the
# first of "services".
set -eu
. "${0%/*}/lib/svcrun.sh"

f=${OARBANK_SERVICES_FILE:?not set: run me with svcrun run --capability postgres -- sh job.sh}
get() { svcrun_json_at "$f" services 0 "$@" || { echo "job: $f has no services 0 $*" >&2; exit 1; }; }
sockdir=$(get attrs socket_dir)
port=$(get attrs port)
superuser=$(get attrs superuser)
attempt=$(get labels oarbank.attempt_id)
node=$(get labels oarbank.node)
service=$(get labels oarbank.service)

db=job_$attempt
# A database name has at most 63 bytes; postgres would cut a longer one.
[ "$(printf '%s' "$db" | LC_ALL=C wc -c)" -le 63 ] || { echo "job: attempt id too long for a database name: $attempt" >&2; exit 1; }
# Names and labels reach SQL only as psql variables, quoted by psql
# (:"db" an identifier, :'comment' a literal).
printf '%s\n' 'CREATE DATABASE :"db";' 'COMMENT ON DATABASE :"db" IS :'\''comment'\'';' |
	psql -X -q -v ON_ERROR_STOP=1 -h "$sockdir" -p "$port" -U "$superuser" -d postgres \
		-v db="$db" -v comment="oarbank.attempt_id=$attempt oarbank.node=$node oarbank.service=$service"
echo "job: made database $db on $service at $sockdir: $(psql -X -At -h "$sockdir" -p "$port" -U "$superuser" -d "$db" -c 'SELECT current_database()')"
