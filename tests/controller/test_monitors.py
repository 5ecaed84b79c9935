"""Monitors and resilience: rediscovery, relist on 410, retries, never a dead worker."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ownergc.errors import Conflict, ServerError, TooManyRequests
from ownergc.testing.faults import FaultyStore
from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import delete, exists, fake_ref, make, ref, running_gc, settle

pytestmark = pytest.mark.anyio


async def test_removed_kind_stops_its_monitor_and_new_kind_starts_one() -> None:
    store = InMemoryStore()
    store.register_resource(group="example.com", versions="v1", resource="things", kind="Thing")
    async with running_gc(store) as gc:
        assert any(r.kind == "Thing" for r in gc.monitored_resources())
        store.unregister_resource("example.com", "things")
        with anyio.fail_after(5):
            while any(r.kind == "Thing" for r in gc.monitored_resources()):
                await anyio.sleep(0.02)
        store.register_resource(
            group="example.com",
            versions=["v1", "v2"],
            preferred_version="v2",
            resource="things",
            kind="Thing",
        )
        with anyio.fail_after(5):
            while not any(r.kind == "Thing" for r in gc.monitored_resources()):
                await anyio.sleep(0.02)
        assert [r.version for r in gc.monitored_resources() if r.kind == "Thing"] == ["v2"]


async def test_relist_after_expired_watch_catches_deletions_missed_meanwhile() -> None:
    # A tiny event window: the monitor's watch falls behind and gets 410 Gone.
    store = InMemoryStore(event_window=5)
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        deps = [await make(store, "Secret", f"d-{i}", owners=[ref(owner)]) for i in range(20)]
        await settle(gc)
        await delete(store, owner, "Background")
        await settle(gc)
        assert not any(exists(store, d) for d in deps)
        assert owner["metadata"]["uid"] not in gc.uid_to_node


async def test_transient_server_errors_are_retried_until_the_cascade_finishes() -> None:
    store = FaultyStore(InMemoryStore())
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        deps = [await make(store, "Secret", f"d-{i}", owners=[ref(owner)]) for i in range(5)]
        await settle(gc)
        secrets = store.resource_for("v1", "Secret")
        store.fail_next("delete", ServerError("etcd hiccup"), resource=secrets, times=3)
        store.fail_next(
            "delete", TooManyRequests("slow down", retry_after=0.01), resource=secrets, times=2
        )
        store.fail_next("get", Conflict("racing"), resource=secrets, times=2)
        await delete(store, owner, "Background")
        with anyio.fail_after(20):
            while any(exists(store, d) for d in deps):
                await anyio.sleep(0.02)
        assert gc.metrics.errors >= 1


async def test_orphaning_retries_after_a_failed_patch_and_keeps_the_finalizer_until_done() -> None:
    store = FaultyStore(InMemoryStore())
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        dep = await make(store, "Secret", "dep", owners=[ref(owner)])
        await settle(gc)
        store.fail_next(
            "patch", ServerError("boom"), resource=store.resource_for("v1", "Secret"), times=2
        )
        await delete(store, owner, "Orphan")
        with anyio.fail_after(20):
            while exists(store, owner):
                await anyio.sleep(0.02)
        cur = store.get_object("v1", "Secret", "dep", "default")
        assert cur is not None and not cur["metadata"].get("ownerReferences")
        del dep


async def test_unknown_owner_kind_is_never_treated_as_absent() -> None:
    """Items 59 and 99: an unmappable owner kind keeps the dependent, retried forever."""
    store = InMemoryStore()
    async with running_gc(store) as gc:
        dep = await make(
            store,
            "Secret",
            "dep",
            owners=[
                fake_ref("gone.example.com/v1", "Gadget", "g", "u-1"),
                fake_ref("v1", "ConfigMap", "absent", "u-2"),
            ],
        )
        await settle(gc)
        await anyio.sleep(0.2)
        assert exists(store, dep)
        cur = store.get_object("v1", "Secret", "dep", "default")
        assert cur is not None and len(cur["metadata"]["ownerReferences"]) == 2


async def test_discovery_failure_of_one_group_keeps_the_rest_working() -> None:
    store = InMemoryStore()
    store.register_resource(group="broken.example.com", versions="v1", resource="xs", kind="X")
    store.set_discovery_failure("broken.example.com/v1", "aggregated API unavailable")
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        dep = await make(store, "Secret", "dep", owners=[ref(owner)])
        await settle(gc)
        await delete(store, owner, "Background")
        await settle(gc)
        assert not exists(store, dep)
        assert gc.metrics.resources_sync_errors >= 1


def _secret(name: str, uid: str, rv: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": rv},
    }


async def _apply_queued_changes(gb: Any) -> None:
    """Run the graph-changes loop until the graph-changes queue is empty."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(gb.process_graph_changes)
        with anyio.fail_after(5):
            while gb.pending_changes:
                await anyio.sleep(0)
        tg.cancel_scope.cancel()


async def test_watch_events_apply_at_once_or_queue_behind_earlier_changes() -> None:
    """The graph-changes queue keeps arrival order: an event applies at once only
    when nothing waits in it, and the monitor's resourceVersion only takes strings."""
    from ownergc import ObjectReference
    from ownergc.controller import GarbageCollector
    from ownergc.controller._monitors import Monitor
    from ownergc.protocols import APIResource, WatchEvent

    gc = GarbageCollector(InMemoryStore())
    gb = gc.graph_builder
    secrets = APIResource("", "v1", "secrets", "Secret", True, frozenset({"list", "watch"}))
    mon = Monitor(secrets, anyio.CancelScope())

    gb.on_watch_event(mon, WatchEvent("ADDED", _secret("a", "uid-a", "5")))
    assert "uid-a" in gc.uid_to_node and mon.resource_version == "5"  # applied at once

    gb.on_watch_event(mon, WatchEvent("MODIFIED", _secret("a", "uid-a", 7)))
    assert mon.resource_version == "5"  # a non-string version is not watched from

    gb.on_watch_event(mon, WatchEvent("ADDED", {"metadata": {"resourceVersion": "8"}}))
    assert gc.metrics.errors == 1 and mon.resource_version == "8"  # malformed: counted

    # A change waits in the queue: the next events queue behind it, in order.
    gb.enqueue_virtual_delete(ObjectReference("v1", "Secret", "x", "uid-x", "default"))
    gb.on_watch_event(mon, WatchEvent("ADDED", _secret("b", "uid-b", "9")))
    gb.on_watch_event(mon, WatchEvent("DELETED", _secret("a", "uid-a", "10")))
    assert "uid-b" not in gc.uid_to_node and "uid-a" in gc.uid_to_node
    assert mon.resource_version == "10"
    await _apply_queued_changes(gb)
    assert "uid-b" in gc.uid_to_node and "uid-a" not in gc.uid_to_node


class _ListingStore(InMemoryStore):
    """Answers each monitor's first list with the objects given for its kind."""

    def __init__(self, items: dict[str, list[dict[str, object]]]) -> None:
        super().__init__()
        self._items = items

    async def list(self, resource, **kw):  # type: ignore[no-untyped-def,override]
        from ownergc.protocols import ObjectList

        return ObjectList(items=self._items.get(resource.kind, []), resource_version="3")


async def test_first_list_marks_its_monitor_synced_at_once_or_behind_earlier_changes() -> None:
    """A monitor's synced marker follows the graph-changes queue's rule: applied when
    its list is, unless changes wait, and then behind them (so a second monitor's
    first list is not queued behind the first one's marker)."""
    from ownergc import ObjectReference
    from ownergc.controller import GarbageCollector
    from ownergc.controller._monitors import Monitor
    from ownergc.protocols import APIResource

    verbs = frozenset({"list", "watch", "delete"})
    secrets = APIResource("", "v1", "secrets", "Secret", True, verbs)
    maps = APIResource("", "v1", "configmaps", "ConfigMap", True, verbs)
    store = _ListingStore({"Secret": [_secret("a", "uid-a", "1")], "ConfigMap": []})
    gc = GarbageCollector(store)
    gb = gc.graph_builder
    mons = [Monitor(res, anyio.CancelScope()) for res in (secrets, maps)]
    gb.monitors.update({mon.resource: mon for mon in mons})

    await gb.relist(mons[0])
    assert mons[0].synced and not gb.pending_changes and not gb.synced.is_set()
    assert "uid-a" in gc.uid_to_node
    assert gc.metrics.events_processed == 2  # the object and the marker, counted as queued

    gb.enqueue_virtual_delete(ObjectReference("v1", "Secret", "x", "uid-x", "default"))
    await gb.relist(mons[1])
    assert not mons[1].synced and gb.pending_changes == 2  # behind the waiting change
    await _apply_queued_changes(gb)
    assert mons[1].synced and gb.synced.is_set()


async def test_a_list_applied_in_one_call_refuses_a_bad_object_and_goes_on() -> None:
    """With nothing queued, a relist hands the whole list to the core at once
    (``process_list``): an object without usable metadata is counted and logged,
    the others are applied, their dependents enqueued, and what vanished deleted."""
    from ownergc.controller import GarbageCollector
    from ownergc.controller._monitors import Monitor
    from ownergc.protocols import APIResource

    verbs = frozenset({"list", "watch", "delete"})
    secrets = APIResource("", "v1", "secrets", "Secret", True, verbs)
    owner_ref = {"apiVersion": "v1", "kind": "Secret", "name": "gone", "uid": "uid-gone"}
    dependent = _secret("dep", "uid-dep", "2")
    dependent["metadata"]["ownerReferences"] = [owner_ref]  # type: ignore[index]
    first = [_secret("gone", "uid-gone", "1"), dependent]
    store = _ListingStore({"Secret": first})
    gc = GarbageCollector(store)
    gb = gc.graph_builder
    mon = Monitor(secrets, anyio.CancelScope())
    gb.monitors[secrets] = mon
    await gb.relist(mon)
    assert {"uid-gone", "uid-dep"} <= set(gc.uid_to_node)
    assert len(gb.attempt_to_delete) == 0

    bad = {"metadata": {"name": "no-uid", "namespace": "default"}}
    store._items = {"Secret": [bad, dependent, _secret("new", "uid-new", "4")]}
    errors = gc.metrics.errors
    await gb.relist(mon)
    assert gc.metrics.errors == errors + 1
    assert "uid-new" in gc.uid_to_node
    assert "uid-gone" not in gc.uid_to_node  # vanished from the list: deleted
    assert [node.uid for node in gb.attempt_to_delete._queue] == ["uid-dep"]
    assert mon.resource_version == "3"


def test_monitors_start_with_the_core_group() -> None:
    """The core group's collections (pods, events, configmaps, secrets) are the
    biggest in most clusters: their lists start first, while the token bucket
    still has its burst (kube-controller-manager starts them in map order)."""
    from ownergc.controller._graph_builder import _list_order
    from ownergc.protocols import APIResource

    def resource(group: str, name: str) -> APIResource:
        return APIResource(group=group, version="v1", resource=name, kind=name, namespaced=True)

    found = [
        resource("apps", "deployments"),
        resource("", "pods"),
        resource("admissionregistration.k8s.io", "webhooks"),
        resource("", "configmaps"),
        resource("batch", "jobs"),
    ]
    ordered = [(r.group, r.resource) for r in sorted(found, key=_list_order)]
    assert ordered == [
        ("", "configmaps"),
        ("", "pods"),
        ("admissionregistration.k8s.io", "webhooks"),
        ("apps", "deployments"),
        ("batch", "jobs"),
    ]
