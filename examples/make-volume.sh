#!/bin/sh
# make-volume.sh: what a job of the demo module might do. Run under
# `svcrun run --capability kv`, it creates a "volume" owned by demo/kv,
# labelled with the job's attempt, in the objects dir demo/kv names in its
# fingerprint's attrs (read from $OARBANK_SERVICES_FILE). Once the job has
# ended, its attempt is no longer live and the next reap round (every 30 s
# in examples/node.toml, or `svcrun reap`) destroys the volume.
set -eu
: "${OARBANK_SERVICES_FILE:?run me under svcrun run --capability kv}"
objects=$(sed -n 's/.*"objects_dir": *"\([^"]*\)".*/\1/p' "$OARBANK_SERVICES_FILE" | head -n 1)
: "${objects:?demo/kv named no objects_dir in $OARBANK_SERVICES_FILE}"
dir=$objects/vol-$OARBANK_ATTEMPT_ID
mkdir -p "$dir"
printf '%s' "$OARBANK_ATTEMPT_ID" >"$dir/attempt_id"
printf '%s' "$OARBANK_NODE_ID" >"$dir/node"
printf '%s' demo/kv >"$dir/service"
echo "created $dir"
