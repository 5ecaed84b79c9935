"""End-to-end cascades: InMemoryStore + GarbageCollector, as a cluster would behave.

Each test states the Kubernetes behaviour it checks (gc-semantics.md item).
"""

from __future__ import annotations

import anyio
import pytest

from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import (
    delete,
    exists,
    fake_ref,
    live,
    make,
    owner_uids,
    patch_merge,
    ref,
    running_gc,
    settle,
)

pytestmark = [pytest.mark.anyio, pytest.mark.event_loops("asyncio", "trio")]


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


async def deployment_tree(store: InMemoryStore, name: str, pods: int = 3, block: bool = True):
    d = await make(store, "Deployment", name)
    rs = await make(
        store, "ReplicaSet", f"{name}-rs", owners=[ref(d, controller=True, block=block)]
    )
    ps = [
        await make(store, "Pod", f"{name}-rs-{i}", owners=[ref(rs, controller=True, block=block)])
        for i in range(pods)
    ]
    return d, rs, ps


# -- Background (item 56) ----------------------------------------------------


async def test_background_multi_level_chain(store: InMemoryStore) -> None:
    async with running_gc(store) as gc:
        d, rs, pods = await deployment_tree(store, "web")
        bystander = await make(store, "ConfigMap", "unrelated")
        await settle(gc)
        assert await delete(store, d, "Background") is None
        await settle(gc)
        for obj in (d, rs, *pods):
            assert not exists(store, obj)
        assert exists(store, bystander)
        assert gc.metrics.deletions.get("Background") == 1 + len(pods)


async def test_background_fan_out(store: InMemoryStore) -> None:
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        deps = [await make(store, "Secret", f"dep-{i}", owners=[ref(owner)]) for i in range(60)]
        await settle(gc)
        await delete(store, owner, "Background")
        await settle(gc)
        assert [d for d in deps if exists(store, d)] == []


async def test_default_policy_of_replication_controller_orphans(store: InMemoryStore) -> None:
    """v1 ReplicationController defaults to Orphan (item 84)."""
    async with running_gc(store) as gc:
        rc = await make(store, "ReplicationController", "rc")
        pod = await make(store, "Pod", "rc-pod", owners=[ref(rc, controller=True, block=True)])
        await settle(gc)
        await delete(store, rc, None)
        await settle(gc)
        assert not exists(store, rc)
        assert exists(store, pod)
        assert owner_uids(store, pod) == []


# -- Orphan (items 50-55) -------------------------------------------------------


async def test_orphan_keeps_dependents_and_removes_only_that_owner(store: InMemoryStore) -> None:
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        other = await make(store, "ConfigMap", "other-owner")
        both = await make(store, "Secret", "both", owners=[ref(owner), ref(other)])
        only = await make(store, "Secret", "only", owners=[ref(owner, block=True)])
        await settle(gc)
        remaining = await delete(store, owner, "Orphan")
        assert remaining is not None
        assert remaining["metadata"]["finalizers"] == ["orphan"]
        await settle(gc)
        assert not exists(store, owner)
        assert owner_uids(store, both) == [other["metadata"]["uid"]]
        assert owner_uids(store, only) == []
        # An orphaned object with no owners is never touched again (item 54).
        await settle(gc)
        assert exists(store, only)


async def test_orphan_patches_a_dependent_that_is_being_deleted(store: InMemoryStore) -> None:
    """Item 94: the orphan patch works on a dependent held by a finalizer."""
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        dep = await make(store, "Secret", "held", owners=[ref(owner)], finalizers=["x.io/hold"])
        await settle(gc)
        await delete(store, dep, "Background")
        await delete(store, owner, "Orphan")
        await settle(gc)
        assert not exists(store, owner)
        assert owner_uids(store, dep) == []


async def test_second_delete_switches_background_hold_to_orphan(store: InMemoryStore) -> None:
    """Item 87: a second DELETE with Orphan on an object held by [x] orphans its dependents."""
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner", finalizers=["x.io/hold"])
        dep = await make(store, "Secret", "dep", owners=[ref(owner)])
        await settle(gc)
        await delete(store, owner, "Background")
        await settle(gc)
        assert exists(store, dep)  # owner still exists: solid (item 57)
        second = await delete(store, owner, "Orphan")
        assert second is not None and second["metadata"]["finalizers"] == ["x.io/hold", "orphan"]
        await settle(gc)
        assert owner_uids(store, dep) == []
        assert live(store, owner)["metadata"]["finalizers"] == ["x.io/hold"]  # type: ignore[index]


# -- Foreground (items 43-49) ---------------------------------------------------


async def test_foreground_owner_goes_last(store: InMemoryStore) -> None:
    """The owner is removed only after every (blocking) dependent is gone."""
    deleted: list[tuple[int, str]] = []
    async with running_gc(store) as gc:
        d, _rs, pods = await deployment_tree(store, "web")
        await settle(gc)
        start_rv = store.resource_version

        async def watch(api_version: str, kind: str) -> None:
            resource = store.resource_for(api_version, kind)
            async for ev in store.watch(resource, resource_version=start_rv):
                if ev.type == "DELETED":
                    meta = ev.object["metadata"]
                    deleted.append((int(meta["resourceVersion"]), meta["name"]))

        async with anyio.create_task_group() as tg:
            for av, kind in (("v1", "Pod"), ("apps/v1", "ReplicaSet"), ("apps/v1", "Deployment")):
                tg.start_soon(watch, av, kind)
            remaining = await delete(store, d, "Foreground")
            assert remaining is not None
            assert remaining["metadata"]["finalizers"] == ["foregroundDeletion"]
            await settle(gc)
            with anyio.fail_after(5):
                while len(deleted) < 2 + len(pods):
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
        names = [name for _, name in sorted(deleted)]
        assert names[-1] == "web", names
        assert names.index("web-rs") > max(names.index(p["metadata"]["name"]) for p in pods)


async def test_foreground_blocking_dependent_with_finalizer_holds_owner(
    store: InMemoryStore,
) -> None:
    """Items 46 and 48: a blocking dependent held by a finalizer keeps the owner."""
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        blocker = await make(
            store, "Secret", "blocker", owners=[ref(owner, block=True)], finalizers=["x.io/hold"]
        )
        free = await make(store, "Secret", "free", owners=[ref(owner, block=False)])
        await settle(gc)
        await delete(store, owner, "Foreground")
        await settle(gc)
        assert not exists(store, free)  # non-blocking dependents are deleted too
        held = live(store, blocker)
        assert held is not None and held["metadata"].get("deletionTimestamp")
        o = live(store, owner)
        assert o is not None and o["metadata"]["finalizers"] == ["foregroundDeletion"]
        # Release: remove the custom finalizer; the blocker goes, then the owner.
        await patch_merge(store, blocker, {"metadata": {"finalizers": None}})
        await settle(gc)
        assert not exists(store, blocker)
        assert not exists(store, owner)


@pytest.mark.parametrize("release", ["remove-ref", "unblock"])
async def test_foreground_blocker_released_by_ref_change(
    store: InMemoryStore, release: str
) -> None:
    """Item 21: removing the blocking ref, or setting blockOwnerDeletion false, frees the owner."""
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        blocker = await make(
            store, "Secret", "blocker", owners=[ref(owner, block=True)], finalizers=["x.io/hold"]
        )
        await settle(gc)
        await delete(store, owner, "Foreground")
        await settle(gc)
        assert exists(store, owner)
        held = live(store, blocker)
        assert held is not None and held["metadata"].get("deletionTimestamp")
        new_refs = None if release == "remove-ref" else [ref(owner, block=False)]
        await patch_merge(store, blocker, {"metadata": {"ownerReferences": new_refs}})
        await settle(gc)
        assert not exists(store, owner)
        assert exists(store, blocker)  # still held by its own finalizer


async def test_solid_owner_drops_waiting_ref_and_frees_foreground_owner(
    store: InMemoryStore,
) -> None:
    """Items 30.7 and 97: with a solid owner too, the waiting ref is removed; owner completes."""
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        keeper = await make(store, "ConfigMap", "keeper")
        dep = await make(
            store,
            "Secret",
            "dep",
            owners=[ref(owner, block=True), ref(keeper)],
            finalizers=["x.io/hold"],
        )
        await settle(gc)
        await delete(store, owner, "Foreground")
        await settle(gc)
        assert not exists(store, owner)
        cur = live(store, dep)
        assert cur is not None and not cur["metadata"].get("deletionTimestamp")
        assert owner_uids(store, dep) == [keeper["metadata"]["uid"]]


async def test_foreground_cascades_through_levels(store: InMemoryStore) -> None:
    """Item 43: a dependent with dependents of its own is deleted with Foreground."""
    async with running_gc(store) as gc:
        d, rs, pods = await deployment_tree(store, "web", pods=4)
        await settle(gc)
        await delete(store, d, "Foreground")
        await settle(gc)
        for obj in (d, rs, *pods):
            assert not exists(store, obj)
        assert gc.metrics.deletions.get("Foreground", 0) >= 1


async def test_foreground_cycle_is_broken(store: InMemoryStore) -> None:
    """Item 49: a blocking cycle a->c->b->a is deleted entirely."""
    async with running_gc(store) as gc:
        a = await make(store, "ConfigMap", "a")
        b = await make(store, "ConfigMap", "b", owners=[ref(a, block=True)])
        c = await make(store, "ConfigMap", "c", owners=[ref(b, block=True)])
        await patch_merge(store, a, {"metadata": {"ownerReferences": [ref(c, block=True)]}})
        await settle(gc)
        await delete(store, a, "Foreground")
        await settle(gc, timeout=30)
        for obj in (a, b, c):
            assert not exists(store, obj), obj["metadata"]["name"]


# -- Owners solid, dangling, waiting (items 58, 59, 97) -----------------------


async def test_solid_plus_dangling_owner_keeps_object_and_drops_dangling_ref(
    store: InMemoryStore,
) -> None:
    async with running_gc(store) as gc:
        solid = await make(store, "ConfigMap", "solid")
        dep = await make(
            store,
            "Secret",
            "dep",
            owners=[ref(solid), fake_ref("v1", "ConfigMap", "ghost", "ghost-uid")],
        )
        await settle(gc)
        assert exists(store, dep)
        assert owner_uids(store, dep) == [solid["metadata"]["uid"]]


async def test_solid_plus_waiting_owner_keeps_object(store: InMemoryStore) -> None:
    async with running_gc(store) as gc:
        solid = await make(store, "ConfigMap", "solid")
        waiting = await make(store, "ConfigMap", "waiting")
        dep = await make(store, "Secret", "dep", owners=[ref(solid), ref(waiting, block=True)])
        await settle(gc)
        await delete(store, waiting, "Foreground")
        await settle(gc)
        assert not exists(store, waiting)
        assert exists(store, dep)
        assert owner_uids(store, dep) == [solid["metadata"]["uid"]]


async def test_objects_created_with_only_absent_owners_are_deleted(store: InMemoryStore) -> None:
    async with running_gc(store) as gc:
        orphan = await make(
            store, "ConfigMap", "dangling", owners=[fake_ref("v1", "ConfigMap", "nope", "u-1")]
        )
        two = await make(
            store,
            "Secret",
            "two-dangling",
            owners=[
                fake_ref("v1", "ConfigMap", "nope", "u-1"),
                fake_ref("apps/v1", "Deployment", "gone", "u-2"),
            ],
        )
        await settle(gc)
        assert not exists(store, orphan)
        assert not exists(store, two)


async def test_owner_with_wrong_uid_is_dangling(store: InMemoryStore) -> None:
    """Items 33.6 and 58: an object with the owner's name but another uid is not the owner."""
    async with running_gc(store) as gc:
        impostor = await make(store, "ConfigMap", "owner")
        dep = await make(
            store, "Secret", "dep", owners=[fake_ref("v1", "ConfigMap", "owner", "not-its-uid")]
        )
        await settle(gc)
        assert not exists(store, dep)
        assert exists(store, impostor)


async def test_being_deleted_dependent_is_left_alone(store: InMemoryStore) -> None:
    """Item 95: a dependent already being deleted keeps its refs even if owners dangle."""
    async with running_gc(store) as gc:
        dep = await make(
            store,
            "Secret",
            "dep",
            owners=[fake_ref("v1", "ConfigMap", "nope", "u-9")],
            finalizers=["x.io/hold"],
        )
        await delete(store, dep, "Background")
        await settle(gc)
        cur = live(store, dep)
        assert cur is not None
        assert [r["uid"] for r in cur["metadata"]["ownerReferences"]] == ["u-9"]


async def test_object_without_owner_refs_is_never_touched(store: InMemoryStore) -> None:
    """Item 93."""
    async with running_gc(store) as gc:
        cm = await make(store, "ConfigMap", "alone", finalizers=["x.io/keep"])
        rv = cm["metadata"]["resourceVersion"]
        await settle(gc)
        cur = live(store, cm)
        assert cur is not None and cur["metadata"]["resourceVersion"] == rv


async def test_gc_deletes_with_the_policy_of_its_own_finalizers(store: InMemoryStore) -> None:
    """Item 96: a collected object carrying `orphan` orphans its own dependents."""
    async with running_gc(store) as gc:
        top = await make(store, "ConfigMap", "top")
        mid = await make(store, "ConfigMap", "mid", owners=[ref(top)], finalizers=["orphan"])
        leaf = await make(store, "ConfigMap", "leaf", owners=[ref(mid)])
        await settle(gc)
        await delete(store, top, "Background")
        await settle(gc)
        assert not exists(store, top)
        assert not exists(store, mid)
        assert exists(store, leaf)
        assert owner_uids(store, leaf) == []


# -- Invalid references (items 22, 33, 34, 80) ---------------------------------


@pytest.mark.parametrize(
    ("owner_kind", "dep_kind"), [("ConfigMap", "Secret"), ("Secret", "ConfigMap")]
)
@pytest.mark.parametrize("owner_first", [True, False])
async def test_cross_namespace_reference(owner_first: bool, owner_kind: str, dep_kind: str) -> None:
    """Items 22, 33, 80: the invalid dependent is collected and reported; the real owner
    and its valid dependents are never touched, whichever the GC sees first."""
    counter = iter(range(10_000))
    next_uids: list[str] = []  # uids to hand out next, before counting on
    store = InMemoryStore(
        uid_factory=lambda: next_uids.pop(0) if next_uids else f"uid-{next(counter)}"
    )
    await make(store, "Namespace", "ns1", namespace=None)
    await make(store, "Namespace", "ns2", namespace=None)
    async with running_gc(store) as gc:
        if owner_first:
            owner = await make(store, owner_kind, "owner", namespace="ns2")
            await settle(gc)
            bad = await make(store, dep_kind, "bad", namespace="ns1", owners=[ref(owner)])
            valid = await make(store, dep_kind, "valid", namespace="ns2", owners=[ref(owner)])
        else:
            # The bad child exists first, naming the uid the owner will get.
            future = fake_ref("v1", owner_kind, "owner", "owner-uid")
            bad = await make(store, dep_kind, "bad", namespace="ns1", owners=[future])
            next_uids.append("owner-uid")
            owner = await make(store, owner_kind, "owner", namespace="ns2")
            assert owner["metadata"]["uid"] == "owner-uid"
            valid = await make(store, dep_kind, "valid", namespace="ns2", owners=[ref(owner)])
        await settle(gc)
        assert not exists(store, bad)
        assert exists(store, owner)
        assert exists(store, valid)
        assert owner_uids(store, valid) == [owner["metadata"]["uid"]]
        if owner_first:
            assert [e.reason for e in gc.recorded_events] == ["OwnerRefInvalidNamespace"]
            events = [
                o
                for o in store.snapshot()
                if o["kind"] == "Event" and o.get("reason") == "OwnerRefInvalidNamespace"
            ]
            assert len(events) == 1
            assert events[0]["involvedObject"]["name"] == "bad"
            assert events[0]["metadata"]["namespace"] == "ns1"
            assert 'does not exist in namespace "ns1"' in events[0]["message"]
        # Deleting the real owner later still cascades to its valid dependents.
        await delete(store, owner, "Background")
        await settle(gc)
        assert not exists(store, valid)


async def test_cluster_scoped_dependent_of_namespaced_owner_is_never_collected(
    store: InMemoryStore,
) -> None:
    """Item 34: a cluster-scoped dependent naming a namespaced kind is kept forever."""
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        cluster_dep = await make(store, "ClusterRole", "weird", namespace=None, owners=[ref(owner)])
        await settle(gc)
        await delete(store, owner, "Background")
        await settle(gc)
        assert exists(store, cluster_dep)
        assert owner_uids(store, cluster_dep) == [owner["metadata"]["uid"]]


async def test_namespaced_dependent_of_cluster_scoped_owner_is_valid(store: InMemoryStore) -> None:
    async with running_gc(store) as gc:
        owner = await make(store, "ClusterRole", "owner", namespace=None)
        dep = await make(store, "ConfigMap", "dep", owners=[ref(owner)])
        await settle(gc)
        assert exists(store, dep)
        await delete(store, owner, "Background")
        await settle(gc)
        assert not exists(store, dep)


# -- Custom resources: the JSON merge patch fallback (items 63-65) -------------


async def test_custom_kinds_use_json_merge_fallback(store: InMemoryStore) -> None:
    store.register_resource(
        group="example.com", versions="v1", resource="widgets", kind="Widget", namespaced=True
    )
    async with running_gc(store) as gc:
        owner = await store.create_object(
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "w", "namespace": "default"},
            }
        )
        solid = await make(store, "ConfigMap", "solid")
        crs = []
        for i in range(3):
            crs.append(
                await store.create_object(
                    {
                        "apiVersion": "example.com/v1",
                        "kind": "Widget",
                        "metadata": {
                            "name": f"part-{i}",
                            "namespace": "default",
                            "ownerReferences": [ref(owner), ref(solid)] if i == 0 else [ref(owner)],
                        },
                    }
                )
            )
        await settle(gc)
        await delete(store, owner, "Orphan")
        await settle(gc)
        assert not exists(store, owner)
        for cr in crs:
            assert exists(store, cr)
        assert owner_uids(store, crs[0]) == [solid["metadata"]["uid"]]
        assert owner_uids(store, crs[1]) == []
        # The strategic merge attempt got 415 and the merge patch did the work.
        assert store.request_count("patch") >= 3


async def test_custom_kind_registered_while_running_is_picked_up(store: InMemoryStore) -> None:
    async with running_gc(store) as gc:
        store.register_resource(
            group="example.com", versions="v1", resource="gadgets", kind="Gadget"
        )
        owner = await make(store, "ConfigMap", "owner")
        with anyio.fail_after(10):
            while not any(m.kind == "Gadget" for m in gc.monitored_resources()):
                await anyio.sleep(0.02)
        cr = await store.create_object(
            {
                "apiVersion": "example.com/v1",
                "kind": "Gadget",
                "metadata": {"name": "g", "namespace": "default", "ownerReferences": [ref(owner)]},
            }
        )
        await settle(gc)
        await delete(store, owner, "Background")
        await settle(gc)
        assert not exists(store, cr)


# -- Restart in the middle of a cascade ----------------------------------------


@pytest.mark.parametrize("policy", ["Foreground", "Orphan", "Background"])
async def test_restart_mid_cascade_finishes_and_deletes_nothing_wrong(
    store: InMemoryStore, policy: str
) -> None:
    keeper = await make(store, "ConfigMap", "keeper")
    owner = await make(store, "ConfigMap", "owner")
    mids = [
        await make(store, "ConfigMap", f"mid-{i}", owners=[ref(owner, block=True)])
        for i in range(30)
    ]
    leaves = [
        await make(store, "Secret", f"leaf-{i}", owners=[ref(m, block=True)])
        for i, m in enumerate(mids)
    ]
    shared = await make(store, "Secret", "shared", owners=[ref(owner), ref(keeper)])
    async with running_gc(store, workers=2) as gc:
        await settle(gc)
        await delete(store, owner, policy)
        # Let the cascade get going, then kill the controller mid-way.
        await anyio.sleep(0.01)
    async with running_gc(store, workers=3) as gc2:
        await settle(gc2)
    assert exists(store, keeper)
    assert exists(store, shared)
    assert owner_uids(store, shared) == [keeper["metadata"]["uid"]]
    assert not exists(store, owner)
    if policy == "Orphan":
        assert all(exists(store, m) and owner_uids(store, m) == [] for m in mids)
        assert all(exists(store, leaf) for leaf in leaves)
    else:
        assert not any(exists(store, m) for m in mids)
        assert not any(exists(store, leaf) for leaf in leaves)
    # Nothing left waiting on a GC finalizer.
    for obj in store.snapshot():
        fins = obj["metadata"].get("finalizers") or []
        assert "foregroundDeletion" not in fins and "orphan" not in fins, obj["metadata"]


async def test_dry_run_changes_nothing(store: InMemoryStore) -> None:
    actions: list[tuple[str, str]] = []
    async with running_gc(
        store, dry_run=True, on_action=lambda what, d: actions.append((what, str(d["target"])))
    ) as gc:
        orphan = await make(
            store, "ConfigMap", "dangling", owners=[fake_ref("v1", "ConfigMap", "nope", "u-1")]
        )
        await settle(gc)
        assert exists(store, orphan)
        assert any(what == "delete" and "dangling" in target for what, target in actions)


async def test_malformed_object_does_not_kill_the_collector(store: InMemoryStore) -> None:
    """A watch event the graph cannot use is logged and skipped; the GC carries on."""
    async with running_gc(store) as gc:
        mon = next(iter(gc.graph_builder.monitors.values()))
        gc.graph_builder.on_watch_event(
            mon,
            __import__("ownergc.protocols", fromlist=["WatchEvent"]).WatchEvent(
                "ADDED", {"metadata": {"name": "x", "uid": "u", "ownerReferences": "bogus"}}
            ),
        )
        orphan = await make(
            store, "ConfigMap", "dangling", owners=[fake_ref("v1", "ConfigMap", "nope", "u-1")]
        )
        await settle(gc)
        assert not exists(store, orphan)
        assert gc.metrics.errors >= 1
