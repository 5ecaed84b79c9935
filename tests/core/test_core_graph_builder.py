"""The graph builder: §2 (addUnblockedOwnersToDeleteQueue), §3 (transitions), §9
(TestProcessEvent) of gc-unit-cases.md, and gc-semantics.md items 4, 5, 7, 16,
17, 18, 22, 24, 25, 26, 27.

Every helper that feeds an event checks ``UIDToNode.check_invariants`` (item 4).
"""

from __future__ import annotations

from collections import Counter

import pytest

from ownergc import (
    GraphBuilder,
    Node,
    ObjectReference,
    UIDToNode,
    starts_waiting_for_dependents_deleted,
    starts_waiting_for_dependents_orphaned,
)
from tests.core.core_factories import (
    FG,
    ORPHAN,
    delete,
    graph_shape,
    ident,
    obj,
    ref,
    uid_multiset,
    uids,
    upsert,
)

# -- §2 addUnblockedOwnersToDeleteQueue (item 21) --------------------------------


def _owner_and_dependent(first_refs):
    """Observed owner O (and P), dependent D with ``first_refs``; outboxes drained."""
    b = GraphBuilder()
    upsert(b, "O")
    upsert(b, "P")
    upsert(b, "D", first_refs)
    b.drain()
    return b


UNBLOCK_CASES = [
    pytest.param([ref("O", block=True)], [], ["O"], id="1-removed-block-true"),
    pytest.param([ref("O", block=False)], [], [], id="2-removed-block-false"),
    pytest.param([ref("O")], [], [], id="3-removed-block-unset"),
    pytest.param([ref("O", block=True)], [ref("O", block=False)], ["O"], id="5-changed-to-false"),
    pytest.param([ref("O", block=True)], [ref("O")], ["O"], id="6-changed-to-unset"),
    pytest.param([ref("O", block=False)], [ref("O", block=True)], [], id="7-false-to-true"),
    pytest.param([ref("O")], [ref("O", block=True)], [], id="8-unset-to-true"),
    pytest.param(
        [ref("O", "a", block=True)], [ref("O", "a", block=True, ctrl=True)], [], id="9b-ctrl-only"
    ),
    pytest.param(
        [ref("P")],
        [ref("P"), ref("O", block=True), ref("O", "other", block=False)],
        [],
        id="10-added",
    ),
    pytest.param([], [ref("O", block=True), ref("P", block=True)], [], id="10-added-blocking"),
]


@pytest.mark.parametrize(("before", "after", "expected"), UNBLOCK_CASES)
def test_add_unblocked_owners_to_delete_queue(before, after, expected):
    b = _owner_and_dependent(before)
    upsert(b, "D", after)
    # row 10 adds a ref whose name mismatches O's identity: that flags D itself (item 22),
    # which is not an unblocked owner; only owners count here.
    owners_enqueued = [n for n in b.attempt_to_delete if n.uid != "D"]
    assert uids(owners_enqueued) == expected
    for n in owners_enqueued:
        assert n is b.uid_to_node[n.uid]


def test_unblock_row9_name_change_of_blocking_ref():
    """Row 9: changed O(block=true)/a -> O(block=true)/b enqueues nothing."""
    b = GraphBuilder()
    upsert(b, "O", name="a")
    upsert(b, "D", [ref("O", "a", block=True)])
    b.drain()
    upsert(b, "D", [ref("O", "b", block=True)])
    assert b.attempt_to_delete == []
    assert b.uid_to_node["D"].owners == (ref("O", "b", block=True),)


def test_unblock_row4_removed_owner_without_node():
    """Row 4: removed X(block=true) when X has no node: nothing."""
    b = GraphBuilder()
    upsert(b, "D", [ref("X", block=True)])
    assert uids(b.attempt_to_delete) == ["X"]  # virtual X
    b.process_virtual_delete(ident("X"))  # verified absent: the virtual node goes
    b.uid_to_node.check_invariants()
    assert "X" not in b.uid_to_node
    b.drain()
    upsert(b, "D", [])
    assert b.attempt_to_delete == []
    assert b.uid_to_node["D"].owners == ()


def test_unblocked_owner_is_enqueued_even_when_deleting():
    """Item 21: the owner is enqueued whether or not it is deleting (and then it matters)."""
    b = GraphBuilder()
    upsert(b, "O", deleting=True, finalizers=[FG])
    upsert(b, "D", [ref("O", block=True)])
    b.drain()
    upsert(b, "D", [ref("O", block=False)])
    assert uids(b.attempt_to_delete) == ["O"]
    assert b.uid_to_node["O"].deleting_dependents


def test_unblock_is_computed_before_owners_are_replaced():
    """Item 18a: both a removed and a changed blocking ref enqueue their owners, in order."""
    b = _owner_and_dependent([ref("O", block=True), ref("P", block=True)])
    upsert(b, "D", [ref("P", block=False)])
    assert uids(b.attempt_to_delete) == ["O", "P"]
    assert "D" not in {d.uid for d in b.uid_to_node["O"].dependents}
    assert "D" in {d.uid for d in b.uid_to_node["P"].dependents}


# -- §3 transitions (items 20, 23) -------------------------------------------------


def _o(deleting, finalizers):
    return obj("N", deleting=deleting, finalizers=finalizers)


# (old, new, starts-deleted, starts-orphaned); old None = nil
TRANSITIONS = [
    pytest.param(None, (False, [FG]), False, False, id="1"),
    pytest.param(None, (True, []), False, False, id="2"),
    pytest.param(None, (True, [FG]), True, False, id="3"),
    pytest.param((False, [FG]), (True, [FG]), True, False, id="4"),
    pytest.param((True, ["x/y"]), (True, ["x/y", FG]), True, False, id="5"),
    pytest.param((True, [FG]), (True, [FG]), False, False, id="6"),
    pytest.param(None, (True, [ORPHAN]), False, True, id="7"),
    pytest.param((True, [ORPHAN]), (True, [ORPHAN, "x/y"]), False, False, id="8"),
]


@pytest.mark.parametrize(("old", "new", "deleted", "orphaned"), TRANSITIONS)
def test_transition_functions(old, new, deleted, orphaned):
    old_obj = None if old is None else _o(*old)
    new_obj = _o(*new)
    assert starts_waiting_for_dependents_deleted(old_obj, new_obj) is deleted
    assert starts_waiting_for_dependents_orphaned(old_obj, new_obj) is orphaned


@pytest.mark.parametrize("explicit_old", [True, False], ids=["old-obj", "old-from-graph"])
@pytest.mark.parametrize(("old", "new", "deleted", "orphaned"), TRANSITIONS)
def test_process_transitions_effects(old, new, deleted, orphaned, explicit_old):
    """processTransitions through the builder: which outbox, and the flag."""
    b = GraphBuilder()
    if old is not None:
        upsert(b, "N", deleting=old[0], finalizers=old[1])
    # dependents D1, D2 of N (added after N so they are real dependents, not virtual owners)
    upsert(b, "D1", [ref("N")])
    upsert(b, "D2", [ref("N")])
    before = b.uid_to_node.get("N")
    flag_before = before.deleting_dependents if before is not None and not before.virtual else False
    b.drain()
    new_obj = _o(*new)
    if explicit_old:
        node = b.process_upsert(new_obj, "v1", "Pod", None if old is None else _o(*old))
    else:
        node = b.process_upsert(new_obj, "v1", "Pod")
    b.uid_to_node.check_invariants()
    if orphaned:
        assert b.attempt_to_orphan == [node]
        assert b.attempt_to_delete == []
    else:
        assert b.attempt_to_orphan == []
    if deleted:
        assert node.deleting_dependents
        # every current dependent, then the node itself, last
        assert uid_multiset(b.attempt_to_delete[:-1]) == Counter({"D1": 1, "D2": 1})
        assert b.attempt_to_delete[-1] is node
    else:
        assert b.attempt_to_delete == []
        # no transition: the flag only reflects creation (item 17) and stays one-way (item 5)
        created_now = before is None or before.virtual
        expected_flag = (new[0] and FG in new[1]) if created_now else flag_before
        assert node.deleting_dependents is expected_flag


def test_relisted_update_does_not_restart_deletion():
    """Default old state comes from the graph: a replayed event is not a new transition."""
    b = GraphBuilder()
    upsert(b, "N", deleting=True, finalizers=[ORPHAN])
    assert uids(b.attempt_to_orphan) == ["N"]
    b.drain()
    upsert(b, "N", deleting=True, finalizers=[ORPHAN], rv="2")
    assert b.attempt_to_orphan == []


def test_second_delete_switching_to_orphan_restarts_orphaning():
    """Item 87: a second DELETE adds the orphan finalizer to a deleting object."""
    b = GraphBuilder()
    upsert(b, "N", deleting=True, finalizers=["x/y"])
    assert b.attempt_to_orphan == []
    upsert(b, "N", deleting=True, finalizers=["x/y", ORPHAN], rv="2")
    assert uids(b.attempt_to_orphan) == ["N"]


def test_orphan_wins_over_foreground_in_one_transition():
    """Item 20: orphan is checked first and stops; FG is not examined."""
    b = GraphBuilder()
    upsert(b, "N")
    upsert(b, "D", [ref("N")])
    b.drain()
    node = upsert(b, "N", deleting=True, finalizers=[ORPHAN, FG])
    assert b.attempt_to_orphan == [node]
    assert b.attempt_to_delete == []
    assert not node.deleting_dependents


# -- items 5, 17, 18: node state ------------------------------------------------------


def test_being_deleted_and_deleting_dependents_are_one_way():
    b = GraphBuilder()
    node = upsert(b, "N", deleting=True, finalizers=[FG])
    assert node.being_deleted and node.deleting_dependents
    node = upsert(b, "N", deleting=False, finalizers=[], rv="2")
    assert node.being_deleted, "beingDeleted is never cleared"
    assert node.deleting_dependents, "removing the FG finalizer does not clear deletingDependents"


def test_new_node_from_add_event():
    """Item 17: identity from the informer's GVK, owners exactly as observed."""
    b = GraphBuilder()
    refs = [ref("A", block=True), ref("B", ctrl=True), ref("A", block=True)]
    node = b.process_upsert(obj("N", refs, ns="ns1"), "apps/v1", "ReplicaSet")
    b.uid_to_node.check_invariants()
    assert node.identity == ObjectReference("apps/v1", "ReplicaSet", "obj-N", "N", "ns1")
    assert node.owners == tuple(refs)
    assert not node.virtual and not node.being_deleted and not node.deleting_dependents
    assert node.resource_version == "1"
    assert sorted(b.uid_to_node) == ["A", "B", "N"]


def test_new_node_being_deleted_without_fg_is_not_deleting_dependents():
    b = GraphBuilder()
    node = upsert(b, "N", deleting=True, finalizers=["x/y"])
    assert node.being_deleted and not node.deleting_dependents


def test_update_of_unknown_uid_is_handled_like_an_add():
    """Item 26: a never-seen object can first appear as an update."""
    b = GraphBuilder()
    node = b.process_upsert(obj("N", [ref("O")]), "v1", "Pod", obj("N"))
    b.uid_to_node.check_invariants()
    assert b.uid_to_node["N"] is node
    assert b.uid_to_node["O"].virtual


def test_update_keeps_node_object_and_replaces_owners():
    b = GraphBuilder()
    upsert(b, "O1")
    upsert(b, "O2")
    node = upsert(b, "N", [ref("O1")])
    again = upsert(b, "N", [ref("O2"), ref("O1", block=True)], rv="2")
    assert again is node
    assert node.owners == (ref("O2"), ref("O1", block=True))
    assert node.resource_version == "2"
    assert graph_shape(b)["O2"] == ([], {"N"})
    assert graph_shape(b)["O1"] == ([], {"N"})


def test_reorder_only_update_keeps_stored_owner_list():
    """Item 18: owners are replaced only when referencesDiffs reports a change."""
    b = GraphBuilder()
    upsert(b, "A")
    upsert(b, "B")
    node = upsert(b, "N", [ref("A", block=True), ref("B")])
    b.drain()
    upsert(b, "N", [ref("B"), ref("A", block=True)], rv="2")
    assert node.owners == (ref("A", block=True), ref("B"))
    upsert(b, "N", [ref("B"), ref("A", block=True), ref("A", block=True)], rv="3")
    assert node.owners == (ref("B"), ref("A", block=True), ref("A", block=True)), "dup is added"
    upsert(b, "N", [ref("B"), ref("A", block=True)], rv="4")
    assert len(node.owners) == 3, "dropping a same-valued duplicate is no change"
    assert b.attempt_to_delete == []


def test_unchanged_list_with_duplicate_uid_is_re_added_each_update():
    """referencesDiffs reports the second entry of a repeated uid as added, so every update
    re-runs addDependentToOwners for it (and re-flags a mismatched duplicate)."""
    b = GraphBuilder()
    upsert(b, "O", name="real")
    refs = [ref("O", "real"), ref("O", "alias")]
    node = upsert(b, "D", refs)
    assert b.drain()[0] == [node]
    upsert(b, "D", refs, rv="2")
    assert b.attempt_to_delete == [node]
    b.drain()
    upsert(b, "D", [ref("O", "real")], rv="3")
    upsert(b, "D", [ref("O", "real")], rv="4")
    assert b.attempt_to_delete == []


# -- item 7: virtual nodes ---------------------------------------------------------------


def test_virtual_node_takes_first_ref_coordinates_and_dependent_namespace():
    b = GraphBuilder()
    first = ref("X", "node-x", api_version="v1", kind="Node")  # a cluster-scoped kind
    second = ref("X", "other", api_version="v2", kind="Thing")
    dep = b.process_upsert(obj("D", [first, second], ns="ns1"), "v1", "Pod")
    b.uid_to_node.check_invariants()
    virtual = b.uid_to_node["X"]
    assert virtual.virtual
    assert virtual.identity == ObjectReference("v1", "Node", "node-x", "X", "ns1")
    assert virtual.owners == ()
    assert virtual.dependents == {dep}
    # plain Add, exactly once for the creation; the second ref (mismatched coordinates)
    # flags the dependent itself (item 22)
    assert b.attempt_to_delete == [virtual, dep]
    assert b.attempt_to_delete_rate_limited == []


def test_virtual_node_of_cluster_scoped_dependent_has_no_namespace():
    b = GraphBuilder()
    upsert(b, "D", [ref("X", kind="ClusterRole", api_version="rbac.authorization.k8s.io/v1")])
    assert b.uid_to_node["X"].identity.namespace is None


def test_observation_in_place_keeps_the_node_object():
    """Item 16: same identity -> the virtual node itself becomes observed."""
    b = GraphBuilder()
    upsert(b, "D", [ref("O")])
    virtual = b.uid_to_node["O"]
    b.drain()
    observed = upsert(b, "O")
    assert observed is virtual and not observed.virtual
    assert b.attempt_to_delete == [] and b.events == []


# -- item 16: observation with another identity --------------------------------------------


def test_observation_with_other_identity_copies_and_enqueues_non_matching():
    b = GraphBuilder()
    # the bad child comes first, so the virtual node carries its (wrong) coordinates
    bad = upsert(
        b, "B", [ref("O", "owner", kind="Deployment", api_version="extensions/v1beta1")], ns="ns1"
    )
    good = upsert(b, "G", [ref("O", "owner", kind="Deployment", api_version="apps/v1")], ns="ns1")
    virtual = b.uid_to_node["O"]
    assert virtual.identity.api_version == "extensions/v1beta1"
    b.drain()
    observed = b.process_upsert(obj("O", name="owner", ns="ns1"), "apps/v1", "Deployment")
    b.uid_to_node.check_invariants()
    assert observed is not virtual, "replaced by a copy"
    assert b.uid_to_node["O"] is observed
    assert observed.identity == ObjectReference("apps/v1", "Deployment", "owner", "O", "ns1")
    assert not observed.virtual and virtual.virtual
    assert observed.dependents == {good, bad}
    assert b.attempt_to_delete == [bad]
    assert b.events == []  # same namespace: no warning


def test_observation_runs_for_delete_events_too():
    b = GraphBuilder()
    dep = upsert(b, "D", [ref("O", "owner")], ns="ns1")
    b.drain()
    # the owner is observed (in another namespace) only through its delete event
    b.process_delete(obj("O", name="owner", ns="ns2"), "v1", "Pod")
    b.uid_to_node.check_invariants()
    assert "O" not in b.uid_to_node
    [event] = b.events
    assert event.dependent == dep.identity
    # non-matching dependent enqueued by the observation, then again by the removal
    assert uids(b.attempt_to_delete) == ["D", "D"]
    assert ObjectReference("v1", "Pod", "owner", "O", "ns2") in b.absent_owner_cache


# -- item 22 / §10 (events, item 80) ------------------------------------------------------

POD2NS2 = dict(uid="poduid2", name="podname2", ns="ns2")


def test_conflicting_data_bad_child_owner_in_other_namespace_child_first():
    """§10.2 steps 1-2: virtual owner observed in another namespace -> EVT."""
    b = GraphBuilder()
    child_ref = ref("poduid2", "podname2")
    child = b.process_upsert(obj("poduid1", [child_ref], name="podname1", ns="ns1"), "v1", "Pod")
    b.uid_to_node.check_invariants()
    virtual = b.uid_to_node["poduid2"]
    assert virtual.identity == ObjectReference("v1", "Pod", "podname2", "poduid2", "ns1")
    assert b.attempt_to_delete == [virtual]
    b.drain()
    b.process_upsert(obj("poduid2", name="podname2", ns="ns2"), "v1", "Pod")
    b.uid_to_node.check_invariants()
    assert b.uid_to_node["poduid2"].identity.namespace == "ns2"
    assert b.attempt_to_delete == [child]
    [event] = b.events
    assert (event.type, event.reason) == ("Warning", "OwnerRefInvalidNamespace")
    assert event.dependent == ObjectReference("v1", "Pod", "podname1", "poduid1", "ns1")
    assert event.message == (
        "ownerRef [v1/Pod, namespace: ns1, name: podname2, uid: poduid2] does not exist in "
        'namespace "ns1"'
    )


def test_conflicting_data_bad_child_owner_in_other_namespace_owner_first():
    """§10.3 steps 1-2: addDependentToOwners flags and reports against an observed owner."""
    b = GraphBuilder()
    b.process_upsert(obj("poduid2", name="podname2", ns="ns2"), "v1", "Pod")
    b.drain()
    child = b.process_upsert(
        obj("poduid1", [ref("poduid2", "podname2")], name="podname1", ns="ns1"), "v1", "Pod"
    )
    b.uid_to_node.check_invariants()
    assert b.attempt_to_delete == [child]
    [event] = b.events
    assert event.message == (
        "ownerRef [v1/Pod, namespace: ns1, name: podname2, uid: poduid2] does not exist in "
        'namespace "ns1"'
    )


def test_conflicting_data_cluster_scoped_child_of_namespaced_owner_owner_first():
    """§10.5 step 2: EVTC, with the empty namespace of a cluster-scoped child."""
    b = GraphBuilder()
    b.process_upsert(obj("poduid1", name="podname1", ns="ns1"), "v1", "Pod")
    b.drain()
    child = b.process_upsert(
        obj("nodeuid1", [ref("poduid1", "podname1")], name="nodename"), "v1", "Node"
    )
    b.uid_to_node.check_invariants()
    assert b.attempt_to_delete == [child]
    [event] = b.events
    assert event.dependent == ObjectReference("v1", "Node", "nodename", "nodeuid1", None)
    assert event.message == (
        "ownerRef [v1/Pod, namespace: , name: podname1, uid: poduid1] does not exist in "
        'namespace ""'
    )


def test_conflicting_data_cluster_scoped_child_child_first():
    """§10.4 steps 1, 3: observing the owner in ns1 fixes the namespace and emits EVTC."""
    b = GraphBuilder()
    child = b.process_upsert(
        obj("nodeuid1", [ref("poduid1", "podname1")], name="nodename"), "v1", "Node"
    )
    assert b.uid_to_node["poduid1"].identity.namespace is None
    b.drain()
    b.process_upsert(obj("poduid1", name="podname1", ns="ns1"), "v1", "Pod")
    b.uid_to_node.check_invariants()
    assert b.uid_to_node["poduid1"].identity.namespace == "ns1"
    assert b.attempt_to_delete == [child]
    [event] = b.events
    assert event.message.endswith('does not exist in namespace ""')


def test_good_child_of_cluster_scoped_owner_is_not_flagged():
    """§10.1: pod in ns1 -> Node; observed Node fixes the namespace to "", no event."""
    b = GraphBuilder()
    upsert(b, "poduid1", [ref("nodeuid1", "nodename", kind="Node")], name="podname1", ns="ns1")
    virtual = b.uid_to_node["nodeuid1"]
    assert virtual.identity.namespace == "ns1"
    b.drain()
    node = upsert(b, "nodeuid1", name="nodename", kind="Node")
    assert node.identity == ObjectReference("v1", "Node", "nodename", "nodeuid1", None)
    assert node is not virtual
    assert b.attempt_to_delete == [] and b.events == []


def test_cluster_scoped_owner_observed_namespaced_dependent_not_flagged():
    b = GraphBuilder()
    upsert(b, "N", name="nodename", kind="Node")
    b.drain()
    upsert(b, "P", [ref("N", "nodename", kind="Node")], ns="ns1")
    assert b.attempt_to_delete == [] and b.events == []


def test_cluster_scoped_virtual_owner_with_dependent_in_other_namespace_flags():
    """Item 22 third case (issue #98040): cluster-scoped virtual owner, namespaces differ."""
    b = GraphBuilder()
    upsert(b, "C", [ref("X")])  # cluster-scoped child -> virtual X with namespace ""
    b.drain()
    dep = upsert(b, "P", [ref("X")], ns="ns1")
    assert b.attempt_to_delete == [dep]
    assert b.events == []


def test_virtual_owner_in_other_namespace_flags_without_event():
    b = GraphBuilder()
    upsert(b, "A", [ref("X")], ns="ns1")
    b.drain()
    dep = upsert(b, "B", [ref("X")], ns="ns2")
    assert b.attempt_to_delete == [dep]
    assert b.events == [], "no event while the owner is virtual"


def test_coordinate_mismatch_flags_without_event():
    b = GraphBuilder()
    upsert(b, "O", name="owner")
    b.drain()
    dep = upsert(b, "D", [ref("O", "not-owner")])
    assert b.attempt_to_delete == [dep] and b.events == []


def test_first_flagged_owner_wins():
    """Item 22: after one flagged owner the later ones are not examined (one event, one add)."""
    b = GraphBuilder()
    upsert(b, "O1", ns="ns2")
    upsert(b, "O2", ns="ns3")
    b.drain()
    dep = upsert(b, "D", [ref("O1"), ref("O2")], ns="ns1")
    assert b.attempt_to_delete == [dep]
    [event] = b.events
    assert event.owner.uid == "O1"
    # both owners still got the dependent
    assert dep in b.uid_to_node["O1"].dependents and dep in b.uid_to_node["O2"].dependents


def test_event_names_first_ref_with_the_owner_uid():
    """Item 80 via reportInvalidNamespaceOwnerRef: the dependent's first ref with that uid."""
    b = GraphBuilder()
    upsert(b, "O", name="real", ns="ns2")
    upsert(b, "D", [ref("O", "real")], ns="ns2")
    b.drain()
    # D moves? No: D stays; a new ref to O with another name is added in ns2 -> no event.
    upsert(b, "E", [ref("O", "first")], ns="ns1")
    [event] = b.events
    assert event.owner == ref("O", "first")
    b.drain()
    upsert(b, "E", [ref("O", "first"), ref("O", "second")], ns="ns1", rv="2")
    [event] = b.events
    assert event.owner == ref("O", "first")


# -- items 24, 25, 27: delete events --------------------------------------------------------


def test_delete_of_unknown_uid_is_ignored():
    b = GraphBuilder()
    upsert(b, "A")
    b.drain()
    delete(b, "Z")
    assert sorted(b.uid_to_node) == ["A"]
    assert b.drain() == ([], [], [], [])
    assert len(b.absent_owner_cache) == 0


def test_delete_event_removes_node_and_enqueues():
    """Item 25: unlink, cache the identity (had dependents), enqueue dependents and
    deleting-dependents owners (only those)."""
    b = GraphBuilder()
    upsert(b, "FG", deleting=True, finalizers=[FG])
    upsert(b, "PLAIN")
    node = upsert(b, "N", [ref("FG"), ref("PLAIN")], ns=None)
    upsert(b, "C1", [ref("N")])
    upsert(b, "C2", [ref("N")])
    b.drain()
    b.process_delete(obj("N"), "apps/v1", "ReplicaSet")
    b.uid_to_node.check_invariants()
    assert "N" not in b.uid_to_node
    assert node not in b.uid_to_node["FG"].dependents
    assert node not in b.uid_to_node["PLAIN"].dependents
    assert uid_multiset(b.attempt_to_delete[:2]) == Counter({"C1": 1, "C2": 1})
    assert uids(b.attempt_to_delete[2:]) == ["FG"]
    # the event identity (informer GVK), not the node's stored one
    assert list(b.absent_owner_cache) == [
        ObjectReference("apps/v1", "ReplicaSet", "obj-N", "N", None)
    ]
    # children keep their refs to the gone owner (allowed by the invariant)
    assert b.uid_to_node["C1"].owners == (ref("N"),)


def test_delete_of_leaf_does_not_touch_absent_owner_cache():
    b = GraphBuilder()
    upsert(b, "L")
    delete(b, "L")
    assert len(b.absent_owner_cache) == 0
    assert b.attempt_to_delete == []


def test_virtual_delete_of_observed_node_with_same_identity_is_a_delete():
    """Item 27; the later informer delete then hits item 24."""
    b = GraphBuilder()
    upsert(b, "O", ns="ns1")
    upsert(b, "D", [ref("O")], ns="ns1")
    b.drain()
    b.process_virtual_delete(ident("O", ns="ns1"))
    b.uid_to_node.check_invariants()
    assert "O" not in b.uid_to_node
    assert uids(b.attempt_to_delete) == ["D"]
    assert ident("O", ns="ns1") in b.absent_owner_cache
    b.drain()
    delete(b, "O", ns="ns1")
    assert b.drain() == ([], [], [], [])


# -- §9 TestProcessEvent ------------------------------------------------------------------

# Refs carry the uid and the matching name; every object is a v1 Pod in no namespace, so
# the only information is the uid, as in the upstream test.


def _run(events):
    b = GraphBuilder()
    queue = []
    for op, uid, owners in events:
        if op == "add":
            upsert(b, uid, [ref(o) for o in owners])
        else:
            delete(b, uid)
        queue.extend(b.drain()[0])
    return b, queue


TEST1 = [("add", "1", []), ("add", "2", ["1"]), ("add", "3", ["1", "2"])]


def test_process_event_test1():
    b, queue = _run(TEST1)
    assert graph_shape(b) == {
        "1": ([], {"2", "3"}),
        "2": (["1"], {"3"}),
        "3": (["1", "2"], set()),
    }
    assert queue == []
    assert len(b.absent_owner_cache) == 0


def test_process_event_test2():
    b, queue = _run([*TEST1, ("add", "4", ["2"]), ("delete", "2", [])])
    assert graph_shape(b) == {
        "1": ([], {"3"}),
        "3": (["1", "2"], set()),
        "4": (["2"], set()),
    }
    assert uid_multiset(queue) == Counter({"3": 1, "4": 1})
    assert list(b.absent_owner_cache) == [ident("2")]


def test_process_event_test3():
    b, queue = _run([*TEST1, ("add", "4", ["3"]), ("add", "2", ["4"])])
    assert graph_shape(b) == {
        "1": ([], {"3"}),
        "2": (["4"], {"3"}),
        "3": (["1", "2"], {"4"}),
        "4": (["3"], {"2"}),
    }
    assert queue == []
    assert len(b.absent_owner_cache) == 0


def test_process_event_reverse_test2_with_intermediate_states():
    b = GraphBuilder()
    queue: list[Node] = []

    def step(op, uid, owners=()):
        if op == "add":
            upsert(b, uid, [ref(o) for o in owners])
        else:
            delete(b, uid)
        queue.extend(b.drain()[0])

    def virtual_flags():
        return {uid: n.virtual for uid, n in b.uid_to_node.items()}

    step("add", "4", ["2"])
    assert graph_shape(b) == {"2": ([], {"4"}), "4": (["2"], set())}
    assert virtual_flags() == {"2": True, "4": False}
    assert [(n.uid, n.virtual) for n in queue] == [("2", True)]
    v2 = b.uid_to_node["2"]

    step("add", "3", ["1", "2"])
    assert graph_shape(b) == {
        "1": ([], {"3"}),
        "2": ([], {"3", "4"}),
        "3": (["1", "2"], set()),
        "4": (["2"], set()),
    }
    assert virtual_flags() == {"1": True, "2": True, "3": False, "4": False}
    assert [(n.uid, n.virtual) for n in queue] == [("2", True), ("1", True)]
    v1 = b.uid_to_node["1"]

    step("add", "2", ["1"])
    assert b.uid_to_node["2"] is v2 and not v2.virtual, "observed in place"
    assert graph_shape(b)["2"] == (["1"], {"3", "4"})
    assert graph_shape(b)["1"] == ([], {"2", "3"})
    assert b.uid_to_node["1"].virtual

    step("add", "1")
    assert b.uid_to_node["1"] is v1 and not v1.virtual

    step("delete", "2")
    assert graph_shape(b) == {
        "1": ([], {"3"}),
        "3": (["1", "2"], set()),
        "4": (["2"], set()),
    }
    assert queue[0] is v2 and queue[1] is v1
    assert uid_multiset(queue[2:]) == Counter({"3": 1, "4": 1})
    assert len(queue) == 4
    assert list(b.absent_owner_cache) == [ident("2")]


# -- item 4: the invariant checker itself ----------------------------------------------------


def test_check_invariants_detects_broken_links():
    g = UIDToNode()
    owner = Node(ident("O"))
    dep = Node(ident("D"), (ref("O"),))
    g["O"], g["D"] = owner, dep
    with pytest.raises(AssertionError, match="missing from dependents"):
        g.check_invariants()
    owner.add_dependent(dep)
    g.check_invariants()
    stranger = Node(ident("S"))
    g["S"] = stranger
    owner.add_dependent(stranger)
    with pytest.raises(AssertionError, match="without a ref"):
        g.check_invariants()
    owner.remove_dependent(stranger)
    g["X"] = Node(ident("Y"))
    with pytest.raises(AssertionError, match="stored under uid"):
        g.check_invariants()
