"""``InMemoryStore``: an :class:`~ownergc.protocols.ObjectStore` that behaves like kube-apiserver.

Everything a garbage collector can observe follows the apiserver: uids,
one global resourceVersion counter (like etcd's revision), generation on the
kinds that have one (``_generation``), the DELETE algorithm of the generic
registry store (finalizers ``orphan`` / ``foregroundDeletion``,
deletionTimestamp, removal when the last finalizer goes), preconditions,
ObjectMeta validation, the three patch types, list and watch from a
resourceVersion, discovery. See :class:`InMemoryStore` for the
deliberate differences.

Composition. ``InMemoryStore`` is a façade over three parts, each built from
what it uses: the storage (:class:`~._storage.ObjectStorage`: objects, the
resourceVersion counter, event logs, the uid index, the lock), the resource
registry (:class:`~._registry.ResourceRegistry`: served kinds, scopes, CRDs'
kinds, discovery; over the bucket) and the write rules
(:class:`~._writes.WriteRules`: validation, defaulting, finalizers, DELETE and
the GC finalizers, namespaces, the CRD lifecycle; over both). The façade
parses requests, takes the lock, calls the rules and renders what clients see.

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
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import anyio
import anyio.lowlevel

from ownergc._kit.gcpause import gc_paused
from ownergc.errors import (
    AlreadyExists,
    APIError,
    BadRequest,
    Conflict,
    Invalid,
    NotFound,
    RESTMappingError,
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

from ._conversion import CONVERTED, from_storage
from ._core import conflict, json_body, json_value, not_found, render, render_shared
from ._objects import (
    _WATCH_BATCH,
    INITIAL_NAMESPACES,
    RequestRecord,
    _name_of,
    _namespace_of,
    _Storage,
    _utcnow,
    _validate_delete_options,
    _WatchStart,
    _with_rv,
)
from ._patch import (
    JSONPatchNotApplied,
    PatchError,
    apply_json_merge_patch,
    apply_json_patch,
    apply_strategic_merge_patch,
    strategic_schema,
)
from ._registry import ResourceRegistry
from ._resources import GCPolicy
from ._storage import ObjectStorage
from ._writes import WriteRules

__all__ = ["InMemoryStore", "PatchRaced", "RequestLog"]


class PatchRaced(Conflict):
    """The object changed between :meth:`InMemoryStore.patched` and the write: patch
    the new state again (a 409 if it reaches a client)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"the object {name!r} has been modified; please apply your changes to the "
            "latest version and try again",
            reason="Conflict",
        )


class RequestLog:
    """The API calls a store saw: the most recent ones, and counters per verb and resource.

    ``limit`` bounds the records kept (None: all); the counters are never truncated.
    """

    def __init__(self, limit: int | None = 100_000) -> None:
        self._lock = threading.Lock()
        self._records: deque[RequestRecord] = deque(maxlen=limit)
        self._counts: Counter[tuple[str, str]] = Counter()

    def record(
        self,
        verb: str,
        resource: APIResource | None,
        namespace: str | None = None,
        name: str | None = None,
    ) -> None:
        with self._lock:
            self._records.append(RequestRecord(verb, resource, namespace, name))
            self._counts[(verb, resource.group_resource if resource else "")] += 1

    def records(self) -> tuple[RequestRecord, ...]:
        with self._lock:
            return tuple(self._records)

    def count(self, verb: str | None = None, resource: APIResource | str | None = None) -> int:
        wanted = resource.group_resource if isinstance(resource, APIResource) else resource
        with self._lock:
            return sum(
                n
                for (v, gr), n in self._counts.items()
                if (verb is None or v == verb) and (wanted is None or gr == wanted)
            )

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
            self._counts.clear()


class _PatchNotApplied(Invalid):
    """kube-apiserver's answer to a JSON patch it cannot apply: a 422 that says nothing of
    which operation failed or why (its details are empty, not absent). ``why`` says it,
    for whoever debugs a test against this store."""

    def __init__(self, why: str) -> None:
        super().__init__(
            "the server rejected our request due to an error in our request", reason="Invalid"
        )
        self.why = why

    def to_status(self) -> dict[str, Any]:
        return {**super().to_status(), "details": {}}


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
    changes the served versions; removing it stops serving the kind.

    ``metadata.generation`` is kept as kube-apiserver v1.30 keeps it, per
    kind (the table and its sources are in ``_generation``): 1 at create and
    +1 when the kind's watched fields change for Deployments, ReplicaSets,
    Jobs, CRDs, custom resources and the other kinds whose registry strategy
    has one; none at all for ConfigMaps, Secrets, Services, Pods and the
    other kinds whose strategy has none (a client-sent value is kept on
    create, as the real create handler does not wipe it, and an update can
    never change it); +1 by the first DELETE that marks an object deleting
    when it is above 0; never bumped by a ``/status`` update.

    Deliberate differences from kube-apiserver, all invisible to a GC:

    * Objects are schemaless JSON: only ``metadata`` is decoded and validated
      (types, names, finalizers, ownerReferences); spec/status are stored as
      given. Generation therefore compares fields as JSON (nulls and empty
      objects and lists count as absent) where the real strategies compare
      typed, defaulted objects; a DaemonSet's template generation annotation
      is not kept. ``status`` of a built-in kind is not a subresource.
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
      ``kube-public`` cannot be deleted). ``spec.finalizers`` and the status
      of a namespace can be changed by any update (kube-apiserver only allows
      it through the ``/finalize`` and ``/status`` subresources, which are
      served too: serve's namespace controller writes through the object).
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
        #: Objects, resourceVersions and event logs; its lock guards the other parts too.
        self._storage = ObjectStorage(event_window=event_window)
        self._clock = clock or _utcnow
        #: Served kinds, scopes, CRDs' kinds.
        self._registry = ResourceRegistry(self._storage)
        #: Validation, defaulting, finalizers, DELETE, namespaces, the CRD lifecycle.
        self._rules = WriteRules(
            self._storage,
            self._registry,
            clock=self._clock,
            uid_factory=uid_factory or (lambda: str(uuid.uuid4())),
            terminating_namespaces=terminating_namespaces,
        )
        self._requests = RequestLog(request_log_limit)
        self._begin = self._requests.record
        self._lock = self._storage.lock
        namespaces = self._registry.bucket("", "namespaces")
        assert namespaces is not None
        with self._storage.write() as wake:
            for name in INITIAL_NAMESPACES:
                self._rules.create_locked(
                    namespaces, "v1", None, {"metadata": {"name": name}}, wake, admit=False
                )

    # -- the resource registry

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
        return self._registry.register_resource(
            group=group,
            versions=versions,
            resource=resource,
            kind=kind,
            namespaced=namespaced,
            preferred_version=preferred_version,
            verbs=verbs,
            default_gc_policy=default_gc_policy,
            strategic_merge_patch=strategic_merge_patch,
            allow_unconditional_update=allow_unconditional_update,
        )

    def unregister_resource(self, group: str, resource: str) -> bool:
        """Stop serving a group/resource, like deleting its CRD; False if it was not served.

        Its objects are removed (watchers get a DELETED event for each, then
        their stream ends) and every later request for it answers 404.
        """
        with self._storage.write() as wake:
            bucket = self._registry.bucket(group, resource)
            if bucket is None:
                return False
            self._rules.unregister_locked(bucket, wake)
        return True

    def set_discovery_failure(self, group_version: str, message: str | None) -> None:
        """Make discovery report ``group_version`` as failed (None clears it), as an
        unavailable aggregated API would; its resources are then missing from discovery."""
        self._registry.set_discovery_failure(group_version, message)

    def resource_for(self, api_version: str, kind: str) -> APIResource:
        """The served resource for (apiVersion, kind); raises :class:`RESTMappingError`."""
        return self._registry.resource_for(api_version, kind)

    def resource_by_name(self, name: str) -> APIResource:
        """``pods``, ``deployments.apps`` or ``deployments.v1.apps`` → the served resource
        (preferred version unless one is named); raises :class:`RESTMappingError`."""
        return self._registry.resource_by_name(name)

    # -- the request log

    @property
    def requests(self) -> tuple[RequestRecord, ...]:
        """The most recent API calls, oldest first."""
        return self._requests.records()

    def request_count(
        self, verb: str | None = None, resource: APIResource | str | None = None
    ) -> int:
        """How many calls were made, optionally only of one verb and/or one resource
        (an :class:`APIResource` or its ``group_resource`` string, e.g. ``"deployments.apps"``)."""
        return self._requests.count(verb, resource)

    def clear_requests(self) -> None:
        """Forget the request log and counters."""
        self._requests.clear()

    # -- ObjectStore

    async def discover(self) -> DiscoveryResult:
        """Every served resource version, minus group versions set to fail."""
        await anyio.lowlevel.checkpoint()
        self._begin("discover", None)
        with self._lock:
            resources, failed = self._registry.discovery_locked()
        return DiscoveryResult(resources=resources, failed=failed)

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
            bucket = self._registry.bucket_for(resource)
            self._registry.check_verb(bucket, "list")
            ns = self._registry.collection_namespace(bucket, namespace)
            snapshot = list(bucket.iter_sorted(ns))
            rv = str(self._storage.rv)
        items = [render(bucket, o, resource.version, metadata_only) for o in snapshot]
        return ObjectList(items=items, resource_version=rv)

    async def list_shared(
        self, resource: APIResource, *, namespace: str | None = None
    ) -> ObjectList:
        """:meth:`list` without the copies, for a caller that encodes the answer at once
        (the REST facade): each item is a new top-level dict in ``resource``'s version
        whose values are the stored ones. Stored objects are never changed in place (a
        write stores a new object; the watch log holds the old), so sharing them is
        safe, but the items must be treated as read-only.

        A list of 100k objects is then a walk of the storage, not 100k deep copies."""
        await anyio.lowlevel.checkpoint()
        self._begin("list", resource, namespace)
        with self._lock:
            bucket = self._registry.bucket_for(resource)
            self._registry.check_verb(bucket, "list")
            ns = self._registry.collection_namespace(bucket, namespace)
            snapshot = list(bucket.iter_sorted(ns))
            rv = str(self._storage.rv)
        spec = bucket.spec
        head = {
            "apiVersion": f"{spec.group}/{resource.version}" if spec.group else resource.version,
            "kind": spec.kind,
        }
        items: builtins.list[JSONDict] = []
        with gc_paused():
            for obj in snapshot:
                item = head.copy()
                item.update(obj)
                item.update(head)
                items.append(item)
        if (spec.resource, resource.version) in CONVERTED:
            for item in items:
                from_storage(spec.group, spec.resource, resource.version, item)
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

    def watch_batches(
        self,
        resource: APIResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        metadata_only: bool = True,
        timeout_seconds: float | None = None,
    ) -> AsyncGenerator[builtins.list[WatchEvent], None]:
        """:meth:`watch`, the events that are ready at once handed over together (never
        an empty list), and their objects not copied: for the REST facade, which
        encodes them at once and writes them to its client in one piece rather than
        one write per event. The objects must be treated as read-only (see
        :meth:`list_shared`)."""
        self._begin("watch", resource, namespace)
        try:
            start = self._watch_start(resource, resource_version, namespace)
        except APIError as exc:
            return self._failed_watch(exc)
        return self._watch_batches(resource, start, metadata_only, timeout_seconds, shared=True)

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
            bucket = self._registry.bucket_for(resource)
            self._registry.check_verb(bucket, "watch")
            ns = self._registry.collection_namespace(bucket, namespace)
            return self._storage.watch_start(bucket, ns, since)

    @staticmethod
    async def _failed_watch(error: APIError) -> AsyncGenerator[Any, None]:
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
        batches = self._watch_batches(resource, start, metadata_only, timeout_seconds)
        try:
            async for batch in batches:
                for event in batch:
                    yield event
        finally:
            await batches.aclose()

    async def _watch_batches(
        self,
        resource: APIResource,
        start: _WatchStart,
        metadata_only: bool,
        timeout_seconds: float | None,
        *,
        shared: bool = False,
    ) -> AsyncGenerator[builtins.list[WatchEvent], None]:
        await anyio.lowlevel.checkpoint()
        deadline = None if timeout_seconds is None else anyio.current_time() + timeout_seconds
        bucket, ns, initial, seq = start.storage, start.namespace, start.initial, start.seq
        version = resource.version
        draw = render_shared if shared else render
        for first in range(0, len(initial), _WATCH_BATCH):
            yield [
                WatchEvent("ADDED", draw(bucket, obj, version, metadata_only))
                for obj in initial[first : first + _WATCH_BATCH]
            ]
        while True:
            with self._lock:
                batch, waiter, ended = self._storage.events_locked(
                    bucket, seq, _WATCH_BATCH, self._registry.serves(resource, bucket)
                )
            if ended:
                return
            seq += len(batch)
            ready = [
                WatchEvent(event.type, draw(bucket, event.obj, version, metadata_only))
                for event in batch
                if ns is None or event.namespace == ns
            ]
            if ready:
                yield ready
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
        bucket, obj = self._stored(resource, name, namespace)
        return render(bucket, obj, resource.version, metadata_only)

    def _stored(self, resource: APIResource, name: str, namespace: str | None) -> tuple[Any, Any]:
        """The bucket and stored object a GET reads (counted as one); raises NotFound."""
        self._begin("get", resource, namespace, name)
        with self._lock:
            bucket = self._registry.bucket_for(resource)
            self._registry.check_verb(bucket, "get")
            obj = bucket.lookup(self._registry.object_namespace(bucket, namespace), name)
            if obj is None:
                raise not_found(bucket, name)
        return bucket, obj

    async def get_shared(
        self, resource: APIResource, name: str, *, namespace: str | None = None
    ) -> JSONDict:
        """:meth:`get` (the whole object) without the copy, for a caller that encodes
        the answer at once (the REST facade): a new top-level dict in ``resource``'s
        version whose values are the stored ones, to be treated as read-only (see
        :meth:`list_shared`)."""
        await anyio.lowlevel.checkpoint()
        bucket, obj = self._stored(resource, name, namespace)
        spec = bucket.spec
        head = {
            "apiVersion": f"{spec.group}/{resource.version}" if spec.group else resource.version,
            "kind": spec.kind,
        }
        item = head.copy()
        item.update(obj)
        item.update(head)
        if (spec.resource, resource.version) in CONVERTED:
            from_storage(spec.group, spec.resource, resource.version, item)
        return item

    async def create(
        self,
        resource: APIResource,
        obj: JSONDict,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        applied: bool = False,
    ) -> JSONDict:
        """Create ``obj`` (namespace from the argument or ``metadata.namespace``).

        The server fills uid, resourceVersion, creationTimestamp and, for
        the kinds that have one, generation 1; ``generateName`` works. Raises
        :class:`AlreadyExists`, :class:`Invalid` (bad metadata),
        :class:`BadRequest` (undecodable input), :class:`NotFound` (no such
        namespace) or :class:`Forbidden` (namespace being deleted).

        ``dry_run`` (``dryRun=All``): everything above runs and raises alike,
        and the object that would be stored is returned, with a uid and
        creationTimestamp but no resourceVersion, as kube-apiserver answers;
        nothing is stored, no watch event is sent, no resourceVersion is used.

        ``applied``: ``obj`` is a server-side apply's result rather than a decoded
        body (a custom resource's nulls stay, to be refused, and no defaults are
        filled in, as the server leaves an applied object).
        """
        await anyio.lowlevel.checkpoint()
        self._begin("create", resource, namespace, _name_of(obj))
        with self._storage.write() as wake:
            bucket = self._registry.bucket_for(resource)
            self._registry.check_verb(bucket, "create")
            stored = self._rules.create_locked(
                bucket, resource.version, namespace, obj, wake, dry_run=dry_run, applied=applied
            )
        return render(bucket, stored, resource.version, False)

    async def update(
        self,
        resource: APIResource,
        obj: JSONDict,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        patched_from: str | None = None,
        dry_run: bool = False,
        applied: bool = False,
    ) -> JSONDict:
        """PUT: replace the object named by ``obj``, with optimistic concurrency.

        A ``metadata.resourceVersion`` that is not the stored one raises
        :class:`Conflict`; without one the update is unconditional for
        built-in kinds and :class:`Invalid` for registered kinds (as for
        custom resources). Emptying the finalizers of a deleting object
        removes it (the returned object then carries the deletion's rv).

        ``patched_from`` makes this the write of a PATCH computed by
        :meth:`patched` from the object at that resourceVersion: patch rules
        apply (no resourceVersion needed), it is logged as a patch, and it
        raises :class:`PatchRaced` if the object moved since, so the caller
        can patch the new state again as kube-apiserver does.

        ``dry_run``: the same checks and errors, and the object the update
        would leave (still carrying the stored resourceVersion); nothing is
        written. An emptying of finalizers that would remove the object
        leaves it in place.
        """
        await anyio.lowlevel.checkpoint()
        name = _name_of(obj)
        self._begin("update" if patched_from is None else "patch", resource, namespace, name)
        with self._storage.write() as wake:
            bucket = self._registry.bucket_for(resource)
            self._registry.check_verb(bucket, "update")
            body = json_body(obj, "the object to update")
            own_ns = _namespace_of(body) if bucket.spec.namespaced else None
            ns = self._registry.object_namespace(bucket, namespace or own_ns)
            if not name:
                raise BadRequest("metadata.name is required for an update", reason="BadRequest")
            existing = bucket.lookup(ns, name)
            if existing is None:
                raise not_found(bucket, name)
            self._check_subresource(bucket, subresource)
            moved = existing["metadata"].get("resourceVersion") != patched_from
            if patched_from is not None and moved:
                raise PatchRaced(name)
            stored = self._rules.update_locked(
                bucket,
                existing,
                body,
                wake,
                is_patch=patched_from is not None,
                subresource=subresource,
                dry_run=dry_run,
                version=resource.version,
                applied=applied,
            )
        return render(bucket, stored, resource.version, False)

    def now(self) -> datetime:
        """The store's clock (what stamps creationTimestamp), for the facade's managedFields."""
        return self._clock()

    def crd_for(self, resource: APIResource) -> JSONDict | None:
        """The CustomResourceDefinition that serves ``resource`` (None for built-ins)."""
        with self._lock:
            crd = self._registry.crd_serving(self._registry.bucket_for(resource))
            return copy.deepcopy(crd) if crd is not None else None

    def subresources_of(self, resource: APIResource) -> frozenset[str]:
        """The subresources ``resource`` serves (``status`` / ``scale`` of a CRD)."""
        with self._lock:
            return self._registry.bucket_for(resource).spec.subresources

    def scale_paths_of(self, resource: APIResource) -> tuple[str, str, str | None] | None:
        """A CRD's scale subresource paths (spec replicas, status replicas, selector)."""
        with self._lock:
            return self._registry.bucket_for(resource).spec.scale_paths

    @staticmethod
    def _check_subresource(bucket: _Storage, subresource: str | None) -> None:
        if subresource is not None and subresource not in bucket.spec.subresources:
            raise NotFound(
                f"the server could not find the requested resource "
                f"({bucket.group_resource}/{subresource})",
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
        dry_run: bool = False,
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
        with self._storage.write() as wake:
            bucket, existing, result = self._patch_locked(
                resource, name, patch, patch_type, namespace
            )
            self._check_subresource(bucket, subresource)
            stored = self._rules.update_locked(
                bucket,
                existing,
                result,
                wake,
                is_patch=True,
                subresource=subresource,
                dry_run=dry_run,
                version=resource.version,
            )
        return render(bucket, stored, resource.version, False)

    async def patched(
        self,
        resource: APIResource,
        name: str,
        patch: JSONDict | builtins.list[JSONDict],
        *,
        patch_type: PatchType,
        namespace: str | None = None,
    ) -> tuple[JSONDict, JSONDict]:
        """``(current, patched)``: the live object and what the patch makes of it, with
        nothing written.

        The first half of a PATCH for a server that must see the patched
        object before it is stored (admission, managedFields): write the
        result with :meth:`update` and ``patched_from=`` the current
        object's resourceVersion. Raises what :meth:`patch` raises for the
        patch itself.
        """
        await anyio.lowlevel.checkpoint()
        with self._lock:
            bucket, existing, result = self._patch_locked(
                resource, name, patch, patch_type, namespace
            )
            current = render(bucket, existing, resource.version, False)
        return current, result

    def _patch_locked(
        self,
        resource: APIResource,
        name: str,
        patch: Any,
        patch_type: PatchType,
        namespace: str | None,
    ) -> tuple[_Storage, JSONDict, JSONDict]:
        try:
            kind = PatchType(patch_type)
        except ValueError:
            raise UnsupportedPatchType(
                f"the body of the request was in an unknown format: {patch_type!r}",
                reason="UnsupportedMediaType",
            ) from None
        document = json_value(patch, "the patch")
        bucket = self._registry.bucket_for(resource)
        self._registry.check_verb(bucket, "patch")
        if kind is PatchType.STRATEGIC_MERGE and not bucket.spec.strategic_merge_patch:
            raise UnsupportedPatchType(
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json-patch+json, application/merge-patch+json, "
                "application/apply-patch+yaml",
                reason="UnsupportedMediaType",
            )
        ns = self._registry.object_namespace(bucket, namespace)
        existing = bucket.lookup(ns, name)
        if existing is None:
            raise not_found(bucket, name)
        current = render(bucket, existing, resource.version, False)
        try:
            if kind is PatchType.STRATEGIC_MERGE:
                facts = strategic_schema(resource.group, resource.version, resource.kind)
                result = apply_strategic_merge_patch(current, document, facts)
            elif kind is PatchType.MERGE:
                if not isinstance(document, dict):
                    raise PatchError("a JSON merge patch must be a JSON object")
                result = apply_json_merge_patch(current, document)
            else:
                result = apply_json_patch(current, document)
        except JSONPatchNotApplied as exc:
            raise _PatchNotApplied(exc.message) from None
        except PatchError as exc:
            if exc.status == 413:
                raise APIError(exc.message, reason="RequestEntityTooLarge", code=413) from None
            if exc.status == 422:
                raise Invalid(exc.message, reason="Invalid") from None
            if exc.status == 409:
                raise conflict(bucket, name, exc.message) from None
            raise BadRequest(exc.message, reason="BadRequest") from None
        if not isinstance(result, dict):
            raise BadRequest("the patched object is not a JSON object", reason="BadRequest")
        return bucket, existing, result

    async def delete(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | str | None = None,
        preconditions: Preconditions | None = None,
        orphan_dependents: bool | None = None,
        dry_run: bool = False,
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
        ``dry_run`` answers the same (the object as the DELETE would leave
        it, or None) and changes nothing, finalizers or not.
        """
        obj, removed = await self.delete_and_report(
            resource,
            name,
            namespace=namespace,
            propagation_policy=propagation_policy,
            preconditions=preconditions,
            orphan_dependents=orphan_dependents,
            dry_run=dry_run,
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
        (one is made up when missing), creationTimestamp, generation (when
        missing, set as a create sets it) and
        deletion state (deletionTimestamp and finalizers), so ownerReferences
        between them resolve and objects that are being deleted stay so;
        ``resourceVersion`` is replaced by the store's. NamespaceLifecycle
        admission is skipped (a namespace need not be loaded before its
        contents). CRDs serve their kinds at once, so load them before
        their objects. Synchronous and atomic per object: the first bad
        object raises (:class:`RESTMappingError` for an unserved kind,
        :class:`Invalid`, :class:`AlreadyExists` for a used name or uid) and
        the objects before it stay loaded. Returns the stored objects.
        Loading costs the same per object in one call or one call per object
        (a uid index answers "is this uid taken?").
        """
        out: builtins.list[JSONDict] = []
        with self._storage.write() as wake:
            for obj in objects:
                if not isinstance(obj, dict):
                    raise BadRequest(f"the object to load must be a JSON object, got {obj!r}")
                api_version = str(obj.get("apiVersion", ""))
                kind = str(obj.get("kind", ""))
                group, _, version = api_version.rpartition("/")
                bucket = self._registry.bucket_for_kind(group, version, kind)
                if bucket is None:
                    raise RESTMappingError(api_version, kind)
                meta = obj.get("metadata")
                if isinstance(meta, dict) and self._storage.has_uid(meta.get("uid")):
                    raise AlreadyExists(
                        f"an object with uid {meta['uid']!r} is already stored",
                        reason="AlreadyExists",
                    )
                stored = self._rules.create_locked(
                    bucket, version, None, obj, wake, admit=False, load=True
                )
                out.append(render(bucket, stored, version, False))
        return out

    @property
    def resource_version(self) -> str:
        """The store's current (newest) resourceVersion."""
        with self._lock:
            return str(self._storage.rv)

    def get_object(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> JSONDict | None:
        """Synchronous read for tests: a copy of the full object, or None."""
        group, _, version = api_version.rpartition("/")
        with self._lock:
            bucket = self._registry.bucket_for_kind(group, version, kind)
            if bucket is None:
                raise RESTMappingError(api_version, kind)
            obj = bucket.lookup((namespace or "") if bucket.spec.namespaced else "", name)
            if obj is None:
                return None
            return render(bucket, obj, version, False)

    def exists(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> bool:
        """Synchronous check for tests: is the object stored (deleting or not)?"""
        return self.get_object(api_version, kind, name, namespace) is not None

    def snapshot(self) -> builtins.list[JSONDict]:
        """Copies of every stored object in their preferred versions, sorted by
        group, resource, namespace and name."""
        with self._lock:
            storages = sorted(
                self._registry.buckets(), key=lambda s: (s.spec.group, s.spec.resource)
            )
            return [
                render(s, obj, s.spec.preferred_version, False)
                for s in storages
                for obj in s.iter_sorted(None)
            ]

    def objects_of(self, resource: APIResource) -> builtins.list[JSONDict]:
        """Copies of every object of ``resource`` (in its version), unrecorded: for
        in-process readers the apiserver serves from a cache (admission's webhook
        configurations), which must not show up as client requests."""
        with self._lock:
            bucket = self._registry.bucket_for(resource)
            return [render(bucket, o, resource.version, False) for o in bucket.iter_sorted(None)]

    def object_count(self, resource: APIResource | None = None) -> int:
        """Stored objects, of one resource or in total."""
        with self._lock:
            if resource is not None:
                return self._registry.bucket_for(resource).count()
            return self._storage.count()

    async def delete_and_report(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | str | None = None,
        preconditions: Preconditions | None = None,
        orphan_dependents: bool | None = None,
        dry_run: bool = False,
        shared: bool = False,
    ) -> tuple[JSONDict, bool]:
        """:meth:`delete`, returning ``(object, removed)`` atomically.

        When ``removed`` the object is its last state with the deletion's
        resourceVersion (what the DELETED watch event carries); otherwise it
        is the object that remains, as :meth:`delete` returns it. With
        ``dry_run`` nothing changes; ``removed`` says the DELETE would remove
        the object, which is then returned as stored (kube-apiserver's answer).
        ``shared``: the object is not copied, for a caller that encodes it at once and
        never changes it (see :meth:`list_shared`).
        """
        await anyio.lowlevel.checkpoint()
        self._begin("delete", resource, namespace, name)
        policy = _validate_delete_options(propagation_policy, orphan_dependents)
        with self._storage.write() as wake:
            bucket = self._registry.bucket_for(resource)
            self._registry.check_verb(bucket, "delete")
            ns = self._registry.object_namespace(bucket, namespace)
            before = bucket.lookup(ns, name)
            result = self._rules.delete_locked(
                bucket,
                resource.version,
                ns,
                name,
                policy,
                orphan_dependents,
                preconditions,
                wake,
                dry_run=dry_run,
            )
            removed = result is None
            if result is None:
                assert before is not None
                result = before if dry_run else _with_rv(before, self._storage.rv)
        draw = render_shared if shared else render
        return draw(bucket, result, resource.version, False), removed
