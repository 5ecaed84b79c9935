"""GarbageCollector: kube-controller-manager's object garbage collector on anyio.

Tasks (all in one task group, all on one event loop):

* a discovery loop that keeps one *monitor* per deletable resource
  (list + watch, relist on 410 or a dropped watch) and rediscovers every
  ``discovery_period`` seconds;
* the *graph builder*: the only task that mutates the graph; it applies the
  monitors' events in order through the pure :class:`~ownergc.GraphBuilder`
  and feeds the work queues;
* ``workers`` attemptToDelete workers and as many attemptToOrphan workers,
  which read the graph, look things up through the store, ask the pure
  decision functions for a plan and execute it.

A worker never dies from one bad object: every failure is logged and the item
is retried with per-item exponential backoff. The collector never deletes an
object unless a live read (or a precondition-guarded delete) confirms it is
garbage.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ownergc._core.decisions import (
    Delete,
    Done,
    EnqueueDelete,
    EnqueueVirtualDelete,
    NamespacedOwnerOfClusterScopedObject,
    NeedOwners,
    Patch,
    Plan,
    RemoveFinalizer,
    decide_attempt_to_delete,
    plan_attempt_to_orphan,
    plan_owner_lookup,
    remove_finalizer_patch,
)
from ownergc._core.graph import Node, UIDToNode
from ownergc._core.graph_builder import GraphBuilder, InvalidNamespaceEvent
from ownergc._core.patches import finalizers_merge_patch
from ownergc._core.refs import (
    FINALIZER_ORPHAN_DEPENDENTS,
    ObjectReference,
    OwnerReference,
    metadata_of,
    owner_references_of,
)
from ownergc.controller._queue import FIFOQueue, WorkQueue
from ownergc.errors import (
    Conflict,
    Invalid,
    InvalidObject,
    NotFound,
    ResourceExpired,
    RESTMappingError,
    UnsupportedPatchType,
)
from ownergc.protocols import (
    APIResource,
    ObjectStore,
    PatchType,
    Preconditions,
    WatchEvent,
)

__all__ = ["DEFAULT_IGNORED_RESOURCES", "GCMetrics", "GarbageCollector"]

log = logging.getLogger("ownergc.controller")

#: kube-controller-manager's default ``GCIgnoredResources`` (1.25+): events.
DEFAULT_IGNORED_RESOURCES: frozenset[tuple[str, str]] = frozenset(
    {("", "events"), ("events.k8s.io", "events")}
)

_DELETABLE_VERBS = frozenset({"delete", "list", "watch"})


class _VirtualDeleteEnqueued(Exception):
    """The item turned out absent; the graph builder takes it from here (no requeue)."""


class _StaleCache(Exception):
    """A precondition built from the watch cache failed: redo the decision from live reads."""


class _NamespacedOwnerOfClusterScoped(Exception):
    """A cluster-scoped item names a namespaced owner kind (never collected, no requeue)."""


@dataclass
class GCMetrics:
    """Counters the controller keeps; rendered as Prometheus text by the CLI."""

    deletions: dict[str, int] = field(default_factory=dict)
    patches: int = 0
    finalizers_removed: int = 0
    errors: int = 0
    resources_sync_errors: int = 0
    events_processed: int = 0
    invalid_namespace_events: int = 0
    cache_decisions: int = 0
    cache_fallbacks: int = 0

    def count_deletion(self, policy: str) -> None:
        self.deletions[policy] = self.deletions.get(policy, 0) + 1


@dataclass
class _Monitor:
    resource: APIResource
    scope: anyio.CancelScope
    synced: bool = False
    resource_version: str | None = None


class _RESTMapper:
    """(apiVersion, kind) -> APIResource from the last discovery (all served versions)."""

    def __init__(self) -> None:
        self._by_gvk: dict[tuple[str, str], APIResource] = {}

    def reset(self, resources: Iterable[APIResource]) -> None:
        by_gvk: dict[tuple[str, str], APIResource] = {}
        for res in resources:
            key = (res.api_version, res.kind)
            current = by_gvk.get(key)
            # Prefer the top-level resource; a kind can appear under several names.
            if current is None or (res.preferred and not current.preferred):
                by_gvk[key] = res
        self._by_gvk = by_gvk

    def add(self, resource: APIResource) -> None:
        self._by_gvk.setdefault((resource.api_version, resource.kind), resource)

    def resource_for(self, api_version: str, kind: str) -> APIResource:
        res = self._by_gvk.get((api_version, kind))
        if res is None:
            raise RESTMappingError(api_version, kind)
        return res


class GarbageCollector:
    """Collects objects whose owners are gone, as kube-controller-manager does.

    ``await gc.run()`` runs until cancelled. ``wait_synced()`` returns once
    every monitor has listed and the graph has taken it in; ``wait_idle()``
    once every queue is empty and nothing is in flight.
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
        self.ignored_resources = frozenset(ignored_resources)
        self.discovery_period = discovery_period
        self.initial_sync_timeout = initial_sync_timeout
        self.dry_run = dry_run
        self.record_events = record_events
        self.watch_timeout = watch_timeout
        self.orphan_concurrency = orphan_concurrency
        self.use_cache = use_cache
        self.log = logger or log
        self.on_action = on_action
        self.builder = GraphBuilder(absent_owner_cache_size)
        self.metrics = GCMetrics()
        self.recorded_events: list[InvalidNamespaceEvent] = []
        self._mapper = _RESTMapper()
        self._monitors: dict[APIResource, _Monitor] = {}
        self._events_resource: APIResource | None = None
        self._graph_changes: FIFOQueue[_GraphChange] = FIFOQueue("garbage_collector_graph_changes")
        self.attempt_to_delete: WorkQueue[Node] = WorkQueue("garbage_collector_attempt_to_delete")
        self.attempt_to_orphan: WorkQueue[Node] = WorkQueue("garbage_collector_attempt_to_orphan")
        self._pending_changes = 0
        self._synced = anyio.Event()
        self._workers_started = anyio.Event()
        self._discovered = anyio.Event()
        self._tg: TaskGroup | None = None
        self._running = False

    # -- public ------------------------------------------------------------

    @property
    def uid_to_node(self) -> UIDToNode:
        return self.builder.uid_to_node

    @property
    def queues(self) -> tuple[WorkQueue[Any] | FIFOQueue[Any], ...]:
        return (self._graph_changes, self.attempt_to_delete, self.attempt_to_orphan)

    def monitored_resources(self) -> list[APIResource]:
        """The resources this collector currently watches."""
        return sorted(self._monitors, key=str)

    def is_synced(self) -> bool:
        return bool(self._monitors) and all(m.synced for m in self._monitors.values())

    async def run(self) -> None:
        """Run until cancelled."""
        if self._running:
            raise RuntimeError("this GarbageCollector is already running")
        self._running = True
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for queue in self.queues:
                    tg.start_soon(queue.run_delays)
                tg.start_soon(self._graph_builder_loop)
                tg.start_soon(self._discovery_loop)
                tg.start_soon(self._start_workers_when_synced)
        finally:
            for queue in self.queues:
                queue.shutdown()
            self._running = False

    async def wait_synced(self) -> None:
        """Return once every monitor has listed and the graph builder has caught up."""
        await self._synced.wait()

    async def wait_idle(self, *, settle: float = 0.05, horizon: float = 1.0) -> None:
        """Return when every queue is empty and nothing is in flight.

        Items waiting in backoff count as busy while they are due within
        ``horizon`` seconds, so a persistently failing item (retried with
        growing backoff) does not keep this from returning. Idleness must hold
        for ``settle`` seconds, which lets watch events already written by
        the store arrive.
        """
        await self._workers_started.wait()
        quiet_since: float | None = None
        while True:
            now = anyio.current_time()
            idle = self._pending_changes == 0 and all(q.is_idle(horizon) for q in self.queues)
            if not idle:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= settle:
                return
            await anyio.sleep(min(0.01, settle / 2) if settle > 0 else 0)

    # -- discovery and monitors --------------------------------------------

    async def _discovery_loop(self) -> None:
        while True:
            try:
                await self._resync_monitors()
            except Exception as exc:
                self.metrics.resources_sync_errors += 1
                self.log.warning("discovery failed: %s", exc)
            await anyio.sleep(self.discovery_period)

    async def _resync_monitors(self) -> None:
        result = await self.store.discover()
        resources = result.resources
        if result.failed:
            self.metrics.resources_sync_errors += 1
            self.log.warning(
                "discovery failed for some groups; keeping their monitors",
                extra={"failed": dict(result.failed)},
            )
        self._mapper.reset(resources)
        for res in resources:
            if res.group == "" and res.resource == "events" and res.version == "v1":
                self._events_resource = res
        deletable = {
            res
            for res in resources
            if res.preferred
            and "/" not in res.resource
            and res.verbs >= _DELETABLE_VERBS
            and (res.group, res.resource) not in self.ignored_resources
        }
        if not deletable:
            self.metrics.resources_sync_errors += 1
            self.log.warning("no deletable resources discovered; skipping monitor sync")
            self._discovered.set()
            return
        failed_groups = {gv.split("/")[0] if "/" in gv else "" for gv in result.failed}
        for res, mon in list(self._monitors.items()):
            if res not in deletable and res.group not in failed_groups:
                self.log.info("stopping monitor", extra={"resource": str(res)})
                mon.scope.cancel()
                del self._monitors[res]
        assert self._tg is not None
        for res in sorted(deletable - self._monitors.keys(), key=str):
            self._mapper.add(res)
            scope = anyio.CancelScope()
            mon = _Monitor(res, scope)
            self._monitors[res] = mon
            self._tg.start_soon(self._run_monitor, mon)
        self._discovered.set()

    async def _run_monitor(self, mon: _Monitor) -> None:
        res = mon.resource
        with mon.scope:
            backoff = 0.1
            while True:
                try:
                    if mon.resource_version is None:
                        await self._relist(mon)
                    await self._watch(mon)
                    backoff = 0.1
                except ResourceExpired:
                    self.log.info("watch expired; relisting", extra={"resource": str(res)})
                    mon.resource_version = None
                except NotFound:
                    self.log.info("resource no longer served", extra={"resource": str(res)})
                    await anyio.sleep(self.discovery_period)
                except Exception as exc:
                    retry = getattr(exc, "retry_after", None) or backoff
                    self.log.warning(
                        "monitor error; retrying in %.2fs: %s",
                        retry,
                        exc,
                        extra={"resource": str(res)},
                    )
                    await anyio.sleep(retry)
                    backoff = min(backoff * 2, 30.0)

    async def _relist(self, mon: _Monitor) -> None:
        res = mon.resource
        listed = await self.store.list(res, metadata_only=True)
        seen: set[str] = set()
        for obj in listed.items:
            uid = metadata_of(obj).get("uid")
            if isinstance(uid, str):
                seen.add(uid)
            self._enqueue_change((_UPSERT, obj, res))
        # Objects the graph holds for this resource that vanished while we were
        # not watching: deliver their deletes (the informer's relist diff).
        av, kind = res.api_version, res.kind
        for node in list(self.builder.uid_to_node.values()):
            ident = node.identity
            if (
                not node.virtual
                and ident.kind == kind
                and ident.api_version == av
                and ident.uid not in seen
            ):
                self._enqueue_change((_DELETE, _tombstone(ident), res))
        mon.resource_version = listed.resource_version
        if not mon.synced:
            self._enqueue_change((_SYNCED, mon, res))

    async def _watch(self, mon: _Monitor) -> None:
        assert mon.resource_version is not None
        stream = self.store.watch(
            mon.resource,
            resource_version=mon.resource_version,
            metadata_only=True,
            timeout_seconds=self.watch_timeout,
        )
        try:
            async for event in stream:
                self._on_watch_event(mon, event)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()

    def _on_watch_event(self, mon: _Monitor, event: WatchEvent) -> None:
        obj = event.object
        meta = obj.get("metadata") if type(obj) is dict else None
        rv = meta.get("resourceVersion") if type(meta) is dict else None
        etype = event.type
        if etype == "ADDED" or etype == "MODIFIED":
            self._pending_changes += 1
            self._graph_changes.add((_UPSERT, obj, mon.resource))
        elif etype == "DELETED":
            self._pending_changes += 1
            self._graph_changes.add((_DELETE, obj, mon.resource))
        elif etype != "BOOKMARK":
            self.log.warning("unknown watch event type %r", etype)
            return
        if type(rv) is str:
            mon.resource_version = rv

    # -- graph builder -----------------------------------------------------

    def _enqueue_change(self, change: _GraphChange) -> None:
        self._pending_changes += 1
        self._graph_changes.add(change)

    async def _graph_builder_loop(self) -> None:
        """Apply graph changes strictly in order; the only writer of the graph."""
        queue = self._graph_changes
        process = self._process_graph_change
        while True:
            batch = await queue.drain()
            count = len(batch)
            self.metrics.events_processed += count
            try:
                while batch:
                    change = batch.popleft()
                    try:
                        process(change)
                    except InvalidObject as exc:
                        self.metrics.errors += 1
                        self.log.error("ignoring malformed object from %s: %s", change[2], exc)
                    except Exception:
                        self.metrics.errors += 1
                        self.log.exception("failed to process graph change %r", change[0])
                    finally:
                        self._pending_changes -= 1
            finally:
                queue.done_batch(count)

    def _process_graph_change(self, change: _GraphChange) -> None:
        builder = self.builder
        kind, payload, res = change
        if kind is _UPSERT:
            assert res is not None
            builder.process_upsert(payload, res.api_version, res.kind)  # type: ignore[arg-type]
        elif kind is _DELETE:
            assert res is not None
            builder.process_delete(payload, res.api_version, res.kind)  # type: ignore[arg-type]
        elif kind is _VIRTUAL_DELETE:
            assert isinstance(payload, ObjectReference)
            builder.process_virtual_delete(payload)
        elif kind is _SYNCED:
            assert isinstance(payload, _Monitor)
            payload.synced = True
            if self.is_synced():
                self._synced.set()
        if (
            builder.attempt_to_delete
            or builder.attempt_to_delete_rate_limited
            or builder.attempt_to_orphan
            or builder.events
        ):
            self._dispatch_builder_outputs()

    def _dispatch_builder_outputs(self) -> None:
        to_delete, rate_limited, to_orphan, events = self.builder.drain()
        add = self.attempt_to_delete.add
        for node in to_delete:
            add(node)
        for node in rate_limited:
            self.attempt_to_delete.add_rate_limited(node)
        for node in to_orphan:
            self.attempt_to_orphan.add(node)
        for event in events:
            self._report_invalid_namespace(event)

    def _report_invalid_namespace(self, event: InvalidNamespaceEvent) -> None:
        self.metrics.invalid_namespace_events += 1
        self.recorded_events.append(event)
        self.log.warning(
            "%s: %s",
            event.reason,
            event.message,
            extra={"dependent": str(event.dependent), "owner": str(event.owner)},
        )
        if self.record_events and self._events_resource is not None and self._tg is not None:
            self._tg.start_soon(self._create_event, event)

    async def _create_event(self, event: InvalidNamespaceEvent) -> None:
        dep = event.dependent
        namespace = dep.namespace or "default"
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{dep.name}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": dep.api_version,
                "kind": dep.kind,
                "name": dep.name,
                "namespace": dep.namespace or "",
                "uid": dep.uid,
            },
            "reason": event.reason,
            "message": event.message,
            "type": event.type,
            "source": {"component": "garbage-collector-controller"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": "garbage-collector-controller",
        }
        assert self._events_resource is not None
        try:
            await self.store.create(self._events_resource, body, namespace=namespace)
        except Exception as exc:
            self.log.info("could not record event: %s", exc)

    # -- workers -----------------------------------------------------------

    async def _start_workers_when_synced(self) -> None:
        with anyio.move_on_after(self.initial_sync_timeout):
            await self._synced.wait()
        if not self._synced.is_set():
            self.metrics.resources_sync_errors += 1
            self.log.warning(
                "caches not synced after %ss; starting workers anyway", self.initial_sync_timeout
            )
        assert self._tg is not None
        for _ in range(self.workers):
            self._tg.start_soon(self._delete_worker)
            self._tg.start_soon(self._orphan_worker)
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
            current = self.builder.uid_to_node.get(node.uid)
            if current is None or not current.virtual:
                queue.forget(node)
                return
        try:
            await self._attempt_to_delete_item(node)
        except (_VirtualDeleteEnqueued, _NamespacedOwnerOfClusterScoped):
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
        resource = self._mapper.resource_for(ident.api_version, ident.kind)
        if resource.namespaced and ident.namespace is None:
            raise _NamespacedOwnerOfClusterScoped(str(ident))
        if self.use_cache and not node.virtual and node.resource_version is not None:
            try:
                await self._attempt_to_delete_cached(node)
            except _StaleCache:
                self.metrics.cache_fallbacks += 1
            else:
                self.metrics.cache_decisions += 1
                return
        latest = await self._get_or_none(resource, ident)
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
        latest = _node_as_object(node)
        decision = decide_attempt_to_delete(node, latest)
        if isinstance(decision, NeedOwners):
            owners = await self._lookup_owners(node.identity, decision, from_graph=True)
            decision = decide_attempt_to_delete(node, latest, owners)
            assert isinstance(decision, Plan)
        await self._execute(decision, node, cached=True)

    async def _get_or_none(
        self, resource: APIResource, ident: ObjectReference
    ) -> Mapping[str, Any] | None:
        try:
            return await self.store.get(
                resource,
                ident.name,
                namespace=ident.namespace if resource.namespaced else None,
                metadata_only=True,
            )
        except NotFound:
            return None

    async def _lookup_owners(
        self, item: ObjectReference, need: NeedOwners, *, from_graph: bool = False
    ) -> dict[OwnerReference, Mapping[str, Any] | None]:
        """isDangling for each ref: the owner's latest state, or None when absent.

        Keyed by ref (not uid): two refs with one uid but other coordinates
        are two lookups. The absent-owner cache is consulted before REST
        mapping, as upstream does, so a cached absence needs no mapping.
        """
        owners: dict[OwnerReference, Mapping[str, Any] | None] = {}
        cache = self.builder.absent_owner_cache
        graph = self.builder.uid_to_node
        mapper = self._mapper
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
                raise _NamespacedOwnerOfClusterScoped(str(item))
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
                    owners[ref] = _node_as_object(known)
                    continue
            resource = resolved[0] if resolved else mapper.resource_for(ref.api_version, ref.kind)
            try:
                owner = await self.store.get(
                    resource, ref.name, namespace=lookup.namespace, metadata_only=True
                )
            except NotFound:
                cache.add(lookup.cache_key)
                owners[ref] = None
                continue
            if metadata_of(owner).get("uid") != ref.uid:
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
                self._enqueue_change((_VIRTUAL_DELETE, step.identity, None))
                raise _VirtualDeleteEnqueued(str(step.identity))
            elif isinstance(step, EnqueueDelete):
                for dep in step.nodes:
                    self.attempt_to_delete.add(dep)
            elif isinstance(step, Patch):
                try:
                    await self._patch(step)
                except (Conflict, Invalid, NotFound) as exc:
                    if cached:
                        raise _StaleCache(str(exc)) from exc
                    raise
            elif isinstance(step, Delete):
                await self._delete(step, node, cached=cached, decided_on=decided_on)
            elif isinstance(step, RemoveFinalizer):
                await self._remove_finalizer(step, node)

    async def _patch(self, step: Patch, *, ignore_not_found: bool = False) -> None:
        ident = step.target
        resource = self._mapper.resource_for(ident.api_version, ident.kind)
        ns = ident.namespace if resource.namespaced else None
        details = {"target": str(ident), "why": step.why, "patch": step.smp or step.jmp}
        if self.dry_run:
            self._action("patch", details)
            return
        try:
            if step.smp is not None:
                try:
                    await self.store.patch(
                        resource,
                        ident.name,
                        step.smp,
                        patch_type=PatchType.STRATEGIC_MERGE,
                        namespace=ns,
                    )
                except UnsupportedPatchType:
                    await self.store.patch(
                        resource, ident.name, step.jmp, patch_type=PatchType.MERGE, namespace=ns
                    )
            else:
                await self.store.patch(
                    resource, ident.name, step.jmp, patch_type=PatchType.MERGE, namespace=ns
                )
        except NotFound:
            if not ignore_not_found:
                raise
            return
        self.metrics.patches += 1
        self._action("patch", details)

    async def _delete(
        self,
        step: Delete,
        node: Node,
        *,
        cached: bool = False,
        decided_on: Mapping[str, Any] | None = None,
    ) -> None:
        ident = step.target
        resource = self._mapper.resource_for(ident.api_version, ident.kind)
        ns = ident.namespace if resource.namespaced else None
        details = {"target": str(ident), "policy": step.policy.value, "why": step.why}
        if self.dry_run:
            self._action("delete", details)
            return
        preconditions = step.preconditions
        for _ in range(2):
            try:
                remaining = await self.store.delete(
                    resource,
                    ident.name,
                    namespace=ns,
                    propagation_policy=step.policy,
                    preconditions=preconditions,
                )
            except NotFound:
                # Nothing has this name any more (a same-named replacement would
                # have failed the uid precondition with 409): our object is gone.
                self._enqueue_change((_VIRTUAL_DELETE, ident, None))
                raise _VirtualDeleteEnqueued(str(ident)) from None
            except Conflict as exc:
                if cached:
                    raise _StaleCache(str(exc)) from exc
                if preconditions.resource_version is None:
                    raise
                # Only the resourceVersion moved? Re-read: if the owners are
                # unchanged the decision still holds, so retry (once).
                latest = await self._get_or_none(resource, ident)
                if latest is None:
                    self._enqueue_change((_VIRTUAL_DELETE, ident, None))
                    raise _VirtualDeleteEnqueued(str(ident)) from None
                if (
                    metadata_of(latest).get("uid") != ident.uid
                    # The refs the decision was made from, not the graph's: the
                    # graph may have caught up with a write the read had not seen.
                    or owner_references_of(latest)
                    != (node.owners if decided_on is None else owner_references_of(decided_on))
                ):
                    raise
                # Guard the retry with the re-read's resourceVersion: a uid-only
                # DELETE would also remove an object whose refs changed after
                # the re-read (e.g. a live owner added).
                preconditions = Preconditions(
                    uid=ident.uid, resource_version=metadata_of(latest).get("resourceVersion")
                )
                continue
            self.metrics.count_deletion(step.policy.value)
            self._action("delete", details)
            if remaining is None:
                # Removed from storage: drop the node now (as a 404 would) instead
                # of waiting for the watch, so an owner re-examining its
                # dependents meanwhile does not send this one a second DELETE.
                self._enqueue_change((_VIRTUAL_DELETE, ident, None))
            return
        # Still conflicting after the retry: not deleted; requeue and decide afresh.
        raise Conflict(f"{ident} kept changing while being deleted; will retry")

    async def _remove_finalizer(self, step: RemoveFinalizer, node: Node | None = None) -> None:
        """removeFinalizer: a JSON merge patch guarded by resourceVersion, retried on 409.

        With the watch cache in use, the first attempt is built from what the
        graph last observed of ``node`` (no GET); a stale view answers 409 and
        the upstream loop (GET, patch; 4 attempts with backoff) takes over.
        """
        ident = step.target
        resource = self._mapper.resource_for(ident.api_version, ident.kind)
        ns = ident.namespace if resource.namespaced else None
        details = {"target": str(ident), "finalizer": step.finalizer}

        async def apply(patch: dict[str, Any]) -> bool:
            """True when done (patched, or the object is gone); False on 409."""
            try:
                await self.store.patch(
                    resource, ident.name, patch, patch_type=PatchType.MERGE, namespace=ns
                )
            except NotFound:
                return True
            except Conflict:
                return False
            self.metrics.finalizers_removed += 1
            self._action("remove_finalizer", details)
            return True

        if (
            self.use_cache
            and not self.dry_run
            and node is not None
            and not node.virtual
            and node.uid == ident.uid
            and node.resource_version is not None
            and step.finalizer in node.finalizers
        ):
            cached = finalizers_merge_patch(node.resource_version, node.finalizers, step.finalizer)
            if await apply(cached):
                return
            self.metrics.cache_fallbacks += 1
        delay = 0.01
        for _attempt in range(4):
            latest = await self._get_or_none(resource, ident)
            if latest is None or metadata_of(latest).get("uid") != ident.uid:
                return
            latest_patch = remove_finalizer_patch(latest, step.finalizer)
            if latest_patch is None:
                return
            if self.dry_run:
                self._action("remove_finalizer", details)
                return
            if await apply(latest_patch):
                return
            await anyio.sleep(delay * (1 + random.random() * 0.1))
            delay *= 5
        raise Conflict(
            "updateMaxRetries(4) has reached. The garbage collector will retry later for "
            f"owner {ident}"
        )

    async def _orphan_worker(self) -> None:
        queue = self.attempt_to_orphan
        while True:
            node = await queue.get()
            try:
                await self._attempt_to_orphan(node)
            except Exception as exc:
                self.metrics.errors += 1
                self.log.warning("attemptToOrphan %s failed: %s", node.identity, exc)
                queue.add_rate_limited(node)
            else:
                queue.forget(node)
            finally:
                queue.done(node)

    async def _attempt_to_orphan(self, owner: Node) -> None:
        # Only while the owner still asks for orphaning: a retry after the
        # finalizer was removed (e.g. that patch timed out but was applied)
        # must not strip the owner's refs from dependents added since.
        ident = owner.identity
        resource = self._mapper.resource_for(ident.api_version, ident.kind)
        live = await self._get_or_none(resource, ident)
        if (
            live is None
            or metadata_of(live).get("uid") != ident.uid
            or FINALIZER_ORPHAN_DEPENDENTS not in (metadata_of(live).get("finalizers") or ())
        ):
            return
        patches, remove = plan_attempt_to_orphan(owner)
        errors: list[BaseException] = []
        limiter = anyio.CapacityLimiter(self.orphan_concurrency)

        async def run(step: Patch) -> None:
            async with limiter:
                try:
                    await self._patch(step, ignore_not_found=True)
                except Exception as exc:
                    errors.append(exc)

        async with anyio.create_task_group() as tg:
            for step in patches:
                tg.start_soon(run, step)
        if errors:
            raise errors[0]
        await self._remove_finalizer(remove, owner)

    def _action(self, what: str, details: Mapping[str, Any]) -> None:
        """Report a write: done (after the server accepted it) or, in dry run, intended."""
        if self.dry_run:
            self.log.info("dry-run: would %s %s", what, details.get("target"), extra=dict(details))
        else:
            self.log.info("%s %s", what, details.get("target"), extra=dict(details))
        if self.on_action is not None:
            self.on_action(what, details)


#: Graph-change kinds; an item of the graph-changes queue is (kind, payload, resource).
_UPSERT = "upsert"
_DELETE = "delete"
_VIRTUAL_DELETE = "virtual_delete"
_SYNCED = "synced"
_GraphChange = tuple[str, object, "APIResource | None"]


def _node_as_object(node: Node) -> dict[str, Any]:
    """The metadata the graph last observed for ``node``, shaped like a live read."""
    ident = node.identity
    meta: dict[str, Any] = {
        "name": ident.name,
        "uid": ident.uid,
        "resourceVersion": node.resource_version,
    }
    if ident.namespace:
        meta["namespace"] = ident.namespace
    if node.owners:
        meta["ownerReferences"] = [ref.to_dict() for ref in node.owners]
    if node.finalizers:
        meta["finalizers"] = list(node.finalizers)
    if node.being_deleted:
        meta["deletionTimestamp"] = "observed"
    return {"apiVersion": ident.api_version, "kind": ident.kind, "metadata": meta}


def _tombstone(ident: ObjectReference) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": ident.name, "uid": ident.uid}
    if ident.namespace:
        meta["namespace"] = ident.namespace
    return {"apiVersion": ident.api_version, "kind": ident.kind, "metadata": meta}
