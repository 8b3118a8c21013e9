#!/bin/sh
# job.sh: the job of good-job and the flaw-job-* modules: it makes the
# object job-<attempt> in the service's objects_dir with the three labels
# of $OARBANK_SERVICES_FILE.
set -eu
. "${0%/*}/../../../sdk/sh/svcrun.sh"
get() { svcrun_json_at "$OARBANK_SERVICES_FILE" services 0 "$@"; }
dir=$(get attrs objects_dir)
attempt=$(get labels oarbank.attempt_id)
mkdir "$dir/job-$attempt"
for l in attempt_id node service; do
	get labels "oarbank.$l" >"$dir/job-$attempt/$l"
done
