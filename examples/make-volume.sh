#!/bin/sh
# make-volume.sh: what a job of the demo module might do. Run under
# `svcrun run`, it creates a "volume" owned by demo/kv, labelled with the
# job's attempt, in the module's data dir of the example node. Once the job
# has ended, its attempt is no longer live and the next reap round (every
# 30 s in examples/node.toml) destroys the volume.
set -eu
: "${OARBANK_ATTEMPT_ID:?run me under svcrun run}"
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/state/modules/demo/objects/vol-$OARBANK_ATTEMPT_ID
mkdir -p "$dir"
printf '%s' "$OARBANK_ATTEMPT_ID" >"$dir/attempt_id"
printf '%s' example-node >"$dir/node"
printf '%s' demo/kv >"$dir/service"
echo "created $dir"
