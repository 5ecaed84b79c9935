"""InMemoryStore list/watch: resourceVersions, ordering, ResourceExpired, cancellation,
concurrency (asyncio and trio)."""

from __future__ import annotations

import threading
from contextlib import aclosing

import anyio
import pytest

from ownergc.errors import BadRequest, NotFound, ResourceExpired, ServerTimeout
from ownergc.protocols import APIResource, PatchType, PropagationPolicy, WatchEvent
from ownergc_backends.memory import InMemoryStore

pytestmark = pytest.mark.anyio


def cm(store: InMemoryStore) -> APIResource:
    return store.resource_for("v1", "ConfigMap")


def body(name: str, ns: str = "default", **meta) -> dict:
    return {"metadata": {"name": name, "namespace": ns, **meta}, "data": {"k": name}}


async def take(stream, n: int, timeout: float = 2.0) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    with anyio.fail_after(timeout):
        async for event in stream:
            out.append(event)
            if len(out) == n:
                break
    return out


async def take_and_close(stream, n: int, timeout: float = 2.0) -> list[WatchEvent]:
    async with aclosing(stream):
        return await take(stream, n, timeout)


async def test_watch_from_list_rv_sees_every_change_in_order(store: InMemoryStore) -> None:
    await store.create(cm(store), body("before"))
    listed = await store.list(cm(store))
    assert [i["metadata"]["name"] for i in listed.items] == ["before"]
    stream = store.watch(cm(store), resource_version=listed.resource_version)
    a = await store.create(cm(store), body("a", finalizers=["x.io/y"]))
    b = await store.patch(
        cm(store), "a", {"data": {"k": "v2"}}, patch_type=PatchType.MERGE, namespace="default"
    )
    c = await store.delete(cm(store), "a", namespace="default")
    assert c is not None
    d = await store.patch(
        cm(store),
        "a",
        {"metadata": {"finalizers": None}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    events = await take_and_close(stream, 4)
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    rvs = [int(e.object["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == 4
    assert rvs[:3] == [int(x["metadata"]["resourceVersion"]) for x in (a, b, c)]
    assert rvs[3] == int(d["metadata"]["resourceVersion"])
    assert rvs[0] > int(listed.resource_version)
    for e in events:
        assert e.object["kind"] == "PartialObjectMetadata"
        assert e.object["apiVersion"] == "meta.k8s.io/v1"
        assert set(e.object) == {"apiVersion", "kind", "metadata"}
    # the DELETED event carries the last stored state at the deletion's rv
    assert events[3].object["metadata"]["finalizers"] == ["x.io/y"]


async def test_watch_from_an_intermediate_rv(store: InMemoryStore) -> None:
    created = [await store.create(cm(store), body(f"o{i}")) for i in range(5)]
    since = created[1]["metadata"]["resourceVersion"]
    events = await take_and_close(store.watch(cm(store), resource_version=since), 3)
    assert [e.object["metadata"]["name"] for e in events] == ["o2", "o3", "o4"]


async def test_watch_full_objects(store: InMemoryStore) -> None:
    rv = store.resource_version
    await store.create(cm(store), body("full"))
    [event] = await take_and_close(
        store.watch(cm(store), resource_version=rv, metadata_only=False), 1
    )
    assert event.object["apiVersion"] == "v1" and event.object["kind"] == "ConfigMap"
    assert event.object["data"] == {"k": "full"}


async def test_watch_filters_by_namespace_and_resource(store: InMemoryStore) -> None:
    rv = store.resource_version
    await store.create(store.resource_for("v1", "Namespace"), {"metadata": {"name": "other"}})
    await store.create(cm(store), body("x", "other"))
    await store.create(store.resource_for("v1", "Secret"), body("s"))
    await store.create(cm(store), body("y", "default"))
    [event] = await take_and_close(
        store.watch(cm(store), resource_version=rv, namespace="default"), 1
    )
    assert event.object["metadata"]["name"] == "y"
    both = await take_and_close(store.watch(cm(store), resource_version=rv), 2)
    assert [e.object["metadata"]["name"] for e in both] == ["x", "y"]


async def test_watch_from_zero_starts_with_the_current_state(store: InMemoryStore) -> None:
    await store.create(cm(store), body("b"))
    await store.create(cm(store), body("a"))
    stream = store.watch(cm(store), resource_version="0")
    initial = await take(stream, 2)
    assert [(e.type, e.object["metadata"]["name"]) for e in initial] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]
    await store.delete(cm(store), "a", namespace="default")
    [gone] = await take_and_close(stream, 1)
    assert gone.type == "DELETED" and gone.object["metadata"]["name"] == "a"


async def test_resource_expired_for_a_version_older_than_the_window(clock) -> None:
    store = InMemoryStore(clock=clock, event_window=3)
    resource = cm(store)
    first = await store.create(resource, body("o0"))
    for i in range(1, 5):
        await store.create(resource, body(f"o{i}"))
    with pytest.raises(ResourceExpired) as info:
        await take_and_close(
            store.watch(resource, resource_version=first["metadata"]["resourceVersion"]), 1
        )
    assert info.value.status == 410
    listed = await store.list(resource)
    events = await take_and_close(
        store.watch(resource, resource_version=str(int(listed.resource_version) - 3)), 3
    )
    assert [e.object["metadata"]["name"] for e in events] == ["o2", "o3", "o4"]
    # the window is per resource: secrets are unaffected by configmap churn
    secrets = store.resource_for("v1", "Secret")
    assert await store.list(secrets) is not None
    stream = store.watch(secrets, resource_version="1")
    await store.create(secrets, body("s"))
    [event] = await take_and_close(stream, 1)
    assert event.object["metadata"]["name"] == "s"


async def test_a_watcher_that_falls_behind_the_window_gets_resource_expired(clock) -> None:
    store = InMemoryStore(clock=clock, event_window=4)
    resource = cm(store)
    stream = store.watch(resource, resource_version=store.resource_version)
    await store.create(resource, body("first"))
    [event] = await take(stream, 1)
    assert event.object["metadata"]["name"] == "first"
    for i in range(10):
        await store.create(resource, body(f"o{i}"))
    with pytest.raises(ResourceExpired):
        await take(stream, 1)


async def test_event_window_compaction_keeps_sequence_right(clock) -> None:
    store = InMemoryStore(clock=clock, event_window=1500)
    resource = cm(store)
    for i in range(4000):
        await store.create(resource, body(f"o{i:04d}"))
    listed = await store.list(resource)
    since = int(listed.resource_version) - 1000
    events = await take_and_close(
        store.watch(resource, resource_version=str(since)), 1000, timeout=10
    )
    assert [e.object["metadata"]["name"] for e in events] == [
        f"o{i:04d}" for i in range(3000, 4000)
    ]


async def test_watch_from_a_future_version_times_out(store: InMemoryStore) -> None:
    future = str(int(store.resource_version) + 10)
    with pytest.raises(ServerTimeout):
        await take_and_close(store.watch(cm(store), resource_version=future), 1)


async def test_watch_rejects_a_malformed_version(store: InMemoryStore) -> None:
    with pytest.raises(BadRequest):
        await take_and_close(store.watch(cm(store), resource_version="abc"), 1)


async def test_timeout_seconds_ends_the_stream(store: InMemoryStore) -> None:
    events = []
    with anyio.fail_after(2):
        async for event in store.watch(
            cm(store), resource_version=store.resource_version, timeout_seconds=0.05
        ):
            events.append(event)
    assert events == []
    await store.create(cm(store), body("late"))
    rv = str(int(store.resource_version) - 1)
    with anyio.fail_after(2):
        got = [e async for e in store.watch(cm(store), resource_version=rv, timeout_seconds=0.05)]
    assert [e.object["metadata"]["name"] for e in got] == ["late"]


async def test_zero_timeout_drains_what_is_already_there(store: InMemoryStore) -> None:
    rv = store.resource_version
    for i in range(1200):  # more than one internal batch
        await store.create(cm(store), body(f"o{i:04d}"))
    with anyio.fail_after(5):
        got = [e async for e in store.watch(cm(store), resource_version=rv, timeout_seconds=0)]
    assert [e.object["metadata"]["name"] for e in got] == [f"o{i:04d}" for i in range(1200)]


async def test_watch_is_cancellable_while_waiting(store: InMemoryStore) -> None:
    started = anyio.Event()
    seen: list[WatchEvent] = []

    async def consume() -> None:
        stream = store.watch(cm(store), resource_version=store.resource_version)
        started.set()
        async for event in stream:
            seen.append(event)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await started.wait()
        await store.create(cm(store), body("one"))
        with anyio.fail_after(2):
            while not seen:
                await anyio.sleep(0.001)
        tg.cancel_scope.cancel()
    assert [e.object["metadata"]["name"] for e in seen] == ["one"]
    await store.create(cm(store), body("two"))  # the store is fine after the cancellation
    assert store.exists("v1", "ConfigMap", "two", "default")


async def test_unregistering_a_resource_ends_its_watches(store: InMemoryStore) -> None:
    widgets = store.register_resource(
        group="example.com", versions="v1", resource="widgets", kind="Widget", namespaced=False
    )
    await store.create(widgets, {"metadata": {"name": "w1"}})
    stream = store.watch(widgets, resource_version=store.resource_version)
    assert store.unregister_resource("example.com", "widgets") is True
    with anyio.fail_after(2):
        events = [e async for e in stream]
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("DELETED", "w1")]
    with pytest.raises(NotFound):
        await take_and_close(store.watch(widgets, resource_version="0"), 1)


async def test_many_concurrent_writers_lose_nothing(store: InMemoryStore) -> None:
    resource = cm(store)
    writers, per_writer = 40, 25
    start_rv = store.resource_version
    stream = store.watch(resource, resource_version=start_rv)
    received: list[WatchEvent] = []
    expected = writers * per_writer * 2  # each writer creates then patches

    async def watcher() -> None:
        async with aclosing(stream):
            async for event in stream:
                received.append(event)
                if len(received) == expected:
                    return

    async def writer(w: int) -> None:
        for i in range(per_writer):
            name = f"w{w}-{i}"
            await store.create(resource, body(name))
            await store.patch(
                resource,
                name,
                {"metadata": {"labels": {"touched": "yes"}}},
                patch_type=PatchType.STRATEGIC_MERGE,
                namespace="default",
            )

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher)
            async with anyio.create_task_group() as writers_tg:
                for w in range(writers):
                    writers_tg.start_soon(writer, w)
    listed = await store.list(resource)
    assert len(listed.items) == writers * per_writer
    assert all(i["metadata"]["labels"] == {"touched": "yes"} for i in listed.items)
    rvs = [int(e.object["metadata"]["resourceVersion"]) for e in received]
    assert rvs == sorted(rvs) and len(set(rvs)) == expected
    assert int(listed.resource_version) == int(start_rv) + expected


async def test_concurrent_read_modify_write_with_conflicts_loses_no_increment(
    store: InMemoryStore,
) -> None:
    from ownergc.errors import Conflict

    resource = cm(store)
    await store.create(
        resource, {"metadata": {"name": "counter", "namespace": "default"}, "data": {"n": "0"}}
    )

    async def increment() -> None:
        while True:
            live = await store.get(resource, "counter", namespace="default", metadata_only=False)
            live["data"]["n"] = str(int(live["data"]["n"]) + 1)
            try:
                await store.update(resource, live)
                return
            except Conflict:
                continue

    async with anyio.create_task_group() as tg:
        for _ in range(50):
            tg.start_soon(increment)
    final = await store.get(resource, "counter", namespace="default", metadata_only=False)
    assert final["data"]["n"] == "50"


def test_thread_safety_of_writes(clock) -> None:
    store = InMemoryStore(clock=clock)
    resource = cm(store)
    errors: list[BaseException] = []

    def run(t: int) -> None:
        async def work() -> None:
            for i in range(150):
                await store.create(resource, body(f"t{t}-{i}"))
                await store.delete(
                    resource,
                    f"t{t}-{i}",
                    namespace="default",
                    propagation_policy=PropagationPolicy.ORPHAN,
                )

        try:
            anyio.run(work)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.object_count(resource) == 6 * 150
    assert int(store.resource_version) == 4 + 6 * 150 * 2
    assert all(
        "orphan" in o["metadata"]["finalizers"]
        for o in store.snapshot()
        if o["kind"] == "ConfigMap"
    )


@pytest.mark.event_loops("asyncio", "trio")
async def test_watch_works_under_asyncio_and_trio(clock) -> None:
    store = InMemoryStore(clock=clock)
    resource = cm(store)
    received: list[str] = []

    async def consume() -> None:
        stream = store.watch(resource, resource_version=store.resource_version)
        async with aclosing(stream):
            async for event in stream:
                received.append(event.object["metadata"]["name"])
                if len(received) == 20:
                    return

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.sleep(0)
            for i in range(20):
                await store.create(resource, body(f"o{i:02d}"))
                if i % 5 == 0:
                    await anyio.sleep(0.001)
    assert received == [f"o{i:02d}" for i in range(20)]
