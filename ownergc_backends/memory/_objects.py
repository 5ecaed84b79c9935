"""The in-memory apiserver's storage: objects per resource, the event log that watches
read, request records."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

import anyio
import anyio.lowlevel

from ownergc.errors import (
    Invalid,
)
from ownergc.protocols import (
    APIResource,
    JSONDict,
    PropagationPolicy,
    WatchEventType,
)

from ._resources import ResourceSpec
from ._validation import (
    FieldError,
)

__all__ = [
    "IMMORTAL_NAMESPACES",
    "INITIAL_NAMESPACES",
    "_GENERATE_NAME_ALPHABET",
    "_META_ORDER",
    "_PARTIAL_API_VERSION",
    "_PARTIAL_KIND",
    "_WATCH_BATCH",
    "RequestRecord",
    "_Event",
    "_EventLog",
    "_Storage",
    "_WatchStart",
    "_invalid",
    "_is_namespaces",
    "_meta",
    "_name_of",
    "_namespace_of",
    "_ordered",
    "_utcnow",
    "_validate_delete_options",
    "_with_rv",
    "format_time",
    "parse_time",
]

#: Namespaces every cluster starts with.
INITIAL_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")
#: NamespaceLifecycle refuses to delete these.
IMMORTAL_NAMESPACES: Final = frozenset({"default", "kube-system", "kube-public"})
_PARTIAL_API_VERSION: Final = "meta.k8s.io/v1"
_PARTIAL_KIND: Final = "PartialObjectMetadata"
_WATCH_BATCH: Final = 512
_GENERATE_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_META_ORDER: Final = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def format_time(moment: datetime) -> str:
    """RFC3339 with second precision, as metav1.Time serialises (``2026-01-02T03:04:05Z``)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime | None:
    """Parse an RFC3339 timestamp; None when it is not one."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One API call as the store saw it (for tests and benchmarks)."""

    verb: str
    resource: APIResource | None
    namespace: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class _Event:
    rv: int
    type: WatchEventType
    namespace: str
    obj: JSONDict  # immutable snapshot, shared with storage


class _EventLog:
    """The watch window of one resource: recent events in rv order, with absolute sequence numbers.

    ``events[i]`` has sequence ``offset + i``; entries before ``start`` were
    evicted (``evicted_rv`` is the newest evicted rv). Compaction is
    amortised so appends stay O(1).
    """

    __slots__ = ("capacity", "closed", "events", "evicted_rv", "offset", "start", "waiter")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.events: list[_Event | None] = []
        self.offset = 0
        self.start = 0
        self.evicted_rv = 0
        self.waiter: anyio.Event | None = None
        self.closed = False

    @property
    def first_seq(self) -> int:
        return self.offset + self.start

    @property
    def end_seq(self) -> int:
        return self.offset + len(self.events)

    def append(self, event: _Event) -> None:
        self.events.append(event)
        if len(self.events) - self.start > self.capacity:
            evicted = self.events[self.start]
            assert evicted is not None
            self.evicted_rv = evicted.rv
            self.events[self.start] = None
            self.start += 1
            if self.start >= 1024 and self.start * 2 >= len(self.events):
                del self.events[: self.start]
                self.offset += self.start
                self.start = 0

    def seq_after(self, rv: int) -> int:
        """Sequence number of the first retained event with an rv greater than ``rv``."""
        index = bisect.bisect_right(
            self.events, rv, lo=self.start, key=lambda e: e.rv if e is not None else 0
        )
        return self.offset + index

    def read(self, seq: int, limit: int) -> list[_Event]:
        begin = seq - self.offset
        out = self.events[begin : begin + limit]
        return [e for e in out if e is not None]

    def take_waiter(self, wake: list[anyio.Event]) -> None:
        if self.waiter is not None:
            wake.append(self.waiter)
            self.waiter = None


@dataclass(frozen=True, slots=True)
class _WatchStart:
    storage: _Storage
    namespace: str | None
    initial: list[JSONDict]
    seq: int


class _Storage:
    """Objects of one group/resource, keyed by namespace ("" when cluster-scoped) then name."""

    __slots__ = ("log", "objects", "spec")

    def __init__(self, spec: ResourceSpec, window: int) -> None:
        self.spec = spec
        self.objects: dict[str, dict[str, JSONDict]] = {}
        self.log = _EventLog(window)

    @property
    def group_resource(self) -> str:
        return f"{self.spec.resource}.{self.spec.group}" if self.spec.group else self.spec.resource

    def lookup(self, namespace: str, name: str) -> JSONDict | None:
        bucket = self.objects.get(namespace)
        return bucket.get(name) if bucket is not None else None

    def put(self, namespace: str, name: str, obj: JSONDict) -> None:
        self.objects.setdefault(namespace, {})[name] = obj

    def remove(self, namespace: str, name: str) -> None:
        bucket = self.objects[namespace]
        del bucket[name]
        if not bucket:
            del self.objects[namespace]

    def iter_sorted(self, namespace: str | None) -> Iterator[JSONDict]:
        namespaces = [namespace] if namespace is not None else sorted(self.objects)
        for ns in namespaces:
            bucket = self.objects.get(ns)
            if bucket:
                for name in sorted(bucket):
                    yield bucket[name]

    def count(self) -> int:
        return sum(len(b) for b in self.objects.values())


def _meta(obj: JSONDict) -> JSONDict:
    meta: JSONDict = obj["metadata"]
    return meta


def _ordered(meta: JSONDict) -> JSONDict:
    out: JSONDict = {k: meta[k] for k in _META_ORDER if k in meta}
    out.update((k, v) for k, v in meta.items() if k not in out)
    return out


def _with_rv(obj: JSONDict, rv: int) -> JSONDict:
    return {**obj, "metadata": {**_meta(obj), "resourceVersion": str(rv)}}


def _invalid(kind: str, name: str, errors: list[FieldError], group: str = "") -> Invalid:
    # (a message once, as Go's ErrorList.ToAggregate keeps it; the causes all)
    messages = list(dict.fromkeys(e.message() for e in errors))
    text = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    # kube-apiserver names the kind qualified by its group (``Deployment.apps``).
    qualified = f"{kind}.{group}" if group else kind
    return Invalid(
        f'{qualified} "{name}" is invalid: {text}',
        reason="Invalid",
        details={
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [e.cause() for e in errors],
        },
    )


def _is_namespaces(storage: _Storage) -> bool:
    return storage.spec.group == "" and storage.spec.resource == "namespaces"


def _name_of(obj: Any) -> str | None:
    if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        name = obj["metadata"].get("name")
        return name if isinstance(name, str) else None
    return None


def _namespace_of(obj: JSONDict) -> str | None:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("namespace"), str):
        return str(meta["namespace"])
    return None


def _validate_delete_options(
    policy: PropagationPolicy | str | None, orphan_dependents: bool | None
) -> PropagationPolicy | None:
    errors: list[FieldError] = []
    parsed: PropagationPolicy | None = None
    if policy is not None:
        try:
            parsed = PropagationPolicy(policy)
        except ValueError:
            errors.append(
                FieldError(
                    "propagationPolicy",
                    "FieldValueNotSupported",
                    'supported values: "Foreground", "Background", "Orphan", "nil"',
                    policy,
                )
            )
    if orphan_dependents is not None and not isinstance(orphan_dependents, bool):
        errors.append(
            FieldError(
                "orphanDependents", "FieldValueInvalid", "must be a boolean", orphan_dependents
            )
        )
    if orphan_dependents is not None and policy is not None:
        errors.append(
            FieldError(
                "propagationPolicy",
                "FieldValueInvalid",
                "orphanDependents and deletionPropagation cannot be both set",
                str(policy.value if isinstance(policy, PropagationPolicy) else policy),
            )
        )
    if errors:
        raise _invalid("DeleteOptions", "", errors, "meta.k8s.io")
    return parsed


#: The label kube-apiserver defaults on every Namespace to its name (1.21+).
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"


def default_namespace_label(group: str, resource: str, obj: Any) -> None:
    """Defaulting of a Namespace as it is decoded: ``kubernetes.io/metadata.name`` set to
    its name (any other value replaced), before the field manager sees the object, so
    the writer owns the label, as on a real server."""
    if group or resource != "namespaces" or not isinstance(obj, dict):
        return
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return
    labels = meta.get("labels")
    if labels is None or isinstance(labels, dict):
        # A new dict: the caller's labels may be shared with other objects.
        meta["labels"] = {**(labels or {}), NAMESPACE_NAME_LABEL: meta["name"]}
