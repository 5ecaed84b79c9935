"""The HTTP/1.1 wire (h11) under the facade and the probe server: raw sockets, one
connection, several requests; HEAD never gets a body."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import anyio
import h11

from ownergc._kit.http import HTTPProtocolError, ServerConnection
from ownergc.controller._http import Response, serve_http
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import configmap, request

NS = "/api/v1/namespaces"
CM = "/api/v1/namespaces/default/configmaps"


def _open(server: KubeAPIServer) -> socket.socket:
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def _read_responses(sock: socket.socket, methods: list[str]) -> list[h11.Event]:
    """Parse what the server sent with an h11 client that sent ``methods`` in order:
    a stray byte (such as a body after a HEAD) makes h11 raise."""
    client = h11.Connection(h11.CLIENT)
    events: list[h11.Event] = []
    for i, method in enumerate(methods):
        client.send(h11.Request(method=method, target="/", headers=[("Host", "x")]))
        client.send(h11.EndOfMessage())
        while True:
            event = client.next_event()
            if event is h11.NEED_DATA:
                data = sock.recv(65536)
                client.receive_data(data)
                continue
            assert isinstance(event, h11.Event)
            events.append(event)
            if isinstance(event, h11.EndOfMessage):
                break
        if i + 1 < len(methods):
            client.start_next_cycle()
    # Nothing may follow the last response on a kept-alive connection.
    sock.settimeout(0.3)
    try:
        extra = sock.recv(65536)
    except TimeoutError:
        extra = b""
    assert extra == b"", f"bytes after the last response: {extra[:80]!r}"
    return events


def _statuses(events: list[h11.Event]) -> list[int]:
    return [e.status_code for e in events if isinstance(e, h11.Response)]


def _bodies(events: list[h11.Event]) -> list[bytes]:
    """The body of each response, in order."""
    bodies: list[bytes] = []
    current = b""
    for e in events:
        if isinstance(e, h11.Data):
            current += bytes(e.data)
        elif isinstance(e, h11.EndOfMessage):
            bodies.append(current)
            current = b""
    return bodies


def test_head_of_a_watch_sends_no_body_and_keeps_the_connection(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    """Regression: a HEAD with watch=1 used to get a chunked stream whose final
    ``0\\r\\n\\r\\n`` was read as the next response's status line."""
    assert request(server, "POST", CM, configmap("one")).status == 201
    with _open(server) as sock:
        sock.sendall(
            f"HEAD {CM}?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n"
            f"GET {CM}/one HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        )
        events = _read_responses(sock, ["HEAD", "GET"])
    assert _statuses(events) == [200, 200]
    head_body, get_body = _bodies(events)
    assert head_body == b""
    assert b'"name":"one"' in get_body


def test_head_of_a_get_and_a_list_has_a_length_and_no_body(server: KubeAPIServer) -> None:
    with _open(server) as sock:
        sock.sendall(
            f"HEAD {NS}/default HTTP/1.1\r\nHost: x\r\n\r\n"
            f"HEAD {NS} HTTP/1.1\r\nHost: x\r\n\r\n"
            f"GET {NS}/default HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        )
        events = _read_responses(sock, ["HEAD", "HEAD", "GET"])
    heads = [e for e in events if isinstance(e, h11.Response)]
    assert _statuses(events) == [200, 200, 200]
    lengths = [dict(r.headers).get(b"content-length") for r in heads]
    bodies = _bodies(events)
    assert bodies[:2] == [b"", b""]
    # The HEAD announces the length the GET then sends.
    assert lengths[0] == str(len(bodies[2])).encode()


def test_pipelined_requests_are_answered_in_order(server: KubeAPIServer) -> None:
    """Several requests sent at once on one connection: each answered, in order."""
    names = [f"p{i}" for i in range(5)]
    data = b""
    for name in names:
        raw = json.dumps(configmap(name)).encode()
        data += (
            f"POST {CM} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(raw)}\r\n\r\n"
        ).encode() + raw
    for name in names:
        data += f"GET {CM}/{name} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    data += f"GET {CM}/missing HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    with _open(server) as sock:
        sock.sendall(data)
        events = _read_responses(sock, ["POST"] * 5 + ["GET"] * 6)
    assert _statuses(events) == [201] * 5 + [200] * 5 + [404]
    bodies = _bodies(events)
    for name, body in zip(names, bodies[5:10], strict=True):
        assert f'"name":"{name}"'.encode() in body
    assert [e.path for e in server.requests][-1] == f"{CM}/missing"


def test_missing_host_is_a_400_like_kube_apiserver(server: KubeAPIServer) -> None:
    with _open(server) as sock:
        sock.sendall(f"GET {NS} HTTP/1.1\r\n\r\n".encode())
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"Connection: close" in reply


def test_too_large_a_body_is_refused_before_it_is_read(server: KubeAPIServer) -> None:
    with _open(server) as sock:
        sock.sendall(f"POST {CM} HTTP/1.1\r\nHost: x\r\nContent-Length: {1 << 40}\r\n\r\n".encode())
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 413 ")


# ---------------------------------------------------------------- the wire alone


class _ScriptedStream(anyio.abc.ByteStream):
    """A byte stream that yields ``incoming`` in pieces, then EOF, and keeps what is sent."""

    def __init__(self, incoming: bytes, piece: int = 7) -> None:
        self._pieces = [incoming[i : i + piece] for i in range(0, len(incoming), piece)]
        self.sent = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._pieces:
            raise anyio.EndOfStream
        return self._pieces.pop(0)

    async def send(self, item: bytes) -> None:
        self.sent += item

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def _serve_script(incoming: bytes) -> tuple[bytes, list[str]]:
    """Serve ``incoming`` through a ServerConnection answering each request "hello";
    what it sent, and the requests it read."""
    stream = _ScriptedStream(incoming)
    seen: list[str] = []

    async def main() -> None:
        conn = ServerConnection(stream, max_body=64)
        while True:
            try:
                req = await conn.next_request()
            except HTTPProtocolError as exc:
                await conn.respond_and_close(exc.status, [], exc.message.encode())
                return
            if req is None:
                return
            seen.append(f"{req.method} {req.path} {req.body.decode()}")
            await conn.respond(200, [("X-T", "1")], b"hello", keep_alive=True)
            if not conn.next_cycle():
                return

    anyio.run(main)
    return stream.sent, seen


def test_the_wire_alone_reads_pipelined_bodies_in_small_pieces() -> None:
    sent, seen = _serve_script(
        b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
        b"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\nde\r\n1\r\nf\r\n0\r\n\r\n"
        b"HEAD /c HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    assert seen == ["POST /a abc", "POST /b def", "HEAD /c "]
    one = b"HTTP/1.1 200 OK\r\nX-T: 1\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\n"
    assert sent == one + b"hello" + one + b"hello" + one


def test_the_wire_alone_refuses_a_large_chunked_body_with_413() -> None:
    sent, seen = _serve_script(
        b"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"40\r\n"
        + b"x" * 64
        + b"\r\n1\r\ny\r\n0\r\n\r\n"
    )
    assert seen == []
    assert sent.startswith(b"HTTP/1.1 413 ")
    assert b"Connection: close\r\n" in sent


def test_the_wire_alone_answers_garbage_with_400_and_closes() -> None:
    sent, seen = _serve_script(b"this is not http\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert seen == []
    assert sent.startswith(b"HTTP/1.1 400 ")
    assert sent.count(b"HTTP/1.1") == 1


def test_the_probe_server_sends_no_body_to_head() -> None:
    async def main() -> bytes:
        async with anyio.create_task_group() as tg:
            port = await tg.start(
                lambda task_status: serve_http(
                    lambda m, p, q: Response(200, b"ok\n"),
                    host="127.0.0.1",
                    port=0,
                    task_status=task_status,
                )
            )
            async with await anyio.connect_tcp("127.0.0.1", port) as s:
                await s.send(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                data = b""
                with anyio.fail_after(5):
                    while True:
                        try:
                            data += await s.receive()
                        except anyio.EndOfStream:
                            break
            tg.cancel_scope.cancel()
        return data

    data = anyio.run(main)
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert b"Content-Length: 3" in head
    assert body == b""
