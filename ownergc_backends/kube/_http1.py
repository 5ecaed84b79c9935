"""A lean HTTP/1.1 client for KubeStore's short requests (GET, POST, PATCH, DELETE).

Why not aiohttp for these: the collector sends one DELETE per collected
object, and aiohttp's general request path (URL objects, header
multidicts, payload registry, a writer task per body, response streams and
timers) was the largest single cost of the collector's CPU per object in
the profile (docs/performance.md). Everything a KubeStore request needs is
narrow: one origin, no redirects, no cookies, no compression (we send no
``Accept-Encoding``), bodies that are already bytes, answers read whole.
Watches, which stream, and anything through a proxy stay on aiohttp.

Connections are kept alive in a LIFO pool with no size limit (the token
bucket bounds the request rate, and the workers bound the concurrency).
A pooled connection the server closed while idle is noticed by its
protocol (``connection_lost``) and dropped; one found closed at the moment
a request went out (nothing answered) is retried once on a new connection,
except for POST, which is not idempotent.
"""

from __future__ import annotations

import asyncio
import gzip
import re
import ssl
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from typing import Final

import anyio

__all__ = [
    "BodySink",
    "BodyStream",
    "ConnectFailed",
    "HTTP1Pool",
    "Response",
    "ServerDisconnected",
    "StreamedAnswer",
]

#: Takes a 2xx answer's body as it arrives, piece by piece (see ``HTTP1Pool.request``);
#: the view is valid only during the call (the buffer behind it is reused), so a sink
#: copies what it keeps and holds no reference to the view itself.
BodySink = Callable[[memoryview], None]

_MAX_HEAD: Final = 1 << 20  # a response head larger than this is not an apiserver's
#: Control characters and spaces would end a request line or a header early.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]").search
_UNSAFE_TARGET = re.compile(r"[\x00-\x20\x7f]").search


class ServerDisconnected(ConnectionResetError):
    """The connection closed before a whole answer arrived."""


class ConnectFailed(OSError):
    """No connection to the apiserver could be opened (refused, unreachable, DNS, TLS)."""

    def __init__(self, host: str, error: BaseException) -> None:
        super().__init__(f"cannot connect to {host}: {error}")
        self.os_error = error


class Response:
    """A whole answer: status, headers (names lower-cased), body (content coding removed)."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers if isinstance(headers, _Headers) else _Headers(headers)
        self.body = body


def _answer(status: int, headers: dict[str, str], body: bytes) -> Response:
    """The Response for a body as it came off the wire (decoded here)."""
    return Response(status, headers, _decoded(body, headers.get("content-encoding")))


class _Headers(dict[str, str]):
    """Header names are case-insensitive: stored lower-cased, looked up either way."""

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.lower() if isinstance(key, str) else key)


def _decoded(body: bytes, encoding: str | None) -> bytes:
    """The body without its content coding (none is asked for; a server may still use one)."""
    if not encoding or encoding == "identity":
        return body
    if encoding in ("gzip", "x-gzip"):
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


def _chunk_size(buf: bytearray, start: int, end: int) -> int:
    """A chunk-size line's size (hexadecimal; chunk extensions after ``;`` ignored)."""
    return int(bytes(buf[start:end]).split(b";", 1)[0].strip(), 16)


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection; one request in flight at a time."""

    def __init__(self, pool: HTTP1Pool) -> None:
        self._pool = pool
        self.transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._waiter: asyncio.Future[Response] | None = None
        self.closed = False
        self.answered_any = False  # bytes of the current answer arrived
        self._reuse = True
        # parse state of the current answer
        self._head: tuple[int, dict[str, str], bool] | None = None
        self._length = -1  # -1: not known yet; -2: chunked; -3: until close
        self._body_start = 0
        self._chunks: list[bytes] = []
        self._chunk_pos = 0
        #: Where a 2xx answer's body goes as it arrives (None: kept for the Response).
        self._sink: BodySink | None = None
        self._streaming = False
        #: Streaming a chunked body: bytes left of the current chunk's data, -1 before
        #: a chunk-size line, -2 before the line end that follows a chunk's data.
        self._chunk_left = -1

    # -- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:  # nothing was asked: an apiserver never does this
            self.abort()
            return
        self.answered_any = True
        self._buf += data
        try:
            answer = self._parse()
        except (ValueError, OSError, zlib.error) as exc:
            self._fail(ServerDisconnected(f"malformed HTTP answer: {exc}"))
            self.abort()
            return
        if answer is not None:
            # Free the answer's bytes now, not when the pooled connection is next
            # used: a list from the watch cache is tens of megabytes.
            self._buf = bytearray()
            self._chunks = []
            waiter, self._waiter = self._waiter, None
            if not waiter.done():
                waiter.set_result(answer)

    def eof_received(self) -> bool | None:
        if self._waiter is not None and self._length == -3 and self._head is not None:
            status, headers, _ = self._head
            body = bytes(self._buf[self._body_start :])
            self._head = None
            self._reuse = False
            try:
                answer = _answer(status, headers, body)
            except (ValueError, OSError, zlib.error) as exc:
                self._fail(ServerDisconnected(f"malformed HTTP answer: {exc}"))
                return None
            waiter, self._waiter = self._waiter, None
            if not waiter.done():
                waiter.set_result(answer)
        return None  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._pool._forget(self)
        self._fail(ServerDisconnected(str(exc) if exc else "server closed the connection"))

    # -- requests ----------------------------------------------------------------

    def abort(self) -> None:
        self.closed = True
        self._pool._forget(self)
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, exc: BaseException) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def send(self, data: bytes, sink: BodySink | None = None) -> asyncio.Future[Response]:
        assert self.transport is not None and self._waiter is None
        self._buf.clear()
        self._head = None
        self._length = -1
        self._chunks = []
        self._sink = sink
        self._streaming = False
        self._chunk_left = -1
        self._reuse = True
        self.answered_any = False
        self._waiter = self._pool._loop.create_future()
        self.transport.write(data)
        return self._waiter

    @property
    def reusable(self) -> bool:
        return not self.closed and self._reuse and self._waiter is None

    def _parse(self) -> Response | None:
        buf = self._buf
        if self._head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_HEAD:
                    raise ValueError("response head too large")
                return None
            lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
            version, _, rest = lines[0].partition(" ")
            if not version.startswith("HTTP/1."):
                raise ValueError(f"not an HTTP/1 status line: {lines[0][:80]!r}")
            status = int(rest[:3])
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if not sep:
                    raise ValueError(f"bad header line {line[:80]!r}")
                key = name.strip().lower()
                value = value.strip()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            if 100 <= status < 200:  # an interim answer: the real one follows
                del buf[: end + 4]
                return self._parse() if buf else None
            connection = headers.get("connection", "").lower()
            self._reuse = "close" not in connection and version == "HTTP/1.1"
            self._body_start = end + 4
            if status in (204, 304):
                self._length = 0
            elif "chunked" in headers.get("transfer-encoding", "").lower():
                self._length = -2
                self._chunk_pos = self._body_start
            elif "content-length" in headers:
                self._length = int(headers["content-length"])
            else:
                self._length = -3
                self._reuse = False
            self._head = (status, _Headers(headers), self._reuse)
            encoding = headers.get("content-encoding")
            self._streaming = (
                self._sink is not None
                and 200 <= status < 300
                and (not encoding or encoding == "identity")
                and self._length != -3
            )
            if self._streaming:
                assert self._sink is not None
                self._sink(_NO_BYTES)  # the head: a 2xx answer whose body follows
        status, headers, _ = self._head
        if self._streaming and self._length >= 0:
            return self._stream_length(status, headers)
        if self._length >= 0:
            if len(buf) - self._body_start < self._length:
                return None
            if len(buf) - self._body_start > self._length:
                self._reuse = False  # bytes nobody asked for: do not trust this connection
            # One copy, through a view (a bytearray slice would be a second one).
            with memoryview(buf) as view:
                body = bytes(view[self._body_start : self._body_start + self._length])
            return _answer(status, headers, body)
        if self._length == -2:
            return self._parse_chunks(status, headers)
        return None  # until the server closes

    def _stream_length(self, status: int, headers: dict[str, str]) -> Response | None:
        """A Content-Length body handed to the sink as it arrives."""
        buf = self._buf
        sink = self._sink
        assert sink is not None
        take = min(len(buf) - self._body_start, self._length)
        if take > 0:
            with memoryview(buf) as view:
                sink(view[self._body_start : self._body_start + take])
            self._length -= take
            del buf[: self._body_start + take]
            self._body_start = 0
        if self._length > 0:
            return None
        if buf:
            self._reuse = False  # bytes nobody asked for: do not trust this connection
        return Response(status, headers, b"")

    def _parse_chunks(self, status: int, headers: dict[str, str]) -> Response | None:
        if self._streaming:
            return self._stream_chunks(status, headers)
        buf = self._buf
        pos = self._chunk_pos
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = _chunk_size(buf, pos, eol)
            if size == 0:
                # the last chunk: (trailer lines, none expected, and) an empty line
                if buf.find(b"\r\n\r\n", eol) < 0:
                    return None
                return _answer(status, headers, b"".join(self._chunks))
            if len(buf) < eol + 2 + size + 2:
                return None
            with memoryview(buf) as view:
                self._chunks.append(bytes(view[eol + 2 : eol + 2 + size]))
            pos = eol + 2 + size + 2
            self._chunk_pos = pos

    def _stream_chunks(self, status: int, headers: dict[str, str]) -> Response | None:
        """A chunked body handed to the sink as it arrives, a chunk's bytes before the
        whole chunk is here (kube-apiserver writes a list as one chunk of all of it)."""
        buf = self._buf
        sink = self._sink
        assert sink is not None
        pos = self._chunk_pos
        try:
            while True:
                left = self._chunk_left
                if left > 0:  # inside a chunk's data
                    take = min(len(buf) - pos, left)
                    if take <= 0:
                        return None
                    with memoryview(buf) as view:
                        sink(view[pos : pos + take])
                    pos += take
                    self._chunk_left = left - take
                    if self._chunk_left:
                        return None
                    self._chunk_left = -2
                elif left == -2:  # the line end after a chunk's data
                    if len(buf) - pos < 2:
                        return None
                    if buf[pos : pos + 2] != b"\r\n":
                        raise ValueError("a chunk's data is not followed by CRLF")
                    pos += 2
                    self._chunk_left = -1
                else:  # a chunk-size line
                    eol = buf.find(b"\r\n", pos)
                    if eol < 0:
                        if len(buf) - pos > _MAX_HEAD:
                            raise ValueError("chunk-size line too long")
                        return None
                    size = _chunk_size(buf, pos, eol)
                    if size == 0:
                        # the last chunk: (trailer lines, none expected, and) an empty line
                        if buf.find(b"\r\n\r\n", eol) < 0:
                            return None
                        return Response(status, headers, b"")
                    pos = eol + 2
                    self._chunk_left = size
        finally:
            # What was handed over is not kept: the buffer holds less than one read.
            if pos:
                del buf[:pos]
            self._chunk_pos = 0


_NO_BYTES: Final = memoryview(b"")


class BodyStream:
    """A 2xx answer's body handed over as it arrives (the sink) to one reader that
    awaits it piece by piece (a watch): ``readany`` returns what has arrived since
    the last call, ``b""`` at the end, or raises how the answer broke off."""

    __slots__ = ("_done", "_error", "_loop", "_pieces", "_waiter", "head")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._pieces: deque[bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._done = False
        self._error: BaseException | None = None
        #: Set when the 2xx head arrived (the body follows), or the request ended.
        self.head: asyncio.Future[bool] = loop.create_future()

    def feed(self, view: memoryview) -> None:
        if not self.head.done():
            self.head.set_result(True)
        if view:
            self._pieces.append(bytes(view))
            self._wake()

    def end(self, error: BaseException | None) -> None:
        self._done = True
        self._error = error
        if not self.head.done():
            self.head.set_result(False)
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def readany(self) -> bytes:
        while not self._pieces:
            if self._done:
                if self._error is not None:
                    raise self._error
                return b""
            self._waiter = self._loop.create_future()
            await self._waiter
        pieces = self._pieces
        data = pieces.popleft() if len(pieces) == 1 else b"".join(pieces)
        pieces.clear()
        return data


class StreamedAnswer:
    """A 2xx answer being read as it arrives (what ``HTTP1Pool.stream`` returns):
    ``content.readany()`` as aiohttp's responses have it, and ``close()``."""

    __slots__ = ("_task", "content", "headers", "status")

    def __init__(self, content: BodyStream, task: asyncio.Task[Response]) -> None:
        self.content = content
        self._task = task
        self.status = 200
        self.headers: dict[str, str] = {}

    def close(self) -> None:
        """Stop reading: the connection is closed unless the answer had ended."""
        if not self._task.done():
            self._task.cancel()


class HTTP1Pool:
    """Keep-alive HTTP/1.1 connections to one origin (``http`` or ``https``)."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        host_header: str,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
        default_headers: Mapping[str, str],
    ) -> None:
        self._host = host
        self._port = port
        self._ssl = ssl_context
        self._server_hostname = server_hostname if ssl_context is not None else None
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()
        self._loop = asyncio.get_running_loop()
        fixed = {"Host": host_header, **default_headers}
        for name, value in fixed.items():
            if _UNSAFE(name) or _UNSAFE(str(value)):
                raise ValueError(f"control characters in the default header {name!r}")
        self._fixed_head = "".join(f"{k}: {v}\r\n" for k, v in fixed.items())

    async def _connect(self) -> _Connection:
        try:
            _, conn = await self._loop.create_connection(
                lambda: _Connection(self),
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname=self._server_hostname,
            )
        except ssl.SSLError:
            raise
        except OSError as exc:
            raise ConnectFailed(f"{self._host}:{self._port}", exc) from exc
        self._all.add(conn)
        return conn

    def _forget(self, conn: _Connection) -> None:
        self._all.discard(conn)
        if conn in self._idle:
            self._idle.remove(conn)

    async def request(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout: float | None,
        sink: BodySink | None = None,
        *,
        connect_timeout: float | None = None,
    ) -> Response:
        """Send one request and read its whole answer within ``timeout`` seconds
        (connecting included).

        With ``sink``, a 2xx answer's body (without content coding) goes to
        ``sink`` piece by piece as it arrives and the Response's body is empty;
        other answers are read whole as without it. A request retried on a new
        connection (the pooled one was found closed) had handed nothing over.
        ``connect_timeout`` bounds connecting when ``timeout`` is None.
        """
        if _UNSAFE_TARGET(target):
            raise ValueError(f"unsafe characters in the request target {target[:80]!r}")
        head = [f"{method} {target} HTTP/1.1\r\n", self._fixed_head]
        for name, value in headers.items():
            if _UNSAFE(value):
                raise ValueError(f"control characters in the {name} header")
            head.append(f"{name}: {value}\r\n")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(body or b'')}\r\n")
        head.append("\r\n")
        data = "".join(head).encode("latin-1")
        if body:
            data += body
        retry_stale = method != "POST"
        deadline = None if timeout is None else self._loop.time() + timeout
        while True:
            reused = bool(self._idle)
            if reused:
                conn = self._idle.pop()
            elif deadline is None:
                if connect_timeout is None:
                    conn = await self._connect()
                else:
                    with anyio.fail_after(connect_timeout):
                        conn = await self._connect()
            else:  # connecting (and the TLS handshake) counts against the deadline too
                with anyio.fail_after(max(0.0, deadline - self._loop.time())):
                    conn = await self._connect()
            left = None if deadline is None else max(0.0, deadline - self._loop.time())
            try:
                answer = await self._exchange(conn, data, left, sink)
            except ServerDisconnected:
                if reused and retry_stale and not conn.answered_any:
                    retry_stale = False
                    continue
                raise
            if conn.reusable:
                self._idle.append(conn)
            else:
                conn.abort()
            return answer

    async def stream(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        timeout: float | None,
        connect_timeout: float | None,
    ) -> Response | StreamedAnswer:
        """Send one request whose 2xx answer is read as it arrives (a watch): a
        :class:`StreamedAnswer` once its head is here; any other answer read whole.
        ``timeout`` bounds the whole exchange, stream included."""
        body = BodyStream(self._loop)
        task = self._loop.create_task(
            self.request(
                method, target, headers, None, timeout, body.feed, connect_timeout=connect_timeout
            )
        )

        def ended(done: asyncio.Task[Response]) -> None:
            body.end(None if done.cancelled() else done.exception())

        task.add_done_callback(ended)
        try:
            streaming = await asyncio.shield(body.head)
        except BaseException:
            task.cancel()
            raise
        if not streaming:
            return await task  # an error answer read whole, or how the request failed
        return StreamedAnswer(body, task)

    async def _exchange(
        self, conn: _Connection, data: bytes, timeout: float | None, sink: BodySink | None
    ) -> Response:
        waiter = conn.send(data, sink)
        timer = None
        if timeout is not None:
            timer = self._loop.call_later(timeout, self._expire, conn, waiter)
        try:
            return await waiter
        except BaseException:
            conn.abort()  # cancelled, timed out or broken: the connection's state is unknown
            raise
        finally:
            if timer is not None:
                timer.cancel()

    @staticmethod
    def _expire(conn: _Connection, waiter: asyncio.Future[Response]) -> None:
        if not waiter.done():
            waiter.set_exception(asyncio.TimeoutError())
        conn.abort()

    async def close(self) -> None:
        for conn in list(self._all):
            conn.abort()
        self._all.clear()
        self._idle.clear()
