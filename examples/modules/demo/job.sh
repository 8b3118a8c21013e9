#!/bin/sh
# job.sh: a job that uses the demo's kv service, as `svcrun run
# --capability kv -- sh examples/modules/demo/job.sh` runs it. Its objects
# are directories in the attr "objects_dir" of the fingerprint, each with
# its three labels in files attempt_id, node and service; the job makes
# job-<attempt> with the labels of $OARBANK_SERVICES_FILE, which
# list_owned then reports and svcrun reaps once the attempt has ended. The
# lease asks for one capability, which one service gives: the first of
# "services". The demo ships no svcrun.sh: the job reads the file with the
# repository's sdk/sh/svcrun.sh.
set -eu
. "${0%/*}/../../../sdk/sh/svcrun.sh"

f=${OARBANK_SERVICES_FILE:?not set: run me with svcrun run --capability kv -- sh job.sh}
get() { svcrun_json_at "$f" services 0 "$@" || { echo "job: $f has no services 0 $*" >&2; exit 1; }; }
dir=$(get attrs objects_dir)
attempt=$(get labels oarbank.attempt_id)
obj=$dir/job-$attempt
mkdir "$obj"
for l in attempt_id node service; do
	get labels "oarbank.$l" >"$obj/$l"
done
echo "job: made $obj for $(get labels oarbank.service)"
