"""The webhook's HTTP/1.1 on asyncio (protocols, ordinary requests read without h11)
answers byte for byte as the anyio-stream server (h11 throughout) does.

Each case sends raw bytes, in pieces, then ends its side of the stream; both servers'
whole answers (up to the connection's close) must be equal. Plain TCP: TLS changes
nothing in the HTTP.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.abc
import pytest

from ownergc._kit.http import PlainRequest
from ownergc.controller import _webhook_server
from ownergc.controller._webhook_server import _connection, serve_webhook

pytestmark = pytest.mark.anyio


async def handler(method: str, path: str, body: bytes) -> tuple[int, bytes, bytes]:
    if path == "/boom":
        raise RuntimeError("boom")
    if path == "/slow":
        await anyio.sleep(0.05)
    status = 200 if path.startswith("/validate") else 404
    return status, b"application/json", f'{{"m":"{method}","p":"{path}","n":{len(body)}}}'.encode()


POST = b"POST /validate HTTP/1.1\r\nHost: hook\r\nContent-Type: application/json\r\n"
ORDINARY = POST + b"Content-Length: 2\r\n\r\n{}"

CASES: dict[str, list[bytes]] = {
    "ordinary": [ORDINARY],
    "pipelined": [ORDINARY + ORDINARY + b"HEAD /validate?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"],
    "byte by byte": [bytes([b]) for b in ORDINARY],
    "head split from body": [POST + b"Content-Length: 5\r\n\r\n", b"ab", b"cde"],
    "no content-length": [b"GET /validate HTTP/1.1\r\nHost: h\r\n\r\n"],
    "slow handler then more": [b"POST /slow HTTP/1.1\r\nHost: h\r\n\r\n", ORDINARY],
    "handler error": [b"POST /boom HTTP/1.1\r\nHost: h\r\n\r\n" + ORDINARY],
    "missing host": [b"POST /validate HTTP/1.1\r\nContent-Length: 0\r\n\r\n"],
    "two hosts": [b"GET /validate HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"],
    "chunked": [POST + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"],
    "chunked and length": [
        POST + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    ],
    "connection close": [POST + b"Content-Length: 2\r\nConnection: close\r\n\r\n{}" + ORDINARY],
    "http/1.0": [b"POST /validate HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}"],
    "bad request line": [b"GARBAGE\r\n\r\n"],
    "leading blank line": [b"\r\n" + ORDINARY],
    "bare newlines": [b"GET /validate HTTP/1.1\nHost: h\n\n"],
    "mixed newlines": [b"GET /validate HTTP/1.1\r\nHost: h\n\r\n"],
    "folded header": [b"GET /validate HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n  2\r\n\r\n"],
    "bad content-length": [POST + b"Content-Length: 2x\r\n\r\n{}"],
    "two content-lengths": [POST + b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}"],
    "differing content-lengths": [POST + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}"],
    "expect continue": [POST + b"Content-Length: 2\r\nExpect: 100-continue\r\n\r\n{}"],
    "upgrade": [b"GET /validate HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\n\r\n"],
    "head too large": [b"GET /validate HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 20000],
    "head large but whole": [
        b"GET /validate HTTP/1.1\r\nHost: h\r\nX: " + b"a" * 20000 + b"\r\n\r\n"
    ],
    "ends mid-head": [b"POST /validate HTTP/1.1\r\nHo"],
    "ends mid-body": [POST + b"Content-Length: 10\r\n\r\n{}"],
    "ordinary then bad": [ORDINARY + b"BAD LINE\r\n\r\n"],
    "non-ascii value": [b"GET /validate HTTP/1.1\r\nHost: h\r\nX: caf\xc3\xa9\r\n\r\n"],
    "space in target": [b"GET /a b HTTP/1.1\r\nHost: h\r\n\r\n"],
    "lower-case version": [b"GET /validate http/1.1\r\nHost: h\r\n\r\n"],
    "header without colon": [b"GET /validate HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n"],
    "odd but ordinary": [
        b"POST /validate?timeout=10s HTTP/1.1\r\nHOST:\r\ncontent-LENGTH:  002 \t\r\n"
        b"TE: trailers\r\nX-Empty:\r\n\r\n{}"
    ],
    "keep-alive header": [POST + b"Content-Length: 2\r\nConnection: keep-alive\r\n\r\n{}"],
    "plus in content-length": [POST + b"Content-Length: +2\r\n\r\n{}"],
    "body beyond the limit": [POST + b"Content-Length: 99999999999\r\n\r\n{}"],
    "nothing": [],
}


async def exchange(port: int, pieces: list[bytes]) -> bytes:
    stream = await anyio.connect_tcp("127.0.0.1", port)
    async with stream:
        for piece in pieces:
            await stream.send(piece)
            await anyio.sleep(0.001)
        await stream.send_eof()
        out = b""
        with anyio.fail_after(10):
            while True:
                try:
                    out += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return out


#: Cases whose every request is ordinary: answered without h11.
PLAIN = {
    "ordinary",
    "pipelined",
    "byte by byte",
    "head split from body",
    "no content-length",
    "odd but ordinary",
}


async def test_both_servers_answer_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    original = _webhook_server.next_plain_request

    def next_plain_request(*args: Any, **kwargs: Any) -> Any:
        parsed = original(*args, **kwargs)
        if parsed is None or isinstance(parsed, PlainRequest):  # a verdict on a request
            seen.append(parsed)
        return parsed

    monkeypatch.setattr(_webhook_server, "next_plain_request", next_plain_request)
    reference = await anyio.create_tcp_listener(local_host="127.0.0.1")
    old_port = reference.extra(anyio.abc.SocketAttribute.local_port)
    async with reference, anyio.create_task_group() as tg:
        tg.start_soon(reference.serve, lambda stream: _connection(stream, handler))
        new_port = await tg.start(
            lambda task_status: serve_webhook(
                handler, host="127.0.0.1", port=0, ssl_context=None, task_status=task_status
            )
        )
        for name, pieces in CASES.items():
            expected = await exchange(old_port, pieces)
            seen.clear()
            got = await exchange(new_port, pieces)
            assert got == expected, name
            if name in PLAIN:  # the new server's own path was taken
                assert seen and None not in seen, name
        tg.cancel_scope.cancel()
