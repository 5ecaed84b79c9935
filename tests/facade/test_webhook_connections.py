"""Admission webhooks are called over kept-alive connections, as kube-apiserver calls them:
a review per TLS handshake would cost a write more than the webhook's answer."""

from __future__ import annotations

import anyio
import anyio.abc
import h11
import pytest

from ownergc_backends.memory._webhooks import KeptConnections

pytestmark = pytest.mark.anyio


class Hook:
    """A plain-HTTP webhook stand-in that counts its connections and can hang up on
    the open ones (as a webhook's idle timeout does)."""

    def __init__(self) -> None:
        self.connections = 0
        self.reviews = 0
        self.open: list[anyio.abc.ByteStream] = []

    async def hang_up(self) -> None:
        for stream in self.open:
            await stream.aclose()

    async def serve(self, stream: anyio.abc.ByteStream) -> None:
        self.connections += 1
        self.open.append(stream)
        conn = h11.Connection(h11.SERVER)
        async with stream:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    try:
                        conn.receive_data(await stream.receive())
                    except (
                        anyio.EndOfStream,
                        anyio.BrokenResourceError,
                        anyio.ClosedResourceError,
                    ):
                        return
                    continue
                if isinstance(event, h11.EndOfMessage):
                    self.reviews += 1
                    body = b'{"ok": true}'
                    headers = [("Content-Length", str(len(body)))]
                    data = conn.send(h11.Response(status_code=200, headers=headers)) or b""
                    data += conn.send(h11.Data(data=body)) or b""
                    data += conn.send(h11.EndOfMessage()) or b""
                    await stream.send(data)
                    conn.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed):
                    return


async def test_reviews_share_one_connection_and_a_closed_one_is_replaced() -> None:
    hook = Hook()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    url = f"http://127.0.0.1:{port}/validate"
    pool = KeptConnections()
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, hook.serve)
        for _ in range(3):
            assert await pool(url, None, "", b"{}", 5) == (200, b'{"ok": true}')
        assert (hook.reviews, hook.connections) == (3, 1)
        # The webhook hangs up on idle connections: the kept one is stale, replaced once.
        await hook.hang_up()
        await anyio.sleep(0.05)
        assert await pool(url, None, "", b"{}", 5) == (200, b'{"ok": true}')
        assert hook.reviews == 4 and hook.connections == 2
        await pool.aclose()
        tg.cancel_scope.cancel()
