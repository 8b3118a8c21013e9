#!/bin/sh
# job.sh: a job that uses redis, as `svcrun run --capability redis -- sh
# job.sh` runs it. Everything it needs comes from $OARBANK_SERVICES_FILE:
# the socket (the fingerprint's attr "socket") and the three labels, which
# it puts on the key it makes, oarbank:obj:job-<attempt>, so that the
# service's list_owned reports it and svcrun reaps it once the attempt has
# ended. The lease asks for one capability, which one service gives: the
# first of "services".
set -eu
. "${0%/*}/lib/svcrun.sh"

f=${OARBANK_SERVICES_FILE:?not set: run me with svcrun run --capability redis -- sh job.sh}
get() { svcrun_json_at "$f" services 0 "$@" || { echo "job: $f has no services 0 $*" >&2; exit 1; }; }
sock=$(get attrs socket)
attempt=$(get labels oarbank.attempt_id)
node=$(get labels oarbank.node)
service=$(get labels oarbank.service)

key=oarbank:obj:job-$attempt
out=$(redis-cli -s "$sock" HSET "$key" oarbank.attempt_id "$attempt" oarbank.node "$node" \
	oarbank.service "$service" greeting "hello from $attempt")
case $out in *[!0-9]* | '') echo "job: HSET $key: $out" >&2; exit 1 ;; esac
echo "job: made $key on $service at $sock: $(redis-cli -s "$sock" HGET "$key" greeting)"
