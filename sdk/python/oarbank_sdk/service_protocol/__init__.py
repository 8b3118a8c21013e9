"""oarbank_sdk.service_protocol: the Python SDK for the services and
probes of a svcrun module, service protocol 1 (docs/protocol.md).

Standard library only (Python 3.11), so that a bundle needs nothing
installed on the node but Debian's python3: the package is copied into
the bundle (docs/writing-a-module.md, "In Python").

A service subclasses Service and calls main from its executable; a probe
subclasses Probe and calls main_probe. main reads the op and its
arguments, the op's environment (Env) and its settings, tools and limits
files (Call), runs the one method of the op, and prints exactly one JSON
document: the result, or on a failure {"ok": false, "message": ...} for
start, stop and destroy and {"message": ...} for the others. The exit
status follows: 0 for a result, 1 for a method that raised (or
OpFailed's code, or an OpResult with ok False), 2 for a wrong command
line. While the method runs, stdout is stderr.

The results (Fingerprint, OpResult, Status, OwnedList, Object, Reserve)
are dataclasses with slots whose fields mirror the schemas
(schemas/service-*-1.schema.json): an unknown field is a TypeError, a
missing required one too, and a value of the wrong type or range is an
error when the result is made.

Daemon is the pid-file daemon every service's start and stop repeat:
detached with setsid, its stdio away from the op's pipes.

PROTOCOL_VERSION is the service protocol the package speaks; the major
number of __version__ is always it, and a new protocol is a new major
version.
"""

from ._daemon import Credential, Daemon, alive
from ._env import Call, Env, Limits, NotRunBySvcrun
from ._main import EXIT_FAILED, EXIT_USAGE, OPS, OpFailed, Probe, Service, main, main_probe, run
from ._results import (
    LABEL_ATTEMPT_ID,
    LABEL_NODE,
    LABEL_SERVICE,
    MAX_OBJECT_ID_LEN,
    Fingerprint,
    Kind,
    Object,
    OpResult,
    OwnedList,
    Reserve,
    Status,
    valid_object_id,
)

PROTOCOL_VERSION = 1
__version__ = "1.0.0"

__all__ = [
    "PROTOCOL_VERSION",
    "Call",
    "Credential",
    "Daemon",
    "Env",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "Fingerprint",
    "Kind",
    "LABEL_ATTEMPT_ID",
    "LABEL_NODE",
    "LABEL_SERVICE",
    "Limits",
    "MAX_OBJECT_ID_LEN",
    "NotRunBySvcrun",
    "OPS",
    "Object",
    "OpFailed",
    "OpResult",
    "OwnedList",
    "Probe",
    "Reserve",
    "Service",
    "Status",
    "alive",
    "main",
    "main_probe",
    "run",
    "valid_object_id",
]
