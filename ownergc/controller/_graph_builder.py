"""DependencyGraphBuilder: the runtime side of upstream's graph_builder.go.

It owns what feeds the graph and the graph itself:

* discovery, every ``discovery_period`` seconds, which keeps one
  :class:`~ownergc.controller._monitors.Monitor` per deletable resource
  (list + watch, relist on 410 or a dropped watch) and resets the shared
  :class:`~ownergc.controller._mapper.RESTMapper`;
* the graph-changes queue and its loop, the only writer of the graph: it
  applies the monitors' changes strictly in order through the pure
  :class:`~ownergc.GraphBuilder` (``uid_to_node``);
* the attemptToDelete and attemptToOrphan queues it feeds, which the
  collector's workers drain;
* the OwnerRefInvalidNamespace events the pure builder reports: counted,
  logged, and written through the ``record_event`` callable it is given.

It knows nothing of the workers or of how objects are deleted. Its only
inputs are the store (discover / list / watch), the REST mapper, the shared
counters and its settings, so it can be built and driven on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ownergc import (
    GraphBuilder,
    InvalidNamespaceEvent,
    Node,
    ObjectReference,
    UIDToNode,
    metadata_of,
)
from ownergc.controller._gc_metrics import GCMetrics
from ownergc.controller._mapper import RESTMapper
from ownergc.controller._monitors import (
    DEFAULT_IGNORED_RESOURCES,
    GraphChange,
    Monitor,
    MonitorSynced,
    ObjectChanged,
    ObjectDeleted,
    VirtualDeleted,
    is_monitored,
    tombstone,
)
from ownergc.controller._queue import FIFOQueue, WorkQueue
from ownergc.errors import InvalidObject, NotFound, ResourceExpired
from ownergc.protocols import APIResource, BatchLister, JSONDict, ObjectStore, WatchEvent

__all__ = ["DependencyGraphBuilder", "EventRecorder"]


def _list_order(res: APIResource) -> tuple[bool, str]:
    """Monitors start the core group's resources first, then by name."""
    return res.group != "", str(res)


log = logging.getLogger("ownergc.controller")

#: Writes one OwnerRefInvalidNamespace event as an Event object of the given resource.
EventRecorder = Callable[[APIResource, InvalidNamespaceEvent], Coroutine[Any, Any, None]]


class DependencyGraphBuilder:
    """Monitors, the graph and the queues it feeds (upstream's ``GraphBuilder``).

    ``await run()`` runs discovery, the monitors and the graph-changes loop
    until cancelled; ``synced`` is set once every monitor has listed and the
    graph has taken the lists in.
    """

    def __init__(
        self,
        store: ObjectStore,
        mapper: RESTMapper,
        metrics: GCMetrics,
        *,
        absent_owner_cache_size: int = 500,
        ignored_resources: Iterable[tuple[str, str]] = DEFAULT_IGNORED_RESOURCES,
        discovery_period: float = 30.0,
        watch_timeout: float | None = 300.0,
        record_event: EventRecorder | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.store = store
        self.mapper = mapper
        self.metrics = metrics
        self.ignored_resources = frozenset(ignored_resources)
        self.discovery_period = discovery_period
        self.watch_timeout = watch_timeout
        self.log = logger or log
        #: The pure core: the graph (``uid_to_node``), the absent-owner cache, and
        #: what to enqueue next.
        self.core = GraphBuilder(absent_owner_cache_size)
        self.monitors: dict[APIResource, Monitor] = {}
        self.graph_changes: FIFOQueue[GraphChange] = FIFOQueue("garbage_collector_graph_changes")
        self.attempt_to_delete: WorkQueue[Node] = WorkQueue("garbage_collector_attempt_to_delete")
        self.attempt_to_orphan: WorkQueue[Node] = WorkQueue("garbage_collector_attempt_to_orphan")
        #: Changes queued and not yet applied (while nonzero, new ones queue behind them).
        self.pending_changes = 0
        self.recorded_events: list[InvalidNamespaceEvent] = []
        self.synced = anyio.Event()
        self.discovered = anyio.Event()
        self._record_event = record_event
        self._events_resource: APIResource | None = None
        self._tg: TaskGroup | None = None
        self._queues: tuple[WorkQueue[Node] | FIFOQueue[GraphChange], ...] = (
            self.graph_changes,
            self.attempt_to_delete,
            self.attempt_to_orphan,
        )

    # -- what the collector reads --------------------------------------------

    @property
    def uid_to_node(self) -> UIDToNode:
        return self.core.uid_to_node

    @property
    def queues(self) -> tuple[WorkQueue[Any] | FIFOQueue[Any], ...]:
        """graph changes, attemptToDelete, attemptToOrphan (upstream's queue names)."""
        return self._queues

    def is_synced(self) -> bool:
        """Whether every current monitor has had its first list applied."""
        return bool(self.monitors) and all(m.synced for m in self.monitors.values())

    def enqueue_virtual_delete(self, identity: ObjectReference) -> None:
        """A live read found ``identity`` absent: drop its node, in order with the monitors."""
        self.pending_changes += 1  # _enqueue_change, inlined: once per collected object
        self.graph_changes.add(VirtualDeleted(identity))

    def shutdown(self) -> None:
        """Stop the queues' delay tasks and wake their readers."""
        for queue in self._queues:
            queue.shutdown()

    # -- running ---------------------------------------------------------------

    async def run(self) -> None:
        """Discovery, monitors, the queues' delays and the graph-changes loop, until cancelled."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            for queue in self._queues:
                tg.start_soon(queue.run_delays)
            tg.start_soon(self.process_graph_changes)
            tg.start_soon(self._discovery_loop)

    async def _discovery_loop(self) -> None:
        while True:
            try:
                await self.resync_monitors()
            except Exception as exc:
                self.metrics.resources_sync_errors += 1
                self.log.warning("discovery failed: %s", exc)
            await anyio.sleep(self.discovery_period)

    async def resync_monitors(self) -> None:
        """Discover, reset the REST mapper, stop monitors of resources gone, start new ones."""
        result = await self.store.discover()
        resources = result.resources
        if result.failed:
            self.metrics.resources_sync_errors += 1
            self.log.warning(
                "discovery failed for some groups; keeping their monitors",
                extra={"failed": dict(result.failed)},
            )
        self.mapper.reset(resources)
        for res in resources:
            if res.group == "" and res.resource == "events" and res.version == "v1":
                self._events_resource = res
        deletable = {res for res in resources if is_monitored(res, self.ignored_resources)}
        if not deletable:
            self.metrics.resources_sync_errors += 1
            self.log.warning("no deletable resources discovered; skipping monitor sync")
            self.discovered.set()
            return
        failed_groups = {gv.split("/")[0] if "/" in gv else "" for gv in result.failed}
        for res, mon in list(self.monitors.items()):
            if res not in deletable and res.group not in failed_groups:
                self.log.info("stopping monitor", extra={"resource": str(res)})
                mon.scope.cancel()
                del self.monitors[res]
        assert self._tg is not None
        # The core group first: its collections (pods, events, configmaps, secrets)
        # are the biggest in most clusters, and the longest lists should start
        # first, while the client's token bucket still has its burst.
        for res in sorted(deletable - self.monitors.keys(), key=_list_order):
            self.mapper.add(res)
            scope = anyio.CancelScope()
            mon = Monitor(res, scope)
            self.monitors[res] = mon
            self._tg.start_soon(self._run_monitor, mon)
        self.discovered.set()

    async def _run_monitor(self, mon: Monitor) -> None:
        res = mon.resource
        with mon.scope:
            backoff = 0.1
            while True:
                try:
                    if mon.resource_version is None:
                        await self.relist(mon)
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

    async def relist(self, mon: Monitor) -> None:
        """List ``mon``'s resource into the graph, deleting what vanished meanwhile."""
        res = mon.resource
        core = self.core
        store = self.store
        seen: set[str]
        if isinstance(store, BatchLister):
            # The items reach the graph in batches while the answer still arrives.
            seen = set()

            def apply(items: list[JSONDict]) -> None:
                seen.update(self._apply_list(mon, items))

            resource_version = await store.list_in_batches(res, apply)
        else:
            listed = await store.list(res, metadata_only=True, consistent=False)
            seen = self._apply_list(mon, listed.items)
            resource_version = listed.resource_version
        # Objects the graph holds for this resource that vanished while we were
        # not watching: deliver their deletes (the informer's relist diff).
        for ident in core.vanished(res.api_version, res.kind, seen):
            self._apply_delete(mon, tombstone(ident))
        mon.resource_version = resource_version
        if not mon.synced:
            # Marked now when nothing waits, as changes are: a queued marker would
            # queue every later monitor's whole first list behind it.
            if self.pending_changes:
                self._enqueue_change(MonitorSynced(mon))
            else:
                self.metrics.events_processed += 1
                self.graph_changes.metrics.adds_total += 1
                self.process_graph_change(MonitorSynced(mon))

    def _apply_list(self, mon: Monitor, items: list[JSONDict]) -> set[str]:
        """Apply listed objects; returns their uids."""
        res = mon.resource
        seen: set[str]
        if self.pending_changes:
            # Changes wait in the queue: the list goes behind them, object by object
            # (and so do the deletes of what vanished, after the list).
            seen = set()
            for obj in items:
                uid = metadata_of(obj).get("uid")
                if isinstance(uid, str):
                    seen.add(uid)
                self._apply_upsert(mon, obj)
            return seen
        # Nothing waits: the whole batch in one call to the core, one dispatch.
        count = len(items)
        self.metrics.events_processed += count
        self.graph_changes.metrics.adds_total += count
        seen, refused = self.core.process_list(items, res.api_version, res.kind)
        for _obj, exc in refused:
            self._change_failed(res, exc)
        self._dispatch_if_any()
        return seen

    async def _watch(self, mon: Monitor) -> None:
        assert mon.resource_version is not None
        stream = self.store.watch(
            mon.resource,
            resource_version=mon.resource_version,
            metadata_only=True,
            timeout_seconds=self.watch_timeout,
        )
        on_event = self.on_watch_event
        try:
            async for event in stream:
                on_event(mon, event)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()

    # -- the hot path: one call per watch event ----------------------------------

    def on_watch_event(self, mon: Monitor, event: WatchEvent) -> None:
        """Apply a watch event to the graph now, or queue it behind earlier changes.

        The graph-changes queue exists to keep changes in arrival order; when
        it is empty (the steady state) the change is applied at once, which
        spares the hot path a record, a queue round trip and a dispatch.
        """
        obj = event.object
        etype = event.type
        if etype == "ADDED" or etype == "MODIFIED":
            if self.pending_changes:
                self._enqueue_change(ObjectChanged(obj, mon.resource))
                rv: object = None
            else:  # _apply_upsert, inlined: once per watch event
                self.metrics.events_processed += 1
                self.graph_changes.metrics.adds_total += 1
                core = self.core
                try:
                    rv = core.process_upsert(obj, mon.api_version, mon.kind).resource_version
                except Exception as exc:
                    rv = None
                    self._change_failed(mon.resource, exc)
                if (
                    core.attempt_to_delete
                    or core.attempt_to_delete_rate_limited
                    or core.attempt_to_orphan
                    or core.events
                ):
                    self.dispatch()
            if type(rv) is str:
                mon.resource_version = rv
                return
        elif etype == "DELETED":
            self._apply_delete(mon, obj)
        elif etype != "BOOKMARK":
            self.log.warning("unknown watch event type %r", etype)
            return
        meta = obj.get("metadata") if type(obj) is dict else None
        rv = meta.get("resourceVersion") if type(meta) is dict else None
        if type(rv) is str:
            mon.resource_version = rv

    def _apply_upsert(self, mon: Monitor, obj: JSONDict) -> object:
        """Upsert ``obj`` now (returning the resourceVersion the node keeps, as
        observed) or queue it behind earlier changes (returning None)."""
        if self.pending_changes:
            self._enqueue_change(ObjectChanged(obj, mon.resource))
            return None
        self.metrics.events_processed += 1
        self.graph_changes.metrics.adds_total += 1
        core = self.core
        rv: object = None
        try:
            rv = core.process_upsert(obj, mon.api_version, mon.kind).resource_version
        except Exception as exc:
            self._change_failed(mon.resource, exc)
        if (  # _dispatch_if_any, inlined: once per watch event
            core.attempt_to_delete
            or core.attempt_to_delete_rate_limited
            or core.attempt_to_orphan
            or core.events
        ):
            self.dispatch()
        return rv

    def _apply_delete(self, mon: Monitor, obj: JSONDict) -> None:
        if self.pending_changes:
            self._enqueue_change(ObjectDeleted(obj, mon.resource))
            return
        self.metrics.events_processed += 1
        self.graph_changes.metrics.adds_total += 1
        core = self.core
        try:
            core.process_delete(obj, mon.api_version, mon.kind)
        except Exception as exc:
            self._change_failed(mon.resource, exc)
        to_delete = core.attempt_to_delete
        if core.attempt_to_delete_rate_limited or core.attempt_to_orphan or core.events:
            self.dispatch()
        elif to_delete:
            # dispatch, inlined for what a delete leaves (dependents and waiting owners
            # to check): one outbox taken, the other three left as they are (empty).
            core.attempt_to_delete = []
            self.attempt_to_delete.add_many(to_delete)

    def _dispatch_if_any(self) -> None:
        core = self.core
        if (
            core.attempt_to_delete
            or core.attempt_to_delete_rate_limited
            or core.attempt_to_orphan
            or core.events
        ):
            self.dispatch()

    def _change_failed(self, resource: APIResource | None, exc: Exception) -> None:
        """A change the graph builder refused: counted and logged, never fatal."""
        self.metrics.errors += 1
        if isinstance(exc, InvalidObject):
            self.log.error("ignoring malformed object from %s: %s", resource, exc)
        else:
            self.log.error("failed to process a graph change from %s", resource, exc_info=exc)

    def _enqueue_change(self, change: GraphChange) -> None:
        self.pending_changes += 1
        self.graph_changes.add(change)

    async def process_graph_changes(self) -> None:
        """Apply graph changes strictly in order; the only writer of the graph."""
        queue = self.graph_changes
        process = self.process_graph_change
        while True:
            batch = await queue.drain()
            count = len(batch)
            self.metrics.events_processed += count
            try:
                for change in batch:  # no await inside: nothing else runs meanwhile
                    try:
                        process(change)
                    except Exception as exc:
                        self._change_failed(getattr(change, "resource", None), exc)
            finally:
                self.pending_changes -= count
                queue.done_batch(count)

    def process_graph_change(self, change: GraphChange) -> None:
        """Apply one queued change to the graph and hand on what it says to do next."""
        core = self.core
        if isinstance(change, ObjectChanged):
            res = change.resource
            core.process_upsert(change.obj, res.api_version, res.kind)
        elif isinstance(change, ObjectDeleted):
            res = change.resource
            core.process_delete(change.obj, res.api_version, res.kind)
        elif isinstance(change, VirtualDeleted):
            core.process_virtual_delete(change.identity)
        else:
            change.monitor.synced = True
            if self.is_synced():
                self.synced.set()
        self._dispatch_if_any()

    def dispatch(self) -> None:
        """Move what the pure builder says next into the work queues and the event log."""
        to_delete, rate_limited, to_orphan, events = self.core.drain()
        if to_delete:
            self.attempt_to_delete.add_many(to_delete)
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
        record = self._record_event
        if record is not None and self._events_resource is not None and self._tg is not None:
            self._tg.start_soon(record, self._events_resource, event)
