"""What :class:`FaultyStore` can inject: the kinds, their rates, the log entries."""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields, replace
from typing import Any, Final

TOUCH_ANNOTATION: Final = "faults.ownergc.io/touched"


class FaultKind(str, enum.Enum):
    """The kinds of fault :class:`FaultyStore` injects (see the module docs)."""

    CONFLICT = "conflict"
    TOO_MANY_REQUESTS = "too_many_requests"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    DROP_WATCH = "drop_watch"
    EXPIRE_WATCH = "expire_watch"
    DUPLICATE_EVENTS = "duplicate_events"
    REORDER_EVENTS = "reorder_events"
    LATENCY = "latency"


@dataclass(frozen=True, slots=True)
class FaultRates:
    """Probability of each fault kind, per request (or per watch event for stream faults).

    Request faults are drawn in the order timeout, 429, 500, conflict; at
    most one of them hits a request. ``drop_watch`` and ``expire_watch``
    apply at a watch's start and after each event; ``duplicate_events`` and
    ``reorder_events`` after/before each event; ``latency`` to every request.
    """

    conflict: float = 0.0
    too_many_requests: float = 0.0
    server_error: float = 0.0
    timeout: float = 0.0
    drop_watch: float = 0.0
    expire_watch: float = 0.0
    duplicate_events: float = 0.0
    reorder_events: float = 0.0
    latency: float = 0.0
    #: Upper bound of one injected latency, seconds.
    max_latency: float = 0.005
    #: The Retry-After of injected 429s, seconds.
    retry_after: float = 0.01
    #: How many past events a duplicate replay re-sends at most.
    max_replay: int = 3
    #: Upper bound of one stream lag (``reorder_events``), seconds.
    max_lag: float = 0.02

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _RATE_NAMES and not 0.0 <= value <= 1.0:
                raise ValueError(f"{f.name} must be a probability in [0, 1], got {value!r}")
            if f.name not in _RATE_NAMES and value < 0:
                raise ValueError(f"{f.name} must not be negative, got {value!r}")

    @classmethod
    def uniform(cls, rate: float, **overrides: Any) -> FaultRates:
        """Every fault kind at ``rate`` (keyword arguments override single fields)."""
        rates: dict[str, Any] = {name: rate for name in _RATE_NAMES}
        return replace(cls(**rates), **overrides)

    @classmethod
    def only(cls, kind: FaultKind | str, rate: float, **overrides: Any) -> FaultRates:
        """Just one fault kind at ``rate``."""
        rates: dict[str, Any] = {FaultKind(kind).value: rate}
        return replace(cls(**rates), **overrides)

    def rate(self, kind: FaultKind) -> float:
        value: float = getattr(self, kind.value)
        return value


_RATE_NAMES: Final = frozenset(k.value for k in FaultKind)


@dataclass(frozen=True, slots=True)
class InjectedFault:
    """One fault that was injected.

    ``applied`` is set for write faults: whether the write took effect on
    the server despite the error (``None`` when not a write fault).
    """

    seq: int
    kind: FaultKind
    verb: str
    resource: str
    namespace: str | None = None
    name: str | None = None
    applied: bool | None = None
    detail: str = ""
