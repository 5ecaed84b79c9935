"""The wire's short cuts around h11 answer as the long way did: request targets read
without ``urlsplit`` when they need none, and response headers checked once by rules
that agree with h11's (a header h11 refuses is still refused, by h11)."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit

import h11
import pytest

from ownergc._kit import http as wire

TARGETS = [
    "/",
    "/api/v1/namespaces/default/configmaps/cm-0",
    "/api/v1/namespaces/default/configmaps/",
    "/apis/apps/v1/deployments?watch=1&resourceVersion=10",
    "/api/v1/pods?labelSelector=a%3Db&limit=",
    "/api/v1/namespaces/a%2Fb/pods",
    "//double/slash",
    "/a//b",
    "/frag#ment",
    "/sp ace",
    "http://example.invalid/api/v1/pods?x=1",
    "*",
    "",
]


@pytest.mark.parametrize("target", TARGETS)
def test_a_target_is_read_as_urlsplit_reads_it(target: str) -> None:
    parts = urlsplit(target)
    expected = (unquote(parts.path) or "/", parse_qs(parts.query, keep_blank_values=True))
    request = wire.Request("GET", target, "HTTP/1.1", {})
    assert (request.path, request.query) == expected


HEADERS = [
    ("Content-Type", "application/json"),
    ("Cache-Control", "no-cache, private"),
    ("Warning", '299 - "a \\"quoted\\" text"'),
    ("X-Empty", ""),
    ("X-Tab", "a\tb"),
    ("X-Latin", "caf\xe9"),
    ("X-Del", "a\x7fb"),
    ("X-Ctl", "a\x01b"),
    ("X-Newline", "a\r\nInjected: yes"),
    ("X-Lf", "a\nb"),
    ("X-Nul", "a\x00b"),
    ("X-Lead", " a"),
    ("X-Trail", "a "),
    ("Bad Name", "x"),
    ("Bad:Name", "x"),
    ("", "x"),
]


def _h11_accepts(name: str, value: str) -> bool:
    try:
        h11.Response(status_code=200, headers=[(name.encode("latin-1"), value.encode("latin-1"))])
    except h11.LocalProtocolError:
        return False
    return True


@pytest.mark.parametrize(("name", "value"), HEADERS)
def test_the_header_check_agrees_with_h11(name: str, value: str) -> None:
    wire._CHECKED.clear()
    encoded, checked = wire._encode_headers([(name, value)])
    assert encoded == [(name.encode("latin-1"), value.encode("latin-1"))]
    assert checked == _h11_accepts(name, value)


class _Sink:
    """A byte stream that takes what is sent (the response under test)."""

    def __init__(self) -> None:
        self.sent = b""

    async def send(self, data: bytes) -> None:
        self.sent += data

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.anyio
async def test_a_header_h11_refuses_is_still_refused() -> None:
    connection = wire.ServerConnection(_Sink())  # type: ignore[arg-type]
    assert await connection.next_request() is not None
    with pytest.raises(h11.LocalProtocolError):
        await connection.respond(200, [("X-Bad", "a\r\nInjected: yes")], b"{}", keep_alive=True)


@pytest.mark.anyio
async def test_a_response_is_framed_as_before() -> None:
    sink = _Sink()
    connection = wire.ServerConnection(sink)  # type: ignore[arg-type]
    assert await connection.next_request() is not None
    await connection.respond(404, [("Content-Type", "application/json")], b"{}", keep_alive=True)
    assert sink.sent == (
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\nConnection: keep-alive\r\n\r\n{}"
    )
    assert connection.next_cycle()
