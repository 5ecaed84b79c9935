"""FaultyStore itself: determinism, and that each injected fault is one an apiserver can give."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import pytest

from ownergc.errors import (
    APIError,
    Conflict,
    ResourceExpired,
    ServerError,
    ServerTimeout,
    TooManyRequests,
    Unavailable,
)
from ownergc.protocols import ObjectStore, PatchType, Preconditions
from ownergc.testing.faults import (
    TOUCH_ANNOTATION,
    FaultKind,
    FaultRates,
    FaultyStore,
)
from ownergc_backends.memory import InMemoryStore

pytestmark = pytest.mark.anyio


async def _cm(store: InMemoryStore, name: str) -> dict[str, Any]:
    created: dict[str, Any] = await store.create_object(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
        }
    )
    return created


async def _calls(faulty: FaultyStore, n: int = 40) -> list[str]:
    """A fixed sequence of reads; what each call got."""
    res = faulty.resource_for("v1", "ConfigMap")
    out = []
    for i in range(n):
        try:
            await faulty.get(res, f"cm-{i % 4}", namespace="default")
            out.append("ok")
        except APIError as exc:
            out.append(type(exc).__name__)
    return out


async def test_is_an_object_store() -> None:
    assert isinstance(FaultyStore(InMemoryStore()), ObjectStore)


async def test_same_seed_same_faults_other_seed_other_faults() -> None:
    async def run(seed: int) -> tuple[list[str], list[Any]]:
        store = InMemoryStore()
        for i in range(4):
            await _cm(store, f"cm-{i}")
        faulty = FaultyStore(store, seed=seed, rates=FaultRates.uniform(0.3, latency=0.0))
        got = await _calls(faulty)
        return got, [(f.kind, f.verb, f.name) for f in faulty.log]

    a, b, c = await run(7), await run(7), await run(8)
    assert a == b
    assert a != c
    assert set(a[0]) > {"ok"}


async def test_decisions_are_per_call_key_not_per_global_order() -> None:
    """Interleaving calls to other objects does not change what one object's calls get."""
    store = InMemoryStore()
    for i in range(2):
        await _cm(store, f"cm-{i}")
    res = store.resource_for("v1", "ConfigMap")

    async def outcomes(interleave: bool) -> list[str]:
        faulty = FaultyStore(store, seed=3, rates=FaultRates.only("server_error", 0.5))
        out = []
        for _ in range(30):
            if interleave:
                with contextlib.suppress(ServerError):
                    await faulty.get(res, "cm-1", namespace="default")
            try:
                await faulty.get(res, "cm-0", namespace="default")
                out.append("ok")
            except ServerError:
                out.append("500")
        return out

    assert await outcomes(False) == await outcomes(True)


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("too_many_requests", TooManyRequests),
        ("server_error", ServerError),
    ],
)
async def test_rejected_writes_are_not_applied(kind: str, error: type[APIError]) -> None:
    store = InMemoryStore()
    cm = await _cm(store, "cm")
    res = store.resource_for("v1", "ConfigMap")
    faulty = FaultyStore(store, seed=1, rates=FaultRates.only(kind, 1.0, retry_after=0.25))
    rv = cm["metadata"]["resourceVersion"]
    with pytest.raises(error) as info:
        await faulty.patch(
            res,
            "cm",
            {"metadata": {"labels": {"a": "b"}}},
            patch_type=PatchType.MERGE,
            namespace="default",
        )
    with pytest.raises(error):
        await faulty.delete(res, "cm", namespace="default")
    current = store.get_object("v1", "ConfigMap", "cm", "default")
    assert current is not None
    assert current["metadata"]["resourceVersion"] == rv
    if kind == "too_many_requests":
        assert info.value.retry_after == 0.25
    assert [f.applied for f in faulty.log] == [False, False]


async def test_timeouts_model_applied_and_not_applied_writes() -> None:
    store = InMemoryStore()
    res = store.resource_for("v1", "ConfigMap")
    faulty = FaultyStore(store, seed=11, rates=FaultRates.only("timeout", 1.0))
    for i in range(30):
        await _cm(store, f"cm-{i}")
        with pytest.raises((ServerTimeout, Unavailable)):
            await faulty.delete(res, f"cm-{i}", namespace="default")
    applied = [f.applied for f in faulty.log]
    assert True in applied and False in applied
    for i, f in enumerate(faulty.log):
        assert store.exists("v1", "ConfigMap", f"cm-{i}", "default") is (not f.applied)


async def test_conflict_is_a_real_concurrent_write() -> None:
    store = InMemoryStore()
    cm = await _cm(store, "cm")
    res = store.resource_for("v1", "ConfigMap")
    faulty = FaultyStore(store, seed=1, rates=FaultRates.only("conflict", 1.0))
    rv = cm["metadata"]["resourceVersion"]
    # A resourceVersion-guarded DELETE fails because the object really changed.
    with pytest.raises(Conflict):
        await faulty.delete(
            res,
            "cm",
            namespace="default",
            preconditions=Preconditions(uid=cm["metadata"]["uid"], resource_version=rv),
        )
    current = store.get_object("v1", "ConfigMap", "cm", "default")
    assert current is not None
    assert current["metadata"]["resourceVersion"] != rv
    assert TOUCH_ANNOTATION in current["metadata"]["annotations"]
    # A merge patch guarded by resourceVersion: 409 from the server itself.
    with pytest.raises(Conflict):
        await faulty.patch(
            res,
            "cm",
            {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"], "labels": {}}},
            patch_type=PatchType.MERGE,
            namespace="default",
        )
    # An unguarded DELETE goes through (the apiserver retries those internally).
    assert await faulty.delete(res, "cm", namespace="default") is None
    assert not store.exists("v1", "ConfigMap", "cm", "default")
    assert faulty.counts() == {"conflict": 3}


async def _drain(stream: Any) -> list[tuple[str, str]]:
    out = []
    async for ev in stream:
        out.append((ev.type, ev.object["metadata"]["resourceVersion"]))
    return out


async def test_watch_duplicates_are_in_order_replays_of_delivered_events() -> None:
    store = InMemoryStore()
    res = store.resource_for("v1", "ConfigMap")
    start = store.resource_version
    for i in range(20):
        await _cm(store, f"cm-{i}")
    faulty = FaultyStore(store, seed=5, rates=FaultRates.only("duplicate_events", 0.4))
    got: list[tuple[str, str]] = []
    with anyio.move_on_after(0.3):
        async for ev in faulty.watch(res, resource_version=start, timeout_seconds=0.2):
            got.append((ev.type, ev.object["metadata"]["resourceVersion"]))
    assert faulty.counts().get("duplicate_events", 0) > 0
    rvs = [int(rv) for _, rv in got]
    # Dedup keeping the first occurrence: exactly the original stream, in order.
    first = list(dict.fromkeys(rvs))
    assert first == sorted(first) and len(first) == 20
    # Every replay is a contiguous, in-order run of already-delivered events.
    highest = 0
    for rv in rvs:
        if rv <= highest:
            assert rv in first[: first.index(highest) + 1]
        highest = max(highest, rv)


async def test_watch_drops_and_expiries() -> None:
    store = InMemoryStore()
    res = store.resource_for("v1", "ConfigMap")
    start = store.resource_version
    for i in range(30):
        await _cm(store, f"cm-{i}")
    dropped = FaultyStore(store, seed=2, rates=FaultRates.only("drop_watch", 0.2))
    events = await _drain(dropped.watch(res, resource_version=start, timeout_seconds=0.1))
    assert len(events) < 30
    assert [int(rv) for _, rv in events] == sorted(int(rv) for _, rv in events)
    expiring = FaultyStore(store, seed=2, rates=FaultRates.only("expire_watch", 0.2))
    with pytest.raises(ResourceExpired):
        await _drain(expiring.watch(res, resource_version=start, timeout_seconds=0.1))
    assert {f.kind for f in expiring.log} == {FaultKind.EXPIRE_WATCH}


async def test_reordering_holds_a_stream_but_never_reorders_it() -> None:
    store = InMemoryStore()
    res = store.resource_for("v1", "ConfigMap")
    start = store.resource_version
    for i in range(10):
        await _cm(store, f"cm-{i}")
    faulty = FaultyStore(store, seed=9, rates=FaultRates.only("reorder_events", 0.5, max_lag=0.01))
    events = await _drain(faulty.watch(res, resource_version=start, timeout_seconds=0.05))
    assert [int(rv) for _, rv in events] == sorted(int(rv) for _, rv in events)
    assert len(events) == 10
    assert faulty.counts()["reorder_events"] > 0


async def test_heal_and_pause() -> None:
    store = InMemoryStore()
    await _cm(store, "cm-0")
    faulty = FaultyStore(store, seed=1, rates=FaultRates.only("server_error", 1.0))
    res = store.resource_for("v1", "ConfigMap")
    with faulty.paused():
        await faulty.get(res, "cm-0", namespace="default")
    with pytest.raises(ServerError):
        await faulty.get(res, "cm-0", namespace="default")
    faulty.enabled = False
    await faulty.get(res, "cm-0", namespace="default")
    assert faulty.counts() == {"server_error": 1}


def test_rates_are_validated() -> None:
    with pytest.raises(ValueError):
        FaultRates(conflict=1.5)
    with pytest.raises(ValueError):
        FaultRates(max_latency=-1)
    assert FaultRates.only("timeout", 0.5).timeout == 0.5
    assert FaultRates.uniform(0.1).drop_watch == 0.1
