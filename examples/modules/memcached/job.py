#!/usr/bin/python3 -IB
"""job.py: a job that uses memcached, as `svcrun run --capability
memcached -- examples/modules/memcached/job.py` runs it. Everything it
needs comes from $OARBANK_SERVICES_FILE: the socket (the fingerprint's
attr "socket") and the three labels, which it stores with the key it
makes, oarbank.obj.job-<attempt>, so that the service's list_owned
reports it and svcrun reaps it once the attempt has ended. The lease asks
for one capability, which one service gives: the first of "services"."""

import datetime
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "lib"))
import mcclient  # noqa: E402

path = os.environ.get("OARBANK_SERVICES_FILE")
if not path:
    sys.exit("job: OARBANK_SERVICES_FILE is not set: run me with svcrun run --capability memcached -- job.py")
with open(path) as f:
    service = json.load(f)["services"][0]
sock = service["attrs"]["socket"]
labels = service["labels"]
attempt = labels["oarbank.attempt_id"]

key = f"{mcclient.OBJECT_PREFIX}job-{attempt}"
value = {
    "labels": labels,
    "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z"),
    "greeting": f"hello from {attempt}",
}
with mcclient.Client(sock) as c:
    c.set(key, json.dumps(value).encode())
    got = json.loads(c.get(key))
print(f"job: made {key} on {service['name']} at {sock}: {got['greeting']}")
