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

import builtins
import copy
import threading
import uuid
from collections import Counter, deque
from collections.abc import AsyncGenerator, Callable, Iterable
from datetime import datetime

import anyio
import anyio.lowlevel

from ownergc.errors import (
    AlreadyExists,
    APIError,
    BadRequest,
    Invalid,
    InvalidObject,
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
)

from ._objects import (
    _WATCH_BATCH,
    INITIAL_NAMESPACES,
    RequestRecord,
    _meta,
    _name_of,
    _namespace_of,
    _Storage,
    _utcnow,
    _validate_delete_options,
    _WatchStart,
    _with_rv,
)
from ._patch import (
    PatchError,
    apply_json_merge_patch,
    apply_json_patch,
    apply_strategic_merge_patch,
)
from ._resources import BUILTIN_RESOURCES
from ._writes import StoreWrites

__all__ = ["InMemoryStore"]


class InMemoryStore(StoreWrites):
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
    changes the served versions; removing it stops serving the kind.

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
    * The CRD finalizer (``customresourcecleanup.apiextensions.k8s.io``, added
      to every CRD) runs inline: deleting a CRD deletes its objects at once,
      and the CRD goes when the last of them does (objects held by their own
      finalizers keep it Terminating, as with kube-apiserver).
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
        self._terminating_namespaces = terminating_namespaces
        #: (group, resource) served because of a CRD -> the CRD's name.
        self._crd_served: dict[tuple[str, str], str] = {}
        self._crd_cleaning: set[str] = set()
        for spec in BUILTIN_RESOURCES:
            self._install(spec)
        namespaces = self._storages[("", "namespaces")]
        with self._write() as wake:
            for name in INITIAL_NAMESPACES:
                self._create_locked(
                    namespaces, "v1", None, {"metadata": {"name": name}}, wake, admit=False
                )

    async def discover(self) -> DiscoveryResult:
        """Every served resource version, minus group versions set to fail."""
        await anyio.lowlevel.checkpoint()
        self._begin("discover", None)
        with self._lock:
            failed = {**self._unavailable_api_services(), **self._discovery_failures}
            resources = tuple(
                r
                for storage in self._storages.values()
                for r in storage.spec.api_resources()
                if r.api_version not in failed
            )
        return DiscoveryResult(resources=resources, failed=failed)

    def _unavailable_api_services(self) -> dict[str, str]:
        """Group versions of aggregated APIServices that are not Available.

        kube-apiserver proxies their discovery to the extension server; when it
        is down, discovery of that group version fails with a 503, which is
        what makes namespace deletion hang (NamespaceDeletionDiscoveryFailure).
        An in-memory store has no extension servers: an APIService with a
        ``spec.service`` is unavailable (its status says why) unless a status
        given with it says Available.
        """
        storage = self._storages.get(("apiregistration.k8s.io", "apiservices"))
        failed: dict[str, str] = {}
        for svc in storage.iter_sorted(None) if storage is not None else ():
            spec = svc.get("spec") or {}
            if not spec.get("service"):
                continue  # local: served by kube-apiserver itself
            conditions = (svc.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions):
                continue
            group, version = spec.get("group", ""), spec.get("version", "")
            gv = f"{group}/{version}" if group else str(version)
            failed[gv] = "the server is currently unable to handle the request"
        return failed

    async def list(
        self,
        resource: APIResource,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
        consistent: bool = True,  # always consistent here
    ) -> ObjectList:
        """All objects (sorted by namespace, name) and the store's current resourceVersion."""
        await anyio.lowlevel.checkpoint()
        self._begin("list", resource, namespace)
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
        self._begin("watch", resource, namespace)
        try:
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
        self._begin("get", resource, namespace, name)
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
        self._begin("create", resource, namespace, _name_of(obj))
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
        subresource: str | None = None,
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
        self._begin("update", resource, namespace, name)
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
            self._check_subresource(storage, subresource)
            stored = self._update_locked(
                storage, existing, body, wake, is_patch=False, subresource=subresource
            )
        return self._render(storage, stored, resource.version, False)

    def crd_for(self, resource: APIResource) -> JSONDict | None:
        """The CustomResourceDefinition that serves ``resource`` (None for built-ins)."""
        with self._lock:
            crd = self._crd_serving_storage(self._storage(resource))
            return copy.deepcopy(crd) if crd is not None else None

    def subresources_of(self, resource: APIResource) -> frozenset[str]:
        """The subresources ``resource`` serves (``status`` / ``scale`` of a CRD)."""
        with self._lock:
            return self._storage(resource).spec.subresources

    def scale_paths_of(self, resource: APIResource) -> tuple[str, str, str | None] | None:
        """A CRD's scale subresource paths (spec replicas, status replicas, selector)."""
        with self._lock:
            return self._storage(resource).spec.scale_paths

    @staticmethod
    def _check_subresource(storage: _Storage, subresource: str | None) -> None:
        if subresource is not None and subresource not in storage.spec.subresources:
            raise NotFound(
                f"the server could not find the requested resource "
                f"({storage.group_resource}/{subresource})",
                reason="NotFound",
            )

    async def patch(
        self,
        resource: APIResource,
        name: str,
        patch: JSONDict | builtins.list[JSONDict],
        *,
        patch_type: PatchType,
        namespace: str | None = None,
        subresource: str | None = None,
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
        self._begin("patch", resource, namespace, name)
        try:
            kind = PatchType(patch_type)
        except ValueError:
            raise UnsupportedPatchType(
                f"the body of the request was in an unknown format: {patch_type!r}",
                reason="UnsupportedMediaType",
            ) from None
        document = self._json(patch, "the patch")
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
            self._check_subresource(storage, subresource)
            stored = self._update_locked(
                storage, existing, result, wake, is_patch=True, subresource=subresource
            )
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
        obj, removed = await self.delete_and_report(
            resource,
            name,
            namespace=namespace,
            propagation_policy=propagation_policy,
            preconditions=preconditions,
            orphan_dependents=orphan_dependents,
        )
        return None if removed else obj

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
            uids = {
                _meta(o).get("uid") for st in self._storages.values() for o in st.iter_sorted(None)
            }
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
                uids.add(_meta(stored).get("uid"))
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
        self._begin("delete", resource, namespace, name)
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
