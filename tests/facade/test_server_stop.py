"""A stopped server closes the connections it accepted and had not yet served: a task
cancelled before its first step never runs its own cleanup, and the socket would be
left open (the ResourceWarning a server restart mid-cascade once raised in CI)."""

from __future__ import annotations

import anyio
import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer


class _Stream:
    def __init__(self) -> None:
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


@pytest.mark.anyio
async def test_connections_not_yet_served_are_closed_when_the_server_stops() -> None:
    server = KubeAPIServer(InMemoryStore())
    waiting = _Stream()
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        server.connections._waiting.add(waiting)  # type: ignore[arg-type]
        tg.cancel_scope.cancel()
    assert waiting.closed


@pytest.mark.anyio
async def test_a_connection_taken_up_is_no_longer_the_servers_to_close() -> None:
    server = KubeAPIServer(InMemoryStore())
    async with anyio.create_task_group() as tg:
        url = await tg.start(server.serve)
        host, port = url.removeprefix("http://").rsplit(":", 1)
        async with await anyio.connect_tcp(host, int(port)) as client:
            await client.send(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
            assert b"200 OK" in await client.receive()
            assert server.connections._waiting == set()
        tg.cancel_scope.cancel()
