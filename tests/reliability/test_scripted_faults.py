"""FaultyStore's scripted faults on their own: delays, dropped and expired watches,
from the watch's own event loop and from another thread."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import anyio.from_thread
import pytest

from ownergc.errors import ResourceExpired, ServerError, Unavailable
from ownergc.protocols import WatchEvent
from ownergc.testing.faults import FaultyStore
from ownergc_backends.memory import InMemoryStore

pytestmark = pytest.mark.anyio


def configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
    }


async def test_delay_next_answers_late_then_normally() -> None:
    faulty = FaultyStore(InMemoryStore())
    configmaps = faulty.resource_for("v1", "ConfigMap")
    faulty.delay_next("list", 0.2, resource=configmaps)
    started = time.monotonic()
    assert (await faulty.list(configmaps)).items == []
    assert time.monotonic() - started >= 0.2
    started = time.monotonic()
    await faulty.list(configmaps)
    assert time.monotonic() - started < 0.2


async def test_fail_next_with_a_delay_waits_then_raises_and_changes_nothing() -> None:
    faulty = FaultyStore(InMemoryStore())
    configmaps = faulty.resource_for("v1", "ConfigMap")
    faulty.fail_next("create", ServerError("etcd is sad"), delay=0.1)
    started = time.monotonic()
    with pytest.raises(ServerError):
        await faulty.create(configmaps, configmap("a"), namespace="default")
    assert time.monotonic() - started >= 0.1
    assert faulty.object_count(configmaps) == 0


async def test_scripted_faults_are_validated() -> None:
    faulty = FaultyStore(InMemoryStore())
    with pytest.raises(ValueError, match="unknown verb"):
        faulty.fail_next("destroy", ServerError("x"))
    with pytest.raises(ValueError, match="times"):
        faulty.delay_next("get", 1.0, times=0)
    with pytest.raises(ValueError, match="negative"):
        faulty.delay_next("get", -1.0)


async def test_clear_scripted_forgets_pending_faults() -> None:
    faulty = FaultyStore(InMemoryStore())
    configmaps = faulty.resource_for("v1", "ConfigMap")
    faulty.fail_next("list", ServerError("x"), times=5)
    faulty.clear_scripted()
    assert (await faulty.list(configmaps)).items == []


async def _first_event_then_wait(
    faulty: FaultyStore, rv: str, seen: list[WatchEvent], failure: list[BaseException]
) -> None:
    configmaps = faulty.resource_for("v1", "ConfigMap")
    try:
        async for event in faulty.watch(configmaps, resource_version=rv):
            seen.append(event)
    except Exception as exc:
        failure.append(exc)


@pytest.mark.event_loops("asyncio", "trio")
async def test_drop_watches_ends_open_streams_with_unavailable() -> None:
    store = InMemoryStore()
    faulty = FaultyStore(store)
    rv = store.resource_version
    seen: list[WatchEvent] = []
    failure: list[BaseException] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_first_event_then_wait, faulty, rv, seen, failure)
        await store.create_object(configmap("a"))
        with anyio.fail_after(5):
            while not seen:
                await anyio.sleep(0.01)
        assert faulty.open_watches == 1
        assert faulty.drop_watches() == 1
    assert [e.object["metadata"]["name"] for e in seen] == ["a"]
    assert len(failure) == 1 and isinstance(failure[0], Unavailable)
    assert faulty.open_watches == 0


@pytest.mark.event_loops("asyncio", "trio")
async def test_expire_watches_ends_streams_and_refuses_older_versions() -> None:
    store = InMemoryStore()
    faulty = FaultyStore(store)
    configmaps = faulty.resource_for("v1", "ConfigMap")
    old = (await store.create_object(configmap("a")))["metadata"]["resourceVersion"]
    await store.create_object(configmap("b"))
    seen: list[WatchEvent] = []
    failure: list[BaseException] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_first_event_then_wait, faulty, old, seen, failure)
        with anyio.fail_after(5):
            while not seen:
                await anyio.sleep(0.01)
        faulty.expire_watches()
    assert len(failure) == 1 and isinstance(failure[0], ResourceExpired)
    assert failure[0].code == 410
    with pytest.raises(ResourceExpired):
        await faulty.watch(configmaps, resource_version=old).__anext__()
    # A client that relisted watches from the current version normally.
    current = (await faulty.list(configmaps)).resource_version
    stream = faulty.watch(configmaps, resource_version=current)
    await store.create_object(configmap("c"))
    with anyio.fail_after(5):
        event = await stream.__anext__()
    assert event.object["metadata"]["name"] == "c"
    await stream.aclose()  # type: ignore[attr-defined]


def test_drop_watches_from_another_thread() -> None:
    """A sync test thread ends a watch served on an event loop in another thread."""
    store = InMemoryStore()
    faulty = FaultyStore(store)
    seen: list[WatchEvent] = []
    failure: list[BaseException] = []
    with anyio.from_thread.start_blocking_portal() as portal:
        rv = store.resource_version
        future = portal.start_task_soon(_first_event_then_wait, faulty, rv, seen, failure)
        portal.call(store.create_object, configmap("a"))
        deadline = time.monotonic() + 5
        while not seen:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert threading.current_thread() is threading.main_thread()
        assert faulty.drop_watches() == 1
        future.result(timeout=5)
    assert len(failure) == 1 and isinstance(failure[0], Unavailable)
