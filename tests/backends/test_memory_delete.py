"""InMemoryStore DELETE: the apiserver tables of gc-unit-cases.md §14 and items 82-89."""

from __future__ import annotations

from contextlib import aclosing
from datetime import datetime, timedelta, timezone

import pytest

from ownergc.errors import Conflict, Forbidden, Invalid, NotFound
from ownergc.protocols import APIResource, PatchType, Preconditions, PropagationPolicy
from ownergc_backends.memory import GCPolicy, InMemoryStore
from ownergc_backends.memory._deletion import (
    deletion_finalizers_for_garbage_collection,
    mark_as_deleting,
    should_delete_during_update,
)
from ownergc_backends.memory._generation import generation_rule

pytestmark = pytest.mark.anyio

ORPHAN = "orphan"
FG = "foregroundDeletion"
DELETED = "deleted"
NOW = "2026-01-02T03:04:05Z"


def cm(store: InMemoryStore) -> APIResource:
    return store.resource_for("v1", "ConfigMap")


def rc(store: InMemoryStore) -> APIResource:
    return store.resource_for("v1", "ReplicationController")


async def make(
    store: InMemoryStore, resource: APIResource, name: str, finalizers: list[str] | None = None
) -> dict:
    meta: dict = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    ns = "default" if resource.namespaced else None
    return await store.create(resource, {"metadata": meta}, namespace=ns)


async def delete_and_observe(
    store: InMemoryStore,
    resource: APIResource,
    name: str,
    **options,
) -> object:
    """Run DELETE; return DELETED when the object is gone, else its finalizers."""
    ns = "default" if resource.namespaced else None
    returned = await store.delete(resource, name, namespace=ns, **options)
    if returned is None:
        with pytest.raises(NotFound):
            await store.get(resource, name, namespace=ns)
        return DELETED
    live = await store.get(resource, name, namespace=ns, metadata_only=False)
    assert live == returned
    meta = live["metadata"]
    assert meta["deletionTimestamp"] == NOW
    assert meta["deletionGracePeriodSeconds"] == 0
    # The first marking bumps a generation, on the kinds that have one.
    has_generation = generation_rule(resource.group, resource.resource).set_on_create
    assert meta.get("generation") == (2 if has_generation else None)
    return meta.get("finalizers", [])


# ---------------------------------------------------------------------------
# §14.1 TestStoreDeletionPropagation

P = PropagationPolicy
TABLE_14_1 = [
    # existing, policy, default-strategy result, orphan-default-strategy result
    ([], P.FOREGROUND, [FG], [FG]),
    ([], P.BACKGROUND, DELETED, DELETED),
    ([], P.ORPHAN, [ORPHAN], [ORPHAN]),
    ([], None, DELETED, [ORPHAN]),
    ([ORPHAN], P.FOREGROUND, [FG], [FG]),
    ([ORPHAN], P.BACKGROUND, DELETED, DELETED),
    ([ORPHAN], P.ORPHAN, [ORPHAN], [ORPHAN]),
    ([ORPHAN], None, [ORPHAN], [ORPHAN]),
    ([FG], P.FOREGROUND, [FG], [FG]),
    ([FG], P.BACKGROUND, DELETED, DELETED),
    ([FG], P.ORPHAN, [ORPHAN], [ORPHAN]),
    ([FG], None, [FG], [FG]),
]


@pytest.mark.parametrize(("existing", "policy", "default_result", "orphan_result"), TABLE_14_1)
async def test_store_deletion_propagation(
    store: InMemoryStore, existing, policy, default_result, orphan_result
) -> None:
    await make(store, cm(store), "obj", existing)
    assert await delete_and_observe(store, cm(store), "obj", propagation_policy=policy) == (
        default_result
    )
    await make(store, rc(store), "obj", existing)
    assert await delete_and_observe(store, rc(store), "obj", propagation_policy=policy) == (
        orphan_result
    )


# ---------------------------------------------------------------------------
# §14.2 TestStoreDeleteWithOrphanDependents

F1 = ["foo.com/x", ORPHAN, "bar.com/y"]
F2 = ["foo.com/x", "bar.com/y"]
F0: list[str] = []
F3 = [ORPHAN]
NIL = "nil"  # no options at all

TABLE_14_2 = [
    # initial, orphanDependents, strategy ("default" / "orphan"), result
    (F1, True, "default", ["foo.com/x", ORPHAN, "bar.com/y"]),
    (F2, True, "default", ["foo.com/x", "bar.com/y", ORPHAN]),
    (F0, True, "default", [ORPHAN]),
    (F3, True, "default", [ORPHAN]),
    (F1, False, "orphan", ["foo.com/x", "bar.com/y"]),
    (F2, False, "orphan", ["foo.com/x", "bar.com/y"]),
    (F0, False, "orphan", DELETED),
    (F3, False, "orphan", DELETED),
    (F1, NIL, "default", F1),
    (F1, NIL, "orphan", F1),
    (F2, NIL, "default", ["foo.com/x", "bar.com/y"]),
    (F2, NIL, "orphan", ["foo.com/x", "bar.com/y", ORPHAN]),
    (F0, NIL, "default", DELETED),
    (F0, NIL, "orphan", [ORPHAN]),
    (F3, NIL, "default", [ORPHAN]),
    (F3, NIL, "orphan", [ORPHAN]),
]


@pytest.mark.parametrize(("initial", "orphan_dependents", "strategy", "result"), TABLE_14_2)
async def test_store_delete_with_orphan_dependents(
    store: InMemoryStore, initial, orphan_dependents, strategy, result
) -> None:
    resource = cm(store) if strategy == "default" else rc(store)
    await make(store, resource, "obj", initial)
    options = {} if orphan_dependents == NIL else {"orphan_dependents": orphan_dependents}
    assert await delete_and_observe(store, resource, "obj", **options) == result


# ---------------------------------------------------------------------------
# §14.3 the default may depend on the request version


@pytest.mark.parametrize(
    ("version", "changed", "finalizers"),
    [("v1beta1", True, [ORPHAN]), ("v1beta2", True, [ORPHAN]), ("v1", False, [])],
)
def test_deletion_finalizers_depend_on_version_default(version, changed, finalizers) -> None:
    policy = {"v1beta1": GCPolicy.ORPHAN, "v1beta2": GCPolicy.ORPHAN, "v1": GCPolicy.BACKGROUND}
    assert deletion_finalizers_for_garbage_collection([], policy[version]) == (changed, finalizers)


@pytest.mark.parametrize(
    ("version", "result"), [("v1beta1", [ORPHAN]), ("v1beta2", [ORPHAN]), ("v1", DELETED)]
)
async def test_store_uses_the_default_of_the_request_version(
    store: InMemoryStore, version, result
) -> None:
    store.register_resource(
        group="example.com",
        versions=["v1", "v1beta2", "v1beta1"],
        resource="replicasets",
        kind="ReplicaSet",
        default_gc_policy={"v1beta1": "Orphan", "v1beta2": "Orphan", "v1": "Background"},
    )
    await make(store, store.resource_for("example.com/v1", "ReplicaSet"), "rs")
    resource = store.resource_for(f"example.com/{version}", "ReplicaSet")
    assert await delete_and_observe(store, resource, "rs") == result


# ---------------------------------------------------------------------------
# §14.4 markAsDeleting

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("existing", "expected_timestamp", "expected_generation"),
    [
        (None, "2026-01-02T03:04:05Z", 4),
        ("2026-01-02T03:05:05Z", "2026-01-02T03:04:05Z", 3),  # in the future -> now
        ("2026-01-02T03:03:05Z", "2026-01-02T03:03:05Z", 3),  # in the past -> unchanged
    ],
)
def test_mark_as_deleting(existing, expected_timestamp, expected_generation) -> None:
    meta: dict = {"name": "x", "generation": 3, "deletionGracePeriodSeconds": 30}
    if existing is not None:
        meta["deletionTimestamp"] = existing
    obj = {"metadata": meta}
    marked = mark_as_deleting(obj, T0)
    assert marked["metadata"]["deletionTimestamp"] == expected_timestamp
    assert marked["metadata"]["generation"] == expected_generation
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert obj["metadata"] is meta and meta["deletionGracePeriodSeconds"] == 30  # untouched


def test_mark_as_deleting_leaves_zero_generation_alone() -> None:
    marked = mark_as_deleting({"metadata": {"name": "x"}}, T0)
    assert "generation" not in marked["metadata"]
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-02T03:04:05Z"


# ---------------------------------------------------------------------------
# §14.5 ShouldDeleteDuringUpdate


@pytest.mark.parametrize(
    ("finalizers", "deletion", "grace", "expected"),
    [
        (["x/y"], "2026-01-02T03:04:05Z", 0, False),
        (["x/y"], None, None, False),
        ([], None, None, False),
        ([], None, 0, False),
        ([], "2026-01-02T03:04:05Z", None, True),
        ([], "2026-01-02T03:04:05Z", 0, True),
        ([], "2026-01-02T03:04:05Z", 30, False),
    ],
)
def test_should_delete_during_update(finalizers, deletion, grace, expected) -> None:
    meta: dict = {"name": "x"}
    if deletion is not None:
        meta["deletionTimestamp"] = deletion
    if grace is not None:
        meta["deletionGracePeriodSeconds"] = grace
    assert should_delete_during_update(finalizers, meta) is expected


async def test_emptying_finalizers_of_a_live_object_keeps_it(store: InMemoryStore) -> None:
    await make(store, cm(store), "live", ["x/y"])
    out = await store.patch(
        cm(store),
        "live",
        {"metadata": {"finalizers": None}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    assert "finalizers" not in out["metadata"]
    assert store.exists("v1", "ConfigMap", "live", "default")


# ---------------------------------------------------------------------------
# Item 82: options validation


@pytest.mark.parametrize(
    "options",
    [
        {"propagation_policy": "Sideways"},
        {"propagation_policy": "orphan"},  # case matters
        {"propagation_policy": P.ORPHAN, "orphan_dependents": True},
        {"propagation_policy": P.BACKGROUND, "orphan_dependents": False},
    ],
)
async def test_invalid_delete_options_are_422_and_change_nothing(
    store: InMemoryStore, options
) -> None:
    created = await make(store, cm(store), "obj")
    with pytest.raises(Invalid) as info:
        await store.delete(cm(store), "obj", namespace="default", **options)
    assert info.value.status == 422
    live = await store.get(cm(store), "obj", namespace="default", metadata_only=False)
    assert live == created


async def test_policy_may_be_given_as_a_string(store: InMemoryStore) -> None:
    await make(store, cm(store), "obj")
    out = await store.delete(cm(store), "obj", namespace="default", propagation_policy="Foreground")
    assert out is not None and out["metadata"]["finalizers"] == [FG]


# ---------------------------------------------------------------------------
# Items 67 and 85: preconditions


async def test_delete_preconditions(store: InMemoryStore) -> None:
    created = await make(store, cm(store), "obj")
    uid, rv = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    for bad in (
        Preconditions(uid="other"),
        Preconditions(resource_version="999"),
        Preconditions(uid=uid, resource_version="1"),
    ):
        with pytest.raises(Conflict) as info:
            await store.delete(cm(store), "obj", namespace="default", preconditions=bad)
        assert info.value.status == 409
        assert store.exists("v1", "ConfigMap", "obj", "default")
    assert store.resource_version == rv  # nothing was written
    result = await store.delete(
        cm(store),
        "obj",
        namespace="default",
        preconditions=Preconditions(uid=uid, resource_version=rv),
    )
    assert result is None
    assert not store.exists("v1", "ConfigMap", "obj", "default")


async def test_delete_precondition_checked_before_finalizer_update(store: InMemoryStore) -> None:
    await make(store, cm(store), "obj", ["x/y"])
    with pytest.raises(Conflict):
        await store.delete(
            cm(store),
            "obj",
            namespace="default",
            propagation_policy=P.ORPHAN,
            preconditions=Preconditions(uid="nope"),
        )
    live = await store.get(cm(store), "obj", namespace="default")
    assert live["metadata"]["finalizers"] == ["x/y"]
    assert "deletionTimestamp" not in live["metadata"]


async def test_delete_of_missing_object_is_not_found(store: InMemoryStore) -> None:
    with pytest.raises(NotFound) as info:
        await store.delete(cm(store), "ghost", namespace="default")
    assert info.value.status == 404
    assert info.value.message == 'configmaps "ghost" not found'


# ---------------------------------------------------------------------------
# Item 84: default policies of the built-ins


@pytest.mark.parametrize(
    ("api_version", "kind", "result"),
    [
        ("v1", "ReplicationController", [ORPHAN]),
        ("batch/v1", "Job", [ORPHAN]),
        ("apps/v1", "Deployment", DELETED),
        ("apps/v1", "ReplicaSet", DELETED),
        ("apps/v1", "DaemonSet", DELETED),
        ("apps/v1", "StatefulSet", DELETED),
        ("batch/v1", "CronJob", DELETED),
        ("v1", "ConfigMap", DELETED),
        ("v1", "Secret", DELETED),
        ("v1", "Pod", DELETED),
        ("v1", "Namespace", DELETED),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", DELETED),
    ],
)
async def test_default_policy_per_resource(store: InMemoryStore, api_version, kind, result) -> None:
    resource = store.resource_for(api_version, kind)
    await make(store, resource, "obj")
    assert await delete_and_observe(store, resource, "obj") == result


async def test_custom_resources_default_to_background(store: InMemoryStore) -> None:
    resource = store.register_resource(
        group="example.com", versions="v1", resource="widgets", kind="Widget"
    )
    await make(store, resource, "w")
    assert await delete_and_observe(store, resource, "w") == DELETED


@pytest.mark.parametrize(("api_version"), ["v1", "events.k8s.io/v1"])
@pytest.mark.parametrize("policy", [P.ORPHAN, P.FOREGROUND, None])
async def test_events_never_get_gc_finalizers(store: InMemoryStore, api_version, policy) -> None:
    events = store.resource_for(api_version, "Event")
    await make(store, events, "ev")
    assert await delete_and_observe(store, events, "ev", propagation_policy=policy) == DELETED
    await make(store, events, "held", ["x/y"])
    assert await delete_and_observe(store, events, "held", propagation_policy=policy) == ["x/y"]


# ---------------------------------------------------------------------------
# Item 86: custom finalizers


@pytest.mark.parametrize(
    ("policy", "result"),
    [
        (P.BACKGROUND, ["x/y"]),
        (P.ORPHAN, ["x/y", ORPHAN]),
        (P.FOREGROUND, ["x/y", FG]),
        (None, ["x/y"]),
    ],
)
async def test_object_with_custom_finalizer(store: InMemoryStore, policy, result) -> None:
    await make(store, cm(store), "obj", ["x/y"])
    assert await delete_and_observe(store, cm(store), "obj", propagation_policy=policy) == result


# ---------------------------------------------------------------------------
# Item 87: DELETE of an object already being deleted


@pytest.mark.parametrize(
    ("first", "second", "result"),
    [
        (P.BACKGROUND, P.ORPHAN, ["x/y", ORPHAN]),
        (P.BACKGROUND, P.FOREGROUND, ["x/y", FG]),
        (P.FOREGROUND, P.BACKGROUND, ["x/y"]),
        (P.ORPHAN, P.FOREGROUND, ["x/y", FG]),
        (P.FOREGROUND, P.ORPHAN, ["x/y", ORPHAN]),
        (P.ORPHAN, None, ["x/y", ORPHAN]),
    ],
)
async def test_second_delete_recomputes_finalizers(
    store: InMemoryStore, clock, first, second, result
) -> None:
    await make(store, cm(store), "obj", ["x/y"])
    await store.delete(cm(store), "obj", namespace="default", propagation_policy=first)
    clock.advance(60)
    out = await store.delete(cm(store), "obj", namespace="default", propagation_policy=second)
    assert out is not None
    assert out["metadata"]["finalizers"] == result
    assert out["metadata"]["deletionTimestamp"] == NOW  # never moved later
    assert "generation" not in out["metadata"]  # ConfigMaps have none to bump


async def test_second_identical_delete_writes_nothing(store: InMemoryStore, clock) -> None:
    await make(store, cm(store), "obj", ["x/y"])
    first = await store.delete(cm(store), "obj", namespace="default", propagation_policy=P.ORPHAN)
    assert first is not None
    clock.advance(5)
    second = await store.delete(cm(store), "obj", namespace="default", propagation_policy=P.ORPHAN)
    assert second == first
    assert store.resource_version == first["metadata"]["resourceVersion"]


async def test_second_delete_bypasses_no_new_finalizers_rule(store: InMemoryStore) -> None:
    await make(store, cm(store), "obj", ["x/y"])
    await store.delete(cm(store), "obj", namespace="default")
    with pytest.raises(Invalid):  # a patch may not add the finalizer ...
        await store.patch(
            cm(store),
            "obj",
            {"metadata": {"finalizers": ["x/y", ORPHAN]}},
            patch_type=PatchType.MERGE,
            namespace="default",
        )
    out = await store.delete(cm(store), "obj", namespace="default", propagation_policy=P.ORPHAN)
    assert out is not None and out["metadata"]["finalizers"] == ["x/y", ORPHAN]  # ... DELETE may


async def test_foreground_then_background_on_finalizer_only_object_removes_it(
    store: InMemoryStore,
) -> None:
    await make(store, cm(store), "obj")
    await store.delete(cm(store), "obj", namespace="default", propagation_policy=P.FOREGROUND)
    assert (
        await store.delete(cm(store), "obj", namespace="default", propagation_policy=P.BACKGROUND)
        is None
    )
    assert not store.exists("v1", "ConfigMap", "obj", "default")


# ---------------------------------------------------------------------------
# Item 88: removal when the last finalizer goes


@pytest.mark.parametrize("patch_type", [PatchType.MERGE, PatchType.STRATEGIC_MERGE, PatchType.JSON])
async def test_removing_last_finalizer_removes_deleting_object(
    store: InMemoryStore, patch_type
) -> None:
    await make(store, cm(store), "obj", [ORPHAN])
    held = await store.delete(cm(store), "obj", namespace="default", propagation_policy=P.ORPHAN)
    assert held is not None
    rv = held["metadata"]["resourceVersion"]
    patch: object
    if patch_type is PatchType.JSON:
        patch = [{"op": "remove", "path": "/metadata/finalizers"}]
    elif patch_type is PatchType.MERGE:
        patch = {"metadata": {"resourceVersion": rv, "finalizers": None}}
    else:
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [ORPHAN]}}
    events = store.watch(cm(store), resource_version=rv, namespace="default")
    out = await store.patch(cm(store), "obj", patch, patch_type=patch_type, namespace="default")
    assert "finalizers" not in out["metadata"]
    assert int(out["metadata"]["resourceVersion"]) > int(rv)
    assert not store.exists("v1", "ConfigMap", "obj", "default")
    async with aclosing(events):
        event = await events.__anext__()
    assert event.type == "DELETED"
    assert event.object["metadata"]["resourceVersion"] == out["metadata"]["resourceVersion"]


async def test_update_with_empty_finalizers_removes_deleting_object(store: InMemoryStore) -> None:
    await make(store, cm(store), "obj", ["x/y"])
    held = await store.delete(cm(store), "obj", namespace="default")
    assert held is not None
    held["metadata"]["finalizers"] = []
    out = await store.update(cm(store), held)
    assert "finalizers" not in out["metadata"]
    assert not store.exists("v1", "ConfigMap", "obj", "default")


async def test_removing_one_of_two_finalizers_keeps_object(store: InMemoryStore) -> None:
    await make(store, cm(store), "obj", ["a.io/x", "b.io/y"])
    await store.delete(cm(store), "obj", namespace="default")
    out = await store.patch(
        cm(store),
        "obj",
        {"metadata": {"finalizers": ["b.io/y"]}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    assert out["metadata"]["finalizers"] == ["b.io/y"]
    assert out["metadata"]["deletionTimestamp"] == NOW


# ---------------------------------------------------------------------------
# Namespaces


async def test_immortal_namespaces_cannot_be_deleted(store: InMemoryStore) -> None:
    namespaces = store.resource_for("v1", "Namespace")
    for name in ("default", "kube-system", "kube-public"):
        with pytest.raises(Forbidden):
            await store.delete(namespaces, name)
        assert store.exists("v1", "Namespace", name)
    assert await store.delete(namespaces, "kube-node-lease") is None


async def test_namespace_delete_is_generic_and_keeps_contents(store: InMemoryStore) -> None:
    namespaces = store.resource_for("v1", "Namespace")
    await store.create(namespaces, {"metadata": {"name": "team"}})
    await store.create(cm(store), {"metadata": {"name": "c", "namespace": "team"}})
    assert await store.delete(namespaces, "team") is None
    assert store.exists("v1", "ConfigMap", "c", "team")  # no namespace controller (documented)


async def test_deletion_timestamp_uses_the_clock(store: InMemoryStore, clock) -> None:
    await make(store, cm(store), "obj", ["x/y"])
    clock.advance(timedelta(hours=1).total_seconds())
    out = await store.delete(cm(store), "obj", namespace="default")
    assert out is not None and out["metadata"]["deletionTimestamp"] == "2026-01-02T04:04:05Z"
