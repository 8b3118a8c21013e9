"""The four documents an op prints, as typed values that cannot break
their schemas (schemas/service-*-1.schema.json): every field is a slot, so
an unknown one cannot be set; a required one has no default, so it cannot
be left out; and each value is checked when the document is made, so a
wrong one fails the module's own op with a message naming the field
instead of a protocol error in svcrun."""

from __future__ import annotations

import datetime
import enum
import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

# The three labels every object made for an attempt carries.
LABEL_ATTEMPT_ID = "oarbank.attempt_id"
LABEL_NODE = "oarbank.node"
LABEL_SERVICE = "oarbank.service"

MAX_OBJECT_ID_LEN = 256
_MAX_INT64 = 2**63 - 1


class Kind(str, enum.Enum):
    """What an owned object is."""

    CONTAINER = "container"
    VM = "vm"
    VOLUME = "volume"
    PROCESS = "process"
    OTHER = "other"


def _text(where: str, v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{where}: {type(v).__name__} {v!r}, want str")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as e:
        # A lone surrogate: svcrun refuses its JSON escape.
        raise ValueError(f"{where}: {v!r} is not valid Unicode ({e.reason})") from None
    return v


def _flag(where: str, v: Any) -> bool:
    # bool is a subclass of int, not the other way round: 1 is refused.
    if not isinstance(v, bool):
        raise TypeError(f"{where}: {type(v).__name__} {v!r}, want bool")
    return v


def _number(where: str, v: Any) -> float | int:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{where}: {type(v).__name__} {v!r}, want a number")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"{where}: {v!r} has no JSON form")
    if isinstance(v, int) and abs(v) > 2**53:
        # svcrun reads numbers as float64; a larger int would lose digits.
        raise ValueError(f"{where}: {v} does not fit a float64 exactly")
    return v


def _opt(check, where: str, v: Any):
    return None if v is None else check(where, v)


def valid_object_id(id: str) -> None:
    """Raise ValueError unless id is an object id svcrun accepts: 1-256
    bytes of UTF-8, printable, no white space, not starting with '-' (it
    would read as a flag). The same rule as svcrun's own."""
    _text("object id", id)
    n = len(id.encode("utf-8"))
    if n == 0:
        raise ValueError("invalid object id: empty")
    if n > MAX_OBJECT_ID_LEN:
        raise ValueError(f"invalid object id: {n} bytes long; the limit is {MAX_OBJECT_ID_LEN}")
    if id[0] == "-":
        raise ValueError(f"invalid object id {id!r}: starts with '-', which would read as a flag")
    for c in id:
        if c.isspace() or unicodedata.category(c) in ("Zs", "Zl", "Zp"):
            raise ValueError(f"invalid object id {id!r}: white space U+{ord(c):04X}")
        # Printable as svcrun counts it: letters, marks, numbers,
        # punctuation and symbols.
        if unicodedata.category(c)[0] not in "LMNPS":
            raise ValueError(f"invalid object id {id!r}: non-printable character U+{ord(c):04X}")


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def _rfc3339(where: str, v: Any) -> str:
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            raise ValueError(f"{where}: {v!r} has no time zone; RFC 3339 needs one")
        return v.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    _text(where, v)
    # fromisoformat alone takes forms RFC 3339 does not (no seconds, no
    # zone, basic format); it still catches a 31 February.
    ok = _RFC3339.fullmatch(v) is not None
    if ok:
        try:
            datetime.datetime.fromisoformat(v.upper().replace("Z", "+00:00"))
        except ValueError:
            ok = False
    if not ok:
        raise ValueError(f"{where}: {v!r} is not an RFC 3339 date-time")
    return v


@dataclass(slots=True, kw_only=True)
class Reserve:
    """Host resources a service holds while it runs."""

    mem_gb: float

    def __post_init__(self) -> None:
        _number("reserve.mem_gb", self.mem_gb)
        if self.mem_gb < 0:
            raise ValueError(f"reserve.mem_gb: {self.mem_gb} is below 0")

    def to_json(self) -> dict[str, Any]:
        _number("reserve.mem_gb", self.mem_gb)
        return {"mem_gb": self.mem_gb}


@dataclass(slots=True, kw_only=True)
class Fingerprint:
    """What fingerprint prints. A service must set running; a probe may
    leave it None."""

    healthy: bool
    running: bool | None = None
    message: str | None = None
    attrs: dict[str, str | int | float | bool] | None = None
    pools: dict[str, int] | None = None
    reserve: Reserve | None = None

    def __post_init__(self) -> None:
        self.to_json()

    def to_json(self) -> dict[str, Any]:
        # Checked again here: a slot can be reassigned after construction.
        d: dict[str, Any] = {"healthy": _flag("healthy", self.healthy)}
        if self.running is not None:
            d["running"] = _flag("running", self.running)
        if self.message is not None:
            d["message"] = _text("message", self.message)
        if self.attrs is not None:
            if not isinstance(self.attrs, dict):
                raise TypeError(f"attrs: {type(self.attrs).__name__}, want dict")
            attrs = {}
            for k, v in self.attrs.items():
                _text("attrs key", k)
                if isinstance(v, str):
                    attrs[k] = _text(f"attrs[{k!r}]", v)
                elif isinstance(v, bool):
                    attrs[k] = v
                else:
                    attrs[k] = _number(f"attrs[{k!r}]", v)
            d["attrs"] = attrs
        if self.pools is not None:
            if not isinstance(self.pools, dict):
                raise TypeError(f"pools: {type(self.pools).__name__}, want dict")
            pools = {}
            for k, v in self.pools.items():
                _text("pools key", k)
                if isinstance(v, bool) or not isinstance(v, int):
                    raise TypeError(f"pools[{k!r}]: {type(v).__name__} {v!r}, want int")
                if not 0 <= v <= _MAX_INT64:
                    raise ValueError(f"pools[{k!r}]: {v} is outside 0 to 2^63-1")
                pools[k] = v
            d["pools"] = pools
        if self.reserve is not None:
            if not isinstance(self.reserve, Reserve):
                raise TypeError(f"reserve: {type(self.reserve).__name__}, want Reserve")
            d["reserve"] = self.reserve.to_json()
        return d


@dataclass(slots=True, kw_only=True)
class OpResult:
    """What start, stop and destroy print. ok is the exit status: main
    exits 0 exactly when it is true. changed is always written, so that
    idempotency shows in the raw output."""

    ok: bool = True
    changed: bool = False
    escalated: bool | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        self.to_json()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"ok": _flag("ok", self.ok), "changed": _flag("changed", self.changed)}
        if self.escalated is not None:
            d["escalated"] = _flag("escalated", self.escalated)
        if self.message is not None:
            d["message"] = _text("message", self.message)
        return d


@dataclass(slots=True, kw_only=True)
class Status:
    """What status and ready print."""

    running: bool
    ready: bool
    message: str | None = None

    def __post_init__(self) -> None:
        self.to_json()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"running": _flag("running", self.running), "ready": _flag("ready", self.ready)}
        if self.message is not None:
            d["message"] = _text("message", self.message)
        return d


@dataclass(slots=True, kw_only=True)
class Object:
    """One object a service made for an attempt. kind is a Kind or its
    value; created_at an aware datetime or an RFC 3339 string."""

    id: str
    kind: Kind
    labels: dict[str, str]
    created_at: datetime.datetime | str | None = None
    busy: bool | None = None

    def __post_init__(self) -> None:
        try:
            self.kind = Kind(self.kind)
        except ValueError:
            raise ValueError(f"kind: {self.kind!r} is not one of {', '.join(k.value for k in Kind)}") from None
        self.to_json()

    def to_json(self) -> dict[str, Any]:
        valid_object_id(self.id)
        if not isinstance(self.labels, dict):
            raise TypeError(f"object {self.id!r}: labels: {type(self.labels).__name__}, want dict")
        labels = {_text("label", k): _text(f"label {k!r}", v) for k, v in self.labels.items()}
        d: dict[str, Any] = {"id": self.id, "kind": Kind(self.kind).value, "labels": labels}
        if self.created_at is not None:
            d["created_at"] = _rfc3339(f"object {self.id!r}: created_at", self.created_at)
        if self.busy is not None:
            d["busy"] = _flag(f"object {self.id!r}: busy", self.busy)
        return d


@dataclass(slots=True, kw_only=True)
class OwnedList:
    """What list_owned prints: objects, [] when none."""

    objects: list[Object] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.to_json()

    def to_json(self) -> dict[str, Any]:
        if not isinstance(self.objects, list):
            raise TypeError(f"objects: {type(self.objects).__name__}, want list")
        out = []
        for o in self.objects:
            if not isinstance(o, Object):
                raise TypeError(f"objects: {type(o).__name__} {o!r}, want Object")
            out.append(o.to_json())
        return {"objects": out}
