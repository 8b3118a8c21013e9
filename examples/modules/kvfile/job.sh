#!/bin/sh
# job.sh: a job that uses kvfile, as `svcrun run --capability kvfile -- sh
# examples/modules/kvfile/job.sh` runs it. Everything it needs comes from
# $OARBANK_SERVICES_FILE: the socket (the fingerprint's attr "socket") and
# the attempt, for which it makes the bucket job-<attempt> (the daemon
# labels it with the attempt, this node and its service, which list_owned
# then reports and svcrun reaps once the attempt has ended), and stores a
# key in it. The lease asks for one capability, which one service gives:
# the first of "services". kvfile is written in Go and ships no svcrun.sh:
# the job reads the file with the repository's sdk/sh/svcrun.sh.
set -eu
. "${0%/*}/../../../sdk/sh/svcrun.sh"

f=${OARBANK_SERVICES_FILE:?not set: run me with svcrun run --capability kvfile -- sh job.sh}
get() { svcrun_json_at "$f" services 0 "$@" || { echo "job: $f has no services 0 $*" >&2; exit 1; }; }
sock=$(get attrs socket)
attempt=$(get labels oarbank.attempt_id)
service=$(get labels oarbank.service)

bucket=job-$attempt
kv() { curl -sS --fail-with-body --unix-socket "$sock" "$@"; }
kv -X PUT "http://kvfile/buckets/$bucket?attempt=$attempt" >/dev/null
kv -X PUT "http://kvfile/buckets/$bucket/greeting" --data-binary "hello from $attempt" >/dev/null
echo "job: made bucket $bucket on $service at $sock: $(kv "http://kvfile/buckets/$bucket/greeting")"
