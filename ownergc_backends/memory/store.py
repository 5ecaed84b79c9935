"""``InMemoryStore``: an :class:`~ownergc.protocols.ObjectStore` that behaves like kube-apiserver.

Everything a garbage collector can observe follows the apiserver: uids,
one global resourceVersion counter (like etcd's revision), generation, the
DELETE algorithm of the generic registry store (finalizers ``orphan`` /
``foregroundDeletion``, deletionTimestamp, removal when the last finalizer
goes), preconditions, ObjectMeta validation, the three patch types, list and
watch from a resourceVersion, discovery. See :class:`InMemoryStore` for the
deliberate differences.

Concurrency model. All state lives behind one :class:`threading.Lock`; every
mutation is a synchronous critical section with no ``await`` inside, so
writes are atomic and ordered, and the store is safe to call from several
threads. Watchers sleep on an :class:`anyio.Event` per resource that a writer
replaces and sets after leaving the critical section, so watch works under
asyncio and trio alike. Setting that event is only safe from the event-loop
thread that runs the watchers: writes made from another thread (or another
event loop) are stored correctly but do not wake watchers until the next
write from the loop thread.
"""

from __future__ import annotations

import bisect
import builtins
import secrets
import threading
import uuid
from collections import Counter, deque
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

import anyio
import anyio.lowlevel

from ownergc.errors import (
    AlreadyExists,
    APIError,
    BadRequest,
    Conflict,
    Forbidden,
    Invalid,
    InvalidObject,
    MethodNotAllowed,
    NotFound,
    ResourceExpired,
    RESTMappingError,
    ServerTimeout,
    UnsupportedPatchType,
)
from ownergc.protocols import (
    APIResource,
    DiscoveryResult,
    JSONDict,
    ObjectList,
    PatchType,
    Preconditions,
    PropagationPolicy,
    WatchEvent,
    WatchEventType,
)

from ._crd import CRDServing, crd_serving, crd_status
from ._patch import (
    PatchError,
    apply_json_merge_patch,
    apply_json_patch,
    apply_strategic_merge_patch,
    check_json,
    copy_json,
    json_equal,
)
from ._resources import BUILTIN_RESOURCES, STANDARD_VERBS, GCPolicy, ResourceSpec
from ._validation import (
    FINALIZER_FOREGROUND,
    FINALIZER_ORPHAN,
    FieldError,
    MetadataTypeError,
    decode_metadata,
    immutable,
    validate_finalizers,
    validate_name,
    validate_owner_references,
)

__all__ = [
    "GCPolicy",
    "InMemoryStore",
    "RequestRecord",
    "deletion_finalizers_for_garbage_collection",
    "mark_as_deleting",
    "should_delete_during_update",
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


# ---------------------------------------------------------------------------
# The apiserver's DELETE helpers, pure so that the §14 tables can test them directly.


def _should_orphan(
    finalizers: Sequence[str],
    default: GCPolicy,
    policy: PropagationPolicy | None,
    orphan_dependents: bool | None,
) -> bool:
    if default is GCPolicy.UNSUPPORTED:
        return False
    if orphan_dependents is not None:
        return orphan_dependents
    if policy is not None:
        return policy is PropagationPolicy.ORPHAN
    for f in finalizers:
        if f == FINALIZER_ORPHAN:
            return True
        if f == FINALIZER_FOREGROUND:
            return False
    return default is GCPolicy.ORPHAN


def _should_foreground(
    finalizers: Sequence[str],
    default: GCPolicy,
    policy: PropagationPolicy | None,
    orphan_dependents: bool | None,
) -> bool:
    if default is GCPolicy.UNSUPPORTED:
        return False
    if orphan_dependents is not None:
        return False
    if policy is not None:
        return policy is PropagationPolicy.FOREGROUND
    for f in finalizers:
        if f == FINALIZER_FOREGROUND:
            return True
        if f == FINALIZER_ORPHAN:
            return False
    return False


def deletion_finalizers_for_garbage_collection(
    finalizers: Sequence[str],
    default_policy: GCPolicy,
    propagation_policy: PropagationPolicy | None = None,
    orphan_dependents: bool | None = None,
) -> tuple[bool, list[str]]:
    """The finalizers a DELETE leaves on an object (item 83) and whether they changed.

    Existing ``orphan`` / ``foregroundDeletion`` entries are dropped (order of
    the others kept), then ``orphan`` and/or ``foregroundDeletion`` appended
    as the options, the existing finalizers or the resource default decide.
    When the resulting *set* equals the old one the old list is kept as is.
    """
    orphan = _should_orphan(finalizers, default_policy, propagation_policy, orphan_dependents)
    foreground = _should_foreground(
        finalizers, default_policy, propagation_policy, orphan_dependents
    )
    new = [f for f in finalizers if f not in (FINALIZER_ORPHAN, FINALIZER_FOREGROUND)]
    if orphan:
        new.append(FINALIZER_ORPHAN)
    if foreground:
        new.append(FINALIZER_FOREGROUND)
    if set(new) == set(finalizers):
        return False, list(finalizers)
    return True, new


def mark_as_deleting(obj: JSONDict, now: datetime) -> JSONDict:
    """Return ``obj`` marked as deleting (§14.4), without touching the argument.

    deletionTimestamp becomes ``now`` when unset or later than now (never
    moved later); generation is bumped only on the first marking;
    deletionGracePeriodSeconds is always 0.
    """
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    existing = meta.get("deletionTimestamp")
    if existing is None and isinstance(meta.get("generation"), int) and meta["generation"] > 0:
        meta["generation"] += 1
    existing_time = parse_time(existing) if isinstance(existing, str) else None
    if existing is None or (existing_time is not None and existing_time > now):
        meta["deletionTimestamp"] = format_time(now)
    meta["deletionGracePeriodSeconds"] = 0
    out["metadata"] = meta
    return out


def should_delete_during_update(new_finalizers: Sequence[str], existing_meta: JSONDict) -> bool:
    """An update leaving no finalizers removes a deleting object (item 88, §14.5).

    Only when the stored object has a deletionTimestamp and no pending
    graceful deletion (deletionGracePeriodSeconds unset or 0).
    """
    if new_finalizers or existing_meta.get("deletionTimestamp") is None:
        return False
    return existing_meta.get("deletionGracePeriodSeconds") in (None, 0)


# ---------------------------------------------------------------------------
# Internal state


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One API call as the store saw it (for tests and benchmarks)."""

    verb: str
    resource: APIResource | None
    namespace: str | None = None
    name: str | None = None


@dataclass(slots=True)
class _Fault:
    verb: str
    error: APIError
    resource: tuple[str, str] | None
    name: str | None
    remaining: int


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
    text = (
        errors[0].message()
        if len(errors) == 1
        else "[" + ", ".join(e.message() for e in errors) + "]"
    )
    return Invalid(
        f'{kind} "{name}" is invalid: {text}',
        reason="Invalid",
        details={
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [e.cause() for e in errors],
        },
    )


# ---------------------------------------------------------------------------


class InMemoryStore:
    """An in-process Kubernetes apiserver for the garbage collector, tests and benchmarks.

    Parameters
    ----------
    clock:
        Returns the current time (timezone-aware or naive UTC); used for
        creationTimestamp and deletionTimestamp. Default: real UTC time.
    event_window:
        Watch events retained per resource. A watch from an rv whose
        successors were evicted raises :class:`~ownergc.errors.ResourceExpired`.
    uid_factory:
        Makes object uids (default: ``uuid4``); tests may make them predictable.
    request_log_limit:
        How many :class:`RequestRecord` entries :attr:`requests` keeps (the
        per-verb counters are never truncated).
    terminating_namespaces:
        Namespace DELETE as kube-apiserver's namespace registry does it: the
        first DELETE marks the namespace ``Terminating`` (deletionTimestamp,
        orphan / foregroundDeletion finalizers from the options) and it stays
        until ``spec.finalizers`` (``[kubernetes]``) is emptied, which a
        namespace controller (:class:`ownergc.controller._namespace.NamespaceController`)
        does once the namespace is empty. Off by default: then a namespace
        DELETE is the generic one and contents are kept.

    CustomResourceDefinitions (``apiextensions.k8s.io/v1``) are acted on like
    kube-apiserver does: creating one serves its kind (served versions, the
    highest-priority one preferred, namespaced or cluster-scoped) and fills
    its status (NamesAccepted, Established, storedVersions); an update
    changes the served versions; removing it stops serving the kind and
    removes its objects.

    Deliberate differences from kube-apiserver, all invisible to a GC:

    * Objects are schemaless JSON: only ``metadata`` is decoded and validated
      (types, names, finalizers, ownerReferences); spec/status are stored as
      given. Every object has ``metadata.generation`` (starting at 1), bumped
      on any change outside metadata and status and by the first DELETE that
      marks it deleting (real ConfigMaps have no generation at all).
      ``status`` is not a subresource.
    * Strategic merge patch knows the merge strategies of
      ``metadata.ownerReferences`` and ``metadata.finalizers`` only; every
      other list is replaced.
    * Pods are deleted like an unscheduled pod: no graceful deletion, so
      DELETE acts at once (grace period 0) as for every other kind.
    * Unless ``terminating_namespaces`` is set, namespace DELETE is the
      generic one: no ``Terminating`` phase, so contents are *not* deleted
      with it (the NamespaceLifecycle admission is always emulated:
      namespaced objects can only be created in an existing namespace that
      is not being deleted, and ``default``, ``kube-system`` and
      ``kube-public`` cannot be deleted). ``spec.finalizers`` of a namespace
      can be changed by any update (kube-apiserver only allows it through
      the ``/finalize`` subresource, which is not served).
    * A CRD has no ``customresourcecleanup`` finalizer: when it is removed
      its objects go at once (finalizers on them are not waited for).
    * core/v1 and events.k8s.io/v1 Events are stored separately (Kubernetes
      serves one storage through both groups).
    * Creating an object that carries ``metadata.resourceVersion`` is a 400
      (kube-apiserver answers 500 with the same message).
    * A watch from an rv newer than the store's raises
      :class:`~ownergc.errors.ServerTimeout` at once ("Too large resource
      version"); the apiserver first waits up to 3 s. No BOOKMARK events.
    * ``deletecollection`` is advertised in discovery but not implemented.
    * Unregistering a resource removes its objects at once (finalizers are
      not waited for) and ends its watches after their DELETED events.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], datetime] | None = None,
        event_window: int = 100_000,
        uid_factory: Callable[[], str] | None = None,
        request_log_limit: int | None = 100_000,
        terminating_namespaces: bool = False,
    ) -> None:
        if event_window < 1:
            raise InvalidObject("event_window must be at least 1")
        self._clock = clock or _utcnow
        self._window = event_window
        self._uid_factory = uid_factory or (lambda: str(uuid.uuid4()))
        self._lock = threading.Lock()
        self._rv = 0
        self._storages: dict[tuple[str, str], _Storage] = {}
        self._by_gvr: dict[tuple[str, str, str], _Storage] = {}
        self._by_gvk: dict[tuple[str, str, str], _Storage] = {}
        self._discovery_failures: dict[str, str] = {}
        self._requests: deque[RequestRecord] = deque(maxlen=request_log_limit)
        self._request_counts: Counter[tuple[str, str]] = Counter()
        self._faults: list[_Fault] = []
        self._terminating_namespaces = terminating_namespaces
        #: (group, resource) served because of a CRD -> the CRD's name.
        self._crd_served: dict[tuple[str, str], str] = {}
        for spec in BUILTIN_RESOURCES:
            self._install(spec)
        namespaces = self._storages[("", "namespaces")]
        with self._write() as wake:
            for name in INITIAL_NAMESPACES:
                self._create_locked(
                    namespaces, "v1", None, {"metadata": {"name": name}}, wake, admit=False
                )

    # ------------------------------------------------------------------ registry

    def register_resource(
        self,
        *,
        group: str,
        versions: str | Sequence[str],
        resource: str,
        kind: str,
        namespaced: bool = True,
        preferred_version: str | None = None,
        verbs: Iterable[str] | None = None,
        default_gc_policy: GCPolicy | str | Mapping[str, GCPolicy | str] = GCPolicy.BACKGROUND,
        strategic_merge_patch: bool = False,
        allow_unconditional_update: bool | None = None,
    ) -> APIResource:
        """Serve a kind at run time, like creating a CustomResourceDefinition.

        Defaults describe a custom resource: strategic merge patch is refused
        with 415, PUT needs a resourceVersion, DELETE without a policy is
        Background. ``default_gc_policy`` may map versions to policies (the
        default can depend on the request version). Registering an existing
        group/resource again replaces its versions and behaviour but keeps
        its objects (e.g. to stop serving a version). Returns the preferred
        version's :class:`APIResource`.
        """
        version_list = (versions,) if isinstance(versions, str) else tuple(versions)
        if not version_list or not all(version_list) or len(set(version_list)) != len(version_list):
            raise InvalidObject(f"versions must be distinct and non-empty: {versions!r}")
        preferred = preferred_version or version_list[0]
        if preferred not in version_list:
            raise InvalidObject(f"preferred version {preferred!r} is not in {version_list!r}")
        if not resource or not kind or resource != resource.lower() or "/" in resource:
            raise InvalidObject(f"bad resource {resource!r} / kind {kind!r}")
        try:
            if isinstance(default_gc_policy, Mapping):
                policies = {v: GCPolicy(p) for v, p in default_gc_policy.items()}
            else:
                policies = {v: GCPolicy(default_gc_policy) for v in version_list}
        except ValueError:
            raise InvalidObject(
                f"default_gc_policy must be Background, Orphan or Unsupported: "
                f"{default_gc_policy!r}"
            ) from None
        spec = ResourceSpec(
            group=group,
            resource=resource,
            kind=kind,
            namespaced=namespaced,
            versions=version_list,
            preferred_version=preferred,
            verbs=frozenset(verbs) if verbs is not None else STANDARD_VERBS,
            gc_policies=policies,
            strategic_merge_patch=strategic_merge_patch,
            allow_unconditional_update=(
                strategic_merge_patch
                if allow_unconditional_update is None
                else allow_unconditional_update
            ),
        )
        with self._write() as wake:
            self._register_locked(spec, wake)
        return spec.api_resource(preferred)

    def _register_locked(self, spec: ResourceSpec, wake: builtins.list[anyio.Event]) -> None:
        group, resource, kind = spec.group, spec.resource, spec.kind
        existing = self._storages.get((group, resource))
        if existing is not None:
            if existing.spec.kind != kind or existing.spec.namespaced != spec.namespaced:
                raise InvalidObject(
                    f"{existing.group_resource} is already served as kind "
                    f"{existing.spec.kind!r} (namespaced={existing.spec.namespaced})"
                )
            self._uninstall(existing)
            existing.spec = spec
            self._install_storage(existing)
            existing.log.take_waiter(wake)  # watchers of dropped versions must notice
        else:
            for v in spec.versions:
                other = self._by_gvk.get((group, v, kind))
                if other is not None:
                    raise InvalidObject(
                        f"kind {kind!r} in {group or 'core'}/{v} is already served by "
                        f"{other.group_resource}"
                    )
            self._install(spec)

    def unregister_resource(self, group: str, resource: str) -> bool:
        """Stop serving a group/resource, like deleting its CRD; False if it was not served.

        Its objects are removed (watchers get a DELETED event for each, then
        their stream ends) and every later request for it answers 404.
        """
        with self._write() as wake:
            storage = self._storages.get((group, resource))
            if storage is None:
                return False
            self._unregister_locked(storage, wake)
        return True

    def _unregister_locked(self, storage: _Storage, wake: builtins.list[anyio.Event]) -> None:
        key = (storage.spec.group, storage.spec.resource)
        for obj in builtins.list(storage.iter_sorted(None)):
            meta = _meta(obj)
            self._remove_locked(storage, meta.get("namespace", ""), meta["name"], obj, wake)
        self._uninstall(storage)
        del self._storages[key]
        self._crd_served.pop(key, None)
        storage.log.closed = True
        storage.log.take_waiter(wake)

    # ------------------------------------------------------------------ CRDs

    @staticmethod
    def _is_crd_storage(storage: _Storage) -> bool:
        spec = storage.spec
        return spec.group == "apiextensions.k8s.io" and spec.resource == "customresourcedefinitions"

    def _crd_admit(
        self, obj: JSONDict, old: JSONDict | None
    ) -> tuple[CRDServing, builtins.list[FieldError]]:
        """Validate a CRD about to be stored (created or updated) and fill its status."""
        serving, errors = crd_serving(obj)
        if serving is None:
            return CRDServing("", "", "", True, (), ""), errors
        key = (serving.group, serving.resource)
        name = _meta(obj)["name"]
        if old is not None:
            before, _ = crd_serving(old)
            if before is not None:
                for field_name, was, now in (
                    ("spec.scope", before.namespaced, serving.namespaced),
                    ("spec.names.kind", before.kind, serving.kind),
                ):
                    if was != now:
                        errors.append(
                            FieldError(field_name, "FieldValueInvalid", "field is immutable", now)
                        )
        existing = self._storages.get(key)
        if existing is not None and self._crd_served.get(key) != name:
            errors.append(
                FieldError(
                    "spec.names.plural",
                    "FieldValueInvalid",
                    f"{existing.group_resource} is already served by the apiserver",
                    serving.resource,
                )
            )
        for v in serving.served:
            other = self._by_gvk.get((serving.group, v, serving.kind))
            if other is not None and other is not existing:
                errors.append(
                    FieldError(
                        "spec.names.kind",
                        "FieldValueInvalid",
                        f"kind is already served by {other.group_resource}",
                        serving.kind,
                    )
                )
        if not errors:
            obj["status"] = crd_status(obj, serving, format_time(self._clock()))
        return serving, errors

    def _crd_serve_locked(
        self, name: str, serving: CRDServing, wake: builtins.list[anyio.Event]
    ) -> None:
        key = (serving.group, serving.resource)
        if not serving.served:
            storage = self._storages.get(key)
            if storage is not None and self._crd_served.get(key) == name:
                self._unregister_locked(storage, wake)
            return
        spec = ResourceSpec(
            group=serving.group,
            resource=serving.resource,
            kind=serving.kind,
            namespaced=serving.namespaced,
            versions=serving.served,
            preferred_version=serving.served[0],
            verbs=STANDARD_VERBS,
            gc_policies={v: GCPolicy.BACKGROUND for v in serving.served},
            strategic_merge_patch=False,
            allow_unconditional_update=False,
        )
        self._register_locked(spec, wake)
        self._crd_served[key] = name

    def _crd_removed_locked(self, crd: JSONDict, wake: builtins.list[anyio.Event]) -> None:
        name = _meta(crd)["name"]
        for key, owner in builtins.list(self._crd_served.items()):
            if owner == name:
                storage = self._storages.get(key)
                if storage is not None:
                    self._unregister_locked(storage, wake)

    def _install(self, spec: ResourceSpec) -> None:
        storage = _Storage(spec, self._window)
        self._storages[(spec.group, spec.resource)] = storage
        self._install_storage(storage)

    def _install_storage(self, storage: _Storage) -> None:
        spec = storage.spec
        for v in spec.versions:
            self._by_gvr[(spec.group, v, spec.resource)] = storage
            self._by_gvk[(spec.group, v, spec.kind)] = storage

    def _uninstall(self, storage: _Storage) -> None:
        spec = storage.spec
        for v in spec.versions:
            self._by_gvr.pop((spec.group, v, spec.resource), None)
            self._by_gvk.pop((spec.group, v, spec.kind), None)

    def set_discovery_failure(self, group_version: str, message: str | None) -> None:
        """Make discovery report ``group_version`` as failed (None clears it), as an
        unavailable aggregated API would; its resources are then missing from discovery."""
        with self._lock:
            if message is None:
                self._discovery_failures.pop(group_version, None)
            else:
                self._discovery_failures[group_version] = message

    # ------------------------------------------------------------------ mapping helpers

    def resource_for(self, api_version: str, kind: str) -> APIResource:
        """The served resource for (apiVersion, kind); raises :class:`RESTMappingError`."""
        group, _, version = api_version.rpartition("/")
        with self._lock:
            storage = self._by_gvk.get((group, version, kind))
            if storage is None:
                raise RESTMappingError(api_version, kind)
            return storage.spec.api_resource(version)

    def resource_by_name(self, name: str) -> APIResource:
        """``pods``, ``deployments.apps`` or ``deployments.v1.apps`` → the served resource
        (preferred version unless one is named); raises :class:`RESTMappingError`."""
        resource, _, rest = name.partition(".")
        with self._lock:
            candidates: list[tuple[str, str | None]] = [(rest, None)]
            version, _, group = rest.partition(".")
            if version:
                candidates.append((group, version))
            for group_name, wanted in candidates:
                storage = self._storages.get((group_name, resource))
                if storage is None:
                    continue
                if wanted is None:
                    return storage.spec.api_resource(storage.spec.preferred_version)
                if wanted in storage.spec.versions:
                    return storage.spec.api_resource(wanted)
        raise RESTMappingError("", name, f"no served resource named {name!r}")

    def _storage(self, resource: APIResource) -> _Storage:
        storage = self._by_gvr.get((resource.group, resource.version, resource.resource))
        if storage is None:
            raise NotFound(
                "the server could not find the requested resource",
                reason="NotFound",
                details={"group": resource.group, "kind": resource.resource},
            )
        return storage

    @staticmethod
    def _check_verb(storage: _Storage, verb: str) -> None:
        if verb not in storage.spec.verbs:
            raise MethodNotAllowed(
                f"the server does not allow this method on the requested resource "
                f"({verb} {storage.group_resource})",
                reason="MethodNotAllowed",
            )

    @staticmethod
    def _object_namespace(storage: _Storage, namespace: str | None) -> str:
        if storage.spec.namespaced:
            if not namespace:
                raise BadRequest(
                    f"a namespace is required for the namespaced resource {storage.group_resource}",
                    reason="BadRequest",
                )
            return namespace
        if namespace:
            raise BadRequest(
                f"{storage.group_resource} is cluster-scoped; namespace {namespace!r} "
                "must not be given",
                reason="BadRequest",
            )
        return ""

    @staticmethod
    def _collection_namespace(storage: _Storage, namespace: str | None) -> str | None:
        if storage.spec.namespaced:
            return namespace or None
        if namespace:
            raise BadRequest(
                f"{storage.group_resource} is cluster-scoped; namespace {namespace!r} "
                "must not be given",
                reason="BadRequest",
            )
        return ""

    # ------------------------------------------------------------------ request log / faults

    @property
    def requests(self) -> tuple[RequestRecord, ...]:
        """The most recent API calls, oldest first."""
        with self._lock:
            return tuple(self._requests)

    def request_count(
        self, verb: str | None = None, resource: APIResource | str | None = None
    ) -> int:
        """How many calls were made, optionally only of one verb and/or one resource
        (an :class:`APIResource` or its ``group_resource`` string, e.g. ``"deployments.apps"``)."""
        wanted = resource.group_resource if isinstance(resource, APIResource) else resource
        with self._lock:
            return sum(
                n
                for (v, gr), n in self._request_counts.items()
                if (verb is None or v == verb) and (wanted is None or gr == wanted)
            )

    def clear_requests(self) -> None:
        """Forget the request log and counters."""
        with self._lock:
            self._requests.clear()
            self._request_counts.clear()

    def fail_next(
        self,
        verb: str,
        error: APIError,
        *,
        resource: APIResource | None = None,
        name: str | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` matching calls with ``error`` (fault injection for tests).

        ``verb`` is one of discover, list, watch, get, create, update, patch,
        delete; ``resource`` and ``name`` narrow the match. The failing call
        changes nothing.
        """
        key = (resource.group, resource.resource) if resource is not None else None
        with self._lock:
            self._faults.append(_Fault(verb, error, key, name, times))

    def _begin(
        self,
        verb: str,
        resource: APIResource | None,
        namespace: str | None = None,
        name: str | None = None,
    ) -> APIError | None:
        """Record a call; return the injected error it must fail with, if any."""
        with self._lock:
            self._requests.append(RequestRecord(verb, resource, namespace, name))
            self._request_counts[(verb, resource.group_resource if resource else "")] += 1
            for fault in self._faults:
                if fault.verb != verb:
                    continue
                if fault.resource is not None and (
                    resource is None or fault.resource != (resource.group, resource.resource)
                ):
                    continue
                if fault.name is not None and fault.name != name:
                    continue
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults.remove(fault)
                return fault.error
        return None

    # ------------------------------------------------------------------ writes: plumbing

    @contextmanager
    def _write(self) -> Iterator[list[anyio.Event]]:
        """The critical section of a write; watchers are woken after the lock is released."""
        wake: list[anyio.Event] = []
        try:
            with self._lock:
                yield wake
        finally:
            for event in wake:
                event.set()

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _emit(
        self, storage: _Storage, kind: WatchEventType, obj: JSONDict, wake: list[anyio.Event]
    ) -> None:
        meta = _meta(obj)
        storage.log.append(
            _Event(int(meta["resourceVersion"]), kind, meta.get("namespace", ""), obj)
        )
        storage.log.take_waiter(wake)

    def _remove_locked(
        self, storage: _Storage, namespace: str, name: str, last: JSONDict, wake: list[anyio.Event]
    ) -> JSONDict:
        rv = self._next_rv()
        storage.remove(namespace, name)
        gone = _with_rv(last, rv)
        self._emit(storage, "DELETED", gone, wake)
        if self._is_crd_storage(storage):
            self._crd_removed_locked(gone, wake)
        return gone

    def _store_locked(
        self,
        storage: _Storage,
        kind: WatchEventType,
        obj: JSONDict,
        wake: list[anyio.Event],
    ) -> JSONDict:
        rv = self._next_rv()
        meta = _meta(obj)
        meta["resourceVersion"] = str(rv)
        obj["metadata"] = _ordered(meta)
        storage.put(meta.get("namespace", ""), meta["name"], obj)
        self._emit(storage, kind, obj, wake)
        return obj

    @staticmethod
    def _render(storage: _Storage, obj: JSONDict, version: str, metadata_only: bool) -> JSONDict:
        if metadata_only:
            return {
                "apiVersion": _PARTIAL_API_VERSION,
                "kind": _PARTIAL_KIND,
                "metadata": copy_json(obj["metadata"]),
            }
        spec = storage.spec
        out: JSONDict = {
            "apiVersion": f"{spec.group}/{version}" if spec.group else version,
            "kind": spec.kind,
        }
        for key, value in obj.items():
            if key not in ("apiVersion", "kind"):
                out[key] = copy_json(value)
        return out

    def _not_found(self, storage: _Storage, name: str) -> NotFound:
        return NotFound(
            f'{storage.group_resource} "{name}" not found',
            reason="NotFound",
            details={"name": name, "group": storage.spec.group, "kind": storage.spec.resource},
        )

    def _conflict(self, storage: _Storage, name: str, why: str) -> Conflict:
        return Conflict(
            f'Operation cannot be fulfilled on {storage.group_resource} "{name}": {why}',
            reason="Conflict",
            details={"name": name, "group": storage.spec.group, "kind": storage.spec.resource},
        )

    def _invalid(self, storage: _Storage, name: str, errors: list[FieldError]) -> Invalid:
        return _invalid(storage.spec.kind, name, errors, storage.spec.group)

    @staticmethod
    def _body(value: Any, what: str) -> JSONDict:
        try:
            body = check_json(value)
        except PatchError as exc:
            raise BadRequest(
                f"{what} is not valid JSON: {exc.message}", reason="BadRequest"
            ) from None
        if not isinstance(body, dict):
            raise BadRequest(f"{what} must be a JSON object, got {value!r}", reason="BadRequest")
        return body

    @staticmethod
    def _decode_meta(raw: Any) -> JSONDict:
        try:
            return decode_metadata(raw)
        except MetadataTypeError as exc:
            raise BadRequest(f"unable to decode metadata: {exc}", reason="BadRequest") from None

    @staticmethod
    def _check_type(storage: _Storage, body: JSONDict) -> None:
        spec = storage.spec
        kind = body.get("kind")
        if kind not in (None, "", spec.kind):
            raise BadRequest(
                f"the object kind {kind!r} does not match the resource "
                f"{storage.group_resource} (kind {spec.kind!r})",
                reason="BadRequest",
            )
        api_version = body.get("apiVersion")
        served = {f"{spec.group}/{v}" if spec.group else v for v in spec.versions}
        if api_version not in (None, "") and api_version not in served:
            raise BadRequest(
                f"apiVersion {api_version!r} is not served for {storage.group_resource} "
                f"(served: {sorted(served)})",
                reason="BadRequest",
            )

    # ------------------------------------------------------------------ create

    def _generate_name(self, storage: _Storage, namespace: str, prefix: str) -> str:
        for _ in range(16):
            suffix = "".join(secrets.choice(_GENERATE_NAME_ALPHABET) for _ in range(5))
            candidate = prefix[: 253 - 5] + suffix
            if storage.lookup(namespace, candidate) is None:
                return candidate
        raise ServerTimeout(f"could not generate a unique name from {prefix!r}")

    def _admit_namespace(self, storage: _Storage, namespace: str, name: str) -> None:
        """NamespaceLifecycle admission for creates."""
        ns_obj = self._storages[("", "namespaces")].lookup("", namespace)
        if ns_obj is None:
            raise NotFound(
                f'namespaces "{namespace}" not found',
                reason="NotFound",
                details={"name": namespace, "kind": "namespaces"},
            )
        if "deletionTimestamp" in _meta(ns_obj):
            raise Forbidden(
                f'{storage.group_resource} "{name}" is forbidden: unable to create new content '
                f"in namespace {namespace} because it is being terminated",
                reason="Forbidden",
                details={
                    "causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace"}]
                },
            )

    def _create_locked(
        self,
        storage: _Storage,
        version: str,
        namespace: str | None,
        obj: Any,
        wake: list[anyio.Event],
        *,
        admit: bool = True,
        load: bool = False,
    ) -> JSONDict:
        """Create; with ``load`` the object keeps the uid, timestamps, generation and
        deletion state it carries (a copy of an object from elsewhere)."""
        spec = storage.spec
        body = self._body(obj, "the object to create")
        self._check_type(storage, body)
        meta = self._decode_meta(body.get("metadata"))
        if spec.namespaced:
            own = meta.get("namespace")
            if namespace and own and own != namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request",
                    reason="BadRequest",
                )
            ns = namespace or own
            if not ns:
                raise BadRequest(
                    f"a namespace is required to create {storage.group_resource}",
                    reason="BadRequest",
                )
            meta["namespace"] = ns
        else:
            if namespace:
                raise BadRequest(
                    f"{storage.group_resource} is cluster-scoped; namespace {namespace!r} "
                    "must not be given",
                    reason="BadRequest",
                )
            meta.pop("namespace", None)
            ns = ""
        display_name = meta.get("name") or meta.get("generateName") or ""
        if spec.namespaced and admit:
            self._admit_namespace(storage, ns, display_name)
        kept: JSONDict = {}
        if load:
            meta.pop("resourceVersion", None)
            kept = {
                k: meta[k]
                for k in (
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generation",
                )
                if meta.get(k) is not None
            }
        elif "resourceVersion" in meta:
            raise BadRequest(
                "resourceVersion should not be set on objects to be created", reason="BadRequest"
            )
        for server_owned in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "selfLink",
        ):
            meta.pop(server_owned, None)
        errors: list[FieldError] = []
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = self._generate_name(storage, ns, meta["generateName"])
            else:
                errors.append(
                    FieldError(
                        "metadata.name", "FieldValueRequired", "name or generateName is required"
                    )
                )
        name = meta.get("name", "")
        if name:
            errors += validate_name(name, spec.name_rule.value)
        errors += validate_finalizers(meta.get("finalizers", []))
        errors += validate_owner_references(meta.get("ownerReferences", []))
        if errors:
            raise self._invalid(storage, name, errors)
        if storage.lookup(ns, name) is not None:
            raise AlreadyExists(
                f'{storage.group_resource} "{name}" already exists',
                reason="AlreadyExists",
                details={"name": name, "group": spec.group, "kind": spec.resource},
            )
        meta["uid"] = self._uid_factory()
        meta["creationTimestamp"] = format_time(self._clock())
        meta["generation"] = 1
        meta.update(kept)
        stored: JSONDict = {
            "apiVersion": f"{spec.group}/{version}" if spec.group else version,
            "kind": spec.kind,
            "metadata": meta,
        }
        for key, value in body.items():
            if key not in ("apiVersion", "kind", "metadata"):
                stored[key] = value
        if spec.group == "" and spec.resource == "namespaces":
            ns_spec = stored.get("spec")
            ns_spec = dict(ns_spec) if isinstance(ns_spec, dict) else {}
            ns_spec.setdefault("finalizers", ["kubernetes"])
            stored["spec"] = ns_spec
            phase = "Terminating" if "deletionTimestamp" in meta else "Active"
            stored["status"] = {"phase": phase}
        serving: CRDServing | None = None
        if self._is_crd_storage(storage):
            serving, crd_errors = self._crd_admit(stored, None)
            if crd_errors:
                raise self._invalid(storage, name, crd_errors)
        out = self._store_locked(storage, "ADDED", stored, wake)
        if serving is not None:
            self._crd_serve_locked(name, serving, wake)
        return out

    # ------------------------------------------------------------------ update (PUT and PATCH)

    def _update_locked(
        self,
        storage: _Storage,
        existing: JSONDict,
        body: JSONDict,
        wake: list[anyio.Event],
        *,
        is_patch: bool,
    ) -> JSONDict:
        """The generic store's Update: rv check, BeforeUpdate, validation, delete-on-empty.

        Returns the stored object, or after an emptying of finalizers on a
        deleting object the updated object carrying the deletion's rv.
        """
        spec = storage.spec
        old = _meta(existing)
        name = old["name"]
        namespace = old.get("namespace", "")
        self._check_type(storage, body)
        meta = self._decode_meta(body.get("metadata"))
        if meta.get("name", name) != name:
            raise BadRequest(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})",
                reason="BadRequest",
            )
        meta["name"] = name
        if spec.namespaced:
            if meta.get("namespace", namespace) != namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request",
                    reason="BadRequest",
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        rv = meta.get("resourceVersion")
        if rv is None:
            if not is_patch and not spec.allow_unconditional_update:
                raise self._invalid(
                    storage,
                    name,
                    [
                        FieldError(
                            "metadata.resourceVersion",
                            "FieldValueInvalid",
                            "must be specified for an update",
                            0,
                        )
                    ],
                )
        elif rv != old["resourceVersion"]:
            raise self._conflict(
                storage,
                name,
                "the object has been modified; please apply your changes to the latest "
                "version and try again",
            )
        meta["resourceVersion"] = old["resourceVersion"]
        # BeforeUpdate: fields the server owns or silently keeps.
        if "generation" in old:
            meta["generation"] = old["generation"]
        else:
            meta.pop("generation", None)
        meta.setdefault("uid", old["uid"])
        meta["creationTimestamp"] = old["creationTimestamp"]
        old_deletion = old.get("deletionTimestamp")
        if old_deletion is not None:
            meta["deletionTimestamp"] = old_deletion
        old_grace = old.get("deletionGracePeriodSeconds")
        if old_grace is not None and meta.get("deletionGracePeriodSeconds") is None:
            meta["deletionGracePeriodSeconds"] = old_grace
        finalizers: list[str] = meta.get("finalizers", [])
        errors: list[FieldError] = []
        if old_deletion is not None:
            added = [f for f in finalizers if f not in set(old.get("finalizers", []))]
            if added:
                errors.append(
                    FieldError(
                        "metadata.finalizers",
                        "FieldValueForbidden",
                        "no new finalizers can be added if the object is being deleted, "
                        f"found new finalizers {added!r}",
                    )
                )
        errors += immutable("metadata.uid", meta["uid"], old["uid"])
        errors += immutable(
            "metadata.deletionTimestamp", meta.get("deletionTimestamp"), old_deletion
        )
        errors += immutable(
            "metadata.deletionGracePeriodSeconds",
            meta.get("deletionGracePeriodSeconds"),
            old_grace,
        )
        errors += validate_finalizers(finalizers)
        errors += validate_owner_references(meta.get("ownerReferences", []))
        if errors:
            raise self._invalid(storage, name, errors)

        new: JSONDict = {"apiVersion": existing["apiVersion"], "kind": spec.kind, "metadata": meta}
        for key, value in body.items():
            if key not in ("apiVersion", "kind", "metadata"):
                new[key] = value
        if "generation" in meta and _spec_changed(existing, new):
            meta["generation"] += 1

        serving: CRDServing | None = None
        if self._is_crd_storage(storage) and old_deletion is None:
            serving, crd_errors = self._crd_admit(new, existing)
            if crd_errors:
                raise self._invalid(storage, name, crd_errors)
        if should_delete_during_update(finalizers, old) and not self._namespace_held(storage, new):
            # The last finalizer of a deleting object went away.
            gone = self._remove_locked(storage, namespace, name, existing, wake)
            new["metadata"] = _ordered({**meta, "resourceVersion": _meta(gone)["resourceVersion"]})
            return new
        new["metadata"] = _ordered(meta)
        if json_equal(new, existing):
            return existing  # a no-op write is not stored (no new rv, no event)
        out = self._store_locked(storage, "MODIFIED", new, wake)
        if serving is not None:
            self._crd_serve_locked(name, serving, wake)
        return out

    def _namespace_held(self, storage: _Storage, obj: JSONDict) -> bool:
        """A terminating namespace stays while ``spec.finalizers`` is not empty
        (``ShouldDeleteNamespaceDuringUpdate``)."""
        if not (self._terminating_namespaces and _is_namespaces(storage)):
            return False
        ns_spec = obj.get("spec")
        return isinstance(ns_spec, dict) and bool(ns_spec.get("finalizers"))

    # ------------------------------------------------------------------ delete

    def _delete_locked(
        self,
        storage: _Storage,
        version: str,
        namespace: str,
        name: str,
        policy: PropagationPolicy | None,
        orphan_dependents: bool | None,
        preconditions: Preconditions | None,
        wake: list[anyio.Event],
    ) -> JSONDict | None:
        # NamespaceLifecycle admission runs before the registry looks at the object.
        is_namespace = storage.spec.group == "" and storage.spec.resource == "namespaces"
        if is_namespace and name in IMMORTAL_NAMESPACES:
            raise Forbidden(
                f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                reason="Forbidden",
            )
        existing = storage.lookup(namespace, name)
        if existing is None:
            raise self._not_found(storage, name)
        meta = _meta(existing)
        if preconditions is not None:
            if preconditions.uid is not None and preconditions.uid != meta["uid"]:
                raise self._conflict(
                    storage,
                    name,
                    f"the UID in the precondition ({preconditions.uid}) does not match the UID "
                    f"in record ({meta['uid']}). The object might have been deleted and then "
                    "recreated",
                )
            if (
                preconditions.resource_version is not None
                and preconditions.resource_version != meta["resourceVersion"]
            ):
                raise self._conflict(
                    storage,
                    name,
                    f"the ResourceVersion in the precondition ({preconditions.resource_version}) "
                    f"does not match the ResourceVersion in record ({meta['resourceVersion']}). "
                    "The object might have been modified",
                )
        if is_namespace and self._terminating_namespaces:
            held = self._delete_namespace_locked(storage, existing, policy, orphan_dependents, wake)
            if held is not None:
                return held
        current = meta.get("finalizers", [])
        changed, finalizers = deletion_finalizers_for_garbage_collection(
            current, storage.spec.gc_policy(version), policy, orphan_dependents
        )
        # The apiserver takes its update path when the object has finalizers or
        # the GC finalizers change; it keeps the object (marked as deleting)
        # iff the resulting list is non-empty, which is all that matters here
        # because nothing is graceful.
        del changed
        if finalizers:
            updated = mark_as_deleting(existing, self._clock())
            updated_meta = dict(_meta(updated))
            updated_meta["finalizers"] = finalizers
            updated["metadata"] = _ordered(updated_meta)
            if json_equal(updated, existing):
                return existing  # nothing changed: no write, no event
            return self._store_locked(storage, "MODIFIED", updated, wake)
        self._remove_locked(storage, namespace, name, existing, wake)
        return None

    def _delete_namespace_locked(
        self,
        storage: _Storage,
        existing: JSONDict,
        policy: PropagationPolicy | None,
        orphan_dependents: bool | None,
        wake: list[anyio.Event],
    ) -> JSONDict | None:
        """The namespace registry's DELETE (item 90); None means "go on with the
        generic DELETE" (the namespace is terminating and already finalized)."""
        meta = _meta(existing)
        if meta.get("deletionTimestamp") is None:
            current = set(meta.get("finalizers", []))
            if orphan_dependents is not None:
                orphan, foreground = orphan_dependents, not orphan_dependents
            elif policy is not None:
                orphan = policy is PropagationPolicy.ORPHAN
                foreground = policy is PropagationPolicy.FOREGROUND
            else:
                orphan = FINALIZER_ORPHAN in current
                foreground = FINALIZER_FOREGROUND in current
            wanted = set(current)
            for finalizer, on in ((FINALIZER_ORPHAN, orphan), (FINALIZER_FOREGROUND, foreground)):
                if on:
                    wanted.add(finalizer)
                else:
                    wanted.discard(finalizer)
            updated = mark_as_deleting(existing, self._clock())
            updated_meta = dict(_meta(updated))
            if wanted != current:
                updated_meta["finalizers"] = sorted(wanted)
            if not updated_meta.get("finalizers"):
                updated_meta.pop("finalizers", None)
            updated["metadata"] = _ordered(updated_meta)
            status = dict(updated.get("status") or {})
            status["phase"] = "Terminating"
            updated["status"] = status
            return self._store_locked(storage, "MODIFIED", updated, wake)
        if self._namespace_held(storage, existing):
            return existing
        return None

    # ------------------------------------------------------------------ ObjectStore

    async def discover(self) -> DiscoveryResult:
        """Every served resource version, minus group versions set to fail."""
        await anyio.lowlevel.checkpoint()
        fault = self._begin("discover", None)
        if fault is not None:
            raise fault
        with self._lock:
            failed = dict(self._discovery_failures)
            resources = tuple(
                r
                for storage in self._storages.values()
                for r in storage.spec.api_resources()
                if r.api_version not in failed
            )
        return DiscoveryResult(resources=resources, failed=failed)

    async def list(
        self,
        resource: APIResource,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
    ) -> ObjectList:
        """All objects (sorted by namespace, name) and the store's current resourceVersion."""
        await anyio.lowlevel.checkpoint()
        fault = self._begin("list", resource, namespace)
        if fault is not None:
            raise fault
        with self._lock:
            storage = self._storage(resource)
            self._check_verb(storage, "list")
            ns = self._collection_namespace(storage, namespace)
            snapshot = list(storage.iter_sorted(ns))
            rv = str(self._rv)
        items = [self._render(storage, o, resource.version, metadata_only) for o in snapshot]
        return ObjectList(items=items, resource_version=rv)

    def watch(
        self,
        resource: APIResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        metadata_only: bool = True,
        timeout_seconds: float | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Changes after ``resource_version``, in rv order, as an async generator.

        ``"0"`` or ``""`` first sends an ADDED event for every current object
        (like a watch without a version). A version whose successors left the
        event window raises :class:`ResourceExpired`, on the first iteration
        or later if this watcher falls a whole window behind. The stream ends
        after ``timeout_seconds`` and when the resource stops being served.
        Cancelling the consuming task is safe at any point; a consumer that
        stops early should close the generator (``contextlib.aclosing``), which
        trio insists on.
        """
        fault = self._begin("watch", resource, namespace)
        try:
            if fault is not None:
                raise fault
            start = self._watch_start(resource, resource_version, namespace)
        except APIError as exc:
            return self._failed_watch(exc)
        return self._watch(resource, start, metadata_only, timeout_seconds)

    def _watch_start(
        self, resource: APIResource, resource_version: str, namespace: str | None
    ) -> _WatchStart:
        """Where a new watch starts; resolved when ``watch()`` is called, so a watch
        opened before a change sees it even if iteration starts later."""
        try:
            since = int(resource_version) if resource_version else 0
        except ValueError:
            raise BadRequest(
                f"invalid resourceVersion {resource_version!r}", reason="BadRequest"
            ) from None
        if since < 0:
            raise BadRequest(f"invalid resourceVersion {resource_version!r}", reason="BadRequest")
        with self._lock:
            storage = self._storage(resource)
            self._check_verb(storage, "watch")
            ns = self._collection_namespace(storage, namespace)
            log = storage.log
            if since == 0:
                return _WatchStart(storage, ns, builtins.list(storage.iter_sorted(ns)), log.end_seq)
            if since > self._rv:
                raise ServerTimeout(
                    f"Timeout: Too large resource version: {since}, current: {self._rv}",
                    reason="Timeout",
                )
            if since < log.evicted_rv:
                raise ResourceExpired(
                    f"too old resource version: {since} ({log.evicted_rv + 1})",
                    reason="Expired",
                )
            return _WatchStart(storage, ns, [], log.seq_after(since))

    @staticmethod
    async def _failed_watch(error: APIError) -> AsyncGenerator[WatchEvent, None]:
        await anyio.lowlevel.checkpoint()
        raise error
        yield  # pragma: no cover - makes this an async generator

    async def _watch(
        self,
        resource: APIResource,
        start: _WatchStart,
        metadata_only: bool,
        timeout_seconds: float | None,
    ) -> AsyncGenerator[WatchEvent, None]:
        await anyio.lowlevel.checkpoint()
        deadline = None if timeout_seconds is None else anyio.current_time() + timeout_seconds
        key = (resource.group, resource.version, resource.resource)
        storage, ns, initial, seq = start.storage, start.namespace, start.initial, start.seq
        log = storage.log
        for obj in initial:
            yield WatchEvent("ADDED", self._render(storage, obj, resource.version, metadata_only))
        while True:
            waiter: anyio.Event | None = None
            with self._lock:
                if seq < log.first_seq:
                    raise ResourceExpired(
                        f"too old resource version: the watcher fell behind the event window "
                        f"({log.evicted_rv + 1})",
                        reason="Expired",
                    )
                batch = log.read(seq, _WATCH_BATCH)
                seq += len(batch)
                served = self._by_gvr.get(key) is storage
                if not batch:
                    if log.closed or not served:
                        return
                    if log.waiter is None:
                        log.waiter = anyio.Event()
                    waiter = log.waiter
            for event in batch:
                if ns is None or event.namespace == ns:
                    yield WatchEvent(
                        event.type,
                        self._render(storage, event.obj, resource.version, metadata_only),
                    )
            # At the deadline the stream ends once it has caught up with the log.
            caught_up = len(batch) < _WATCH_BATCH
            if deadline is not None and caught_up and anyio.current_time() >= deadline:
                return
            if waiter is not None:
                if deadline is None:
                    await waiter.wait()
                else:
                    with anyio.move_on_after(deadline - anyio.current_time()):
                        await waiter.wait()

    async def get(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
    ) -> JSONDict:
        """The live object; raises :class:`NotFound`."""
        await anyio.lowlevel.checkpoint()
        fault = self._begin("get", resource, namespace, name)
        if fault is not None:
            raise fault
        with self._lock:
            storage = self._storage(resource)
            self._check_verb(storage, "get")
            obj = storage.lookup(self._object_namespace(storage, namespace), name)
            if obj is None:
                raise self._not_found(storage, name)
        return self._render(storage, obj, resource.version, metadata_only)

    async def create(
        self,
        resource: APIResource,
        obj: JSONDict,
        *,
        namespace: str | None = None,
    ) -> JSONDict:
        """Create ``obj`` (namespace from the argument or ``metadata.namespace``).

        The server fills uid, resourceVersion, generation 1 and
        creationTimestamp; ``generateName`` works. Raises
        :class:`AlreadyExists`, :class:`Invalid` (bad metadata),
        :class:`BadRequest` (undecodable input), :class:`NotFound` (no such
        namespace) or :class:`Forbidden` (namespace being deleted).
        """
        await anyio.lowlevel.checkpoint()
        fault = self._begin("create", resource, namespace, _name_of(obj))
        if fault is not None:
            raise fault
        with self._write() as wake:
            storage = self._storage(resource)
            self._check_verb(storage, "create")
            stored = self._create_locked(storage, resource.version, namespace, obj, wake)
        return self._render(storage, stored, resource.version, False)

    async def update(
        self,
        resource: APIResource,
        obj: JSONDict,
        *,
        namespace: str | None = None,
    ) -> JSONDict:
        """PUT: replace the object named by ``obj``, with optimistic concurrency.

        A ``metadata.resourceVersion`` that is not the stored one raises
        :class:`Conflict`; without one the update is unconditional for
        built-in kinds and :class:`Invalid` for registered kinds (as for
        custom resources). Emptying the finalizers of a deleting object
        removes it (the returned object then carries the deletion's rv).
        """
        await anyio.lowlevel.checkpoint()
        name = _name_of(obj)
        fault = self._begin("update", resource, namespace, name)
        if fault is not None:
            raise fault
        with self._write() as wake:
            storage = self._storage(resource)
            self._check_verb(storage, "update")
            body = self._body(obj, "the object to update")
            own_ns = _namespace_of(body) if storage.spec.namespaced else None
            ns = self._object_namespace(storage, namespace or own_ns)
            if not name:
                raise BadRequest("metadata.name is required for an update", reason="BadRequest")
            existing = storage.lookup(ns, name)
            if existing is None:
                raise self._not_found(storage, name)
            stored = self._update_locked(storage, existing, body, wake, is_patch=False)
        return self._render(storage, stored, resource.version, False)

    async def patch(
        self,
        resource: APIResource,
        name: str,
        patch: JSONDict | builtins.list[JSONDict],
        *,
        patch_type: PatchType,
        namespace: str | None = None,
    ) -> JSONDict:
        """Apply a strategic merge, JSON merge or JSON patch and return the new object.

        Raises :class:`UnsupportedPatchType` for strategic merge on a
        registered (custom) kind, :class:`Conflict` when the patched object
        carries a stale ``metadata.resourceVersion``, :class:`Invalid` when the
        result does not validate (a changed ``metadata.uid``, a new finalizer
        on a deleting object, a failed JSON patch ``test``) and
        :class:`BadRequest` for a malformed patch. Emptying the finalizers of
        a deleting object removes it; the patched object is returned.
        """
        await anyio.lowlevel.checkpoint()
        fault = self._begin("patch", resource, namespace, name)
        if fault is not None:
            raise fault
        try:
            kind = PatchType(patch_type)
        except ValueError:
            raise UnsupportedPatchType(
                f"the body of the request was in an unknown format: {patch_type!r}",
                reason="UnsupportedMediaType",
            ) from None
        try:
            document = check_json(patch)
        except PatchError as exc:
            raise BadRequest(
                f"the patch is not valid JSON: {exc.message}", reason="BadRequest"
            ) from None
        with self._write() as wake:
            storage = self._storage(resource)
            self._check_verb(storage, "patch")
            if kind is PatchType.STRATEGIC_MERGE and not storage.spec.strategic_merge_patch:
                raise UnsupportedPatchType(
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml",
                    reason="UnsupportedMediaType",
                )
            ns = self._object_namespace(storage, namespace)
            existing = storage.lookup(ns, name)
            if existing is None:
                raise self._not_found(storage, name)
            current = self._render(storage, existing, resource.version, False)
            try:
                if kind is PatchType.STRATEGIC_MERGE:
                    result = apply_strategic_merge_patch(current, document)
                elif kind is PatchType.MERGE:
                    if not isinstance(document, dict):
                        raise PatchError("a JSON merge patch must be a JSON object")
                    result = apply_json_merge_patch(current, document)
                else:
                    result = apply_json_patch(current, document)
            except PatchError as exc:
                if exc.status == 422:
                    raise Invalid(exc.message, reason="Invalid") from None
                if exc.status == 409:
                    raise self._conflict(storage, name, exc.message) from None
                raise BadRequest(exc.message, reason="BadRequest") from None
            if not isinstance(result, dict):
                raise BadRequest("the patched object is not a JSON object", reason="BadRequest")
            stored = self._update_locked(storage, existing, result, wake, is_patch=True)
        return self._render(storage, stored, resource.version, False)

    async def delete(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | str | None = None,
        preconditions: Preconditions | None = None,
        orphan_dependents: bool | None = None,
    ) -> JSONDict | None:
        """DELETE with the generic registry store's algorithm (items 82-88).

        ``orphan_dependents`` is the deprecated DeleteOptions field; giving
        it together with ``propagation_policy``, or an unknown policy, raises
        :class:`Invalid`. Preconditions that do not match raise
        :class:`Conflict`. Without a policy the object's own orphan /
        foregroundDeletion finalizer, else the resource default decides.
        Returns the object when finalizers keep it (now with a
        deletionTimestamp), None when it was removed. A second DELETE of a
        deleting object recomputes those finalizers from its options.
        """
        await anyio.lowlevel.checkpoint()
        fault = self._begin("delete", resource, namespace, name)
        if fault is not None:
            raise fault
        policy = _validate_delete_options(propagation_policy, orphan_dependents)
        with self._write() as wake:
            storage = self._storage(resource)
            self._check_verb(storage, "delete")
            ns = self._object_namespace(storage, namespace)
            result = self._delete_locked(
                storage, resource.version, ns, name, policy, orphan_dependents, preconditions, wake
            )
        if result is None:
            return None
        return self._render(storage, result, resource.version, False)

    # ------------------------------------------------------------------ conveniences

    async def create_object(self, obj: JSONDict) -> JSONDict:
        """Create ``obj`` in the resource its apiVersion/kind map to (namespace from
        its metadata); raises :class:`RESTMappingError` for an unserved kind."""
        if not isinstance(obj, dict):
            raise BadRequest(f"the object to create must be a JSON object, got {obj!r}")
        resource = self.resource_for(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        return await self.create(resource, obj)

    def load_objects(self, objects: Iterable[JSONDict]) -> builtins.list[JSONDict]:
        """Store copies of objects from elsewhere (a cluster, manifests) as they are.

        Unlike :meth:`create_object`, each object keeps its ``metadata.uid``
        (one is made up when missing), creationTimestamp, generation and
        deletion state (deletionTimestamp and finalizers), so ownerReferences
        between them resolve and objects that are being deleted stay so;
        ``resourceVersion`` is replaced by the store's. NamespaceLifecycle
        admission is skipped (a namespace need not be loaded before its
        contents). CRDs serve their kinds at once, so load them before
        their objects. Synchronous and atomic per object: the first bad
        object raises (:class:`RESTMappingError` for an unserved kind,
        :class:`Invalid`, :class:`AlreadyExists` for a used name or uid) and
        the objects before it stay loaded. Returns the stored objects.
        """
        out: builtins.list[JSONDict] = []
        with self._write() as wake:
            uids = {_meta(o)["uid"] for st in self._storages.values() for o in st.iter_sorted(None)}
            for obj in objects:
                if not isinstance(obj, dict):
                    raise BadRequest(f"the object to load must be a JSON object, got {obj!r}")
                api_version = str(obj.get("apiVersion", ""))
                kind = str(obj.get("kind", ""))
                group, _, version = api_version.rpartition("/")
                storage = self._by_gvk.get((group, version, kind))
                if storage is None:
                    raise RESTMappingError(api_version, kind)
                uid = (
                    (obj.get("metadata") or {}).get("uid")
                    if isinstance(obj.get("metadata"), dict)
                    else None
                )
                if isinstance(uid, str) and uid in uids:
                    raise AlreadyExists(
                        f"an object with uid {uid!r} is already stored", reason="AlreadyExists"
                    )
                stored = self._create_locked(
                    storage, version, None, obj, wake, admit=False, load=True
                )
                uids.add(_meta(stored)["uid"])
                out.append(self._render(storage, stored, version, False))
        return out

    @property
    def resource_version(self) -> str:
        """The store's current (newest) resourceVersion."""
        with self._lock:
            return str(self._rv)

    def get_object(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> JSONDict | None:
        """Synchronous read for tests: a copy of the full object, or None."""
        group, _, version = api_version.rpartition("/")
        with self._lock:
            storage = self._by_gvk.get((group, version, kind))
            if storage is None:
                raise RESTMappingError(api_version, kind)
            obj = storage.lookup((namespace or "") if storage.spec.namespaced else "", name)
            if obj is None:
                return None
            return self._render(storage, obj, version, False)

    def exists(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> bool:
        """Synchronous check for tests: is the object stored (deleting or not)?"""
        return self.get_object(api_version, kind, name, namespace) is not None

    def snapshot(self) -> builtins.list[JSONDict]:
        """Copies of every stored object in their preferred versions, sorted by
        group, resource, namespace and name."""
        with self._lock:
            storages = sorted(
                self._storages.values(), key=lambda s: (s.spec.group, s.spec.resource)
            )
            return [
                self._render(s, obj, s.spec.preferred_version, False)
                for s in storages
                for obj in s.iter_sorted(None)
            ]

    def object_count(self, resource: APIResource | None = None) -> int:
        """Stored objects, of one resource or in total."""
        with self._lock:
            if resource is not None:
                return self._storage(resource).count()
            return sum(s.count() for s in self._storages.values())

    # ------------------------------------------------------------------ for the HTTP facade
    # Added for ownergc_backends.memory.http: kube-apiserver answers a DELETE that
    # removes the object with what it removed (the object itself for pods, else a
    # Status carrying its uid), which ``delete`` (None on removal) cannot tell.

    async def delete_and_report(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | str | None = None,
        preconditions: Preconditions | None = None,
        orphan_dependents: bool | None = None,
    ) -> tuple[JSONDict, bool]:
        """:meth:`delete`, returning ``(object, removed)`` atomically.

        When ``removed`` the object is its last state with the deletion's
        resourceVersion (what the DELETED watch event carries); otherwise it
        is the object that remains, as :meth:`delete` returns it.
        """
        await anyio.lowlevel.checkpoint()
        fault = self._begin("delete", resource, namespace, name)
        if fault is not None:
            raise fault
        policy = _validate_delete_options(propagation_policy, orphan_dependents)
        with self._write() as wake:
            storage = self._storage(resource)
            self._check_verb(storage, "delete")
            ns = self._object_namespace(storage, namespace)
            before = storage.lookup(ns, name)
            result = self._delete_locked(
                storage, resource.version, ns, name, policy, orphan_dependents, preconditions, wake
            )
            removed = result is None
            if result is None:
                assert before is not None
                result = _with_rv(before, self._rv)
        return self._render(storage, result, resource.version, False), removed


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


def _spec_changed(old: JSONDict, new: JSONDict) -> bool:
    skip = ("apiVersion", "kind", "metadata", "status")
    a = {k: v for k, v in old.items() if k not in skip}
    b = {k: v for k, v in new.items() if k not in skip}
    return not json_equal(a, b)


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
                    f'supported values: "Orphan", "Background", "Foreground" (got {policy!r})',
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
