"""The server side of HTTP/1.1 on anyio byte streams, framed by h11.

h11 (pure Python, sans-I/O) owns the framing rules: request heads,
``Content-Length`` and chunked bodies, ``Expect: 100-continue``, keep-alive
and pipelining, and which responses may carry a body (never one to
``HEAD``, to a 1xx, 204 or 304). This module owns what h11 leaves to its
caller: the socket, the size limits, and the translation of h11's events
into one :class:`Request` and of a response into h11's events.

Both the Kubernetes API facade and the controller's probe server use it:
one :class:`ServerConnection` per accepted connection, then per request
``next_request`` and either ``respond`` (a whole body) or ``start_stream`` /
``send_chunk`` / ``end_stream`` (a watch), and ``next_cycle`` to go on to the
next request on a kept-alive connection.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qs, unquote, urlsplit

import anyio
import h11
from anyio.abc import ByteStream

__all__ = [
    "MAX_BODY",
    "MAX_HEAD",
    "HTTPProtocolError",
    "Request",
    "ServerConnection",
    "reason_phrase",
]

#: Bytes allowed in the request line plus headers.
MAX_HEAD: Final = 64 * 1024
#: Bytes allowed in a request body (kube-apiserver limits objects to about 3 MiB).
MAX_BODY: Final = 32 * 1024 * 1024
_MAX_HEADERS: Final = 200
#: How much one ``receive`` asks the socket for.
_READ_SIZE: Final = 64 * 1024

_REASONS: Final[dict[int, str]] = {
    100: "Continue",
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No Content",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    409: "Conflict",
    410: "Gone",
    411: "Length Required",
    413: "Request Entity Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


_REASON_BYTES: Final = {status: text.encode("ascii") for status, text in _REASONS.items()}


def reason_phrase(status: int) -> str:
    """The standard reason phrase; clients ignore it but humans read it in logs."""
    return _REASONS.get(status, "Unknown")


class HTTPProtocolError(Exception):
    """The peer broke HTTP/1.1; answer ``status`` and close the connection."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class Request:
    """One parsed request. Header names are lower-cased; repeated headers are joined
    with ``", "`` as RFC 9110 allows for list-valued fields."""

    method: str
    target: str
    version: str
    headers: dict[str, str]
    body: bytes = b""
    path: str = ""
    query: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.path, self.query = _split_target(self.target)

    def param(self, name: str) -> str | None:
        """The first value of query parameter ``name`` (None when absent)."""
        values = self.query.get(name)
        return values[0] if values else None

    @property
    def keep_alive(self) -> bool:
        """HTTP/1.1 keeps the connection unless told otherwise; HTTP/1.0 only when asked."""
        connection = self.headers.get("connection")
        if connection is None:
            return self.version != "HTTP/1.0"
        tokens = {t.strip().lower() for t in connection.split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


#: Characters that make a request target need ``urlsplit`` / ``unquote`` (a query, a
#: fragment, an escape, or a leading ``//`` that urlsplit reads as an authority).
_PLAIN_PATH: Final = re.compile(r"/(?!/)[^?#%]*")


def _split_target(target: str) -> tuple[str, dict[str, list[str]]]:
    """The unquoted path and the query of a request target (an origin-form target
    without escapes, the common case, is its own path: no parsing)."""
    if _PLAIN_PATH.fullmatch(target):
        return target, {}
    parts = urlsplit(target)
    query = parse_qs(parts.query, keep_blank_values=True) if parts.query else {}
    return unquote(parts.path) or "/", query


#: What writing to, or reading from, a peer that went away raises.
PEER_GONE: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


#: Whether h11 takes headers that were validated already (``_parsed``, as its own parser
#: hands them over): then a header is checked once, here, and kept encoded.
_PREVALIDATED: Final = "_parsed" in inspect.signature(h11.Response.__init__).parameters
#: A header name and value as h11 requires them (h11's own rules: RFC 9110 tokens, and
#: values without CR, LF or NUL, nor space at either end).
_FIELD_NAME: Final = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_FIELD_VALUE: Final = re.compile(rb"(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?")
#: Encoded headers already checked: a server sends the same few over and over.
_CHECKED: dict[tuple[str, str], tuple[bytes, bytes]] = {}
_CHECKED_MAX: Final = 4096


def _encode_header(name: str, value: str) -> tuple[bytes, bytes]:
    """One header as bytes, checked as h11 checks it (an invalid one is left to h11,
    which refuses it with its own error)."""
    pair = (name.encode("latin-1"), value.encode("latin-1"))
    if _FIELD_NAME.fullmatch(pair[0]) and _FIELD_VALUE.fullmatch(pair[1]):
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[(name, value)] = pair
    return pair


def _encode_headers(headers: Iterable[tuple[str, str]]) -> tuple[list[tuple[bytes, bytes]], bool]:
    """The headers as bytes, and whether each passed h11's checks already."""
    out = []
    checked = True
    for header in headers:
        pair = _CHECKED.get(header)
        if pair is None:
            pair = _encode_header(*header)
            checked = checked and header in _CHECKED
        out.append(pair)
    return out, checked


class ServerConnection:
    """One accepted connection: an h11 state machine between a byte stream and requests.

    Not safe for concurrent use, except while a response is streamed:
    :meth:`wait_for_peer` may run beside it (that is how a watch notices its
    client went away), and several tasks may :meth:`send_chunk` (a watch's
    events and its bookmarks): a lock keeps each chunk whole on the wire.
    """

    def __init__(
        self, stream: ByteStream, *, max_head: int = MAX_HEAD, max_body: int = MAX_BODY
    ) -> None:
        self.stream = stream
        self.max_body = max_body
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=max_head)
        #: The method of the request being answered: a HEAD gets no body.
        self._method = ""
        self._chunk_lock = anyio.Lock()

    # ------------------------------------------------------------------ reading

    async def _next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        """The next event, reading from the socket as long as h11 needs more bytes."""
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise HTTPProtocolError(exc.error_status_hint, str(exc)) from None
            if event is not h11.NEED_DATA:
                return event
            await self._receive()

    async def _receive(self) -> None:
        """Hand h11 what the socket has (all of it: h11 takes whole buffers)."""
        try:
            data = await self.stream.receive(_READ_SIZE)
        except (anyio.EndOfStream, *PEER_GONE):
            data = b""
        self._h11.receive_data(data)

    async def next_request(self) -> Request | None:
        """Read one whole request; None when the peer closed the connection between
        requests. Raises :class:`HTTPProtocolError` for a request that breaks HTTP/1.1
        or the size limits; :meth:`respond_and_close` then answers it."""
        buffered, closed = self._h11.trailing_data
        if not buffered and not closed:
            # Nothing to parse yet (the usual case between requests): read first,
            # rather than ask h11 for an event it cannot have.
            await self._receive()
        event = await self._next_event()
        if isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None
        if not isinstance(event, h11.Request):  # pragma: no cover - h11 guarantees it
            raise HTTPProtocolError(400, f"unexpected {type(event).__name__}")
        if len(event.headers) > _MAX_HEADERS:
            raise HTTPProtocolError(431, "too many headers")
        headers: dict[str, str] = {}
        for name, value in event.headers:
            key = name.decode("latin-1")
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            raise HTTPProtocolError(413, f"request body larger than {self.max_body} bytes")
        request = Request(
            event.method.decode("ascii").upper(),
            event.target.decode("latin-1"),
            f"HTTP/{event.http_version.decode('ascii')}",
            headers,
        )
        self._method = request.method
        if self._h11.they_are_waiting_for_100_continue:
            await self._send(
                h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue")
            )
        parts: list[bytes] = []
        total = 0
        while True:
            event = await self._next_event()
            if isinstance(event, h11.Data):
                total += len(event.data)
                if total > self.max_body:
                    raise HTTPProtocolError(413, f"request body larger than {self.max_body} bytes")
                parts.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            else:  # pragma: no cover - h11 ends a body with EndOfMessage or an error
                raise HTTPProtocolError(400, "connection closed inside the request body")
        request.body = b"".join(parts)
        return request

    async def wait_for_peer(self) -> None:
        """Return when the peer sends anything or closes: a client sends nothing while
        it watches, so either ends the watch. Bytes already buffered (a pipelined
        request behind the watch) count at once."""
        buffered, closed = self._h11.trailing_data
        if buffered or closed:
            return
        try:
            await self.stream.receive(_READ_SIZE)
        except (anyio.EndOfStream, *PEER_GONE):
            pass

    # ------------------------------------------------------------------ writing

    async def _send(self, event: h11.Event) -> None:
        data = self._h11.send(event)
        if data:
            await self.stream.send(data)

    def _head(self, status: int, headers: Iterable[tuple[str, str]]) -> h11.Response:
        encoded, checked = _encode_headers(headers)
        reason = _REASON_BYTES.get(status) or reason_phrase(status).encode("ascii")
        if checked and _PREVALIDATED:
            # Checked above as h11 would: h11 skips its own pass (it still reads the
            # framing headers, Content-Length and Transfer-Encoding).
            return h11.Response(status_code=status, headers=encoded, reason=reason, _parsed=True)
        return h11.Response(status_code=status, headers=encoded, reason=reason)

    @property
    def _head_request(self) -> bool:
        return self._method == "HEAD"

    async def respond(
        self, status: int, headers: Iterable[tuple[str, str]], body: bytes, *, keep_alive: bool
    ) -> None:
        """Send a whole response with a ``Content-Length`` (no body to a HEAD)."""
        all_headers = [
            *headers,
            ("Content-Length", str(len(body))),
            ("Connection", "keep-alive" if keep_alive else "close"),
        ]
        head = self._h11.send(self._head(status, all_headers)) or b""
        if body and not self._head_request:
            head += self._h11.send(h11.Data(data=body)) or b""
        head += self._h11.send(h11.EndOfMessage()) or b""
        await self.stream.send(head)

    async def respond_and_close(
        self, status: int, headers: Iterable[tuple[str, str]], body: bytes
    ) -> None:
        """Answer and give up the connection (``Connection: close``): the probe server's
        one request, or one :meth:`next_request` refused (if h11 still lets us answer)."""
        # Too late to answer when the response had started: then just close.
        with contextlib.suppress(h11.LocalProtocolError):
            await self.respond(status, headers, body, keep_alive=False)

    async def start_stream(self, status: int, headers: Iterable[tuple[str, str]]) -> None:
        """Send the head of a streamed (chunked) response now, so that clients return
        from their request before the first event."""
        await self._send(self._head(status, [*headers, ("Transfer-Encoding", "chunked")]))

    @property
    def streams_body(self) -> bool:
        """Whether chunks sent now reach the client (not after a HEAD)."""
        return not self._head_request

    async def send_chunk(self, data: bytes) -> None:
        """One chunk of a streamed response (dropped after a HEAD: no body)."""
        if data and not self._head_request:
            # The lock is almost never held (bookmarks share it): take it without a
            # checkpoint when free, which is most of a watch event's overhead here.
            try:
                self._chunk_lock.acquire_nowait()
            except anyio.WouldBlock:
                await self._chunk_lock.acquire()
            try:
                await self._send(h11.Data(data=data))
            finally:
                self._chunk_lock.release()

    async def end_stream(self) -> None:
        """The clean end of a streamed response (the terminating zero-length chunk)."""
        async with self._chunk_lock:
            await self._send(h11.EndOfMessage())

    # ------------------------------------------------------------------ cycles

    def next_cycle(self) -> bool:
        """After a complete response: whether the connection goes on to another request
        (both sides kept it alive), and if so, get ready for it."""
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            self._h11.start_next_cycle()
            return True
        return False
