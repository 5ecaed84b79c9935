"""Watches: the planner reads a ``?watch=1`` request into a :class:`WatchPlan` (a reply
like any other); the streamer sends it as chunked JSON events from the store's event
log, once the response writer hands it the connection."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol

import anyio

from ownergc._kit.http import PEER_GONE, ServerConnection
from ownergc.errors import APIError, BadRequest, Invalid, Unavailable
from ownergc.protocols import APIResource, JSONDict, WatchEvent

from .._negotiation import _JSON_HEADERS, _encode, negotiate, query_flag
from .._printing import _partial, _table
from .._selectors import _Filter, _filter_from
from .._tables import Printer
from ..store import InMemoryStore
from .context import Reply, RequestContext, ResourceRoute, WatchPlan

__all__ = ["OpenWatches", "WatchHandler", "WatchSource", "WatchStreamer"]

#: Bytes of a watch-list's initial ADDED events sent as one chunk.
_INITIAL_CHUNK = 256 * 1024


class WatchSource(Protocol):
    """Where events come from: the store, or a wrapper of it that scripts faults."""

    def watch(
        self,
        resource: APIResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        metadata_only: bool = True,
        timeout_seconds: float | None = None,
    ) -> AsyncIterator[WatchEvent]: ...


class WatchHandler:
    """The ``watch`` verb: validates the query and plans the stream (nothing sent yet)."""

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        request = ctx.request
        target = negotiate(request.headers.get("accept"), conversions=True)
        rv = request.param("resourceVersion") or ""
        if rv and not (rv.isdigit()):
            raise BadRequest(f"invalid resourceVersion {rv!r}", reason="BadRequest")
        timeout_text = request.param("timeoutSeconds")
        timeout: float | None = None
        if timeout_text:
            try:
                timeout = float(int(timeout_text))
            except ValueError:
                raise BadRequest(
                    f"invalid timeoutSeconds {timeout_text!r}", reason="BadRequest"
                ) from None
        send_initial = query_flag(request, "sendInitialEvents")
        bookmarks = query_flag(request, "allowWatchBookmarks")
        if send_initial and (
            request.param("resourceVersionMatch") != "NotOlderThan" or not bookmarks
        ):
            # kube-apiserver's validation of a watch-list request (1.27+).
            raise Invalid(
                "sendInitialEvents requires resourceVersionMatch=NotOlderThan "
                "and allowWatchBookmarks=true",
                reason="Invalid",
            )
        return WatchPlan(
            route=route,
            resource_version=rv,
            timeout=timeout,
            target=target,
            filter=_filter_from(request, route.resource),
            include=request.param("includeObject") or "PartialObjectMetadata",
            send_initial=send_initial,
            bookmarks=bookmarks,
        )


class OpenWatches:
    """The watch streams being served, each with the cancel scope that ends it."""

    def __init__(self) -> None:
        self.scopes: set[anyio.CancelScope] = set()

    def __len__(self) -> int:
        return len(self.scopes)

    def clear(self) -> None:
        self.scopes.clear()


@dataclass(slots=True)
class _PumpState:
    """What one watch stream has sent so far."""

    plan: WatchPlan
    first_table: bool
    resource_version: str = ""


def _key(obj: JSONDict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


async def _one_by_one(events: AsyncIterator[WatchEvent]) -> AsyncIterator[list[WatchEvent]]:
    """Each event of ``events`` as a batch of its own (closing it when closed)."""
    try:
        async for event in events:
            yield [event]
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()


class WatchStreamer:
    """Streams a :class:`WatchPlan` on a connection.

    ``store`` answers the initial list of a watch-list; ``source`` (the store
    or its wrapper) gives the events; ``printers`` the Table columns;
    ``watches`` counts the open streams. ``bookmark_interval``: seconds between
    BOOKMARK events on an idle watch that allows them.
    """

    def __init__(
        self,
        store: InMemoryStore,
        source: WatchSource,
        printers: Callable[[APIResource], Printer],
        watches: OpenWatches,
        *,
        bookmark_interval: float = 60.0,
    ) -> None:
        self.store = store
        self.source = source
        self.printers = printers
        self.watches = watches
        self.bookmark_interval = bookmark_interval

    async def stream(self, plan: WatchPlan, connection: ServerConnection) -> bool:
        """Stream events as newline-delimited JSON in chunks; returns keep-alive.

        Errors after the stream started (too old resourceVersion, a store
        fault) become an ERROR event carrying a Status, as kube-apiserver's
        watch cache sends them, and the stream ends cleanly. A lost
        connection (:class:`Unavailable` from a wrapper of the store) ends it
        abruptly: no terminating chunk, the connection just closes.
        """
        await connection.start_stream(200, _JSON_HEADERS)
        if not connection.streams_body:
            # A HEAD gets the head of the watch and no events (no body, ever).
            await connection.end_stream()
            return True
        scope = anyio.CancelScope()
        self.watches.scopes.add(scope)
        peer_closed = dropped = False
        try:
            async with anyio.create_task_group() as tg:

                async def watch_peer() -> None:
                    nonlocal peer_closed
                    # A client sends nothing while it watches: any read result
                    # (EOF or stray bytes) ends the stream.
                    with contextlib.suppress(Exception):
                        await connection.wait_for_peer()
                    peer_closed = True
                    scope.cancel()

                tg.start_soon(watch_peer)
                with scope:
                    try:
                        dropped = await self._pump_events(plan, connection)
                    except PEER_GONE:
                        # The client went away mid-event: an ordinary end of a watch.
                        peer_closed = True
                tg.cancel_scope.cancel()
        finally:
            self.watches.scopes.discard(scope)
        if peer_closed or dropped:
            # Abrupt end: no terminating chunk, the connection just closes.
            return False
        await connection.end_stream()
        return True

    @staticmethod
    def _error_event(error: APIError) -> bytes:
        return _encode({"type": "ERROR", "object": error.to_status()}) + b"\n"

    async def _pump_events(self, plan: WatchPlan, writer: ServerConnection) -> bool:
        """Send the events; True when the connection is lost (a wrapper of the store
        dropped it, or the client went away), see :meth:`stream`."""
        route, target, selector = plan.route, plan.target, plan.filter
        rv = plan.resource_version
        # (a field selector on more than the metadata reads whole objects; the events
        # are still sent as metadata: _event_line)
        metadata_only = (
            target.kind in ("PartialObjectMetadata", "PartialObjectMetadataList")
            and not selector.needs_body
        )
        state = _PumpState(plan, first_table=True)
        if plan.send_initial:
            # Watch-list: the current objects as ADDED, then a bookmark saying the
            # initial events ended; the changes follow from the list's version.
            listed = await self.store.list(
                route.resource, namespace=route.namespace, metadata_only=metadata_only
            )
            # Many events to one chunk: a chunk per event was a write per object.
            batch: list[bytes] = []
            size = 0
            for obj in listed.items:
                if selector.matches(obj):
                    line = self._event_line(state, "ADDED", obj)
                    batch.append(line)
                    size += len(line)
                    if size >= _INITIAL_CHUNK:
                        await writer.send_chunk(b"".join(batch))
                        batch, size = [], 0
            if batch:
                await writer.send_chunk(b"".join(batch))
            rv = listed.resource_version
            await writer.send_chunk(self._bookmark(plan, rv, initial_events_end=True))
        state.resource_version = rv
        events: AsyncIterator[list[WatchEvent]]
        if self.source is self.store:
            # The store hands over the events that are ready together: one chunk,
            # one write for them all (a write per event was most of a watch's cost).
            events = self.store.watch_batches(
                route.resource,
                resource_version=rv,
                namespace=route.namespace,
                metadata_only=metadata_only,
                timeout_seconds=plan.timeout,
            )
        else:
            # A wrapper (faults) scripts each event: they go one by one.
            events = _one_by_one(
                self.source.watch(
                    route.resource,
                    resource_version=rv,
                    namespace=route.namespace,
                    metadata_only=metadata_only,
                    timeout_seconds=plan.timeout,
                )
            )
        # Label selectors can start or stop matching: like the apiserver, a
        # change into the selection is ADDED and out of it is DELETED.
        visible: set[tuple[str, str]] = set()
        if selector.labels and rv not in ("", "0"):
            current = await self.store.list(route.resource, namespace=route.namespace)
            visible = {_key(o) for o in current.items if selector.matches(o)}
        dropped = False
        try:
            async with anyio.create_task_group() as tg:
                if plan.bookmarks:
                    tg.start_soon(self._send_bookmarks, state, writer)
                try:
                    async for ready in events:
                        lines: list[bytes] = []
                        size = 0
                        for event in ready:
                            kind = self._filtered_type(event, selector, visible)
                            if kind is None:
                                continue
                            state.resource_version = event.object.get("metadata", {}).get(
                                "resourceVersion", state.resource_version
                            )
                            line = self._event_line(state, kind, event.object)
                            lines.append(line)
                            size += len(line)
                            if size >= _INITIAL_CHUNK:
                                await writer.send_chunk(b"".join(lines))
                                lines, size = [], 0
                        if lines:
                            await writer.send_chunk(b"".join(lines))
                except Unavailable:
                    dropped = True
                except APIError as exc:
                    with contextlib.suppress(*PEER_GONE):
                        await writer.send_chunk(self._error_event(exc))
                except PEER_GONE:
                    dropped = True  # the client went away mid-event
                tg.cancel_scope.cancel()
        finally:
            # The store's watch is an async generator: close it deterministically.
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
        return dropped

    def _event_line(self, state: _PumpState, kind: str, obj: JSONDict) -> bytes:
        """One watch event in the representation the client asked for."""
        plan = state.plan
        target = plan.target
        if target.kind == "Table":
            rv_now = (obj.get("metadata") or {}).get("resourceVersion")
            printer = self.printers(plan.route.resource)
            obj = _table(
                [obj], target.version, plan.include, rv_now, printer, headers=state.first_table
            )
            state.first_table = False
        elif target.kind is not None and (
            target.version != "v1" or obj.get("kind") != "PartialObjectMetadata"
        ):
            obj = _partial(obj, target.version)
        return _encode({"type": kind, "object": obj}) + b"\n"

    @staticmethod
    def _bookmark(plan: WatchPlan, rv: str, *, initial_events_end: bool = False) -> bytes:
        """A BOOKMARK event: only ``metadata.resourceVersion`` (and its annotation) set."""
        meta: JSONDict = {"resourceVersion": rv}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        res = plan.route.resource
        target = plan.target
        if target.kind in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            api_version, kind = f"meta.k8s.io/{target.version}", "PartialObjectMetadata"
        else:
            api_version, kind = res.api_version, res.kind
        obj = {"kind": kind, "apiVersion": api_version, "metadata": meta}
        return _encode({"type": "BOOKMARK", "object": obj}) + b"\n"

    async def _send_bookmarks(self, state: _PumpState, writer: ServerConnection) -> None:
        """Every ``bookmark_interval`` seconds, a BOOKMARK with the newest version sent."""
        with contextlib.suppress(*PEER_GONE):  # the event loop notices it too
            while True:
                await anyio.sleep(self.bookmark_interval)
                await writer.send_chunk(self._bookmark(state.plan, state.resource_version))

    @staticmethod
    def _filtered_type(
        event: WatchEvent, selector: _Filter, visible: set[tuple[str, str]]
    ) -> str | None:
        if selector.empty:
            return event.type
        key = _key(event.object)
        matches = selector.matches(event.object)
        if event.type == "DELETED":
            if matches or key in visible:
                visible.discard(key)
                return "DELETED"
            return None
        if matches:
            seen = key in visible
            visible.add(key)
            return "MODIFIED" if seen and event.type == "MODIFIED" else "ADDED"
        if key in visible:
            visible.discard(key)
            return "DELETED"
        return None
