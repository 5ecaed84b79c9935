"""GarbageCollector: kube-controller-manager's object garbage collector on anyio.

Composed as upstream composes it. The collector owns two parts and the
workers, and hands each part only what it uses:

* a :class:`~ownergc.controller._graph_builder.DependencyGraphBuilder`
  (discovery, one monitor per deletable resource, the graph and the
  attemptToDelete / attemptToOrphan queues it feeds), given the store, the
  REST mapper, the counters and an event-writing callable;
* an :class:`~ownergc.controller._operations.Operations` (GET / PATCH /
  DELETE / remove finalizer / create event through the store), given the
  store, the REST mapper and the counters;
* ``workers`` attemptToDelete workers and as many attemptToOrphan workers,
  which read the graph, ask the pure decision functions for a plan and
  execute it through the operations, telling the graph builder when an
  object turned out gone.

A worker never dies from one bad object: every failure is logged and the item
is retried with per-item exponential backoff. The collector never deletes an
object unless a live read (or a precondition-guarded delete) confirms it is
garbage.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ownergc import (
    FINALIZER_ORPHAN_DEPENDENTS,
    Delete,
    Done,
    EnqueueDelete,
    EnqueueVirtualDelete,
    GraphBuilder,
    InvalidNamespaceEvent,
    NamespacedOwnerOfClusterScopedObject,
    NeedOwners,
    Node,
    ObjectReference,
    OwnerReference,
    Patch,
    Plan,
    RemoveFinalizer,
    UIDToNode,
    decide_attempt_to_delete,
    metadata_of,
    plan_attempt_to_orphan,
    plan_owner_lookup,
)
from ownergc.controller._gc_metrics import GCMetrics
from ownergc.controller._graph_builder import DependencyGraphBuilder
from ownergc.controller._mapper import RESTMapper
from ownergc.controller._monitors import DEFAULT_IGNORED_RESOURCES
from ownergc.controller._operations import ObjectGone, Operations, StaleCache, node_as_object
from ownergc.controller._queue import FIFOQueue, WorkQueue, wait_quiet
from ownergc.errors import Conflict, Invalid, NotFound, RESTMappingError
from ownergc.protocols import APIResource, ObjectStore

__all__ = [
    "DEFAULT_IGNORED_RESOURCES",
    "GCMetrics",
    "GarbageCollector",
    "NamespacedOwnerOfClusterScoped",
    "VirtualDeleteEnqueued",
]

log = logging.getLogger("ownergc.controller")


class VirtualDeleteEnqueued(Exception):
    """The item turned out absent; the graph builder takes it from here (no requeue)."""


class NamespacedOwnerOfClusterScoped(Exception):
    """A cluster-scoped item names a namespaced owner kind (never collected, no requeue)."""


class GarbageCollector:
    """Collects objects whose owners are gone, as kube-controller-manager does.

    ``await gc.run()`` runs until cancelled. ``wait_synced()`` returns once
    every monitor has listed and the graph has taken it in; ``wait_idle()``
    once every queue is empty and nothing is in flight.

    The parts: ``graph_builder`` (monitors, graph, queues), ``operations``
    (the API calls) and ``rest_mapper`` (shared by both, reset on discovery).
    """

    def __init__(
        self,
        store: ObjectStore,
        *,
        workers: int = 20,
        ignored_resources: Iterable[tuple[str, str]] = DEFAULT_IGNORED_RESOURCES,
        discovery_period: float = 30.0,
        initial_sync_timeout: float = 30.0,
        absent_owner_cache_size: int = 500,
        dry_run: bool = False,
        record_events: bool = True,
        watch_timeout: float | None = 300.0,
        orphan_concurrency: int = 50,
        use_cache: bool = True,
        logger: logging.Logger | None = None,
        on_action: Callable[[str, Mapping[str, Any]], None] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        if discovery_period <= 0:
            raise ValueError("discovery_period must be positive")
        self.store = store
        self.workers = workers
        self.initial_sync_timeout = initial_sync_timeout
        self.orphan_concurrency = orphan_concurrency
        self.use_cache = use_cache
        self.log = logger or log
        self.metrics = GCMetrics()
        self.rest_mapper = RESTMapper()
        self.operations = Operations(
            store,
            self.rest_mapper,
            self.metrics,
            dry_run=dry_run,
            use_cache=use_cache,
            logger=self.log,
            on_action=on_action,
        )
        self.graph_builder = DependencyGraphBuilder(
            store,
            self.rest_mapper,
            self.metrics,
            absent_owner_cache_size=absent_owner_cache_size,
            ignored_resources=ignored_resources,
            discovery_period=discovery_period,
            watch_timeout=watch_timeout,
            record_event=self.operations.create_event if record_events else None,
            logger=self.log,
        )
        self.attempt_to_delete: WorkQueue[Node] = self.graph_builder.attempt_to_delete
        self.attempt_to_orphan: WorkQueue[Node] = self.graph_builder.attempt_to_orphan
        self._core = self.graph_builder.core
        self._workers_started = anyio.Event()
        self._running = False

    # -- public ------------------------------------------------------------

    @property
    def uid_to_node(self) -> UIDToNode:
        return self.graph_builder.core.uid_to_node

    @property
    def builder(self) -> GraphBuilder:
        """The pure core graph builder (the graph and the absent-owner cache)."""
        return self.graph_builder.core

    @property
    def recorded_events(self) -> list[InvalidNamespaceEvent]:
        """The OwnerRefInvalidNamespace events reported so far."""
        return self.graph_builder.recorded_events

    @property
    def queues(self) -> tuple[WorkQueue[Any] | FIFOQueue[Any], ...]:
        return self.graph_builder.queues

    def monitored_resources(self) -> list[APIResource]:
        """The resources this collector currently watches."""
        return sorted(self.graph_builder.monitors, key=str)

    def is_synced(self) -> bool:
        """Whether every current monitor has had its first list applied (readiness)."""
        return self.graph_builder.is_synced()

    async def run(self) -> None:
        """Run until cancelled."""
        if self._running:
            raise RuntimeError("this GarbageCollector is already running")
        self._running = True
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.graph_builder.run)
                tg.start_soon(self._start_workers_when_synced, tg)
        finally:
            self.graph_builder.shutdown()
            self._running = False

    async def wait_synced(self) -> None:
        """Return once every monitor has listed and the graph builder has caught up."""
        await self.graph_builder.synced.wait()

    async def wait_idle(self, *, settle: float = 0.05, horizon: float = 1.0) -> None:
        """Return when every queue is empty and nothing is in flight.

        Items waiting in backoff count as busy while they are due within
        ``horizon`` seconds, so a persistently failing item (retried with
        growing backoff) does not keep this from returning. Idleness must hold
        for ``settle`` seconds, which lets watch events already written by
        the store arrive.
        """
        await self._workers_started.wait()
        gb = self.graph_builder
        queues = gb.queues
        await wait_quiet(
            lambda: gb.pending_changes == 0 and all(q.is_idle(horizon) for q in queues),
            settle,
        )

    # -- workers -----------------------------------------------------------

    async def _start_workers_when_synced(self, tg: TaskGroup) -> None:
        synced = self.graph_builder.synced
        with anyio.move_on_after(self.initial_sync_timeout):
            await synced.wait()
        if not synced.is_set():
            self.metrics.resources_sync_errors += 1
            self.log.warning(
                "caches not synced after %ss; starting workers anyway", self.initial_sync_timeout
            )
        for _ in range(self.workers):
            tg.start_soon(self._delete_worker)
            tg.start_soon(self._orphan_worker)
        self._workers_started.set()

    async def _delete_worker(self) -> None:
        queue = self.attempt_to_delete
        while True:
            node = await queue.get()
            try:
                await self._process_attempt_to_delete(node)
            finally:
                queue.done(node)

    async def _process_attempt_to_delete(self, node: Node) -> None:
        queue = self.attempt_to_delete
        if node.virtual:
            current = self._core.uid_to_node.get(node.uid)
            if current is None or not current.virtual:
                queue.forget(node)
                return
        try:
            await self._attempt_to_delete_item(node)
        except (VirtualDeleteEnqueued, NamespacedOwnerOfClusterScoped):
            queue.forget(node)
            return
        except RESTMappingError as exc:
            self.log.debug("cannot map %s: %s; will retry", node.identity, exc)
            queue.add_rate_limited(node)
            return
        except Exception as exc:
            self.metrics.errors += 1
            self.log.warning(
                "error syncing item %s: %s", node.identity, exc, extra={"item": str(node.identity)}
            )
            queue.add_rate_limited(node)
            return
        if node.virtual:
            # Keep polling until the owner is observed or verified absent.
            queue.add_rate_limited(node)
        else:
            queue.forget(node)

    async def _attempt_to_delete_item(self, node: Node) -> None:
        if node.being_deleted and not node.deleting_dependents:
            return
        ident = node.identity
        resource = self.rest_mapper.resource_for(ident.api_version, ident.kind)
        if resource.namespaced and ident.namespace is None:
            raise NamespacedOwnerOfClusterScoped(str(ident))
        if self.use_cache and not node.virtual and node.resource_version is not None:
            try:
                await self._attempt_to_delete_cached(node)
            except StaleCache:
                self.metrics.cache_fallbacks += 1
            else:
                self.metrics.cache_decisions += 1
                return
        latest = await self.operations.get_or_none(resource, ident)
        decision = decide_attempt_to_delete(node, latest)
        if isinstance(decision, NeedOwners):
            assert latest is not None
            owners = await self._lookup_owners(ident, decision)
            decision = decide_attempt_to_delete(node, latest, owners)
            assert isinstance(decision, Plan)
        await self._execute(decision, node, decided_on=latest)

    async def _attempt_to_delete_cached(self, node: Node) -> None:
        """Decide from what the watch cache knows; writes carry uid + resourceVersion.

        Upstream reads the item live before every decision (two requests per
        collected object). The graph already holds the item's last observed
        refs, finalizers and resourceVersion, and owners it has observed. A
        write guarded by that resourceVersion only succeeds if the item is
        exactly as classified, so the decision is as safe as a live read; on
        a failed precondition the caller redoes it from live reads. Owners
        the graph has not observed are still looked up live: absence is never
        inferred from the cache.
        """
        latest = node_as_object(node)
        decision = decide_attempt_to_delete(node, latest)
        if isinstance(decision, NeedOwners):
            owners = await self._lookup_owners(node.identity, decision, from_graph=True)
            decision = decide_attempt_to_delete(node, latest, owners)
            assert isinstance(decision, Plan)
        await self._execute(decision, node, cached=True)

    async def _lookup_owners(
        self, item: ObjectReference, need: NeedOwners, *, from_graph: bool = False
    ) -> dict[OwnerReference, Mapping[str, Any] | None]:
        """isDangling for each ref: the owner's latest state, or None when absent.

        Keyed by ref (not uid): two refs with one uid but other coordinates
        are two lookups. The absent-owner cache is consulted before REST
        mapping, as upstream does, so a cached absence needs no mapping.
        """
        owners: dict[OwnerReference, Mapping[str, Any] | None] = {}
        core = self._core
        cache = core.absent_owner_cache
        graph = core.uid_to_node
        mapper = self.rest_mapper
        get = self.operations.get
        for ref in need.refs:
            resolved: list[APIResource] = []

            def namespaced(ref: OwnerReference = ref, out: list[APIResource] = resolved) -> bool:
                res = mapper.resource_for(ref.api_version, ref.kind)
                out.append(res)
                return res.namespaced

            lookup = plan_owner_lookup(ref, item, namespaced, cache)
            if isinstance(lookup, NamespacedOwnerOfClusterScopedObject):
                self.log.info(
                    "cluster-scoped %s has a namespaced owner %s; never collected", item, ref
                )
                raise NamespacedOwnerOfClusterScoped(str(item))
            if lookup.dangling:
                owners[ref] = None
                continue
            if from_graph:
                known = graph.get(ref.uid)
                if (
                    known is not None
                    and not known.virtual
                    and known.resource_version is not None
                    and known.identity.coordinates == ref.coordinates
                    and known.namespace == lookup.namespace
                ):
                    owners[ref] = node_as_object(known)
                    continue
            resource = resolved[0] if resolved else mapper.resource_for(ref.api_version, ref.kind)
            owner = await get(resource, ref.name, lookup.namespace)
            if owner is None or metadata_of(owner).get("uid") != ref.uid:
                cache.add(lookup.cache_key)
                owners[ref] = None
            else:
                owners[ref] = owner
        return owners

    async def _execute(
        self,
        plan: Plan,
        node: Node,
        *,
        cached: bool = False,
        decided_on: Mapping[str, Any] | None = None,
    ) -> None:
        for step in plan.steps:
            if isinstance(step, Done):
                self.log.debug("%s: %s", node.identity, step.reason)
            elif isinstance(step, EnqueueVirtualDelete):
                self.graph_builder.enqueue_virtual_delete(step.identity)
                raise VirtualDeleteEnqueued(str(step.identity))
            elif isinstance(step, EnqueueDelete):
                for dep in step.nodes:
                    self.attempt_to_delete.add(dep)
            elif isinstance(step, Patch):
                try:
                    await self.operations.patch(step)
                except (Conflict, Invalid, NotFound) as exc:
                    if cached:
                        raise StaleCache(str(exc)) from exc
                    raise
            elif isinstance(step, Delete):
                try:
                    removed = await self.operations.delete(
                        step, node, cached=cached, decided_on=decided_on
                    )
                except ObjectGone:
                    self.graph_builder.enqueue_virtual_delete(step.target)
                    raise VirtualDeleteEnqueued(str(step.target)) from None
                if removed:
                    # Removed from storage: drop the node now (as a 404 would)
                    # instead of waiting for the watch, so an owner re-examining
                    # its dependents meanwhile does not send this one a second
                    # DELETE.
                    self.graph_builder.enqueue_virtual_delete(step.target)
            elif isinstance(step, RemoveFinalizer):
                await self.operations.remove_finalizer(step, node)

    async def _orphan_worker(self) -> None:
        await self.attempt_to_orphan.work(self._attempt_to_orphan, self._orphan_failed)

    def _orphan_failed(self, node: Node, exc: Exception) -> None:
        self.metrics.errors += 1
        self.log.warning("attemptToOrphan %s failed: %s", node.identity, exc)

    async def _attempt_to_orphan(self, owner: Node) -> bool:
        """Orphan ``owner``'s dependents, then drop its ``orphan`` finalizer; always finishes."""
        # Only while the owner still asks for orphaning: a retry after the
        # finalizer was removed (e.g. that patch timed out but was applied)
        # must not strip the owner's refs from dependents added since.
        ident = owner.identity
        resource = self.rest_mapper.resource_for(ident.api_version, ident.kind)
        live = await self.operations.get_or_none(resource, ident)
        if (
            live is None
            or metadata_of(live).get("uid") != ident.uid
            or FINALIZER_ORPHAN_DEPENDENTS not in (metadata_of(live).get("finalizers") or ())
        ):
            return True
        patches, remove = plan_attempt_to_orphan(owner)
        errors: list[BaseException] = []
        limiter = anyio.CapacityLimiter(self.orphan_concurrency)

        async def run(step: Patch) -> None:
            async with limiter:
                try:
                    await self.operations.patch(step, ignore_not_found=True)
                except Exception as exc:
                    errors.append(exc)

        async with anyio.create_task_group() as tg:
            for step in patches:
                tg.start_soon(run, step)
        if errors:
            raise errors[0]
        await self.operations.remove_finalizer(remove, owner)
        return True
