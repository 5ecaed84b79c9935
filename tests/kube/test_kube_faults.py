"""Fault tests over HTTP: the GarbageCollector on a KubeStore against the facade,
with dropped watches, 410s, 429s, 500s, slow answers and a server restart in
the middle of a cascade. Nothing may be wrongly deleted and everything must
converge.

Convergence is polled on the InMemoryStore (not ``wait_idle``), because items
in long backoff after injected failures count as idle there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from ownergc.controller import GarbageCollector
from ownergc.errors import ServerError, TooManyRequests, error_for_status
from ownergc.testing.faults import FaultyStore
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer
from tests.e2e.e2e_helpers import delete, exists, make, owner_uids, ref, running_gc
from tests.kube.kube_helpers import kube_store_for, served, settle_over_http

pytestmark = pytest.mark.anyio


class Tree:
    """keeper, owner -> 15 mids -> 15 leaves, a shared dependent of owner and keeper,
    and a bystander with no owner refs."""

    def __init__(self) -> None:
        self.keeper: dict[str, Any] = {}
        self.owner: dict[str, Any] = {}
        self.mids: list[dict[str, Any]] = []
        self.leaves: list[dict[str, Any]] = []
        self.shared: dict[str, Any] = {}
        self.bystander: dict[str, Any] = {}

    async def build(self, store: InMemoryStore, n: int = 15) -> Tree:
        self.keeper = await make(store, "ConfigMap", "keeper")
        self.owner = await make(store, "ConfigMap", "owner")
        self.mids = [
            await make(store, "ConfigMap", f"mid-{i}", owners=[ref(self.owner, block=True)])
            for i in range(n)
        ]
        self.leaves = [
            await make(store, "Secret", f"leaf-{i}", owners=[ref(m, block=True)])
            for i, m in enumerate(self.mids)
        ]
        self.shared = await make(
            store, "Secret", "shared", owners=[ref(self.owner), ref(self.keeper)]
        )
        self.bystander = await make(store, "Secret", "bystander")
        return self

    def converged(self, store: InMemoryStore) -> bool:
        return (
            not exists(store, self.owner)
            and not any(exists(store, m) for m in self.mids)
            and not any(exists(store, leaf) for leaf in self.leaves)
            and exists(store, self.shared)
            and owner_uids(store, self.shared) == [self.keeper["metadata"]["uid"]]
        )

    def check_nothing_wrongly_deleted(self, store: InMemoryStore) -> None:
        assert exists(store, self.keeper)
        assert exists(store, self.bystander)
        assert exists(store, self.shared)
        assert owner_uids(store, self.shared) == [self.keeper["metadata"]["uid"]]
        for obj in store.snapshot():
            fins = obj["metadata"].get("finalizers") or []
            assert "foregroundDeletion" not in fins and "orphan" not in fins, obj["metadata"]


async def eventually(check: Callable[[], bool], timeout: float = 40.0) -> None:
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.05)


def too_many(retry_after: float) -> TooManyRequests:
    return TooManyRequests("injected", reason="TooManyRequests", retry_after=retry_after)


def internal_error() -> ServerError:
    return ServerError("injected", reason="InternalError")


@asynccontextmanager
async def harness(
    store: InMemoryStore, **gc_kwargs: Any
) -> AsyncIterator[tuple[KubeAPIServer, FaultyStore, GarbageCollector]]:
    """The facade serves ``store`` through a FaultyStore, whose scripted faults
    reach the collector's KubeStore as HTTP answers."""
    faulty = FaultyStore(store)
    async with served(faulty) as server, kube_store_for(server) as kube:
        gc_kwargs.setdefault("workers", 5)
        async with running_gc(kube, **gc_kwargs) as gc:
            yield server, faulty, gc


async def run_cascade(
    policy: str,
    fault: Callable[[KubeAPIServer, FaultyStore], Awaitable[None]],
    **gc_kwargs: Any,
) -> KubeAPIServer:
    store = InMemoryStore()
    tree = await Tree().build(store)
    async with harness(store, **gc_kwargs) as (server, faulty, gc):
        await settle_over_http(gc, store=store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(fault, server, faulty)
            await delete(store, tree.owner, policy)
            await eventually(lambda: tree.converged(store))
            tg.cancel_scope.cancel()
        await settle_over_http(gc, store=store)
        tree.check_nothing_wrongly_deleted(store)
        assert tree.converged(store)
    return server


POLICIES = ["Background", "Foreground"]


@pytest.mark.parametrize("policy", POLICIES)
async def test_dropped_watches(policy: str) -> None:
    async def drop(server: KubeAPIServer, faulty: FaultyStore) -> None:
        for _ in range(20):
            await anyio.sleep(0.03)
            faulty.drop_watches()

    server = await run_cascade(policy, drop)
    # Every monitor re-watched after the drops.
    assert server.request_count("watch") > 22


@pytest.mark.parametrize("policy", POLICIES)
async def test_expired_watches_relist(policy: str) -> None:
    async def expire(server: KubeAPIServer, faulty: FaultyStore) -> None:
        before = server.request_count("list")
        for _ in range(3):
            await anyio.sleep(0.05)
            faulty.expire_watches()
        with anyio.fail_after(10):
            while server.request_count("list") == before:
                await anyio.sleep(0.02)

    await run_cascade(policy, expire)


@pytest.mark.parametrize("policy", POLICIES)
async def test_429_with_retry_after(policy: str) -> None:
    async def throttle(server: KubeAPIServer, faulty: FaultyStore) -> None:
        faulty.fail_next("delete", too_many(0.05), times=12)
        faulty.fail_next("patch", too_many(0.05), times=4)
        faulty.fail_next("get", too_many(0.05), times=4)

    server = await run_cascade(policy, throttle)
    assert sum(1 for r in server.requests if r.status == 429) >= 12


@pytest.mark.parametrize("policy", POLICIES)
async def test_500s(policy: str) -> None:
    async def fail(server: KubeAPIServer, faulty: FaultyStore) -> None:
        faulty.fail_next("delete", internal_error(), times=8)
        faulty.fail_next("patch", internal_error(), times=3)
        faulty.fail_next(
            "get", error_for_status(503, "injected", reason="ServiceUnavailable"), times=3
        )

    server = await run_cascade(policy, fail)
    assert sum(1 for r in server.requests if r.status == 500) >= 8


@pytest.mark.parametrize("policy", POLICIES)
async def test_slow_responses(policy: str) -> None:
    async def slow(server: KubeAPIServer, faulty: FaultyStore) -> None:
        faulty.delay_next("delete", 0.15, times=10)
        faulty.delay_next("get", 0.15, times=5)
        faulty.delay_next("list", 0.3, times=2)
        faulty.drop_watches()  # every monitor re-watches meanwhile

    await run_cascade(policy, slow)


async def test_slow_responses_past_the_client_timeout() -> None:
    """Answers slower than the client's timeout are Unavailable; retries converge."""
    store = InMemoryStore()
    tree = await Tree().build(store)
    faulty = FaultyStore(store)
    async with (
        served(faulty) as server,
        kube_store_for(server, request_timeout=0.2) as kube,
        running_gc(kube, workers=5) as gc,
    ):
        await settle_over_http(gc, store=store)
        faulty.delay_next("delete", 0.5, times=6)
        await delete(store, tree.owner, "Background")
        await eventually(lambda: tree.converged(store))
        await settle_over_http(gc, store=store)
        tree.check_nothing_wrongly_deleted(store)


@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
async def test_server_restart_mid_cascade(policy: str) -> None:
    """Stop the server task and start a new one on the same port with the same store."""
    store = InMemoryStore()
    tree = await Tree().build(store)
    faulty = FaultyStore(store)
    server = KubeAPIServer(faulty)
    async with anyio.create_task_group() as tg:
        scope = anyio.CancelScope()
        stopped = anyio.Event()

        async def serve_once(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
            nonlocal scope, stopped
            scope, stopped = anyio.CancelScope(), anyio.Event()
            try:
                with scope:
                    await server.serve(task_status=task_status)
            finally:
                stopped.set()

        url = await tg.start(serve_once)
        async with kube_store_for(server) as kube, running_gc(kube, workers=3) as gc:
            await settle_over_http(gc, store=store)
            # Slow the deletes so that the restart lands mid-cascade.
            faulty.delay_next("delete", 0.05, times=100)
            faulty.delay_next("patch", 0.5, times=100)
            await delete(store, tree.owner, policy)
            await anyio.sleep(0.2)
            scope.cancel()
            await stopped.wait()
            if policy == "Orphan":
                assert any(owner_uids(store, m) for m in tree.mids), "restart came too late"
            else:
                assert not tree.converged(store), "restart came too late"
            await anyio.sleep(0.3)  # the collector sees connection refused meanwhile
            assert await tg.start(serve_once) == url
            if policy == "Orphan":
                await eventually(
                    lambda: (
                        not exists(store, tree.owner)
                        and all(owner_uids(store, m) == [] for m in tree.mids)
                    )
                )
            else:
                await eventually(lambda: tree.converged(store))
            await settle_over_http(gc, store=store)
        scope.cancel()
    tree.check_nothing_wrongly_deleted(store)
    if policy == "Orphan":
        assert all(exists(store, m) for m in tree.mids)
        assert all(exists(store, leaf) for leaf in tree.leaves)
