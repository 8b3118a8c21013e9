#!/bin/sh
# job.sh: a job that needs a JDK, as `svcrun run --capability jdk -- sh
# job.sh` runs it. The probe that established the capability put the java
# it found, its version and vendor in its attrs; the job reads them from
# $OARBANK_SERVICES_FILE and runs that java. The lease asks for one
# capability, which one probe establishes: the first of "probes".
set -eu
. "${0%/*}/lib/svcrun.sh"

f=${OARBANK_SERVICES_FILE:?not set: run me with svcrun run --capability jdk -- sh job.sh}
get() { svcrun_json_at "$f" probes 0 "$@" || { echo "job: $f has no probes 0 $*" >&2; exit 1; }; }
java=$(get attrs java)
version=$(get attrs version)
echo "job: java $version ($(get attrs vendor)) at $java on node $(svcrun_json_at "$f" node_id)"
# -XX:-UsePerfData: no hsperfdata file in /tmp.
"$java" -XX:-UsePerfData -version 2>&1 | grep -q "\"$version\"" ||
	{ echo "job: $java -version does not say $version" >&2; exit 1; }
