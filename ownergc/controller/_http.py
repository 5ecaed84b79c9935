"""A tiny HTTP/1.1 server for probes, metrics and the debug graph, on the kit's h11 wire.

Operational endpoints are small GETs answered from memory, so one request
per connection (``Connection: close``) is plenty, and no web framework is
needed: the controller keeps its dependencies to anyio alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import anyio.abc

from ownergc._core.dump import graph_to_dot
from ownergc._kit.http import HTTPProtocolError, ServerConnection
from ownergc._kit.prometheus import CONTENT_TYPE
from ownergc.controller._metrics import render_gc_metrics

__all__ = ["ControllerEndpoints", "Response", "serve_http"]


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[str, str, dict[str, list[str]]], Response]


async def _handle(stream: anyio.abc.ByteStream, handler: Handler) -> None:
    async with stream:
        connection = ServerConnection(stream)
        with anyio.move_on_after(10):
            try:
                request = await connection.next_request()
            except HTTPProtocolError as exc:
                response = Response(exc.status, f"{exc}\n".encode())
            else:
                if request is None:
                    return
                try:
                    response = handler(request.method, request.path, request.query)
                except Exception as exc:  # answer 500, keep serving
                    response = Response(500, f"internal error: {exc}\n".encode())
            headers = [("Content-Type", response.content_type), *response.headers.items()]
            with contextlib.suppress(anyio.BrokenResourceError, ConnectionError):
                await connection.respond_and_close(response.status, headers, response.body)


async def serve_http(
    handler: Handler,
    *,
    host: str = "0.0.0.0",
    port: int = 10257,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``handler`` until cancelled; reports the bound port via ``task_status``."""
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    bound = listener.extra(anyio.abc.SocketAttribute.local_port)
    task_status.started(bound)

    async def on_connection(stream: anyio.abc.ByteStream) -> None:
        await _handle(stream, handler)

    async with listener:
        await listener.serve(on_connection)


class ControllerEndpoints:
    """Routes ``/healthz``, ``/livez``, ``/readyz``, ``/metrics`` and the debug graph.

    ``ready`` says whether this replica is ready (synced, or a standby that
    knows who leads); ``extra_metrics`` adds gauges such as leadership.
    """

    def __init__(
        self,
        gc: object,
        *,
        ready: Callable[[], tuple[bool, str]] | None = None,
        extra_metrics: Callable[[], dict[str, float]] | None = None,
    ) -> None:
        from ownergc.controller._collector import GarbageCollector

        assert isinstance(gc, GarbageCollector)
        self.gc = gc
        self.ready = ready or (lambda: (gc.is_synced(), "caches synced"))
        self.extra_metrics = extra_metrics

    def __call__(self, method: str, path: str, query: dict[str, list[str]]) -> Response:
        if method not in ("GET", "HEAD"):
            return Response(405, b"method not allowed\n", headers={"Allow": "GET, HEAD"})
        if path in ("/healthz", "/livez"):
            return Response(200, b"ok\n")
        if path == "/readyz":
            ok, why = self.ready()
            return Response(200 if ok else 503, f"{'ok' if ok else 'not ready'}: {why}\n".encode())
        if path == "/metrics":
            extra = self.extra_metrics() if self.extra_metrics else None
            return Response(200, render_gc_metrics(self.gc, extra=extra).encode(), CONTENT_TYPE)
        if path == "/debug/controllers/garbagecollector/graph":
            uids = query.get("uid")
            dot = graph_to_dot(self.gc.uid_to_node, uids)
            return Response(
                200,
                dot.encode(),
                "text/vnd.graphviz",
                {"X-Content-Type-Options": "nosniff"},
            )
        return Response(404, b"404 page not found\n")
