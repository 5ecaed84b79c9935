"""Decisions: gc-unit-cases.md §4 (isDangling via plan_owner_lookup + classify_references),
§5 (attemptToDeleteItem decision table) and §6 (processDeletingDependentsItem)."""

from __future__ import annotations

import pytest

from ownergc import (
    AbsentOwnerCache,
    Delete,
    Done,
    EnqueueDelete,
    EnqueueVirtualDelete,
    GraphBuilder,
    NeedOwners,
    ObjectReference,
    Patch,
    Plan,
    Preconditions,
    PropagationPolicy,
    RemoveFinalizer,
    classify_references,
    decide_attempt_to_delete,
    plan_deleting_dependents,
    plan_owner_lookup,
)
from ownergc._core.decisions import NamespacedOwnerOfClusterScopedObject, OwnerLookup
from ownergc._core.refs import owner_references_of
from ownergc.errors import RESTMappingError
from tests.core.core_factories import FG, ORPHAN, compact, ident, obj, ref, upsert


def _never() -> bool:
    raise AssertionError("REST mapping must not be consulted on a cache hit")


# -- §4 isDangling ------------------------------------------------------------------------------

ITEM = ObjectReference("v1", "Pod", "child", "C", "ns1")
OWNER_REF = ref("O", "owner", kind="ReplicaSet", api_version="apps/v1", ctrl=True, block=True)
K0 = ObjectReference("apps/v1", "ReplicaSet", "owner", "O", None)
KI = ObjectReference("apps/v1", "ReplicaSet", "owner", "O", "ns1")


@pytest.mark.parametrize("key", [K0, KI], ids=["1-K0-cached", "2-Ki-cached"])
def test_is_dangling_cache_hit(key):
    cache = AbsentOwnerCache(2)
    cache.add(key)
    cache.add(ident("other"))
    lookup = plan_owner_lookup(OWNER_REF, ITEM, _never, cache)
    assert isinstance(lookup, OwnerLookup) and lookup.dangling
    assert list(cache) == [ident("other"), key], "Has() promotes, nothing is written"
    # a plain bool works too (the caller mapped first)
    assert plan_owner_lookup(OWNER_REF, ITEM, True, cache).dangling  # type: ignore[union-attr]


def test_is_dangling_cache_key_ignores_controller_and_block_flags():
    """§8 TestAbsentOwnerCache: rc1 with controller=false is the same cache key."""
    cache = AbsentOwnerCache()
    cache.add(KI)
    plain = ref("O", "owner", kind="ReplicaSet", api_version="apps/v1", ctrl=False)
    assert plan_owner_lookup(plain, ITEM, _never, cache).dangling  # type: ignore[union-attr]


def test_is_dangling_rest_mapping_failure_is_an_error():
    """Row 3: mapping fails -> error, no cache write; the cache is consulted first."""
    cache = AbsentOwnerCache()

    def unmapped() -> bool:
        raise RESTMappingError("extensions/v1beta1", "Deployment")

    with pytest.raises(RESTMappingError):
        plan_owner_lookup(OWNER_REF, ITEM, unmapped, cache)
    assert len(cache) == 0


def test_is_dangling_cluster_scoped_item_with_namespaced_owner_kind():
    """Row 4: namespacedOwnerOfClusterScopedObjectErr, no lookup."""
    cluster_item = ObjectReference("v1", "Node", "n", "N", None)
    out = plan_owner_lookup(OWNER_REF, cluster_item, True, AbsentOwnerCache())
    assert out == NamespacedOwnerOfClusterScopedObject(OWNER_REF)


@pytest.mark.parametrize(
    ("namespaced", "where", "key"),
    [(True, "ns1", KI), (False, None, K0)],
    ids=["namespaced-owner", "cluster-scoped-owner"],
)
def test_is_dangling_get_plan(namespaced, where, key):
    """Rows 5-8: GET in the item's namespace (or cluster-wide); cache key Kc on 404/mismatch."""
    lookup = plan_owner_lookup(OWNER_REF, ITEM, namespaced, AbsentOwnerCache())
    assert isinstance(lookup, OwnerLookup)
    assert not lookup.dangling
    assert lookup.namespace == where
    assert lookup.cache_key == key


def test_cluster_scoped_item_with_cluster_scoped_owner_is_looked_up_cluster_wide():
    cluster_item = ObjectReference("v1", "Node", "n", "N", None)
    lookup = plan_owner_lookup(OWNER_REF, cluster_item, False, AbsentOwnerCache())
    assert isinstance(lookup, OwnerLookup)
    assert (lookup.dangling, lookup.namespace, lookup.cache_key) == (False, None, K0)


@pytest.mark.parametrize(
    ("owner", "outcome"),
    [
        pytest.param(None, "dangling", id="5-404"),
        pytest.param(obj("someone-else", name="owner"), "dangling", id="7-uid-differs"),
        pytest.param(obj("O", name="owner"), "solid", id="8-found"),
        pytest.param(obj("O", deleting=True, finalizers=[FG]), "waiting", id="8-fg-deleting"),
        pytest.param(obj("O", deleting=True, finalizers=[ORPHAN]), "solid", id="8-orphan-deleting"),
        pytest.param(obj("O", deleting=True, finalizers=["x/y"]), "solid", id="8-custom-deleting"),
        pytest.param(obj("O", deleting=True), "solid", id="8-deleting-no-finalizer"),
        pytest.param(obj("O", finalizers=[FG]), "solid", id="8-fg-not-deleting"),
    ],
)
def test_classify_single_reference(owner, outcome):
    c = classify_references([OWNER_REF], {"O": owner})
    got = {
        "solid": c.solid,
        "dangling": c.dangling,
        "waiting": c.waiting_for_dependents_deletion,
    }
    assert got.pop(outcome) == [OWNER_REF]
    assert got == {k: [] for k in got}


def test_classify_keeps_ref_order_within_each_class():
    refs = [ref("a"), ref("b"), ref("c"), ref("d"), ref("e")]
    owners = {
        "a": None,
        "b": obj("b"),
        "c": obj("c", deleting=True, finalizers=[FG]),
        "d": None,
        "e": obj("e", deleting=True, finalizers=[FG]),
    }
    c = classify_references(refs, owners)
    assert [r.uid for r in c.dangling] == ["a", "d"]
    assert [r.uid for r in c.solid] == ["b"]
    assert [r.uid for r in c.waiting_for_dependents_deletion] == ["c", "e"]


def test_classify_per_reference_lookups_for_refs_sharing_a_uid():
    """isDangling runs per ref: same uid, other kind -> one can be solid, the other dangling."""
    depl = ref("X", "deployment1", api_version="apps/v1", kind="Deployment")
    secret = ref("X", "secretname", kind="Secret")
    c = classify_references([depl, secret], {depl: obj("X", name="deployment1"), secret: None})
    assert c.solid == [depl] and c.dangling == [secret]


def test_classify_without_lookup_result_is_a_clear_error():
    with pytest.raises(ValueError, match="no owner lookup result"):
        classify_references([ref("a")], {"b": None})


# -- §5 attemptToDeleteItem ---------------------------------------------------------------


def _item(builder, refs=(), **kw):
    node = upsert(builder, "I", refs, ns="ns1", **kw)
    builder.drain()
    return node


def _live(refs=(), *, uid="I", finalizers=(), rv="77"):
    return obj(uid, refs, ns="ns1", finalizers=finalizers, rv=rv)


def _decide(node, live, owners):
    first = decide_attempt_to_delete(node, live)
    assert first == NeedOwners(owner_references_of(live))
    plan = decide_attempt_to_delete(node, live, owners)
    assert isinstance(plan, Plan)
    return plan


def solid(uid):
    return obj(uid)


def waiting(uid):
    return obj(uid, deleting=True, finalizers=[FG])


def test_row1_being_deleted_without_deleting_dependents_is_left_alone():
    b = GraphBuilder()
    node = _item(b, [ref("gone")], deleting=True, finalizers=["x/y"])
    for live in (None, _live([ref("gone")])):
        plan = decide_attempt_to_delete(node, live)
        assert isinstance(plan, Plan)
        assert [type(s) for s in plan.steps] == [Done] and not plan.requeue


def test_row2_not_found_enqueues_virtual_delete():
    b = GraphBuilder()
    node = _item(b, [ref("s")])
    assert decide_attempt_to_delete(node, None) == Plan((EnqueueVirtualDelete(node.identity),))


def test_row3_uid_differs_enqueues_virtual_delete():
    b = GraphBuilder()
    node = _item(b, [ref("s")])
    plan = decide_attempt_to_delete(node, _live([ref("s")], uid="I-reincarnated"))
    assert plan == Plan((EnqueueVirtualDelete(node.identity),))


def test_row2_virtual_node_not_found():
    b = GraphBuilder()
    upsert(b, "D", [ref("V")], ns="ns1")
    virtual = b.uid_to_node["V"]
    assert decide_attempt_to_delete(virtual, None) == Plan(
        (EnqueueVirtualDelete(ident("V", ns="ns1")),)
    )


def test_row5_deleting_dependents_goes_to_process_deleting_dependents():
    b = GraphBuilder()
    node = _item(b, [ref("gone")], deleting=True, finalizers=[FG])
    assert node.deleting_dependents
    live = _live([ref("gone")], finalizers=[FG])
    plan = decide_attempt_to_delete(node, live)
    assert plan == plan_deleting_dependents(node)
    assert plan == Plan((RemoveFinalizer(node.identity, FG),))


@pytest.mark.parametrize("virtual", [False, True])
def test_row6_no_owner_references(virtual):
    b = GraphBuilder()
    if virtual:
        upsert(b, "D", [ref("I")], ns="ns1")
        node = b.uid_to_node["I"]
    else:
        node = _item(b)
    plan = decide_attempt_to_delete(node, _live())
    assert isinstance(plan, Plan)
    assert [type(s) for s in plan.steps] == [Done]
    assert plan.requeue is virtual, "a virtual node keeps polling"


def test_row7_solid_owner_only():
    b = GraphBuilder()
    node = _item(b, [ref("s")])
    plan = _decide(node, _live([ref("s")]), {"s": solid("s")})
    assert [type(s) for s in plan.steps] == [Done] and not plan.requeue


def test_row8_solid_plus_dangling_and_waiting_patches_refs_away():
    b = GraphBuilder()
    refs = [ref("w1"), ref("d1", ctrl=True), ref("s", block=True), ref("d2"), ref("w2")]
    node = _item(b, refs)
    owners = {
        "w1": waiting("w1"),
        "d1": None,
        "s": solid("s"),
        "d2": obj("imposter"),
        "w2": waiting("w2"),
    }
    plan = _decide(node, _live(refs, rv="42"), owners)
    [patch] = plan.steps
    assert isinstance(patch, Patch)
    assert patch.target == node.identity
    # uids: dangling first, then waiting
    assert compact(patch.smp) == (
        '{"metadata":{"uid":"I","ownerReferences":[{"$patch":"delete","uid":"d1"},'
        '{"$patch":"delete","uid":"d2"},{"$patch":"delete","uid":"w1"},'
        '{"$patch":"delete","uid":"w2"}]}}'
    )
    assert compact(patch.jmp) == (
        '{"metadata":{"resourceVersion":"42","ownerReferences":[{"apiVersion":"v1","kind":"Pod",'
        '"name":"obj-s","uid":"s","blockOwnerDeletion":true}]}}'
    )


@pytest.mark.parametrize("extra", ["dangling", "waiting"])
def test_row8_each_kind_alone_triggers_the_patch(extra):
    b = GraphBuilder()
    refs = [ref("s"), ref("x")]
    node = _item(b, refs)
    plan = _decide(
        node, _live(refs), {"s": solid("s"), "x": None if extra == "dangling" else waiting("x")}
    )
    [patch] = plan.steps
    assert isinstance(patch, Patch)
    assert patch.smp == {"metadata": {"uid": "I", "ownerReferences": [
        {"$patch": "delete", "uid": "x"}]}}  # fmt: skip


def test_row9_waiting_owner_and_dependents_deletes_foreground():
    b = GraphBuilder()
    node = _item(b, [ref("w")])
    upsert(b, "child", [ref("I")], ns="ns1")
    plan = _decide(node, _live([ref("w")], rv="9"), {"w": waiting("w")})
    [step] = plan.steps
    assert isinstance(step, Delete)
    assert step.target == node.identity
    assert step.policy is PropagationPolicy.FOREGROUND
    assert step.preconditions == Preconditions(uid="I", resource_version="9")


def test_row9_non_blocking_and_deleting_without_fg_dependents_still_count():
    """Item 31: any graph dependent counts, blocking or not."""
    b = GraphBuilder()
    node = _item(b, [ref("w")])
    upsert(b, "child", [ref("I", block=False)], ns="ns1", deleting=True, finalizers=["x/y"])
    plan = _decide(node, _live([ref("w")]), {"w": waiting("w")})
    assert [type(s) for s in plan.steps] == [Delete]
    assert plan.steps[0].policy is PropagationPolicy.FOREGROUND


def test_row10_dependent_deleting_dependents_unblocks_once_then_deletes_foreground():
    b = GraphBuilder()
    cached = [ref("w", ctrl=True, block=True), ref("s2", block=False), ref("s3")]
    node = _item(b, cached)
    upsert(b, "c1", [ref("I", block=True)], ns="ns1", deleting=True, finalizers=[FG])
    upsert(b, "c2", [ref("I", block=True)], ns="ns1", deleting=True, finalizers=[FG])
    upsert(b, "c3", [ref("I")], ns="ns1")
    live_refs = [ref("w", ctrl=True, block=True)]  # live differs from the cached owners
    plan = _decide(node, _live(live_refs, rv="5"), {"w": waiting("w")})
    patch, delete = plan.steps
    assert isinstance(patch, Patch) and isinstance(delete, Delete)
    assert patch.target == node.identity
    # the unblock patches are built from the node's cached owners (items 62, 64)
    assert compact(patch.smp) == (
        '{"metadata":{"uid":"I","creationTimestamp":null,"ownerReferences":[{"apiVersion":"v1",'
        '"kind":"Pod","name":"obj-w","uid":"w","controller":true,"blockOwnerDeletion":false}]}}'
    )
    assert compact(patch.jmp) == (
        '{"metadata":{"resourceVersion":"5","ownerReferences":['
        '{"apiVersion":"v1","kind":"Pod","name":"obj-w","uid":"w","controller":true,'
        '"blockOwnerDeletion":false},'
        '{"apiVersion":"v1","kind":"Pod","name":"obj-s2","uid":"s2","blockOwnerDeletion":false},'
        '{"apiVersion":"v1","kind":"Pod","name":"obj-s3","uid":"s3","blockOwnerDeletion":false}'
        "]}}"
    )
    assert delete.policy is PropagationPolicy.FOREGROUND
    assert delete.preconditions.uid == "I"


@pytest.mark.parametrize(
    ("finalizers", "policy"),
    [
        ([], PropagationPolicy.BACKGROUND),
        (["x/y"], PropagationPolicy.BACKGROUND),
        ([ORPHAN], PropagationPolicy.ORPHAN),
        ([FG], PropagationPolicy.FOREGROUND),
        ([FG, ORPHAN], PropagationPolicy.ORPHAN),
    ],
)
@pytest.mark.parametrize("row", ["11-waiting-no-dependents", "12-all-dangling"])
def test_rows_11_12_delete_with_policy_from_live_finalizers(row, finalizers, policy):
    b = GraphBuilder()
    refs = [ref("a"), ref("b")]
    node = _item(b, refs)
    if row.startswith("11"):
        owners = {"a": waiting("a"), "b": None}
    else:
        owners = {"a": None, "b": obj("not-b")}
        upsert(b, "child", [ref("I")], ns="ns1")  # dependents do not matter when all dangle
    plan = _decide(node, _live(refs, finalizers=finalizers, rv="3"), owners)
    [step] = plan.steps
    assert isinstance(step, Delete)
    assert step.policy is policy
    assert step.target == node.identity
    assert step.preconditions == Preconditions(uid="I", resource_version="3")


def test_upstream_test_attempt_to_delete_item():
    """§8 TestAttemptToDeleteItem: virtual pod node, live pod owned by a missing RC."""
    b = GraphBuilder()
    upsert(b, "child-of-pod", [ref("456", "ToBeDeletedPod")], ns="ns1")
    virtual = b.uid_to_node["456"]
    rc = ref("123", "owner1", kind="ReplicationController")
    live = obj("456", [rc], name="ToBeDeletedPod", ns="ns1")
    assert decide_attempt_to_delete(virtual, live) == NeedOwners((rc,))
    plan = decide_attempt_to_delete(virtual, live, {"123": None})
    assert isinstance(plan, Plan)
    [step] = plan.steps
    assert isinstance(step, Delete) and step.policy is PropagationPolicy.BACKGROUND
    assert plan.requeue and virtual.virtual and virtual.owners == ()


def test_rows_13_14_classification_errors_come_from_the_lookup():
    cache = AbsentOwnerCache()
    cluster_item = ObjectReference("v1", "Node", "n", "N", None)
    assert isinstance(
        plan_owner_lookup(ref("P"), cluster_item, True, cache), NamespacedOwnerOfClusterScopedObject
    )

    def boom() -> bool:
        raise RESTMappingError("x/v1", "Gone")

    with pytest.raises(RESTMappingError):
        plan_owner_lookup(ref("P"), cluster_item, boom, cache)


def test_decision_with_ref_keyed_lookups_keeps_item_with_solid_and_dangling_same_uid():
    b = GraphBuilder()
    depl = ref("X", "deployment1", api_version="apps/v1", kind="Deployment")
    secret = ref("X", "secretname", kind="Secret")
    node = _item(b, [depl, secret])
    plan = _decide(node, _live([depl, secret]), {depl: obj("X"), secret: None})
    [patch] = plan.steps
    assert isinstance(patch, Patch), "a solid owner remains: the item is kept"


# -- §6 processDeletingDependentsItem ------------------------------------------------------


def _fg_owner(b):
    owner = upsert(b, "O", ns="ns1", deleting=True, finalizers=[FG])
    assert owner.deleting_dependents
    return owner


def test_deleting_dependents_row1_no_dependents_removes_finalizer():
    b = GraphBuilder()
    owner = _fg_owner(b)
    assert plan_deleting_dependents(owner) == Plan((RemoveFinalizer(owner.identity, FG),))


def test_deleting_dependents_row2_non_blocking_refs_do_not_hold():
    b = GraphBuilder()
    owner = _fg_owner(b)
    upsert(b, "D1", [ref("O", block=False)], ns="ns1")
    upsert(b, "D2", [ref("O")], ns="ns1")
    assert owner.blocking_dependents() == []
    assert plan_deleting_dependents(owner) == Plan((RemoveFinalizer(owner.identity, FG),))


def test_deleting_dependents_row3_blocking_dependent_is_enqueued():
    b = GraphBuilder()
    owner = _fg_owner(b)
    d1 = upsert(b, "D1", [ref("O", block=True)], ns="ns1")
    upsert(b, "D2", [ref("O", block=False)], ns="ns1")
    plan = plan_deleting_dependents(owner)
    assert plan == Plan((EnqueueDelete((d1,)),))
    assert not any(isinstance(s, RemoveFinalizer) for s in plan.steps)


def test_deleting_dependents_row4_blocking_dependent_deleting_dependents_waits():
    b = GraphBuilder()
    owner = _fg_owner(b)
    upsert(b, "D1", [ref("O", block=True)], ns="ns1", deleting=True, finalizers=[FG])
    plan = plan_deleting_dependents(owner)
    assert [type(s) for s in plan.steps] == [Done]


def test_deleting_dependents_row4_mixed_only_enqueues_the_others():
    b = GraphBuilder()
    owner = _fg_owner(b)
    upsert(b, "D1", [ref("O", block=True)], ns="ns1", deleting=True, finalizers=[FG])
    d2 = upsert(b, "D2", [ref("O", block=True)], ns="ns1", deleting=True, finalizers=["x/y"])
    assert plan_deleting_dependents(owner) == Plan((EnqueueDelete((d2,)),))


def test_deleting_dependents_row5_two_blocking_refs_listed_twice_added_once():
    b = GraphBuilder()
    owner = _fg_owner(b)
    d1 = upsert(b, "D1", [ref("O", block=True), ref("O", "alias", block=True)], ns="ns1")
    assert owner.blocking_dependents() == [d1, d1]
    plan = plan_deleting_dependents(owner)
    [step] = plan.steps
    assert isinstance(step, EnqueueDelete) and set(step.nodes) == {d1}


def test_deleting_dependents_uses_cached_owners_not_live_data():
    """Item 44: blockingDependents reads the graph's owners."""
    b = GraphBuilder()
    owner = _fg_owner(b)
    d1 = upsert(b, "D1", [ref("O", block=True)], ns="ns1")
    live_owner = obj("O", ns="ns1", deleting=True, finalizers=[FG])
    assert decide_attempt_to_delete(owner, live_owner) == Plan((EnqueueDelete((d1,)),))
    upsert(b, "D1", [ref("O", block=False)], ns="ns1", rv="2")
    assert decide_attempt_to_delete(owner, live_owner) == Plan(
        (RemoveFinalizer(owner.identity, FG),)
    )
