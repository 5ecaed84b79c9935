"""KubeStore's lean HTTP/1.1 client (``_http1``): framing, keep-alive, stale
connections, timeouts, cancellation and TLS, over real sockets.

Most tests talk to a scripted server (raw asyncio streams) so each answer's
bytes are exactly what the test says; the TLS tests put a TLS terminator in
front of the REST facade, with the certificates in tests/data/tls.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ownergc.errors import BadRequest, Conflict, NotFound, Unavailable
from ownergc.protocols import APIResource
from ownergc_backends.kube import KubeStore
from ownergc_backends.kube._http1 import HTTP1Pool, Response, ServerDisconnected, StreamedAnswer
from ownergc_backends.memory import InMemoryStore
from tests.kube.kube_helpers import served, tls_in_front_of

pytestmark = pytest.mark.anyio

TLS = Path(__file__).resolve().parents[1] / "data" / "tls"
CONFIGMAPS = APIResource(
    group="", version="v1", resource="configmaps", kind="ConfigMap", namespaced=True
)

Reply = Callable[[bytes, bytes], bytes | None]


class Scripted:
    """A server answering each request with ``reply(head, body)``'s bytes (None: close
    without answering). Records every request and every connection opened."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[tuple[bytes, bytes]] = []
        self.connections = 0
        self.port = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                self.requests.append((head, body))
                answer = self.reply(head, body)
                if answer is None:
                    return
                writer.write(answer)
                await writer.drain()
        finally:
            writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Scripted]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        async with server:
            yield self
            server.close()


def ok(body: bytes = b"{}", *, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def config_for(url: str, **user: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }


async def store_for(url: str, **options: Any) -> KubeStore:
    options.setdefault("qps", 0)
    return await KubeStore.from_kubeconfig_dict(config_for(url), **options)


async def pool(port: int, **headers: str) -> HTTP1Pool:
    return HTTP1Pool(
        host="127.0.0.1",
        port=port,
        host_header=f"127.0.0.1:{port}",
        ssl_context=None,
        server_hostname=None,
        default_headers=headers,
    )


# -- framing ---------------------------------------------------------------------------


async def test_keep_alive_reuses_one_connection() -> None:
    async with Scripted(lambda head, body: ok(b'{"n": 1}')).running() as srv:
        http = await pool(srv.port, **{"User-Agent": "t"})
        for _ in range(5):
            answer = await http.request("GET", "/api/v1/x", {"Accept": "a"}, None, 5)
            assert (answer.status, answer.body) == (200, b'{"n": 1}')
        await http.close()
    assert srv.connections == 1
    head = srv.requests[0][0].decode()
    assert head.startswith("GET /api/v1/x HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{srv.port}\r\n" in head
    assert "User-Agent: t\r\n" in head and "Accept: a\r\n" in head


async def test_a_body_goes_out_with_its_length() -> None:
    async with Scripted(lambda head, body: ok(body)).running() as srv:
        http = await pool(srv.port)
        answer = await http.request("DELETE", "/x", {}, b'{"a": 1}', 5)
        await http.close()
    assert answer.body == b'{"a": 1}'
    assert b"Content-Length: 8\r\n" in srv.requests[0][0]


async def test_a_chunked_answer_split_across_packets() -> None:
    chunks = b"4\r\nabcd\r\n3;ext=1\r\nefg\r\n0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

    class Slow(Scripted):
        async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            for _ in range(2):
                await reader.readuntil(b"\r\n\r\n")
                for i in range(0, len(head + chunks), 3):  # three bytes at a time
                    writer.write((head + chunks)[i : i + 3])
                    await writer.drain()
                    await asyncio.sleep(0)
            writer.close()

    async with Slow(lambda h, b: None).running() as srv:
        http = await pool(srv.port)
        first = await http.request("GET", "/", {}, None, 5)
        second = await http.request("GET", "/", {}, None, 5)  # same connection after it
        await http.close()
    assert first.body == second.body == b"abcdefg"
    assert srv.connections == 1


class Dribbling(Scripted):
    """Writes each answer ``step`` bytes at a time, yielding between writes."""

    def __init__(self, answers: list[bytes], step: int) -> None:
        super().__init__(lambda h, b: None)
        self.answers = answers
        self.step = step

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        for answer in self.answers:
            self.requests.append((await reader.readuntil(b"\r\n\r\n"), b""))
            for i in range(0, len(answer), self.step):
                writer.write(answer[i : i + self.step])
                await writer.drain()
                await asyncio.sleep(0)
        writer.close()


@pytest.mark.parametrize("step", [1, 5, 4096])
async def test_a_sink_gets_the_body_as_it_arrives_and_the_connection_stays_good(
    step: int,
) -> None:
    """Chunked (one big chunk, as kube-apiserver writes a list, then small ones) and
    Content-Length bodies reach the sink in pieces, before the answer has ended; the
    next answer on the connection is read as usual."""
    big = bytes(range(256)) * 40
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + f"{len(big):x}\r\n".encode()
        + big
        + b"\r\n3;ext=1\r\nabc\r\n0\r\n\r\n"
    )
    async with Dribbling([chunked, ok(big), ok(b"plain")], step).running() as srv:
        http = await pool(srv.port)
        for expected in (big + b"abc", big):
            pieces: list[bytes] = []

            def keep(view: memoryview, pieces: list[bytes] = pieces) -> None:
                pieces.append(bytes(view))

            answer = await http.request("GET", "/", {}, None, 5, keep)
            assert answer.status == 200 and answer.body == b""
            assert b"".join(pieces) == expected
            if step < 4096:
                assert len(pieces) > 2  # handed over while arriving
        third = await http.request("GET", "/", {}, None, 5)
        await http.close()
    assert third.body == b"plain"
    assert srv.connections == 1


async def test_a_sink_gets_no_error_answer_and_no_compressed_body() -> None:
    packed = gzip.compress(b'{"kind":"ConfigMapList"}')
    answers = [
        b"HTTP/1.1 410 Gone\r\nContent-Length: 7\r\n\r\nexpired",
        ok(packed, extra="Content-Encoding: gzip\r\n"),
    ]
    async with Dribbling(answers, 3).running() as srv:
        http = await pool(srv.port)
        pieces: list[bytes] = []
        gone = await http.request("GET", "/", {}, None, 5, lambda v: pieces.append(bytes(v)))
        packed_answer = await http.request(
            "GET", "/", {}, None, 5, lambda v: pieces.append(bytes(v))
        )
        await http.close()
    assert (gone.status, gone.body) == (410, b"expired")
    assert packed_answer.body == b'{"kind":"ConfigMapList"}'
    assert pieces == []


async def test_a_malformed_chunk_while_streaming_fails_the_request() -> None:
    bad = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n"
    async with Dribbling([bad], 2).running() as srv:
        http = await pool(srv.port)
        with pytest.raises(ServerDisconnected, match="CRLF"):
            await http.request("GET", "/", {}, None, 5, lambda v: None)
        await http.close()


async def test_an_interim_answer_is_skipped_and_headers_are_case_insensitive() -> None:
    answer = b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"{}", extra="Retry-After: 3\r\n")
    async with Scripted(lambda head, body: answer).running() as srv:
        http = await pool(srv.port)
        got = await http.request("GET", "/", {}, None, 5)
        await http.close()
    assert got.status == 200 and got.body == b"{}"
    assert got.headers.get("retry-after") == got.headers["RETRY-AFTER"] == "3"
    assert "Retry-After" in got.headers


async def test_connection_close_and_an_answer_that_ends_with_the_connection() -> None:
    replies = iter(
        [
            ok(b"{}", extra="Connection: close\r\n"),
            b"HTTP/1.1 200 OK\r\n\r\n{}",  # no length: the body ends when the server closes
            ok(b"{}"),
        ]
    )

    class Closing(Scripted):
        async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            await reader.readuntil(b"\r\n\r\n")
            writer.write(next(replies))
            await writer.drain()
            writer.close()

    async with Closing(lambda h, b: None).running() as srv:
        http = await pool(srv.port)
        for _ in range(3):
            assert (await http.request("GET", "/", {}, None, 5)).body == b"{}"
        await http.close()
    assert srv.connections == 3


async def test_a_compressed_answer_is_decoded_though_none_was_asked_for() -> None:
    packed = gzip.compress(b'{"kind":"ConfigMapList"}')
    async with Scripted(
        lambda head, body: ok(packed, extra="Content-Encoding: gzip\r\n")
    ).running() as srv:
        http = await pool(srv.port)
        assert (await http.request("GET", "/", {}, None, 5)).body == b'{"kind":"ConfigMapList"}'
        await http.close()
    assert b"accept-encoding" not in srv.requests[0][0].lower()


async def test_through_a_proxy_aiohttp_serves_and_its_decoded_answer_is_not_decoded_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a proxy every request goes through aiohttp, which asks for and removes the
    content coding itself. The scripted server plays the proxy (and the origin)."""
    body = gzip.compress(b'{"kind":"ConfigMap","metadata":{"name":"a"}}')
    for name in ("no_proxy", "NO_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with Scripted(
        lambda head, _: ok(body, extra="Content-Encoding: gzip\r\n")
    ).running() as srv:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{srv.port}")
        async with await store_for("http://apiserver.invalid:6443") as kube:
            got = await kube.get(CONFIGMAPS, "a", namespace="default")
            assert kube._transport._pool is None
    assert got["metadata"] == {"name": "a"}
    request_line = srv.requests[0][0].split(b"\r\n", 1)[0]
    assert request_line.startswith(b"GET http://apiserver.invalid:6443/api/v1/")


async def test_control_characters_never_reach_the_wire() -> None:
    async with Scripted(lambda head, body: ok()).running() as srv:
        config = config_for(f"http://127.0.0.1:{srv.port}", token="tok\r\nX-Evil: 1")
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            with pytest.raises(BadRequest, match="Authorization"):
                await kube.get(CONFIGMAPS, "a", namespace="default")
    assert srv.requests == []


async def test_a_default_header_with_a_line_break_is_refused() -> None:
    with pytest.raises(ValueError, match="User-Agent"):
        HTTP1Pool(
            host="127.0.0.1",
            port=1,
            host_header="127.0.0.1:1",
            ssl_context=None,
            server_hostname=None,
            default_headers={"User-Agent": "x\r\nX-Evil: 1"},
        )


async def test_a_malformed_answer_fails_the_request() -> None:
    async with Scripted(lambda head, body: b"SPDY/3 200 OK\r\n\r\n").running() as srv:
        http = await pool(srv.port)
        with pytest.raises(ServerDisconnected, match="malformed"):
            await http.request("GET", "/", {}, None, 5)
        await http.close()


# -- stale connections, timeouts, cancellation -----------------------------------------


async def test_an_idle_connection_the_server_closed_is_not_used_again() -> None:
    class OneShot(Scripted):
        async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            await reader.readuntil(b"\r\n\r\n")
            writer.write(ok())  # keep-alive promised, then closed while idle
            await writer.drain()
            writer.close()

    async with OneShot(lambda h, b: None).running() as srv:
        http = await pool(srv.port)
        await http.request("GET", "/", {}, None, 5)
        await anyio.sleep(0.1)  # the close reaches the client's protocol
        await http.request("GET", "/", {}, None, 5)
        await http.close()
    assert srv.connections == 2


@pytest.mark.parametrize(("method", "retried"), [("DELETE", True), ("POST", False)])
async def test_a_request_on_a_connection_closed_unanswered_is_retried_unless_post(
    method: str, retried: bool
) -> None:
    """The server takes the request on a reused connection and closes without a byte:
    idempotent requests go again once on a new connection; a POST fails."""
    calls = 0

    def reply(head: bytes, body: bytes) -> bytes | None:
        nonlocal calls
        calls += 1
        return None if calls == 2 else ok()

    async with Scripted(reply).running() as srv:
        http = await pool(srv.port)
        await http.request("GET", "/", {}, None, 5)
        if retried:
            assert (await http.request(method, "/", {}, b"{}", 5)).status == 200
        else:
            with pytest.raises(ServerDisconnected):
                await http.request(method, "/", {}, b"{}", 5)
        await http.close()
    assert calls == (3 if retried else 2)
    assert srv.connections == (2 if retried else 1)


async def test_no_answer_in_time_is_a_timeout_and_the_connection_is_dropped() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client goes away
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        async with await store_for(f"http://127.0.0.1:{port}", request_timeout=0.2) as kube:
            with pytest.raises(Unavailable) as err:
                await kube.get(CONFIGMAPS, "a", namespace="default")
            assert err.value.reason == "Timeout"
            assert kube._transport._pool is not None
            assert kube._transport._pool._idle == []
        server.close()


async def test_a_tls_handshake_that_never_ends_is_a_timeout() -> None:
    """Connecting counts against the request's deadline: a server that accepts the
    connection and never answers the TLS handshake fails the request in time."""

    gone = asyncio.Event()

    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client gives up and closes its end
        writer.close()
        gone.set()

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    config = config_for(f"https://127.0.0.1:{port}")
    config["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    async with server:
        async with await KubeStore.from_kubeconfig_dict(config, qps=0, request_timeout=0.3) as kube:
            with anyio.fail_after(5), pytest.raises(Unavailable) as err:
                await kube.get(CONFIGMAPS, "a", namespace="default")
        assert err.value.reason == "Timeout"
        with anyio.fail_after(5):
            await gone.wait()
        server.close()


async def test_a_cancelled_request_does_not_leave_its_connection_in_the_pool() -> None:
    answered, finished = asyncio.Event(), asyncio.Event()

    async def late(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await answered.wait()
        with contextlib.suppress(ConnectionError):
            writer.write(ok())
            await writer.drain()
        writer.close()
        finished.set()

    server = await asyncio.start_server(late, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        http = await pool(port)
        with anyio.move_on_after(0.2):
            await http.request("GET", "/", {}, None, 5)
        answered.set()
        assert http._idle == [] and not http._all
        await http.close()
        with anyio.fail_after(5):
            await finished.wait()
        server.close()


# -- through KubeStore -------------------------------------------------------------------


async def test_the_servers_path_prefix_and_the_credentials_go_out() -> None:
    """A kubeconfig server URL with a path (a proxying gateway) prefixes every request."""
    status = b'{"kind":"Status","status":"Failure","reason":"NotFound","code":404}'

    def reply(head: bytes, body: bytes) -> bytes:
        return f"HTTP/1.1 404 Not Found\r\nContent-Length: {len(status)}\r\n\r\n".encode() + status

    async with Scripted(reply).running() as srv:
        url = f"http://127.0.0.1:{srv.port}/k8s/clusters/c-1"
        config = config_for(url, token="tok")
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            with pytest.raises(NotFound):
                await kube.get(CONFIGMAPS, "a b", namespace="default")
    head = srv.requests[0][0].decode()
    assert head.startswith("GET /k8s/clusters/c-1/api/v1/namespaces/default/configmaps/a%20b ")
    assert "Authorization: Bearer tok\r\n" in head
    assert "User-Agent: ownergc/" in head


async def test_a_429_is_retried_on_the_lean_path() -> None:
    answers = iter(
        [
            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n",
            ok(b'{"kind":"Status","status":"Success"}'),
        ]
    )
    async with (
        Scripted(lambda head, body: next(answers)).running() as srv,
        await store_for(f"http://127.0.0.1:{srv.port}") as kube,
    ):
        assert await kube.delete(CONFIGMAPS, "a", namespace="default") is None
        assert kube.retries == 1
    assert len(srv.requests) == 2
    assert srv.requests[0][1] == srv.requests[1][1]  # the same DeleteOptions both times


async def test_nothing_listening_is_a_connection_error() -> None:
    with socket_closed() as port:
        async with await store_for(f"http://127.0.0.1:{port}") as kube:
            with pytest.raises(Unavailable, match="cannot connect to the apiserver") as err:
                await kube.get(CONFIGMAPS, "a", namespace="default")
    assert err.value.reason == "ConnectionError"


@contextlib.contextmanager
def socket_closed() -> Any:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield port


# -- TLS ---------------------------------------------------------------------------------


def tls_config(server: Any, tls_port: int, ca: str, **cluster: Any) -> dict[str, Any]:
    config = server.kubeconfig()
    config["clusters"][0]["cluster"] = {
        "server": f"https://127.0.0.1:{tls_port}",
        "certificate-authority-data": base64.b64encode((TLS / ca).read_bytes()).decode(),
        **cluster,
    }
    return config


async def test_tls_requests_go_through_the_lean_client_on_the_clients_ssl_context() -> None:
    mem = InMemoryStore()
    async with served(mem) as server, tls_in_front_of(server.port) as tls_port:
        config = tls_config(server, tls_port, "ca.crt")
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            created = await kube.create(
                CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}}
            )
            with pytest.raises(Conflict):
                await kube.create(CONFIGMAPS, {"metadata": {"name": "a", "namespace": "default"}})
            assert await kube.delete(CONFIGMAPS, "a", namespace="default") is None
            assert kube._transport._pool is not None  # not aiohttp's
            assert len(kube._transport._pool._all) == 1
    assert created["metadata"]["name"] == "a"


async def test_tls_server_name_checks_the_certificate_against_that_name() -> None:
    async with served(InMemoryStore()) as server, tls_in_front_of(server.port) as tls_port:
        good = tls_config(server, tls_port, "ca.crt", **{"tls-server-name": "kubernetes.default"})
        async with await KubeStore.from_kubeconfig_dict(good, qps=0) as kube:
            assert (await kube.list(CONFIGMAPS)).items is not None
        bad = tls_config(server, tls_port, "ca.crt", **{"tls-server-name": "elsewhere"})
        async with await KubeStore.from_kubeconfig_dict(bad, qps=0) as kube:
            with pytest.raises(Unavailable, match="certificate verification failed") as err:
                await kube.list(CONFIGMAPS)
    assert err.value.reason == "TLSError"


async def test_a_server_certificate_from_another_ca_is_refused() -> None:
    async with served(InMemoryStore()) as server, tls_in_front_of(server.port) as tls_port:
        config = tls_config(server, tls_port, "other-ca.crt")
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            with pytest.raises(Unavailable, match="certificate verification failed") as err:
                await kube.list(CONFIGMAPS)
    assert err.value.reason == "TLSError"


# -- streamed answers (watches) ---------------------------------------------------------


async def test_a_stream_hands_over_what_arrived_and_ends_with_the_answer() -> None:
    events = b"".join(b'{"type":"ADDED","n":%d}\n' % i for i in range(50))
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + f"{len(events):x}\r\n".encode()
        + events
        + b"\r\n0\r\n\r\n"
    )
    async with Dribbling([answer, ok(b"after")], 7).running() as srv:
        http = await pool(srv.port)
        stream = await http.stream("GET", "/w?watch=1", {}, 5, 5)
        assert isinstance(stream, StreamedAnswer) and stream.status == 200
        got = []
        while chunk := await stream.content.readany():
            got.append(chunk)
        assert b"".join(got) == events and len(got) > 1
        # The connection is kept for the next request once the stream ended.
        assert (await http.request("GET", "/", {}, None, 5)).body == b"after"
        await http.close()
    assert srv.connections == 1


async def test_a_stream_refused_is_read_whole() -> None:
    gone = b'{"kind":"Status","code":410,"reason":"Expired"}'
    async with Scripted(
        lambda head, body: b"HTTP/1.1 410 Gone\r\nContent-Length: %d\r\n\r\n%s" % (len(gone), gone)
    ).running() as srv:
        http = await pool(srv.port)
        answer = await http.stream("GET", "/w?watch=1", {}, 5, 5)
        await http.close()
    assert isinstance(answer, Response) and (answer.status, answer.body) == (410, gone)


class Holding(Scripted):
    """Answers a stream's head and one event, then holds the connection open."""

    def __init__(self) -> None:
        super().__init__(lambda h, b: None)
        self.closed = asyncio.Event()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()
        with contextlib.suppress(ConnectionError):
            await reader.read()  # until the client closes
        self.closed.set()
        writer.close()


async def test_closing_a_stream_closes_its_connection() -> None:
    async with Holding().running() as srv:
        http = await pool(srv.port)
        stream = await http.stream("GET", "/w?watch=1", {}, None, 5)
        assert isinstance(stream, StreamedAnswer)
        assert await stream.content.readany() == b"hello"
        stream.close()
        with anyio.fail_after(5):
            await srv.closed.wait()
        await http.close()


async def test_a_stream_past_its_deadline_ends_with_a_timeout() -> None:
    async with Holding().running() as srv:
        http = await pool(srv.port)
        stream = await http.stream("GET", "/w?watch=1", {}, 0.3, 5)
        assert isinstance(stream, StreamedAnswer)
        assert await stream.content.readany() == b"hello"
        with pytest.raises(asyncio.TimeoutError):
            await stream.content.readany()
        await http.close()


def test_watching_over_the_lean_client_never_imports_aiohttp() -> None:
    """The controller's watches run on the lean client: aiohttp (and its import cost)
    only comes with a proxy."""
    code = textwrap.dedent(
        """\
        import sys
        import anyio
        from ownergc_backends.kube import KubeStore
        from ownergc_backends.memory import InMemoryStore
        from tests.kube.kube_helpers import served
        from tests.kube.list_proxy import kubeconfig_for

        async def main():
            mem = InMemoryStore()
            res = mem.resource_for("v1", "ConfigMap")
            async with served(mem) as server:
                config = kubeconfig_for(f"http://127.0.0.1:{server.port}")
                async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
                    listed = await kube.list(res, consistent=False)
                    seen = []

                    async def watch():
                        async for event in kube.watch(
                            res, resource_version=listed.resource_version
                        ):
                            seen.append(event.type)
                            return

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(watch)
                        await anyio.sleep(0.2)
                        await mem.create_object(
                            {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "cm", "namespace": "default"}}
                        )
                    assert seen == ["ADDED"], seen

        anyio.run(main)
        assert "aiohttp" not in sys.modules
        """
    )
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repo, env=env, timeout=120)
