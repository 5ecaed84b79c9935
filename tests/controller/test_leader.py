"""Leader election on a Lease through the ObjectStore protocol."""

from __future__ import annotations

import anyio
import pytest

from ownergc.controller._leader import LeaderElector, LeadershipLost
from ownergc_backends.memory import InMemoryStore

pytestmark = pytest.mark.anyio

FAST = {"lease_duration": 1.0, "renew_deadline": 0.5, "retry_period": 0.05}


def lease(store: InMemoryStore) -> dict:
    got = store.get_object("coordination.k8s.io/v1", "Lease", "ownergc", "kube-system")
    assert got is not None
    return got


async def test_one_leader_then_handover_on_release() -> None:
    store = InMemoryStore()
    a = LeaderElector(store, name="ownergc", namespace="kube-system", identity="a", **FAST)
    b = LeaderElector(store, name="ownergc", namespace="kube-system", identity="b", **FAST)
    ran: list[str] = []
    a_stop = anyio.Event()

    async def payload_a() -> None:
        ran.append("a")
        await a_stop.wait()

    async def payload_b() -> None:
        ran.append("b")
        await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(a.run, payload_a)
        with anyio.fail_after(5):
            while not a.is_leader:
                await anyio.sleep(0.01)
        tg.start_soon(b.run, payload_b)
        await anyio.sleep(0.3)  # b keeps trying while a renews
        assert ran == ["a"]
        assert lease(store)["spec"]["holderIdentity"] == "a"
        assert b.leader == "a" and not b.is_leader
        a_stop.set()  # a's payload ends: a releases the lease
        with anyio.fail_after(5):
            while not b.is_leader:
                await anyio.sleep(0.01)
        assert ran == ["a", "b"]
        spec = lease(store)["spec"]
        assert spec["holderIdentity"] == "b"
        assert spec["leaseTransitions"] >= 1
        tg.cancel_scope.cancel()
    assert lease(store)["spec"]["holderIdentity"] == ""  # released on cancel


async def test_expired_lease_is_taken_over() -> None:
    store = InMemoryStore()
    a = LeaderElector(
        store,
        name="ownergc",
        namespace="kube-system",
        identity="a",
        release_on_cancel=False,
        **FAST,
    )
    assert await a.try_acquire_or_renew()
    b = LeaderElector(store, name="ownergc", namespace="kube-system", identity="b", **FAST)
    assert not await b.try_acquire_or_renew()  # a's lease is fresh
    await anyio.sleep(1.1)  # a never renews: the lease expires by b's own observation
    assert await b.try_acquire_or_renew()
    assert lease(store)["spec"]["holderIdentity"] == "b"


async def test_lost_lease_cancels_payload_and_raises() -> None:
    store = InMemoryStore()
    a = LeaderElector(store, name="ownergc", namespace="kube-system", identity="a", **FAST)
    cancelled = []

    async def payload() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(True)

    async def steal() -> None:
        while not a.is_leader:
            await anyio.sleep(0.01)
        # Another holder writes the lease (e.g. after a network partition).
        res = store.resource_for("coordination.k8s.io/v1", "Lease")
        from ownergc.protocols import PatchType

        for _ in range(60):
            await store.patch(
                res,
                "ownergc",
                {
                    "spec": {
                        "holderIdentity": "intruder",
                        "renewTime": "2030-01-01T00:00:00.000000Z",
                    }
                },
                patch_type=PatchType.MERGE,
                namespace="kube-system",
            )
            await anyio.sleep(0.03)

    async with anyio.create_task_group() as tg:
        tg.start_soon(steal)
        with pytest.raises(LeadershipLost, match="failed to renew lease kube-system/ownergc"):
            await a.run(payload)
        tg.cancel_scope.cancel()
    assert cancelled == [True]
    # The intruder's lease is left alone (not released by the loser).
    assert lease(store)["spec"]["holderIdentity"] == "intruder"


def test_bad_timings_are_rejected() -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline"):
        LeaderElector(
            InMemoryStore(),
            name="x",
            namespace="y",
            identity="z",
            lease_duration=5,
            renew_deadline=10,
            retry_period=2,
        )
