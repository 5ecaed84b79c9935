"""The facade's wire reads and answers ordinary requests without h11; it must answer
byte for byte as h11 does, and read every request as h11 reads it.

Each case sends raw bytes in pieces (whole, in small pieces, byte by byte, or split
at every byte boundary), then ends its side of the stream, to two
``ServerConnection``s: the wire as it is (ordinary requests without h11, h11 from
the first that is not) and one handed to h11 before its first byte. What each sends
back, and the requests each reads, must be equal. Twice: under a small server of
the test's own (which also answers with the statuses and headers h11 frames
specially), and under the facade itself (a real store: GETs, LISTs, HEADs, watches,
reviews with bodies, errors).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import h11
import pytest

from ownergc._kit.http import HTTPProtocolError, Request, ServerConnection
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._apiserver import responses
from ownergc_backends.memory.http import KubeAPIServer

pytestmark = pytest.mark.anyio


class _Script(anyio.abc.ByteStream):
    """A peer that sends ``pieces`` one ``receive`` each, then (after ``hold`` seconds)
    ends its side; it keeps what the server sends."""

    def __init__(self, pieces: list[bytes], hold: float = 0.0) -> None:
        self.pieces = list(pieces)
        self.hold = hold
        self.sent = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint()
        if self.pieces:
            return self.pieces.pop(0)
        if self.hold:
            await anyio.sleep(self.hold)
            self.hold = 0.0
        raise anyio.EndOfStream

    async def send(self, item: bytes) -> None:
        await anyio.lowlevel.checkpoint()
        self.sent += item

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


class _H11Throughout(ServerConnection):
    """The reference: h11 from the connection's first byte."""

    def __init__(self, stream: anyio.abc.ByteStream, **kwargs: Any) -> None:
        super().__init__(stream, **kwargs)
        self._to_h11()


def _seen(request: Request) -> tuple[Any, ...]:
    return (
        request.method,
        request.target,
        request.version,
        request.headers,
        request.body,
        request.path,
        request.query,
        request.keep_alive,
    )


# ------------------------------------------------------------------ the wire alone

ORDINARY = (
    b"POST /a?x=1 HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
)
GET = b"GET /b HTTP/1.1\r\nHost: h\r\n\r\n"

WIRE_CASES: dict[str, bytes] = {
    "ordinary": ORDINARY,
    "get": GET,
    "pipelined": ORDINARY + GET + ORDINARY + GET,
    "empty body": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n" + GET,
    "repeated headers": b"GET /r HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\nX-A:3\r\n\r\n",
    "odd but ordinary": b"POST /a%2Fb?q=%20&q=2 HTTP/1.1\r\nHOST:\r\ncontent-LENGTH:  005 \t\r\n"
    b"TE: trailers\r\nX-Empty:\r\nX-Latin: caf\xe9\r\n\r\nhello",
    "lower-case method": b"post /a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx" + GET,
    "statuses": b"".join(
        b"GET /status/%d HTTP/1.1\r\nHost: h\r\n\r\n" % s
        for s in (200, 201, 299, 404, 418, 500, 599, 600, 999, 204, 304)
    ),
    "status 100": b"GET /status/100 HTTP/1.1\r\nHost: h\r\n\r\n" + GET,
    "answer closes": GET + b"GET /close HTTP/1.1\r\nHost: h\r\n\r\n" + GET,
    "answer with a bad header": b"GET /bad-header HTTP/1.1\r\nHost: h\r\n\r\n" + GET,
    "answer with a host header": b"GET /host-header HTTP/1.1\r\nHost: h\r\n\r\n" + GET,
    "answer with a framing header": b"GET /te-header HTTP/1.1\r\nHost: h\r\n\r\n" + GET,
    "answer with a connection header": b"GET /conn-header HTTP/1.1\r\nHost: h\r\n\r\n" + GET,
    "stream": GET + b"GET /stream HTTP/1.1\r\nHost: h\r\n\r\n" + GET,
    "head": GET + b"HEAD /b HTTP/1.1\r\nHost: h\r\n\r\n" + GET,
    "head stream": b"HEAD /stream HTTP/1.1\r\nHost: h\r\n\r\n" + GET,
    "lower-case head": b"head /b HTTP/1.1\r\nHost: h\r\n\r\n" + GET,
    "connect": b"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n" + GET,
    "connection close": GET + b"GET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n" + GET,
    "connection keep-alive": b"GET /b HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n" + GET,
    "http/1.0": b"GET /b HTTP/1.0\r\n\r\n",
    "http/1.0 keep-alive": b"GET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + GET,
    "http/1.0 stream": b"GET /stream HTTP/1.0\r\n\r\n",
    "expect continue": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
    b"Expect: 100-continue\r\n\r\nhello" + GET,
    "chunked": b"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n" + GET,
    "chunked and length": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "upgrade": b"GET /b HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\n\r\n" + GET,
    "missing host": b"GET /b HTTP/1.1\r\n\r\n",
    "two hosts": b"GET /b HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "ordinary then missing host": GET + b"GET /b HTTP/1.1\r\n\r\n",
    "bad request line": b"GARBAGE\r\n\r\n",
    "ordinary then garbage": GET + b"this is not http\r\n\r\n" + GET,
    "leading blank line": b"\r\n" + GET,
    "leading space": b" " + GET,
    "bare newlines": b"GET /b HTTP/1.1\nHost: h\n\n" + GET,
    "mixed newlines": b"GET /b HTTP/1.1\r\nHost: h\n\r\n" + GET,
    "folded header": b"GET /b HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n  2\r\n\r\n" + GET,
    "header without colon": b"GET /b HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n",
    "space before colon": b"GET /b HTTP/1.1\r\nHost : h\r\n\r\n",
    "nul in a value": b"GET /b HTTP/1.1\r\nHost: h\r\nX: a\x00b\r\n\r\n",
    "space in target": b"GET /a b HTTP/1.1\r\nHost: h\r\n\r\n",
    "lower-case version": b"GET /b http/1.1\r\nHost: h\r\n\r\n",
    "http/2.0": b"GET /b HTTP/2.0\r\nHost: h\r\n\r\n",
    "bad content-length": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5x\r\n\r\nhello",
    "plus in content-length": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\nhello",
    "two content-lengths": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
    b"Content-Length: 5\r\n\r\nhello" + GET,
    "differing content-lengths": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
    b"Content-Length: 4\r\n\r\nhello",
    "listed content-length": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\nhello",
    "body at the limit": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 64\r\n\r\n"
    + b"x" * 64
    + GET,
    "body beyond the limit": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 65\r\n\r\n"
    + b"x" * 65,
    "huge content-length": b"POST /a HTTP/1.1\r\nHost: h\r\n"
    b"Content-Length: 99999999999999999999\r\n\r\n",
    "too many headers": b"GET /b HTTP/1.1\r\nHost: h\r\n" + b"X-A: 1\r\n" * 200 + b"\r\n",
    "head at the limit": b"GET /b HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 900 + b"\r\n\r\n" + GET,
    "head beyond the limit": b"GET /b HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 1100,
    "whole head beyond the limit": b"GET /b HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 1100 + b"\r\n\r\n",
    "ends mid-head": GET + b"POST /a HTTP/1.1\r\nHo",
    "ends mid-body": b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nhello",
    "ends after a blank line": GET + b"\r\n",
    "nothing": b"",
}

#: Cases whose every request is read, and answered, without h11 (and a head beyond the
#: limit that arrives whole in one read, which h11 reads too).
WIRE_PLAIN = {
    "ordinary",
    "get",
    "pipelined",
    "empty body",
    "repeated headers",
    "odd but ordinary",
    "lower-case method",
    "body at the limit",
    "head at the limit",
    "nothing",
}

#: Cases also sent split at every byte boundary (two pieces), each split on its own.
SPLIT_EVERYWHERE = ["ordinary", "pipelined", "expect continue", "chunked", "head"]


async def _wire_app(conn: ServerConnection, seen: list[Any]) -> None:
    """A small server: echoes what it read; some paths answer as h11 frames specially."""
    while True:
        try:
            req = await conn.next_request()
        except HTTPProtocolError as exc:
            seen.append(("error", exc.status, exc.message))
            await conn.respond_and_close(exc.status, [("Content-Type", "text/plain")], b"no")
            return
        if req is None:
            return
        seen.append(_seen(req))
        body = json.dumps(
            [req.method, req.target, sorted(req.headers.items()), req.body.decode("latin-1")]
        ).encode()
        headers = [("Content-Type", "application/json"), ("X-Seen", "1")]
        keep_alive = req.keep_alive
        path = req.path
        status = 200
        try:
            if path.startswith("/status/"):
                status = int(path.rpartition("/")[2])
            elif path == "/close":
                keep_alive = False
            elif path == "/bad-header":
                headers.append(("X-Bad", "a\r\nInjected: yes"))
            elif path == "/host-header":
                headers.insert(0, ("X-First", "1"))
                headers.append(("Host", "elsewhere"))
            elif path == "/te-header":
                headers.append(("Transfer-Encoding", "chunked"))
            elif path == "/conn-header":
                headers.append(("Connection", "close"))
            if path == "/stream":
                await conn.start_stream(200, headers)
                if conn.streams_body:
                    await conn.send_chunk(b"one\n")
                    await conn.send_chunk(b"")
                    await conn.send_chunk(b"two\n")
                await conn.end_stream()
            else:
                await conn.respond(status, headers, body, keep_alive=keep_alive)
        except h11.LocalProtocolError as exc:
            seen.append(("refused", str(exc)))
            return
        if not keep_alive or not conn.next_cycle():
            return


async def _serve_wire(
    make: Callable[..., ServerConnection], pieces: list[bytes]
) -> tuple[bytes, list[Any], ServerConnection]:
    stream = _Script(pieces)
    conn = make(stream, max_head=1024, max_body=64)
    seen: list[Any] = []
    with anyio.fail_after(10):
        await _wire_app(conn, seen)
    return stream.sent, seen, conn


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


#: How a case's bytes are cut into reads.
SPLITS: dict[str, Callable[[bytes], list[bytes]]] = {
    "whole": lambda data: [data] if data else [],
    "7-byte pieces": lambda data: _pieces(data, 7),
    "byte by byte": lambda data: _pieces(data, 1),
}


async def _compare_wire(name: str, pieces: list[bytes]) -> ServerConnection:
    expected, expected_seen, _ = await _serve_wire(_H11Throughout, pieces)
    got, got_seen, conn = await _serve_wire(ServerConnection, pieces)
    assert got == expected, name
    assert got_seen == expected_seen, name
    return conn


@pytest.mark.parametrize("split", list(SPLITS))
@pytest.mark.parametrize("name", list(WIRE_CASES))
async def test_the_wire_answers_as_h11_does(name: str, split: str) -> None:
    data = WIRE_CASES[name]
    conn = await _compare_wire(name, SPLITS[split](data))
    # The ordinary cases took the new path throughout; the others ended with h11.
    plain = name in WIRE_PLAIN or (name == "whole head beyond the limit" and split == "whole")
    assert (conn._h11 is None) == plain, name


@pytest.mark.parametrize("name", SPLIT_EVERYWHERE)
async def test_the_wire_answers_as_h11_does_whatever_the_split(name: str) -> None:
    data = WIRE_CASES[name]
    for at in range(1, len(data)):
        await _compare_wire(f"{name} split at {at}", [data[:at], data[at:]])


async def test_a_request_split_everywhere_in_three_is_read_whole() -> None:
    data = WIRE_CASES["ordinary"] + GET
    for first in range(1, len(data) - 1, 3):
        for second in range(first + 1, len(data), 5):
            await _compare_wire(
                f"split at {first}, {second}", [data[:first], data[first:second], data[second:]]
            )


async def test_a_lower_case_head_is_answered_with_its_body_and_the_connection_kept() -> None:
    """Methods are case-sensitive: h11 frames only ``HEAD`` without a body, so a
    ``head`` request's answer carries its body (it used to end the connection
    unanswered, the wire having dropped the body h11 expected)."""
    sent, seen, _ = await _serve_wire(ServerConnection, [WIRE_CASES["lower-case head"]])
    assert [entry[0] for entry in seen] == ["HEAD", "GET"]
    assert sent.count(b"HTTP/1.1 200 ") == 2
    first_answer = sent.split(b"HTTP/1.1 200 ")[1]
    assert b'"/b"' in first_answer  # the echoed body went out


# ------------------------------------------------------------------ the facade

CM = "/api/v1/namespaces/default/configmaps"
REVIEW = json.dumps(
    {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "configmaps"}},
    }
).encode()


def _get(target: str, extra: bytes = b"", method: bytes = b"GET") -> bytes:
    return method + b" " + target.encode() + b" HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n"


def _post(target: str, body: bytes, extra: bytes = b"") -> bytes:
    return (
        b"POST " + target.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n" % len(body) + extra + b"\r\n" + body
    )


SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
META = b"Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1\r\n"

FACADE_CASES: dict[str, bytes] = {
    "get": _get(f"{CM}/one"),
    "get metadata": _get(f"{CM}/one", META),
    "list": _get(CM) + _get(f"{CM}?labelSelector=a%3Db") + _get("/api/v1/namespaces"),
    "discovery": _get("/api") + _get("/apis") + _get("/version"),
    "missing": _get(f"{CM}/missing") + _get("/nowhere") + _get(f"{CM}/one"),
    "review": _post(SSAR, REVIEW) + _get(f"{CM}/one"),
    "bad json": _post(CM, b"{not json") + _get(f"{CM}/one"),
    "patch of a missing object": b"PATCH " + f"{CM}/missing".encode() + b" HTTP/1.1\r\nHost: x\r\n"
    b"Content-Type: application/merge-patch+json\r\nContent-Length: 2\r\n\r\n{}" + _get(CM),
    "delete of a missing object": _get(f"{CM}/missing", method=b"DELETE") + _get(CM),
    "pipelined": (_get(f"{CM}/one") + _post(SSAR, REVIEW)) * 3 + _get(CM),
    "head": _get(f"{CM}/one") + _get(f"{CM}/one", method=b"HEAD") + _get(f"{CM}/one"),
    "head of a list": _get(CM, method=b"HEAD") + _get(CM),
    "head of a watch": _get(f"{CM}?watch=1", method=b"HEAD") + _get(f"{CM}/one"),
    "watch": _get(f"{CM}/one") + _get(f"{CM}?watch=1&resourceVersion=0"),
    "watch then a request": _get(f"{CM}?watch=1") + _get(f"{CM}/one"),
    "connection close": _get(f"{CM}/one") + _get(f"{CM}/one", b"Connection: close\r\n") + _get(CM),
    "http/1.0": b"GET " + f"{CM}/one".encode() + b" HTTP/1.0\r\n\r\n",
    "expect continue": _post(SSAR, REVIEW, b"Expect: 100-continue\r\n") + _get(f"{CM}/one"),
    "chunked": b"POST "
    + SSAR.encode()
    + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n%x\r\n"
    % len(REVIEW)
    + REVIEW
    + b"\r\n0\r\n\r\n"
    + _get(CM),
    "missing host": _get(f"{CM}/one") + b"GET / HTTP/1.1\r\n\r\n",
    "garbage": _get(f"{CM}/one") + b"not http at all\r\n\r\n",
    "head too large": _get(f"{CM}/one") + b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 70000,
    "ends mid-body": _get(f"{CM}/one") + _post(SSAR, REVIEW)[:-3],
}

FACADE_PLAIN = {
    "get",
    "get metadata",
    "list",
    "discovery",
    "missing",
    "review",
    "bad json",
    "patch of a missing object",
    "delete of a missing object",
    "pipelined",
}


@pytest.fixture
async def facade() -> KubeAPIServer:
    # A fixed clock: each case is served twice and the bytes compared, and an answer's
    # managedFields time (a review's too) must not change in between.
    store = InMemoryStore(clock=lambda: datetime(2026, 11, 27, 10, 0, 0, tzinfo=timezone.utc))
    configmaps = store.resource_for("v1", "ConfigMap")
    for name in ("one", "two"):
        obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {"k": "v"},
        }
        await store.create(configmaps, obj, namespace="default")
    return KubeAPIServer(store)


async def _serve_facade(
    server: KubeAPIServer,
    make: Callable[..., ServerConnection],
    pieces: list[bytes],
    monkeypatch: pytest.MonkeyPatch,
    hold: float = 0.0,
) -> tuple[bytes, list[ServerConnection]]:
    made: list[ServerConnection] = []

    def connection(stream: anyio.abc.ByteStream, **kwargs: Any) -> ServerConnection:
        made.append(conn := make(stream, **kwargs))
        return conn

    monkeypatch.setattr(responses, "ServerConnection", connection)
    stream = _Script(pieces, hold)
    with anyio.fail_after(10):
        await server.connections(stream)
    return stream.sent, made


async def _compare_facade(
    server: KubeAPIServer,
    name: str,
    pieces: list[bytes],
    monkeypatch: pytest.MonkeyPatch,
    hold: float = 0.0,
) -> ServerConnection:
    expected, _ = await _serve_facade(server, _H11Throughout, pieces, monkeypatch, hold)
    got, made = await _serve_facade(server, ServerConnection, pieces, monkeypatch, hold)
    assert got == expected, name
    assert expected.startswith(b"HTTP/1.1 "), name
    return made[0]


@pytest.mark.parametrize("split", list(SPLITS))
@pytest.mark.parametrize("name", list(FACADE_CASES))
async def test_the_facade_answers_as_h11_does(
    facade: KubeAPIServer, name: str, split: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if split == "byte by byte" and len(FACADE_CASES[name]) > 2000:
        split = "7-byte pieces"
    conn = await _compare_facade(facade, name, SPLITS[split](FACADE_CASES[name]), monkeypatch)
    assert (conn._h11 is None) == (name in FACADE_PLAIN), name


async def test_the_facade_answers_a_review_as_h11_does_whatever_the_split(
    facade: KubeAPIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = FACADE_CASES["review"]
    for at in range(1, len(data)):
        await _compare_facade(facade, f"split at {at}", [data[:at], data[at:]], monkeypatch)


async def test_a_watch_that_ends_on_time_answers_as_h11_does(
    facade: KubeAPIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch that runs to its timeout ends with the terminating chunk, then the
    connection goes on (the peer stays until after the watch)."""
    data = _get(f"{CM}/one") + _get(f"{CM}?watch=1&timeoutSeconds=1")
    conn = await _compare_facade(facade, "timed watch", [data], monkeypatch, hold=1.5)
    assert conn._h11 is not None
