"""An HTTP proxy in front of the REST facade that plays an older or odder apiserver.

The facade serves list and watch as a recent kube-apiserver does. To test how
the kube backend copes with servers that cannot serve a list from their watch
cache or do not serve watch-list, this proxy sees every request target first
and may answer it itself (a ``metav1.Status`` error) or rewrite it (drop a
query parameter, as a server that ignores it would) before forwarding it.
Every request target is recorded in :attr:`ListProxy.targets`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from urllib.parse import parse_qsl, urlencode, urlsplit

#: What a rule does with a request: ``None`` forwards it unchanged, a ``str`` is
#: the target to forward instead, ``bytes`` a whole answer sent back.
Rule = Callable[[str, str, dict[str, str]], str | bytes | None]


def status_answer(code: int, reason: str, message: str, **details: object) -> bytes:
    """A kube-apiserver error answer (a Status body) that closes the connection."""
    status: dict[str, object] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        status["details"] = details
    body = json.dumps(status).encode()
    return (
        f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


def without(target: str, *names: str) -> str:
    """``target`` with the query parameters ``names`` removed."""
    parts = urlsplit(target)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in names]
    return parts.path + ("?" + urlencode(query) if query else "")


class ListProxy:
    """Forwards to ``upstream_port``, one request per connection, after ``rule``."""

    def __init__(self, upstream_port: int, rule: Rule) -> None:
        self.upstream_port = upstream_port
        self.rule = rule
        self.targets: list[str] = []
        self.port = 0
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queries(self, verb_path: str = "") -> list[dict[str, str]]:
        """The query of every recorded request whose path contains ``verb_path``."""
        out = []
        for target in self.targets:
            parts = urlsplit(target)
            if verb_path in parts.path:
                out.append(dict(parse_qsl(parts.query, keep_blank_values=True)))
        return out

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            body = await reader.readexactly(length) if length else b""
            self.targets.append(target)
            query = dict(parse_qsl(urlsplit(target).query, keep_blank_values=True))
            action = self.rule(method, urlsplit(target).path, query)
            if isinstance(action, bytes):
                writer.write(action)
                await writer.drain()
                return
            if isinstance(action, str):
                target = action
            up_reader, upstream = await asyncio.open_connection("127.0.0.1", self.upstream_port)
            kept = [
                line
                for line in lines[1:]
                if line and not line.lower().startswith(("connection:", "keep-alive:"))
            ]
            out = "\r\n".join([f"{method} {target} {version}", *kept, "Connection: close"])
            upstream.write(out.encode("latin-1") + b"\r\n\r\n" + body)
            await upstream.drain()
            while chunk := await up_reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            for w in (upstream, writer):
                if w is not None:
                    w.close()
            self._tasks.discard(task)  # type: ignore[arg-type]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ListProxy]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        try:
            async with server:
                yield self
        finally:
            server.close()
            for task in list(self._tasks):
                task.cancel()


def kubeconfig_for(url: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
