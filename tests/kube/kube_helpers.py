"""Helpers shared by the kube-backend tests and benchmarks/cascade.py.

``gc_over_http`` is the e2e harness over real HTTP: an InMemoryStore served
by the Kubernetes REST facade, a KubeStore pointed at the facade through its
kubeconfig, and a GarbageCollector on that KubeStore. Assertions keep reading
the InMemoryStore directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from ownergc.controller import GarbageCollector
from ownergc_backends.kube import KubeStore
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, StoreWrapper, serve_in_background

#: The test certificates (server, client, CA): tests/data/tls.
TLS = Path(__file__).resolve().parents[1] / "data" / "tls"


@asynccontextmanager
async def kube_store_for(server: KubeAPIServer, **options: Any) -> AsyncIterator[KubeStore]:
    """A KubeStore for ``server``, from the kubeconfig the facade writes (unthrottled
    unless ``qps`` is given)."""
    options.setdefault("qps", 0)
    options.setdefault("burst", 0)
    store = await KubeStore.from_kubeconfig_dict(server.kubeconfig(), **options)
    async with store:
        yield store


@asynccontextmanager
async def served(store: InMemoryStore | StoreWrapper, **kw: Any) -> AsyncIterator[KubeAPIServer]:
    async with serve_in_background(store, **kw) as server:
        yield server


@asynccontextmanager
async def gc_over_http(
    store: InMemoryStore, *, kube_options: dict[str, Any] | None = None, **gc_kwargs: Any
) -> AsyncIterator[GarbageCollector]:
    """``running_gc`` of the e2e suite, but the collector talks HTTP to ``store``."""
    from tests.e2e.e2e_helpers import running_gc

    async with (
        served(store) as server,
        kube_store_for(server, **(kube_options or {})) as kube,
        running_gc(kube, **gc_kwargs) as gc,
    ):
        _served_store[gc] = store
        yield gc


#: The InMemoryStore behind each collector of ``gc_over_http``.
_served_store: weakref.WeakKeyDictionary[GarbageCollector, InMemoryStore] = (
    weakref.WeakKeyDictionary()
)


async def settle_over_http(
    gc: GarbageCollector, timeout: float = 15.0, *, store: InMemoryStore | None = None
) -> None:
    """``settle``, checked against the store behind the facade (``store``, or the one
    ``gc_over_http`` served): the collector is idle and its graph holds what that
    store holds. Without a known store, idle for a quarter second (events cross a
    socket now)."""
    from tests.e2e.e2e_helpers import settle

    store = store if store is not None else _served_store.get(gc)
    await settle(gc, timeout * 2, store=store, quiet=0.25)


@contextlib.asynccontextmanager
async def tls_in_front_of(port: int, *, client_ca: Path | None = None) -> AsyncIterator[int]:
    """A TLS terminator (tests/data/tls/server.crt: 127.0.0.1, kubernetes.default)
    forwarding to ``port``; with ``client_ca`` it requires a client certificate."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(TLS / "server.crt", TLS / "server.key")
    if client_ca is not None:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_REQUIRED

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(forward, "127.0.0.1", 0, ssl=context)
    async with server:
        yield server.sockets[0].getsockname()[1]
        server.close()
