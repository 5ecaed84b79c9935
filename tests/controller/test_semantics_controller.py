"""Controller-level behaviours of gc-semantics.md not covered elsewhere (items 3, 9, 10,
13, 14, 68, 74, 98)."""

from __future__ import annotations

import inspect

import anyio
import pytest

from ownergc.controller import DEFAULT_IGNORED_RESOURCES, GarbageCollector
from ownergc.errors import Conflict
from ownergc.testing.faults import FaultyStore
from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import delete, exists, make, ref, running_gc, settle

pytestmark = pytest.mark.anyio


async def test_item3_node_identity_comes_from_the_informer_version() -> None:
    store = InMemoryStore()
    store.register_resource(
        group="example.com",
        versions=["v1beta1", "v1"],
        preferred_version="v1",
        resource="widgets",
        kind="Widget",
    )
    beta = store.resource_for("example.com/v1beta1", "Widget")
    async with running_gc(store) as gc:
        w = await store.create(
            beta,
            {
                "apiVersion": "example.com/v1beta1",
                "kind": "Widget",
                "metadata": {"name": "w", "namespace": "default"},
            },
        )
        await settle(gc)
        node = gc.uid_to_node[w["metadata"]["uid"]]
        assert node.identity.api_version == "example.com/v1"


async def test_items9_10_only_preferred_deletable_unignored_resources_are_monitored() -> None:
    store = InMemoryStore()
    store.register_resource(
        group="a.example.com",
        versions="v1",
        resource="nowatch",
        kind="NoWatch",
        verbs=["get", "list", "delete"],
    )
    store.register_resource(
        group="b.example.com",
        versions=["v1", "v2"],
        preferred_version="v2",
        resource="multis",
        kind="Multi",
    )
    async with running_gc(
        store, ignored_resources={*DEFAULT_IGNORED_RESOURCES, ("", "secrets")}
    ) as gc:
        monitored = {(r.group, r.version, r.resource) for r in gc.monitored_resources()}
    assert ("", "v1", "configmaps") in monitored
    assert ("", "v1", "events") not in monitored
    assert ("events.k8s.io", "v1", "events") not in monitored
    assert ("", "v1", "secrets") not in monitored  # --ignore-resource
    assert ("a.example.com", "v1", "nowatch") not in monitored  # lacks the watch verb
    assert ("b.example.com", "v2", "multis") in monitored
    assert ("b.example.com", "v1", "multis") not in monitored  # not preferred


async def test_item13_not_synced_without_monitors_and_workers_start_after_timeout() -> None:
    store = FaultyStore(InMemoryStore())
    gc = GarbageCollector(store, initial_sync_timeout=0.2)
    assert not gc.is_synced()
    configmaps = store.resource_for("v1", "ConfigMap")
    # One resource can never list: the others still get collected after the timeout.
    from ownergc.errors import ServerError

    store.fail_next("list", ServerError("never lists"), resource=configmaps, times=10_000)
    owner = await make(store, "Secret", "owner")
    dep = await make(store, "Secret", "dep", owners=[ref(owner)])
    async with anyio.create_task_group() as tg:
        tg.start_soon(gc.run)
        with anyio.fail_after(10):
            await gc._workers_started.wait()
        assert not gc.is_synced()
        await delete(store, owner, "Background")
        with anyio.fail_after(10):
            while exists(store, dep):
                await anyio.sleep(0.02)
        assert gc.metrics.resources_sync_errors >= 1
        tg.cancel_scope.cancel()


def test_items14_74_defaults_are_kube_controller_managers() -> None:
    params = inspect.signature(GarbageCollector).parameters
    assert params["workers"].default == 20
    assert params["discovery_period"].default == 30.0
    assert params["initial_sync_timeout"].default == 30.0
    assert params["absent_owner_cache_size"].default == 500
    assert {("", "events"), ("events.k8s.io", "events")} == DEFAULT_IGNORED_RESOURCES
    gc = GarbageCollector(InMemoryStore())
    assert gc.builder.absent_owner_cache.max_size == 500
    assert [q.name for q in gc.queues] == [
        "garbage_collector_graph_changes",
        "garbage_collector_attempt_to_delete",
        "garbage_collector_attempt_to_orphan",
    ]


async def test_item68_remove_finalizer_gives_up_after_four_conflicts_then_retries_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FaultyStore(InMemoryStore())
    async with running_gc(store, use_cache=False) as gc:
        owner = await make(store, "ConfigMap", "owner")
        await settle(gc)
        configmaps = store.resource_for("v1", "ConfigMap")
        store.fail_next("patch", Conflict("stale"), resource=configmaps, times=4)
        with caplog.at_level("WARNING", logger="ownergc.controller"):
            await delete(store, owner, "Foreground")
            await settle(gc)
        assert not exists(store, owner)  # the later retry succeeded
        assert "updateMaxRetries(4) has reached" in caplog.text


async def test_item98_owner_through_a_served_non_preferred_version_is_solid() -> None:
    store = InMemoryStore()
    store.register_resource(
        group="example.com",
        versions=["v1beta1", "v1"],
        preferred_version="v1",
        resource="widgets",
        kind="Widget",
    )
    async with running_gc(store) as gc:
        owner = await store.create_object(
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "w", "namespace": "default"},
            }
        )
        old_style = {**ref(owner), "apiVersion": "example.com/v1beta1"}
        dep = await make(store, "ConfigMap", "dep", owners=[old_style])
        await settle(gc)
        await anyio.sleep(0.1)
        await settle(gc)
        assert exists(store, dep)
        await delete(store, owner, "Background")
        await settle(gc)
        assert not exists(store, dep)
