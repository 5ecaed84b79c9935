"""A tiny HTTP/1.1 server for probes, metrics and the debug graph.

Operational endpoints are small GETs answered from memory, so one request
per connection (``Connection: close``) is plenty, and no web framework is
needed: the controller keeps its dependencies to anyio alone.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import anyio.abc

from ownergc._core.dump import graph_to_dot
from ownergc._kit.prometheus import CONTENT_TYPE
from ownergc.controller._metrics import render_gc_metrics

__all__ = ["ControllerEndpoints", "Response", "serve_http"]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
_MAX_HEAD = 16 * 1024


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[str, str, dict[str, list[str]]], Response]


async def _read_head(stream: anyio.abc.ByteStream) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _MAX_HEAD:
            return None
        try:
            chunk = await stream.receive(4096)
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
            return None
        data += chunk
    return data.split(b"\r\n\r\n", 1)[0]


async def _handle(stream: anyio.abc.ByteStream, handler: Handler) -> None:
    async with stream:
        with anyio.move_on_after(10):
            head = await _read_head(stream)
            if head is None:
                response = Response(400, b"bad request\n")
            else:
                try:
                    request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
                    method, target, _version = request_line.split(" ", 2)
                    parsed = urllib.parse.urlsplit(target)
                    query = urllib.parse.parse_qs(parsed.query)
                    response = handler(method, parsed.path, query)
                except ValueError:
                    response = Response(400, b"bad request\n")
                except Exception as exc:  # answer 500, keep serving
                    response = Response(500, f"internal error: {exc}\n".encode())
            headers = {
                "Content-Type": response.content_type,
                "Content-Length": str(len(response.body)),
                "Connection": "close",
                **response.headers,
            }
            reason = _REASONS.get(response.status, "Unknown")
            head_out = f"HTTP/1.1 {response.status} {reason}\r\n" + "".join(
                f"{k}: {v}\r\n" for k, v in headers.items()
            )
            with contextlib.suppress(anyio.BrokenResourceError, ConnectionError):
                await stream.send(head_out.encode("latin-1") + b"\r\n" + response.body)


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
