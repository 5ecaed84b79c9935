"""Monitors and discovery: upstream's graph_builder.go runtime side.

One *monitor* per deletable resource lists, then watches (relisting on 410 or
a dropped watch), and turns what it sees into :data:`GraphChange` records; the
discovery loop starts and stops monitors as resources come and go. The graph
builder loop is the only task that mutates the graph: it applies the changes
strictly in order through the pure :class:`~ownergc.GraphBuilder` and hands
what the builder says next to the work queues.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

import anyio
from anyio.abc import TaskGroup

from ownergc import GraphBuilder, InvalidNamespaceEvent, Node, ObjectReference, metadata_of
from ownergc.controller._queue import FIFOQueue, WorkQueue
from ownergc.errors import InvalidObject, NotFound, ResourceExpired, RESTMappingError
from ownergc.protocols import APIResource, JSONDict, ObjectStore, WatchEvent

__all__ = [
    "DEFAULT_IGNORED_RESOURCES",
    "GCMetrics",
    "GraphChange",
    "Monitor",
    "MonitorSynced",
    "Monitors",
    "ObjectChanged",
    "ObjectDeleted",
    "RESTMapper",
    "VirtualDeleted",
    "is_monitored",
]

#: kube-controller-manager's default ``GCIgnoredResources`` (1.25+): events.
DEFAULT_IGNORED_RESOURCES: frozenset[tuple[str, str]] = frozenset(
    {("", "events"), ("events.k8s.io", "events")}
)

_DELETABLE_VERBS = frozenset({"delete", "list", "watch"})


def is_monitored(
    res: APIResource, ignored: frozenset[tuple[str, str]] = DEFAULT_IGNORED_RESOURCES
) -> bool:
    """Whether the GC watches ``res``: upstream's deletable resources (list, watch and
    delete), preferred versions only, no subresources, minus the ignored ones."""
    return (
        res.preferred
        and "/" not in res.resource
        and res.verbs >= _DELETABLE_VERBS
        and (res.group, res.resource) not in ignored
    )


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
class Monitor:
    resource: APIResource
    scope: anyio.CancelScope
    synced: bool = False
    resource_version: str | None = None
    #: The resource's apiVersion and kind, computed once (read on every event).
    api_version: str = field(init=False)
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        self.api_version = self.resource.api_version
        self.kind = self.resource.kind


class RESTMapper:
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


class ObjectChanged(NamedTuple):
    """A listed object, or an ADDED / MODIFIED watch event: upsert it into the graph."""

    obj: JSONDict
    resource: APIResource


class ObjectDeleted(NamedTuple):
    """A DELETED watch event, or an object a relist no longer shows."""

    obj: JSONDict
    resource: APIResource


class VirtualDeleted(NamedTuple):
    """A virtual owner verified absent by a live read (upstream's virtual delete event)."""

    identity: ObjectReference


class MonitorSynced(NamedTuple):
    """A monitor's first list has been queued; the graph is synced once all are."""

    monitor: Monitor


#: An item of the graph-changes queue (tuples underneath: cheap on the hot path).
GraphChange = ObjectChanged | ObjectDeleted | VirtualDeleted | MonitorSynced


class Monitors:
    """Discovery, monitors and the graph builder loop of a :class:`GarbageCollector`.

    The attributes are set by ``GarbageCollector.__init__``; this class holds
    the half of the collector that feeds the graph.
    """

    store: ObjectStore
    log: logging.Logger
    metrics: GCMetrics
    builder: GraphBuilder
    ignored_resources: frozenset[tuple[str, str]]
    discovery_period: float
    watch_timeout: float | None
    record_events: bool
    recorded_events: list[InvalidNamespaceEvent]
    attempt_to_delete: WorkQueue[Node]
    attempt_to_orphan: WorkQueue[Node]
    _mapper: RESTMapper
    _monitors: dict[APIResource, Monitor]
    _events_resource: APIResource | None
    _graph_changes: FIFOQueue[GraphChange]
    _pending_changes: int
    _synced: anyio.Event
    _discovered: anyio.Event
    _tg: TaskGroup | None

    def is_synced(self) -> bool:
        return bool(self._monitors) and all(m.synced for m in self._monitors.values())

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
        deletable = {res for res in resources if is_monitored(res, self.ignored_resources)}
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
            mon = Monitor(res, scope)
            self._monitors[res] = mon
            self._tg.start_soon(self._run_monitor, mon)
        self._discovered.set()

    async def _run_monitor(self, mon: Monitor) -> None:
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

    async def _relist(self, mon: Monitor) -> None:
        res = mon.resource
        listed = await self.store.list(res, metadata_only=True, consistent=False)
        seen: set[str] = set()
        for obj in listed.items:
            uid = metadata_of(obj).get("uid")
            if isinstance(uid, str):
                seen.add(uid)
            self._apply_upsert(mon, obj)
        # Objects the graph holds for this resource that vanished while we were
        # not watching: deliver their deletes (the informer's relist diff).
        av, kind = res.api_version, res.kind
        vanished = [
            node.identity
            for node in self.builder.uid_to_node.values()
            if node.kind == kind
            and node.api_version == av
            and not node.virtual
            and node.uid not in seen
        ]
        for ident in vanished:
            self._apply_delete(mon, tombstone(ident))
        mon.resource_version = listed.resource_version
        if not mon.synced:
            # Marked now when nothing waits, as changes are: a queued marker would
            # queue every later monitor's whole first list behind it.
            if self._pending_changes:
                self._enqueue_change(MonitorSynced(mon))
            else:
                self.metrics.events_processed += 1
                self._graph_changes.metrics.adds_total += 1
                self._process_graph_change(MonitorSynced(mon))

    async def _watch(self, mon: Monitor) -> None:
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

    def _on_watch_event(self, mon: Monitor, event: WatchEvent) -> None:
        """Apply a watch event to the graph now, or queue it behind earlier changes.

        The graph-changes queue exists to keep changes in arrival order; when
        it is empty (the steady state) the change is applied at once, which
        spares the hot path a record, a queue round trip and a dispatch.
        """
        obj = event.object
        etype = event.type
        if etype == "ADDED" or etype == "MODIFIED":
            rv = self._apply_upsert(mon, obj)
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
        if self._pending_changes:
            self._enqueue_change(ObjectChanged(obj, mon.resource))
            return None
        self.metrics.events_processed += 1
        self._graph_changes.metrics.adds_total += 1
        builder = self.builder
        rv: object = None
        try:
            rv = builder.process_upsert(obj, mon.api_version, mon.kind).resource_version
        except Exception as exc:
            self._change_failed(mon.resource, exc)
        if (  # _dispatch_if_any, inlined: once per watch event
            builder.attempt_to_delete
            or builder.attempt_to_delete_rate_limited
            or builder.attempt_to_orphan
            or builder.events
        ):
            self._dispatch_builder_outputs()
        return rv

    def _apply_delete(self, mon: Monitor, obj: JSONDict) -> None:
        if self._pending_changes:
            self._enqueue_change(ObjectDeleted(obj, mon.resource))
            return
        self.metrics.events_processed += 1
        self._graph_changes.metrics.adds_total += 1
        try:
            self.builder.process_delete(obj, mon.api_version, mon.kind)
        except Exception as exc:
            self._change_failed(mon.resource, exc)
        self._dispatch_if_any()

    def _dispatch_if_any(self) -> None:
        builder = self.builder
        if (
            builder.attempt_to_delete
            or builder.attempt_to_delete_rate_limited
            or builder.attempt_to_orphan
            or builder.events
        ):
            self._dispatch_builder_outputs()

    def _change_failed(self, resource: APIResource | None, exc: Exception) -> None:
        """A change the graph builder refused: counted and logged, never fatal."""
        self.metrics.errors += 1
        if isinstance(exc, InvalidObject):
            self.log.error("ignoring malformed object from %s: %s", resource, exc)
        else:
            self.log.error("failed to process a graph change from %s", resource, exc_info=exc)

    def _enqueue_change(self, change: GraphChange) -> None:
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
                for change in batch:  # no await inside: nothing else runs meanwhile
                    try:
                        process(change)
                    except Exception as exc:
                        self._change_failed(getattr(change, "resource", None), exc)
            finally:
                self._pending_changes -= count
                queue.done_batch(count)

    def _process_graph_change(self, change: GraphChange) -> None:
        builder = self.builder
        if isinstance(change, ObjectChanged):
            res = change.resource
            builder.process_upsert(change.obj, res.api_version, res.kind)
        elif isinstance(change, ObjectDeleted):
            res = change.resource
            builder.process_delete(change.obj, res.api_version, res.kind)
        elif isinstance(change, VirtualDeleted):
            builder.process_virtual_delete(change.identity)
        else:
            change.monitor.synced = True
            if self.is_synced():
                self._synced.set()
        self._dispatch_if_any()

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


def tombstone(ident: ObjectReference) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": ident.name, "uid": ident.uid}
    if ident.namespace:
        meta["namespace"] = ident.namespace
    return {"apiVersion": ident.api_version, "kind": ident.kind, "metadata": meta}
