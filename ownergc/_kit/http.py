"""The server side of HTTP/1.1 on anyio byte streams, framed by h11.

h11 (pure Python, sans-I/O) owns the framing rules: request heads,
``Content-Length`` and chunked bodies, ``Expect: 100-continue``, keep-alive
and pipelining, and which responses may carry a body (never one to
``HEAD``, to a 1xx, 204 or 304). This module owns what h11 leaves to its
caller: the socket, the size limits, and the translation of h11's events
into one :class:`Request` and of a response into h11's events.

It also reads *ordinary* requests without h11 (:func:`next_plain_request`:
HTTP/1.1, one Host, a Content-Length or no body, none of the headers h11 acts
on, well formed by h11's own grammar), which is what clients send nearly
always, and :class:`ServerConnection` answers them with a whole body in the
bytes h11 would write; the first request or answer that is anything else hands
the connection to h11 for good (h11 then sees it as if it had had it from the
start). The webhook server (``ownergc.controller._webhook_server``) reads its
ordinary requests with the same function.

Both the Kubernetes API facade and the controller's probe server use it:
one :class:`ServerConnection` per accepted connection, then per request
``next_request`` and either ``respond`` (a whole body) or ``start_stream`` /
``send_chunk`` / ``end_stream`` (a watch), and ``next_cycle`` to go on to the
next request on a kept-alive connection.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

import anyio
import h11
from anyio.abc import ByteStream

__all__ = [
    "H11_MAX_HEAD",
    "MAX_BODY",
    "MAX_HEAD",
    "PLAIN_CLOSED",
    "PLAIN_NEED_DATA",
    "HTTPProtocolError",
    "PlainRequest",
    "Request",
    "ServerConnection",
    "next_plain_request",
    "plain_request",
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


# ------------------------------------------------------------ ordinary requests

#: h11's default limit on an incomplete request head (the webhook server keeps it).
H11_MAX_HEAD: Final = 16 * 1024
#: h11's terminator of a request head (it also takes bare ``\n`` line ends).
_HEAD_END: Final = re.compile(rb"\n\r?\n")
#: h11's own grammar (h11._abnf), HTTP/1.1 only.
_REQUEST_LINE: Final = re.compile(rb"([-!#$%&'*+.^_`|~0-9a-zA-Z]+) ([\x21-\x7e]+) HTTP/1\.1")
_HEADER: Final = re.compile(
    rb"([-!#$%&'*+.^_`|~0-9a-zA-Z]+):[ \t]*((?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?)[ \t]*"
)
_DIGITS: Final = re.compile(rb"[0-9]+")
#: Requests with these headers (or any doubt) are left to h11.
_H11_ONLY: Final = frozenset({b"transfer-encoding", b"connection", b"expect", b"upgrade"})
#: The header names :func:`plain_request` looks at (the rest it takes as they come).
_NOTED: Final = _H11_ONLY | {b"content-length", b"host"}


class PlainRequest(NamedTuple):
    """An ordinary request read without h11: what h11 would have made of it."""

    method: bytes
    target: bytes
    #: (lower-cased name, value without the white space around it), in order.
    headers: list[tuple[bytes, bytes]]
    #: Where the body starts in the buffer, and its length.
    start: int
    length: int


def plain_request(head: bytes, max_body: int = MAX_BODY, start: int = 0) -> PlainRequest | None:
    """The request of an ordinary HTTP/1.1 request head (``\\r\\n`` line ends, without
    its blank line), or None when h11 should judge it: anything unusual, malformed or
    that h11 would frame differently (chunked, Connection, Expect, Upgrade, no or
    several Host headers, several Content-Lengths, one above ``max_body``, obsolete
    line folding). ``start``: where the body starts (given back as it is)."""
    lines = head.split(b"\r\n")
    line = _REQUEST_LINE.fullmatch(lines[0])
    if line is None:
        return None
    length = -1
    hosts = 0
    headers = []
    for text in lines[1:]:
        header = _HEADER.fullmatch(text)
        if header is None:
            return None  # bad (h11 refuses it) or folded (h11 unfolds it)
        name, value = header.groups()
        name = name.lower()
        if name in _NOTED:
            if name == b"content-length":
                if length >= 0 or not _DIGITS.fullmatch(value):
                    return None
                length = int(value)
            elif name == b"host":
                hosts += 1
            else:
                return None
        headers.append((name, value))
    if hosts != 1 or length > max_body:
        return None
    return PlainRequest(line.group(1), line.group(2), headers, start, max(length, 0))


class _Plain(enum.Enum):
    NEED_DATA = "need data"
    CLOSED = "closed"


#: :func:`next_plain_request`: the request is not all there yet; read more.
PLAIN_NEED_DATA: Final = _Plain.NEED_DATA
#: :func:`next_plain_request`: the peer closed between requests (h11's ConnectionClosed).
PLAIN_CLOSED: Final = _Plain.CLOSED


def next_plain_request(
    buffer: bytes | bytearray, eof: bool, *, max_head: int, max_body: int = MAX_BODY
) -> PlainRequest | _Plain | None:
    """The ordinary request at the start of ``buffer`` once it is there whole (its body
    is ``buffer[start : start + length]``); :data:`PLAIN_NEED_DATA` while more of it is
    on its way (never once ``eof``); :data:`PLAIN_CLOSED` at the end of the stream
    between requests; None when h11 should have the connection from here on (the
    request is not ordinary, or h11 would refuse what has come: a head beyond
    ``max_head`` still incomplete, a first byte h11 refuses at once, an end of the
    stream inside a request), in which case h11, handed ``buffer`` (and the end of
    the stream), sees exactly what it would have seen from the start."""
    if not buffer:
        return PLAIN_CLOSED if eof else PLAIN_NEED_DATA
    end = _HEAD_END.search(buffer)
    if end is None:
        if buffer[0] > 0x20 and len(buffer) <= max_head and not eof:
            return PLAIN_NEED_DATA  # the rest of the head is on its way
        return None
    at = end.start()
    if not at or end.end() - at != 3 or buffer[at - 1] != 13:
        return None  # bare newlines, or a blank line first
    start = at + 3
    plain = plain_request(bytes(buffer[: at - 1]), max_body, start)
    if plain is None:
        return None
    if len(buffer) - start < plain.length:
        return None if eof else PLAIN_NEED_DATA  # the rest of the body is on its way
    return plain


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


#: Response header names h11 acts on: a response carrying one of them (beyond the
#: Content-Length and Connection that :meth:`ServerConnection.respond` adds) is left to h11.
_H11_FRAMING: Final = frozenset({b"host", b"content-length", b"transfer-encoding", b"connection"})
#: Response header lines the plain path writes itself, as h11 writes them.
_LINES: dict[tuple[str, str], bytes] = {}


def _plain_header_lines(headers: Iterable[tuple[str, str]]) -> bytes | None:
    """The header lines h11 would write for ``headers`` (``Name: value`` and CRLF each,
    as given, in order), or None when any is one h11 refuses or acts on."""
    out = []
    for header in headers:
        line = _LINES.get(header)
        if line is None:
            name, value = _CHECKED.get(header) or _encode_header(*header)
            if header not in _CHECKED or name.lower() in _H11_FRAMING:
                return None
            if len(_LINES) >= _CHECKED_MAX:
                _LINES.clear()
            line = _LINES[header] = b"%s: %s\r\n" % (name, value)
        out.append(line)
    return b"".join(out)


#: An answer to an ordinary request as h11 writes it: status line, headers as given,
#: then the two :meth:`ServerConnection.respond` adds.
_PLAIN_HEAD: Final = b"HTTP/1.1 %d %s\r\n%sContent-Length: %d\r\nConnection: keep-alive\r\n\r\n"
#: Methods h11 frames specially (no body to a HEAD; a CONNECT may switch protocols).
_H11_METHODS: Final = frozenset({b"HEAD", b"CONNECT"})


class ServerConnection:
    """One accepted connection: HTTP/1.1 between a byte stream and requests.

    Ordinary requests (HTTP/1.1, one Host, a Content-Length or no body, none of
    Connection, Transfer-Encoding, Expect or Upgrade, not HEAD or CONNECT, well
    formed by h11's own grammar) are read without h11, and answered without it when
    the answer is a whole body with ordinary headers, in the bytes h11 would write.
    At the first request or answer that is anything else (a HEAD, a watch's stream,
    ``Connection: close``, HTTP/1.0, ``Expect``, chunked, malformed or too large),
    the connection goes to an h11 state machine for good, which is handed the bytes
    it would have seen from the start (the request being answered included), so that
    it judges and frames everything from there exactly as if it had had the
    connection throughout.

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
        self._max_head = max_head
        #: None while requests are ordinary; then h11, for good.
        self._h11: h11.Connection | None = None
        #: Bytes read and not yet parsed (without h11), and whether the peer's side ended.
        self._buffer = b""
        self._eof = False
        #: The whole ordinary request being answered (handed to h11 should the answer
        #: need it), and whether its answer went out, leaving the connection open.
        self._current = b""
        self._plain_done = False
        #: The method of the request being answered: a HEAD gets no body.
        self._method = ""
        self._chunk_lock = anyio.Lock()

    def _to_h11(self) -> h11.Connection:
        """Hand the connection to h11 for good: the ordinary request being answered (h11
        reads it to its end, as it would have), then what is buffered behind it."""
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self._max_head)
        if self._current:
            conn.receive_data(self._current)
            event = conn.next_event()
            while type(event) is not h11.EndOfMessage:
                if event is h11.NEED_DATA:  # pragma: no cover - the request was whole
                    raise AssertionError("an ordinary request h11 did not read whole")
                event = conn.next_event()
            self._current = b""
        if self._buffer:
            conn.receive_data(self._buffer)
            self._buffer = b""
        if self._eof:
            conn.receive_data(b"")
        self._h11 = conn
        return conn

    # ------------------------------------------------------------------ reading

    async def _next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:
        """The next event, reading from the socket as long as h11 needs more bytes."""
        conn = self._h11 or self._to_h11()
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise HTTPProtocolError(exc.error_status_hint, str(exc)) from None
            if event is not h11.NEED_DATA:
                return event
            await self._receive()

    async def _read(self) -> bytes:
        """What the socket has; b"" at its end (or when the peer went away)."""
        try:
            return await self.stream.receive(_READ_SIZE)
        except (anyio.EndOfStream, *PEER_GONE):
            return b""

    async def _receive(self) -> None:
        """Hand h11 what the socket has (all of it: h11 takes whole buffers)."""
        data = await self._read()
        (self._h11 or self._to_h11()).receive_data(data)

    async def next_request(self) -> Request | None:
        """Read one whole request; None when the peer closed the connection between
        requests. Raises :class:`HTTPProtocolError` for a request that breaks HTTP/1.1
        or the size limits; :meth:`respond_and_close` then answers it."""
        if self._h11 is None:
            while True:
                plain = next_plain_request(
                    self._buffer, self._eof, max_head=self._max_head, max_body=self.max_body
                )
                if plain is PLAIN_NEED_DATA:
                    data = await self._read()
                    if data:
                        self._buffer = self._buffer + data if self._buffer else data
                    else:
                        self._eof = True
                elif plain is PLAIN_CLOSED:
                    return None
                elif (
                    isinstance(plain, PlainRequest)
                    and len(plain.headers) <= _MAX_HEADERS
                    and plain.method.upper() not in _H11_METHODS
                ):
                    return self._plain_request(plain)
                else:
                    self._to_h11()
                    break
        return await self._h11_request()

    def _plain_request(self, plain: PlainRequest) -> Request:
        """The ordinary request ``plain`` (whole at the start of the buffer), taken off it."""
        end = plain.start + plain.length
        buffer = self._buffer
        self._current = buffer[:end]
        self._buffer = buffer[end:]
        self._plain_done = False
        headers: dict[str, str] = {}
        for name, value in plain.headers:
            key = name.decode("latin-1")
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        request = Request(
            plain.method.decode("ascii").upper(),
            plain.target.decode("latin-1"),
            "HTTP/1.1",
            headers,
            buffer[plain.start : end],
        )
        self._method = request.method
        return request

    async def _h11_request(self) -> Request | None:
        conn = self._h11 or self._to_h11()
        buffered, closed = conn.trailing_data
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
        # The method as sent: h11 frames only an exact "HEAD" as one (a "head" gets
        # a body), so the answer must too.
        self._method = event.method.decode("ascii")
        if conn.they_are_waiting_for_100_continue:
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
        if self._h11 is None:
            if self._buffer or self._eof:
                return
        else:
            buffered, closed = self._h11.trailing_data
            if buffered or closed:
                return
        await self._read()

    # ------------------------------------------------------------------ writing

    async def _send(self, event: h11.Event) -> None:
        data = (self._h11 or self._to_h11()).send(event)
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
        conn = self._h11
        if conn is None:
            if not isinstance(headers, (list, tuple)):
                headers = list(headers)
            if keep_alive and 200 <= status < 1000 and status not in (204, 304):
                lines = _plain_header_lines(headers)
                if lines is not None:
                    # An ordinary request's ordinary answer: the bytes h11 writes.
                    reason = _REASON_BYTES.get(status) or reason_phrase(status).encode("ascii")
                    head = _PLAIN_HEAD % (status, reason, lines, len(body))
                    self._plain_done = True
                    await self.stream.send(head + body if body else head)
                    return
            conn = self._to_h11()
        all_headers = [
            *headers,
            ("Content-Length", str(len(body))),
            ("Connection", "keep-alive" if keep_alive else "close"),
        ]
        head = conn.send(self._head(status, all_headers)) or b""
        if body and not self._head_request:
            head += conn.send(h11.Data(data=body)) or b""
        head += conn.send(h11.EndOfMessage()) or b""
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
        conn = self._h11
        if conn is None:
            done, self._plain_done, self._current = self._plain_done, False, b""
            return done
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
            return True
        return False
