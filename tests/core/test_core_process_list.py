"""``GraphBuilder.process_list`` and ``vanished``: a list result applied in one call.

A monitor's first list and every relist apply many objects back to back; the
batch entry point must leave exactly what one ``process_upsert`` per object
leaves (graph, outboxes in order), refuse bad objects without stopping, and
report the uids it saw so the caller can find what vanished.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest

from ownergc import GraphBuilder, ObjectReference
from tests.core.core_factories import graph_shape, ident, obj, ref, uids

# A ReplicaSet's pods, an owner that is deleting (foreground) and a pod in the
# wrong namespace for its owner: every outbox gets something.
LISTED = [
    obj("rs1", ns="ns1"),
    obj("p1", [ref("rs1")], ns="ns1"),
    obj("p2", [ref("rs1", block=True)], ns="ns1"),
    obj("p3", [ref("gone")], ns="ns1"),
    obj("fg", ns="ns1", deleting=True, finalizers=["foregroundDeletion"]),
    obj("p4", [ref("fg")], ns="ns1"),
    obj("orph", ns="ns1", deleting=True, finalizers=["orphan"]),
    obj("p5", [ref("rs1")], ns="ns2"),
]


def _comparable(box: list[Any]) -> list[Any]:
    """Nodes by uid (a node is compared by identity); events as they are."""
    return uids(box) if box and not hasattr(box[0], "reason") else box


def test_a_list_leaves_what_one_upsert_per_object_leaves() -> None:
    one_by_one = GraphBuilder()
    for o in LISTED:
        one_by_one.process_upsert(o, "v1", "Pod")
    batch = GraphBuilder()
    seen, refused = batch.process_list(LISTED, "v1", "Pod")
    assert refused == []
    assert seen == {o["metadata"]["uid"] for o in LISTED}
    assert graph_shape(batch) == graph_shape(one_by_one)
    expected = [
        uids(box) if box and not hasattr(box[0], "reason") else box for box in one_by_one.drain()
    ]
    got = [uids(box) if box and not hasattr(box[0], "reason") else box for box in batch.drain()]
    assert got == expected
    assert got[0] and got[2] and got[3]  # delete, orphan and event outboxes all used


def test_a_refused_object_does_not_stop_the_list() -> None:
    bad_refs = obj("bad", ns="ns1")
    bad_refs["metadata"]["ownerReferences"] = [{"uid": "x"}]
    no_uid = {"metadata": {"name": "nameless"}}
    listed: list[Any] = [obj("a"), bad_refs, no_uid, "not an object", obj("z")]
    b = GraphBuilder()
    seen, refused = b.process_list(listed, "v1", "Pod")
    assert [o for o, _ in refused] == [bad_refs, no_uid, "not an object"]
    assert all(isinstance(exc, ValueError) for _, exc in refused)
    # a refused object with a uid still counts as listed: it exists on the server
    assert seen == {"a", "bad", "z"}
    assert set(b.uid_to_node) == {"a", "z"}


def test_vanished_names_observed_nodes_of_the_resource_the_list_did_not_show() -> None:
    b = GraphBuilder()
    b.process_list([obj("a"), obj("b", [ref("virtual-owner")]), obj("c")], "v1", "Pod")
    b.process_upsert(obj("rs", name="rs"), "apps/v1", "ReplicaSet")
    seen, _ = b.process_list([obj("b")], "v1", "Pod")
    assert b.vanished("v1", "Pod", seen) == [ident("a"), ident("c")]
    assert b.vanished("apps/v1", "ReplicaSet", set()) == [
        ObjectReference("apps/v1", "ReplicaSet", "rs", "rs")
    ]
    assert b.vanished("v1", "Pod", {"a", "b", "c"}) == []


def test_the_cyclic_gc_is_paused_during_a_list_and_left_as_it_was() -> None:
    """The collector is off while the list is applied and back as it was after it, also
    when the list itself fails (an iterator raising) and when it was off before."""
    states: list[bool] = []

    def listed(fail: bool) -> Any:
        states.append(gc.isenabled())
        yield obj("a")
        states.append(gc.isenabled())
        if fail:
            raise RuntimeError("the list broke off")
        yield obj("b")

    was = gc.isenabled()
    try:
        gc.enable()
        GraphBuilder().process_list(listed(False), "v1", "Pod")
        assert states == [False, False] and gc.isenabled()
        with pytest.raises(RuntimeError):
            GraphBuilder().process_list(listed(True), "v1", "Pod")
        assert gc.isenabled()
        gc.disable()
        GraphBuilder().process_list(listed(False), "v1", "Pod")
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()
