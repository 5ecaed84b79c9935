"""HTTPS for ``ownergc webhook``: HTTP/1.1 on asyncio's TLS transports (h11 for all
but ordinary requests), or through h11 over anyio (TLS) streams on other event loops.

kube-apiserver keeps connections to a webhook alive and sends many reviews
down each, so connections are kept. On asyncio (``ownergc webhook`` runs there)
each connection is a protocol driven by the transport's callbacks, and the
ordinary requests kube-apiserver sends are read and answered without h11, in
the bytes h11 would write (performance.md has the cost per review before and
after); h11 judges anything else. Routes:
``POST /validate`` (AdmissionReview), ``GET /healthz``, ``GET /readyz`` and
``GET /metrics``. Also: the self-signed CA and serving certificate the
webhook makes when not given one, and the TLS context that serves them.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import h11
from anyio.streams.tls import TLSListener

from ownergc._kit.http import (
    H11_MAX_HEAD,
    PLAIN_CLOSED,
    PLAIN_NEED_DATA,
    PlainRequest,
    next_plain_request,
)
from ownergc._kit.jsonio import dumps, loads
from ownergc._kit.prometheus import CONTENT_TYPE
from ownergc.controller._webhook import AdmissionChecker

__all__ = [
    "CertPaths",
    "WebhookApp",
    "ensure_self_signed",
    "serve_webhook",
    "server_ssl_context",
]

log = logging.getLogger("ownergc.webhook")

#: kube-apiserver refuses objects above ~3 MiB; a review holds two of them.
MAX_BODY = 16 * 1024 * 1024
#: Close a kept-alive connection idle this long (the apiserver reconnects).
IDLE_TIMEOUT = 120.0
_JSON = b"application/json"


@dataclass
class WebhookApp:
    """The routes, independent of the wire (tests call it directly)."""

    checker: AdmissionChecker
    ready: Callable[[], bool] = lambda: True

    async def __call__(self, method: str, path: str, body: bytes) -> tuple[int, bytes, bytes]:
        """(status, content type, body) for one request."""
        route = path.partition("?")[0]
        if route in ("/validate", "/") and method == "POST":
            try:
                review = loads(body)
                answer = await self.checker.review(review)
            except (ValueError, AttributeError) as exc:
                return 400, b"text/plain; charset=utf-8", f"bad AdmissionReview: {exc}\n".encode()
            return 200, _JSON, dumps(answer)
        if method not in ("GET", "HEAD"):
            return 405, b"text/plain; charset=utf-8", b"method not allowed\n"
        if route == "/healthz":
            return 200, b"text/plain; charset=utf-8", b"ok\n"
        if route == "/readyz":
            ok = self.ready()
            return (200 if ok else 503), b"text/plain; charset=utf-8", b"ok\n" if ok else b"no\n"
        if route == "/metrics":
            return 200, CONTENT_TYPE.encode(), self.checker.metrics.render().encode()
        return 404, b"text/plain; charset=utf-8", b"not found\n"


Handler = Callable[[str, str, bytes], Any]


async def _receive(conn: h11.Connection, stream: anyio.abc.ByteStream) -> Any:
    """The next h11 event, reading from the stream as needed (ConnectionClosed on EOF)."""
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        try:
            data = await stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            data = b""
        conn.receive_data(data)


async def _send(conn: h11.Connection, stream: anyio.abc.ByteStream, event: Any) -> None:
    data = conn.send(event)
    if data:
        await stream.send(data)


async def _connection(stream: anyio.abc.ByteStream, handler: Handler) -> None:
    conn = h11.Connection(h11.SERVER)
    async with stream:
        while True:
            try:
                request: h11.Request | None = None
                body = bytearray()
                # One deadline per request (idle keep-alive included), not per read.
                with anyio.move_on_after(IDLE_TIMEOUT) as idle:
                    while True:
                        event = await _receive(conn, stream)
                        if isinstance(event, h11.Request):
                            request = event
                        elif isinstance(event, h11.Data):
                            body += event.data
                            if len(body) > MAX_BODY:
                                raise h11.RemoteProtocolError("body too large", 413)
                        elif isinstance(event, h11.EndOfMessage):
                            break
                        else:  # ConnectionClosed or PAUSED: nothing more to answer
                            return
                if idle.cancelled_caught:
                    return
            except h11.RemoteProtocolError as exc:
                with contextlib.suppress(Exception):
                    status = exc.error_status_hint
                    payload = f"{exc}\n".encode()
                    await _send(conn, stream, _response(status, b"text/plain", payload))
                    await _send(conn, stream, h11.Data(data=payload))
                    await _send(conn, stream, h11.EndOfMessage())
                return
            assert request is not None
            try:
                status, ctype, payload = await handler(
                    request.method.decode("ascii"), request.target.decode("latin-1"), bytes(body)
                )
            except Exception as exc:  # answer 500 and keep serving
                log.exception("webhook request failed")
                status, ctype, payload = 500, b"text/plain", f"internal error: {exc}\n".encode()
            # One write for head and body: separate TLS records would meet Nagle's
            # algorithm and the peer's delayed ACK (tens of ms per answer).
            data = conn.send(_response(status, ctype, payload)) or b""
            if request.method != b"HEAD":
                data += conn.send(h11.Data(data=payload)) or b""
            data += conn.send(h11.EndOfMessage()) or b""
            try:
                await stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            try:
                conn.start_next_cycle()
            except h11.LocalProtocolError:
                return


def _response(status: int, ctype: bytes, payload: bytes) -> h11.Response:
    return h11.Response(
        status_code=status,
        headers=[(b"content-type", ctype), (b"content-length", str(len(payload)).encode())],
    )


def _error_response(conn: h11.Connection, exc: h11.RemoteProtocolError) -> bytes:
    """What a request h11 refused is answered with (then the connection closes)."""
    payload = f"{exc}\n".encode()
    try:
        data = conn.send(_response(exc.error_status_hint, b"text/plain", payload)) or b""
        data += conn.send(h11.Data(data=payload)) or b""
        data += conn.send(h11.EndOfMessage()) or b""
    except Exception:  # h11 will not answer in this state: just close
        return b""
    return data


def _answer(conn: h11.Connection, request: h11.Request, result: tuple[int, bytes, bytes]) -> bytes:
    """The response's bytes, head and body in one piece (one TLS record, one write)."""
    status, ctype, payload = result
    # Separate writes would meet Nagle's algorithm and the peer's delayed ACK (tens of
    # ms per answer).
    data = conn.send(_response(status, ctype, payload)) or b""
    if request.method != b"HEAD":
        data += conn.send(h11.Data(data=payload)) or b""
    data += conn.send(h11.EndOfMessage()) or b""
    return data


class _Server:
    """What the connections of one asyncio listener share: the handler, the live
    connections (closed at shutdown) and the requests being answered."""

    def __init__(self, handler: Handler, loop: asyncio.AbstractEventLoop, *, tls: bool) -> None:
        self.handler = handler
        self.loop = loop
        self.tls = tls
        self.connections: set[_Connection] = set()
        self.tasks: set[asyncio.Task[None]] = set()


class _Connection(asyncio.Protocol):
    """One client connection on asyncio: the same HTTP/1.1 as :func:`_connection`, driven
    by the transport's callbacks instead of a task reading a stream.

    Requests are parsed in ``data_received`` as the bytes arrive; each complete
    request is answered by a task of its own and the answer written in one
    ``transport.write``. No per-read task switch, no per-read pause and resume of the
    socket, no cancel scope per request: the idle deadline is one timer per connection,
    re-armed only when it fires.

    Ordinary requests (what kube-apiserver sends: HTTP/1.1, a Host, a Content-Length)
    are read and answered without h11, in the bytes h11 writes; the first request that
    is anything else hands the connection, at that request's first byte, to h11 for good
    (its checks, its errors, its framing), which sees it exactly as if it had had the
    connection from the start.
    """

    def __init__(self, server: _Server) -> None:
        self.server = server
        #: None while requests are ordinary; then h11 from the first that is not.
        self.h11: h11.Connection | None = None
        self.buffer = bytearray()
        self.eof = False
        self.transport: asyncio.Transport | None = None
        self.request: h11.Request | None = None
        self.body = bytearray()
        #: Being answered: data that arrives meanwhile waits (reading is paused).
        self.busy = False
        self.paused = False
        self.closed = False
        #: When the connection began waiting for its next request (the idle deadline's start).
        self.waiting_since = server.loop.time()
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.connections.add(self)
        self.waiting_since = self.server.loop.time()
        self.timer = self.server.loop.call_at(self.waiting_since + IDLE_TIMEOUT, self._idle)

    def data_received(self, data: bytes) -> None:
        if self.h11 is None:
            self.buffer += data
        else:
            try:
                self.h11.receive_data(data)
            except RuntimeError:  # data after the end of the stream
                self.close()
                return
        if self.busy:
            if not self.paused and self.transport is not None:
                self.paused = True
                self.transport.pause_reading()
            return
        self._pump()

    def eof_received(self) -> bool:
        if self.h11 is None:
            self.eof = True
        else:
            with contextlib.suppress(RuntimeError):
                self.h11.receive_data(b"")
        if not self.busy:
            self._pump()
        # Plain TCP keeps its write side, so an answer in progress still goes out (TLS
        # closes on EOF whatever this says, and warns when told otherwise).
        return not self.server.tls

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def close(self) -> None:
        if not self.closed and self.transport is not None:
            self.closed = True
            self.transport.close()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _idle(self) -> None:
        self.timer = None
        if self.closed:
            return
        now = self.server.loop.time()
        if self.busy:  # the request's deadline ended when it was read: look again later
            when = now + IDLE_TIMEOUT
        elif now - self.waiting_since >= IDLE_TIMEOUT:
            self.close()
            return
        else:
            when = self.waiting_since + IDLE_TIMEOUT
        self.timer = self.server.loop.call_at(when, self._idle)

    def _pump(self) -> None:
        """Parse what has arrived; a complete request is handed to a task."""
        if self.h11 is None and self._pump_plain():
            return
        assert self.h11 is not None
        conn = self.h11
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    return
                kind = type(event)
                if kind is h11.Data:
                    self.body += event.data  # type: ignore[union-attr]
                    if len(self.body) > MAX_BODY:
                        raise h11.RemoteProtocolError("body too large", 413)
                elif kind is h11.Request:
                    self.request = event  # type: ignore[assignment]
                elif kind is h11.EndOfMessage:
                    break
                else:  # ConnectionClosed or PAUSED: nothing more to answer
                    self.close()
                    return
        except h11.RemoteProtocolError as exc:
            data = _error_response(conn, exc)
            if data and self.transport is not None and not self.closed:
                self.transport.write(data)
            self.close()
            return
        request, body = self.request, bytes(self.body)
        assert request is not None
        self.request = None
        self.body = bytearray()
        self._start(request.method, request.target, body, request)

    def _pump_plain(self) -> bool:
        """The next ordinary request, if it has arrived whole; False hands the connection
        (what is buffered, and the end of the stream if it came) to h11."""
        buffer = self.buffer
        plain = next_plain_request(buffer, self.eof, max_head=H11_MAX_HEAD, max_body=MAX_BODY)
        if plain is PLAIN_NEED_DATA:
            return True
        if plain is PLAIN_CLOSED:  # the end, between requests: what h11 would do too
            self.close()
            return True
        if isinstance(plain, PlainRequest):
            end = plain.start + plain.length
            body = bytes(buffer[plain.start : end])
            del buffer[:end]
            self._start(plain.method, plain.target, body, None)
            return True
        self.h11 = h11.Connection(h11.SERVER)
        self.h11.receive_data(bytes(buffer))
        if self.eof:
            self.h11.receive_data(b"")
        self.buffer = bytearray()
        return False

    def _start(
        self, method: bytes, target: bytes, body: bytes, request: h11.Request | None
    ) -> None:
        self.busy = True
        task = self.server.loop.create_task(self._answer(method, target, body, request))
        self.server.tasks.add(task)
        task.add_done_callback(self.server.tasks.discard)

    async def _answer(
        self, method: bytes, target: bytes, body: bytes, request: h11.Request | None
    ) -> None:
        try:
            result = await self.server.handler(
                method.decode("ascii"), target.decode("latin-1"), body
            )
        except Exception as exc:  # answer 500 and keep serving
            log.exception("webhook request failed")
            result = 500, b"text/plain", f"internal error: {exc}\n".encode()
        if self.closed or self.transport is None:
            return
        conn = self.h11
        if request is None:  # an ordinary request: the bytes h11 would write
            status, ctype, payload = result
            head = b"HTTP/1.1 %d \r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n" % (
                status,
                ctype,
                len(payload),
            )
            self.transport.write(head if method == b"HEAD" else head + payload)
        else:
            assert conn is not None
            self.transport.write(_answer(conn, request, result))
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                self.close()
                return
            try:
                conn.start_next_cycle()
            except h11.LocalProtocolError:
                self.close()
                return
        self.busy = False
        self.waiting_since = self.server.loop.time()
        if self.paused:
            self.paused = False
            self.transport.resume_reading()
        self._pump()  # a request that arrived meanwhile (pipelined) is answered next


def _on_asyncio() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or None on another event loop (trio)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def serve_webhook(
    handler: Handler,
    *,
    host: str,
    port: int,
    ssl_context: ssl.SSLContext | None,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``handler`` on host:port (HTTPS with a context) until cancelled; reports the port.

    On asyncio the connections are protocols on the loop's own (TLS) transports, the
    cheapest path per review; on another event loop, anyio streams.
    """
    tcp = await anyio.create_tcp_listener(local_host=host, local_port=port)
    bound = tcp.listeners[0].extra(anyio.abc.SocketAttribute.local_port)
    loop = _on_asyncio()
    if loop is None:
        listener: anyio.abc.Listener[Any] = (
            TLSListener(tcp, ssl_context, standard_compatible=False) if ssl_context else tcp
        )
        async with listener:
            task_status.started(bound)
            await listener.serve(lambda stream: _connection(stream, handler))
        return
    server = _Server(handler, loop, tls=ssl_context is not None)
    servers: list[asyncio.AbstractServer] = []
    try:
        for one in tcp.listeners:
            sock = one.extra(anyio.abc.SocketAttribute.raw_socket)
            servers.append(
                await loop.create_server(lambda: _Connection(server), sock=sock, ssl=ssl_context)
            )
        task_status.started(bound)
        await anyio.sleep_forever()
    finally:
        for s in servers:
            s.close()
        for conn in list(server.connections):
            conn.abort()
        for task in list(server.tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await anyio.aclose_forcefully(tcp)


def server_ssl_context(cert: str | Path, key: str | Path) -> ssl.SSLContext:
    """TLS 1.2+ serving ``cert``/``key``, HTTP/1.1 only (no h2 to negotiate)."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(cert), str(key))
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


@dataclass(frozen=True)
class CertPaths:
    """A self-signed pair's files: ``ca.crt`` (the caBundle), ``tls.crt``, ``tls.key``."""

    ca: Path
    cert: Path
    key: Path


def ensure_self_signed(directory: Path, dns_names: list[str], *, days: int = 3650) -> CertPaths:
    """A CA and a serving certificate for ``dns_names`` in ``directory`` (made once, then reused).

    Needs the ``cryptography`` package (``pip install 'ownergc[webhook]'``).
    """
    paths = CertPaths(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
    if paths.ca.exists() and paths.cert.exists() and paths.key.exists():
        return paths
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError as exc:
        raise RuntimeError(
            "making a self-signed certificate needs the cryptography package: "
            "pip install 'ownergc[webhook]' (or pass --tls-cert/--tls-key)"
        ) from exc
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ownergc-webhook-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for name in dns_names:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            sans.append(x509.DNSName(name))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    paths.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.touch(mode=0o600)
    paths.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths
