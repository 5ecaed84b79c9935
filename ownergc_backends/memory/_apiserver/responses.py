"""The ends of the pipeline on the wire: read a request, run the handler chain, write
the reply (a whole response, or a watch stream) on one connection after another."""

from __future__ import annotations

import contextlib
import logging
import time

import anyio
from anyio.abc import ByteStream, SocketListener, TaskGroup

from ownergc._kit.http import HTTPProtocolError, Request, ServerConnection
from ownergc.errors import error_for_status

from .._negotiation import _error_response
from .context import Handler, RequestContext, WatchPlan
from .requestinfo import request_info
from .watch import WatchStreamer

__all__ = ["ConnectionServer", "warning_headers"]

log = logging.getLogger("ownergc.memory.http")


def _log_request(request: Request, status: int, started: float, note: str = "") -> None:
    """One line per request at INFO (``ownergc serve -v``): what a client really sent."""
    if log.isEnabledFor(logging.INFO):
        ms = (time.monotonic() - started) * 1000
        suffix = f" ({note})" if note else ""
        log.info("%s %s %d %.1fms%s", request.method, request.target, status, ms, suffix)


#: kube-apiserver's cap on one warning's text, in bytes.
_WARNING_LIMIT = 4 * 1024


def warning_headers(warnings: list[str]) -> list[tuple[str, str]]:
    """``Warning: 299 - "<text>"`` headers as kube-apiserver writes them (RFC 7234 code 299,
    agent ``-``): once per distinct text, quotes and backslashes escaped, control
    characters dropped, each text cut to 4 KiB; kubectl prints ``Warning: <text>``."""
    headers: list[tuple[str, str]] = []
    seen: set[str] = set()
    for text in warnings:
        clean = "".join(c if c.isprintable() else " " for c in text).strip()
        clean = clean.encode()[:_WARNING_LIMIT].decode(errors="ignore")
        if not clean or clean in seen:
            continue
        seen.add(clean)
        escaped = clean.replace("\\", "\\\\").replace('"', '\\"')
        headers.append(("Warning", f'299 - "{escaped}"'))
    return headers


class ConnectionServer:
    """Serves connections: each request goes down ``chain``; a watch reply is handed
    to ``watches`` with the connection."""

    def __init__(self, chain: Handler, watches: WatchStreamer) -> None:
        self.chain = chain
        self.watches = watches
        #: Accepted connections whose task has not started yet. A task cancelled before
        #: its first step never runs (nor closes its stream): a server stopped then
        #: closes these itself (:meth:`close_waiting`).
        self._waiting: set[ByteStream] = set()

    async def accept_from(self, listener: SocketListener, tg: TaskGroup) -> None:
        """Accept connections from ``listener`` for ever, each served in ``tg``."""
        while True:
            stream = await listener.accept()
            self._waiting.add(stream)
            tg.start_soon(self, stream)

    async def close_waiting(self) -> None:
        """Close the accepted connections no task took up (the server is stopping)."""
        while self._waiting:
            stream = self._waiting.pop()
            with contextlib.suppress(Exception):
                await stream.aclose()

    async def __call__(self, stream: ByteStream) -> None:
        """One client connection: requests in sequence until either side closes it."""
        self._waiting.discard(stream)  # (before any await: this task owns it now)
        connection = ServerConnection(stream)
        try:
            async with stream:
                while True:
                    try:
                        request = await connection.next_request()
                    except HTTPProtocolError as exc:
                        error = error_for_status(exc.status, exc.message, reason="BadRequest")
                        response = _error_response(error)
                        await connection.respond_and_close(
                            exc.status, response.headers, response.body
                        )
                        return
                    if request is None:
                        return
                    if not await self.answer(request, connection):
                        return
                    if not connection.next_cycle():
                        return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError, OSError):
            pass  # the client went away; nothing to answer
        except Exception:  # pragma: no cover - a bug here must not stop the server
            log.exception("unexpected error on an HTTP connection")

    async def answer(self, request: Request, connection: ServerConnection) -> bool:
        """Answer one request; returns whether the connection stays open."""
        started = time.monotonic()
        keep_alive = request.keep_alive
        info = request_info(request.method, request.path, request.query)
        ctx = RequestContext(request, info)
        reply = await self.chain(ctx)
        if isinstance(reply, WatchPlan):
            _log_request(request, 200, started, "watch opened")
            try:
                return await self.watches.stream(reply, connection) and keep_alive
            finally:
                _log_request(request, 200, started, "watch closed")
        _log_request(request, reply.status, started)
        if ctx.warnings:
            reply.headers.extend(warning_headers(ctx.warnings))
        await connection.respond(reply.status, reply.headers, reply.body, keep_alive=keep_alive)
        return keep_alive
