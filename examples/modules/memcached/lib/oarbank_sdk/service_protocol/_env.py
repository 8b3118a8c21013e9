"""What an op knows about itself: its environment (docs/protocol.md,
Environment) and the settings, tools and limits files svcrun writes in the
module data dir before the module's first op."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping, TextIO

from ._results import LABEL_ATTEMPT_ID, LABEL_NODE, LABEL_SERVICE

VAR_MODULE_DATA = "OARBANK_MODULE_DATA"
VAR_MODULE = "OARBANK_MODULE"
VAR_SERVICE = "OARBANK_SERVICE"
VAR_NODE_ID = "OARBANK_NODE_ID"
VAR_PLATFORM = "OARBANK_PLATFORM"
VAR_SETTINGS_FILE = "OARBANK_SETTINGS_FILE"
VAR_TOOLS_FILE = "OARBANK_TOOLS_FILE"
VAR_LIMITS_FILE = "OARBANK_LIMITS_FILE"


class NotRunBySvcrun(Exception):
    """A variable svcrun always sets is missing: the op was run by hand."""


@dataclass(slots=True, frozen=True)
class Env:
    """What the op's environment says about it."""

    data: str  # OARBANK_MODULE_DATA: the module data dir
    module: str  # OARBANK_MODULE
    service: str  # OARBANK_SERVICE: the service's own name, or the probe's
    node_id: str  # OARBANK_NODE_ID
    platform: str = ""  # OARBANK_PLATFORM: linux, macos or windows
    settings_file: str = ""  # OARBANK_SETTINGS_FILE
    tools_file: str = ""  # OARBANK_TOOLS_FILE
    limits_file: str = ""  # OARBANK_LIMITS_FILE

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Env:
        """Read the op's environment (os.environ by default)."""
        e = os.environ if environ is None else environ
        for name in (VAR_MODULE_DATA, VAR_MODULE, VAR_SERVICE, VAR_NODE_ID):
            if not e.get(name):
                raise NotRunBySvcrun(f"not run by svcrun: {name} is not set")
        return cls(
            data=e[VAR_MODULE_DATA],
            module=e[VAR_MODULE],
            service=e[VAR_SERVICE],
            node_id=e[VAR_NODE_ID],
            platform=e.get(VAR_PLATFORM, ""),
            settings_file=e.get(VAR_SETTINGS_FILE, ""),
            tools_file=e.get(VAR_TOOLS_FILE, ""),
            limits_file=e.get(VAR_LIMITS_FILE, ""),
        )

    @property
    def full_name(self) -> str:
        """<module>/<service>: the value of the oarbank.service label."""
        return f"{self.module}/{self.service}"

    def path(self, *elem: str) -> str:
        """A path inside the module data dir, where every file of the
        module (pid files, logs, sockets) belongs."""
        return os.path.join(self.data, *elem)

    def labels(self, attempt: str) -> dict[str, str]:
        """The three labels an object made for attempt must carry."""
        return {LABEL_ATTEMPT_ID: attempt, LABEL_NODE: self.node_id, LABEL_SERVICE: self.full_name}

    def owns(self, labels: Mapping[str, str]) -> bool:
        """Whether labels are this node's and this service's, with an
        attempt: the objects svcrun may reap for it."""
        return (
            bool(labels.get(LABEL_ATTEMPT_ID))
            and labels.get(LABEL_NODE) == self.node_id
            and labels.get(LABEL_SERVICE) == self.full_name
        )


@dataclass(slots=True, frozen=True)
class Limits:
    """The owner's caps from limits.json; None is no cap."""

    mem_gb: float | None = None
    pids: int | None = None


def read_json_object(path: str) -> dict[str, Any]:
    """The JSON object of path; a file that does not exist is {} (svcrun
    always writes the three, but an author running an op by hand need
    not)."""
    if not path:
        return {}
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}
    try:
        v = json.loads(data)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    if not isinstance(v, dict):
        raise ValueError(f"{path}: a JSON {type(v).__name__}, want an object")
    return v


@dataclass(slots=True)
class Call:
    """One op: its environment, its files, and where to log."""

    env: Env
    op: str
    settings: dict[str, Any] = field(default_factory=dict)  # settings.json, free-form
    tools: dict[str, str] = field(default_factory=dict)  # tools.json: tool name to absolute path
    limits: Limits = field(default_factory=Limits)
    log_file: TextIO = sys.stderr  # stderr: svcrun keeps its tail for the logs

    @classmethod
    def load(cls, env: Env, op: str, log_file: TextIO = sys.stderr) -> Call:
        """The call of op, with the three files read."""
        try:
            settings = read_json_object(env.settings_file)
        except ValueError as e:
            raise ValueError(f"read the settings: {e}") from None
        try:
            tools = read_json_object(env.tools_file)
            for k, v in tools.items():
                if not isinstance(v, str):
                    raise ValueError(f"{env.tools_file}: tool {k!r} is {v!r}, want a path")
        except ValueError as e:
            raise ValueError(f"read the tools: {e}") from None
        try:
            raw = read_json_object(env.limits_file)
            limits = Limits(mem_gb=_limit(raw, "mem_gb", (int, float)), pids=_limit(raw, "pids", (int,)))
        except ValueError as e:
            raise ValueError(f"read the limits: {env.limits_file}: {e}") from None
        return cls(env=env, op=op, settings=settings, tools=tools, limits=limits, log_file=log_file)

    def setting(self, key: str, default: Any = None) -> Any:
        """The setting key, or default when it is not set. With a default
        other than None the value must be of its type (an int is a float),
        or the op fails naming the setting."""
        if key not in self.settings:
            return default
        v = self.settings[key]
        if default is None:
            return v
        want = float if isinstance(default, float) else type(default)
        ok = isinstance(v, want) and (want is bool or not isinstance(v, bool))
        if want is float and isinstance(v, int) and not isinstance(v, bool):
            v, ok = float(v), True
        if not ok:
            raise ValueError(f"setting {key!r} of {self.env.settings_file}: {v!r}, want {want.__name__}")
        return v

    def log(self, msg: str) -> None:
        """Write one line to stderr."""
        print(msg, file=self.log_file, flush=True)

    # The environment's own, at hand.
    @property
    def data(self) -> str:
        return self.env.data

    def path(self, *elem: str) -> str:
        return self.env.path(*elem)

    def labels(self, attempt: str) -> dict[str, str]:
        return self.env.labels(attempt)

    def owns(self, labels: Mapping[str, str]) -> bool:
        return self.env.owns(labels)


def _limit(raw: dict[str, Any], key: str, types: tuple[type, ...]) -> Any:
    v = raw.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, types):
        raise ValueError(f"{key}: {v!r} is not a {'number' if float in types else 'whole number'}")
    return v
