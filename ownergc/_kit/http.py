"""A minimal HTTP/1.1 server-side wire layer on anyio byte streams.

Just what the Kubernetes API facade and the controller's probe server need:
request line and headers, ``Content-Length`` and chunked request bodies,
``Expect: 100-continue``, keep-alive, and fixed-length or chunked (streaming)
responses. No runtime dependency beyond anyio, so the in-memory backend stays
installable with the core's requirements only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qs, unquote, urlsplit

import anyio
from anyio.abc import ByteStream
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = [
    "MAX_BODY",
    "ChunkedWriter",
    "HTTPProtocolError",
    "Request",
    "read_request",
    "reason_phrase",
    "write_response",
]

#: Bytes allowed in the request line plus headers.
MAX_HEAD: Final = 64 * 1024
#: Bytes allowed in a request body (kube-apiserver limits objects to about 3 MiB).
MAX_BODY: Final = 32 * 1024 * 1024
_MAX_HEADERS: Final = 200

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
        parts = urlsplit(self.target)
        self.path = unquote(parts.path) or "/"
        self.query = parse_qs(parts.query, keep_blank_values=True)

    def param(self, name: str) -> str | None:
        """The first value of query parameter ``name`` (None when absent)."""
        values = self.query.get(name)
        return values[0] if values else None

    @property
    def keep_alive(self) -> bool:
        """HTTP/1.1 keeps the connection unless told otherwise; HTTP/1.0 only when asked."""
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


async def _read_line(reader: BufferedByteReceiveStream, budget: int) -> bytes:
    try:
        return await reader.receive_until(b"\r\n", max(budget, 1))
    except anyio.DelimiterNotFound:
        raise HTTPProtocolError(431, "request line or headers too large") from None


async def read_request(reader: BufferedByteReceiveStream, writer: ByteStream) -> Request | None:
    """Read one request; None when the peer closed the connection between requests.

    ``writer`` is needed to answer ``Expect: 100-continue`` before the body.
    """
    budget = MAX_HEAD
    try:
        line = await _read_line(reader, budget)
    except (anyio.EndOfStream, anyio.IncompleteRead):
        return None
    while not line:  # RFC 9112 §2.2: ignore empty lines before a request line
        try:
            line = await _read_line(reader, budget)
        except (anyio.EndOfStream, anyio.IncompleteRead):
            return None
    budget -= len(line) + 2
    try:
        method, target, version = line.decode("latin-1").split(" ")
    except ValueError:
        raise HTTPProtocolError(400, "malformed request line") from None
    if version not in ("HTTP/1.1", "HTTP/1.0") or not method.isalpha():
        raise HTTPProtocolError(400, f"unsupported protocol {version!r}")
    headers: dict[str, str] = {}
    while True:
        try:
            raw = await _read_line(reader, budget)
        except anyio.IncompleteRead:
            raise HTTPProtocolError(400, "connection closed inside the headers") from None
        budget -= len(raw) + 2
        if not raw:
            break
        if len(headers) >= _MAX_HEADERS:
            raise HTTPProtocolError(431, "too many headers")
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep or not name or name != name.strip():
            raise HTTPProtocolError(400, f"malformed header line {raw[:80]!r}")
        key = name.lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    request = Request(method.upper(), target, version, headers)
    if "100-continue" in headers.get("expect", "").lower() and version == "HTTP/1.1":
        await writer.send(b"HTTP/1.1 100 Continue\r\n\r\n")
    request.body = await _read_body(reader, headers)
    return request


async def _read_body(reader: BufferedByteReceiveStream, headers: dict[str, str]) -> bytes:
    try:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return await _read_chunked(reader)
        length_text = headers.get("content-length")
        if length_text is None:
            return b""
        try:
            length = int(length_text)
        except ValueError:
            raise HTTPProtocolError(400, "invalid Content-Length") from None
        if length < 0:
            raise HTTPProtocolError(400, "invalid Content-Length")
        if length > MAX_BODY:
            raise HTTPProtocolError(413, f"request body larger than {MAX_BODY} bytes")
        return await reader.receive_exactly(length) if length else b""
    except (anyio.EndOfStream, anyio.IncompleteRead):
        raise HTTPProtocolError(400, "connection closed inside the request body") from None


async def _read_chunked(reader: BufferedByteReceiveStream) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size_line = await _read_line(reader, 1024)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise HTTPProtocolError(400, "malformed chunk size") from None
        if size == 0:
            while await _read_line(reader, MAX_HEAD):  # trailers, ignored
                pass
            return b"".join(parts)
        total += size
        if total > MAX_BODY:
            raise HTTPProtocolError(413, f"request body larger than {MAX_BODY} bytes")
        parts.append(await reader.receive_exactly(size))
        if await reader.receive_exactly(2) != b"\r\n":
            raise HTTPProtocolError(400, "malformed chunk terminator")


def _head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason_phrase(status)}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def write_response(
    writer: ByteStream,
    status: int,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    *,
    keep_alive: bool,
    head_only: bool = False,
) -> None:
    """Send a complete response with a Content-Length (one write for small bodies)."""
    all_headers = [
        *headers,
        ("Content-Length", str(len(body))),
        ("Connection", "keep-alive" if keep_alive else "close"),
    ]
    data = _head(status, all_headers)
    if not head_only:
        data += body
    await writer.send(data)


class ChunkedWriter:
    """A streaming response in chunked transfer encoding (one chunk per ``send``)."""

    def __init__(self, writer: ByteStream) -> None:
        self._writer = writer
        self.finished = False

    async def start(self, status: int, headers: Iterable[tuple[str, str]]) -> None:
        """Send the head now, so that clients return from their request before any event."""
        all_headers = [*headers, ("Transfer-Encoding", "chunked")]
        await self._writer.send(_head(status, all_headers))

    async def send(self, data: bytes) -> None:
        if data:
            await self._writer.send(b"%x\r\n%s\r\n" % (len(data), data))

    async def finish(self) -> None:
        """The terminating zero-length chunk: a clean end of stream."""
        self.finished = True
        await self._writer.send(b"0\r\n\r\n")
