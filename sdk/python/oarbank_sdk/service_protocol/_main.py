"""main: one op of a service or probe, from the command line to the one
JSON document on stdout and the exit status (docs/protocol.md)."""

from __future__ import annotations

import abc
import json
import os
import sys
import traceback
from typing import Any, BinaryIO, Mapping, Sequence, TextIO

from ._env import Call, Env, NotRunBySvcrun
from ._results import Fingerprint, OpResult, OwnedList, Status, valid_object_id

OPS = ("fingerprint", "start", "stop", "status", "ready", "list_owned", "destroy")

# Exit statuses of main besides 0.
EXIT_FAILED = 1
EXIT_USAGE = 2


class Probe(abc.ABC):
    """A probe's one op."""

    @abc.abstractmethod
    def fingerprint(self, call: Call) -> Fingerprint: ...


class Service(Probe):
    """A service's seven ops. Each returns its result, or raises to fail
    the op (OpFailed for an exit status other than 1). A service's
    fingerprint must set running."""

    @abc.abstractmethod
    def start(self, call: Call) -> OpResult: ...

    @abc.abstractmethod
    def stop(self, call: Call) -> OpResult: ...

    @abc.abstractmethod
    def status(self, call: Call) -> Status: ...

    @abc.abstractmethod
    def ready(self, call: Call) -> Status: ...

    @abc.abstractmethod
    def list_owned(self, call: Call) -> OwnedList: ...

    @abc.abstractmethod
    def destroy(self, call: Call, id: str, force: bool) -> OpResult:
        """Remove the owned object id; force: even if it looks busy. An id
        already gone is a success with changed False."""


class OpFailed(Exception):
    """Fails the op with message and exit status code (1 to 125), for a
    service whose callers tell its failures apart."""

    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code if 1 <= code <= 125 else EXIT_FAILED


class _Usage(Exception):
    pass


# What each op must return.
_RESULT = {
    "fingerprint": Fingerprint,
    "start": OpResult,
    "stop": OpResult,
    "destroy": OpResult,
    "status": Status,
    "ready": Status,
    "list_owned": OwnedList,
}


def main(service: Service) -> None:
    """Run the op of sys.argv of service and exit."""
    sys.exit(_main(service, probe=False))


def main_probe(probe: Probe) -> None:
    """Run the op of sys.argv of probe (only fingerprint) and exit."""
    sys.exit(_main(probe, probe=True))


def _main(impl: Probe, probe: bool) -> int:
    # The document goes to the real stdout, kept aside; while the op runs,
    # file descriptor 1 is stderr, so that a stray print, or a program the
    # op runs without capturing its output, cannot corrupt the document.
    # The copy is not inherited: a daemon started by the op cannot hold
    # the op's stdout.
    sys.stdout.flush()
    doc_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    with os.fdopen(doc_fd, "wb") as out:
        return run(impl, sys.argv[1:], os.environ, out, sys.stderr, probe=probe)


def run(
    impl: Probe,
    args: Sequence[str],
    environ: Mapping[str, str],
    stdout: BinaryIO,
    stderr: TextIO,
    probe: bool = False,
) -> int:
    """Run the op of args (the op, then its arguments), write its one
    document on stdout and return the exit status: 0 for a result (and an
    OpResult with ok true), 1 for a failure (or OpFailed's code), 2 for a
    wrong command line."""
    op = args[0] if args and args[0] in OPS else ""
    code = 0
    try:
        doc = _dispatch(impl, probe, args, environ, stderr)
        if isinstance(doc, OpResult) and not doc.ok:
            code = EXIT_FAILED
        data = doc.to_json()
    except _Usage as e:
        code, data = EXIT_USAGE, _failure(op, str(e))
        print(f"{op or 'usage'}: {e}", file=stderr)
    except (OpFailed, NotRunBySvcrun) as e:
        code, data = getattr(e, "code", EXIT_FAILED), _failure(op, str(e))
        print(f"{op}: {e}", file=stderr)
    except SystemExit as e:
        # sys.exit in a method would leave stdout empty.
        c = e.code if isinstance(e.code, int) and 1 <= e.code <= 125 else EXIT_FAILED
        msg = f"{op} called sys.exit({e.code!r}) instead of returning a result or raising"
        code, data = c, _failure(op, msg)
        print(f"{op}: {msg}", file=stderr)
    except Exception as e:
        # A fault of the module: the trace is for people, on stderr.
        msg = str(e) or type(e).__name__
        code, data = EXIT_FAILED, _failure(op, msg)
        traceback.print_exc(file=stderr)
        print(f"{op}: {msg}", file=stderr)
    stderr.flush()
    try:
        stdout.write(json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n")
        stdout.flush()
    except OSError:
        return code or EXIT_FAILED
    return code


def _failure(op: str, message: str) -> dict[str, Any]:
    if op in ("start", "stop", "destroy"):
        return OpResult(ok=False, message=message).to_json()
    return {"message": message}


def _dispatch(impl: Probe, probe: bool, args: Sequence[str], environ: Mapping[str, str], stderr: TextIO):
    if not args:
        raise _Usage("no op given")
    op, rest = args[0], list(args[1:])
    if op not in OPS:
        raise _Usage(f"unknown op {op!r}: want one of {', '.join(OPS)}")
    if probe and op != "fingerprint":
        raise _Usage(f"a probe implements only fingerprint, not {op}")
    call_args: list[Any] = []
    if op == "destroy":
        if len(rest) == 1:
            force = False
        elif len(rest) == 2 and rest[1] == "--force":
            force = True
        else:
            raise _Usage(f"destroy takes an object id and optionally --force, got {rest!r}")
        try:
            valid_object_id(rest[0])
        except ValueError as e:
            raise _Usage(str(e)) from None
        call_args = [rest[0], force]
    elif rest:
        raise _Usage(f"{op} takes no arguments, got {rest!r}")
    call = Call.load(Env.from_environ(environ), op, stderr)
    v = getattr(impl, op)(call, *call_args)
    want = _RESULT[op]
    if not isinstance(v, want):
        raise TypeError(f"{op} returned {type(v).__name__}, want {want.__name__}")
    if op == "fingerprint" and not probe and v.running is None:
        raise ValueError("a service's fingerprint must say whether it is running (Fingerprint.running is None)")
    return v
