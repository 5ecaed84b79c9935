"""Absent-owner cache, virtual delete events and identity repair: gc-semantics.md items
35-42 and gc-unit-cases.md §11 (TestGetAlternateOwnerIdentity) and §8 TestAbsentOwnerCache.
"""

from __future__ import annotations

from collections import Counter

import pytest

from ownergc import (
    AbsentOwnerCache,
    GraphBuilder,
    Node,
    ObjectReference,
    OwnerReference,
    get_alternate_owner_identity,
    partition_dependents,
)
from tests.core.core_factories import ident, ref, uid_multiset, uids, upsert

# -- item 35: the absent-owner cache ---------------------------------------------------------


def test_absent_owner_cache_default_size_is_500():
    cache = GraphBuilder().absent_owner_cache
    for i in range(501):
        cache.add(ident(str(i)))
    assert len(cache) == 500
    assert ident("0") not in cache and ident("500") in cache


def test_absent_owner_cache_lru_as_in_upstream_test():
    """§8 TestAbsentOwnerCache: size 2; rc1, rc2 added; rc1 looked up again; rc3 evicts rc2."""
    cache = AbsentOwnerCache(2)
    rc1, rc2, rc3 = (ident(u, kind="ReplicationController", ns="ns1") for u in ("1", "2", "3"))
    cache.add(rc1)
    cache.add(rc2)
    assert cache.has(rc1)  # promotes
    cache.add(rc3)
    assert rc1 in cache and rc3 in cache and rc2 not in cache


def test_absent_owner_cache_contains_does_not_promote():
    cache = AbsentOwnerCache(2)
    cache.add(ident("1"))
    cache.add(ident("2"))
    assert ident("1") in cache
    cache.add(ident("3"))
    assert ident("1") not in cache


def test_absent_owner_cache_key_is_full_identity():
    cache = AbsentOwnerCache()
    cache.add(ident("1", ns="ns1"))
    assert not cache.has(ident("1", ns="ns2"))
    assert not cache.has(ident("1", ns=None))
    assert not cache.has(ident("1", name="other", ns="ns1"))
    assert not cache.has(ident("1", kind="Secret", ns="ns1"))
    assert not cache.has(ident("1", av="v2", ns="ns1"))
    assert cache.has(ident("1", ns="ns1"))


def test_absent_owner_cache_rejects_nonpositive_size():
    with pytest.raises(ValueError):
        AbsentOwnerCache(0)


# -- item 41: partitionDependents ---------------------------------------------------------------


def _dep(uid: str, ns: str | None, *refs: OwnerReference) -> Node:
    return Node(ObjectReference("v1", "Pod", f"child-{uid}", uid, ns), tuple(refs))


def test_partition_namespaced_identity_excludes_other_namespaces():
    parent = ident("P", ns="ns1", name="parent")
    same = _dep("a", "ns1", ref("P", "parent"))
    other_ns = _dep("b", "ns2", ref("P", "parent"))
    cluster = _dep("c", None, ref("P", "parent"))
    matching, non_matching = partition_dependents([same, other_ns, cluster], parent)
    assert matching == [same]
    assert Counter(map(id, non_matching)) == Counter(map(id, [other_ns, cluster]))


def test_partition_cluster_scoped_identity_matches_any_namespace():
    parent = ident("P", ns=None, name="parent", kind="Node")
    deps = [
        _dep("a", "ns1", ref("P", "parent", kind="Node")),
        _dep("b", None, ref("P", "parent", kind="Node")),
    ]
    matching, non_matching = partition_dependents(deps, parent)
    assert matching == deps and non_matching == []


def test_partition_by_coordinates_and_both_lists():
    parent = ident("P", ns="ns1", name="parent")
    good = _dep("a", "ns1", ref("P", "parent", block=True, ctrl=True))  # flags are not coordinates
    wrong_kind = _dep("b", "ns1", ref("P", "parent", kind="Secret"))
    wrong_version = _dep("c", "ns1", ref("P", "parent", api_version="v2"))
    wrong_name = _dep("d", "ns1", ref("P", "other"))
    both = _dep("e", "ns1", ref("P", "parent"), ref("P", "other"))
    unrelated_refs = _dep("f", "ns1", ref("Q"))  # no ref with the uid: in neither list
    matching, non_matching = partition_dependents(
        [good, wrong_kind, wrong_version, wrong_name, both, unrelated_refs], parent
    )
    assert matching == [good, both]
    assert non_matching == [wrong_kind, wrong_version, wrong_name, both]


# -- §11 getAlternateOwnerIdentity (item 42) ------------------------------------------------

CHILDREN = {
    "ns1child1": "ns1",
    "ns1child2": "ns1",
    "ns2child1": "ns2",
    "clusterchild1": None,
}


def _id(av: str, kind: str, ns: str | None, name: str, uid: str = "parentuid") -> ObjectReference:
    return ObjectReference(av, kind, name, uid, ns)


def _deps(*spec: tuple[str, list[tuple[str, str, str] | tuple[str, str, str, str]]]) -> list[Node]:
    """(child, [(apiVersion, kind, name[, uid])...]); refs default to uid "parentuid"."""
    out = []
    for child, refs in spec:
        owner_refs = tuple(
            OwnerReference(r[0], r[1], r[2], r[3] if len(r) == 4 else "parentuid") for r in refs
        )
        out.append(Node(ObjectReference("v1", "Child", child, child, CHILDREN[child]), owner_refs))
    return out


VERSIONS = [("v1", "kind", "name", "uid"), ("v2", "kind", "name", "uid"),
            ("v3", "kind", "name", "uid"), ("v4", "kind", "name", "uid"),
            ("v5", "kind", "name", "uid")]  # fmt: skip

ALTERNATE_CASES = [
    pytest.param(
        _deps(
            ("ns1child1", [("v1", "NSParent", "parentname")]),
            ("ns1child2", [("xx", "NSParent", "parentname")]),
        ),
        _id("v1", "NSParent", "ns1", "parentname"),
        _id("xx", "NSParent", "ns1", "parentname"),
        id="1-namespaced-apiversion",
    ),
    pytest.param(
        _deps(
            ("ns1child1", [("v1", "NSParent", "parentname")]),
            ("ns1child2", [("v1", "xxxxxxxx", "parentname")]),
        ),
        _id("v1", "NSParent", "ns1", "parentname"),
        _id("v1", "xxxxxxxx", "ns1", "parentname"),
        id="2-namespaced-kind",
    ),
    pytest.param(
        _deps(
            ("ns1child1", [("v1", "NSParent", "parentname")]),
            ("ns2child1", [("v1", "NSParent", "parentname")]),
        ),
        _id("v1", "NSParent", "ns1", "parentname"),
        _id("v1", "NSParent", "ns2", "parentname"),
        id="3-namespaced-namespace",
    ),
    pytest.param(
        _deps(
            ("ns1child1", [("v1", "NSParent", "parentname")]),
            ("ns1child1", [("v1", "NSParent", "xxxxxxxxxx")]),
        ),
        _id("v1", "NSParent", "ns1", "parentname"),
        _id("v1", "NSParent", "ns1", "xxxxxxxxxx"),
        id="4-namespaced-name",
    ),
    pytest.param(
        _deps(
            ("ns1child1", [("v1", "ClusterParent", "parentname")]),
            ("ns1child2", [("xx", "ClusterParent", "parentname")]),
        ),
        _id("v1", "ClusterParent", None, "parentname"),
        _id("xx", "ClusterParent", "ns1", "parentname"),
        id="5-cluster-apiversion",
    ),
    pytest.param(
        _deps(
            ("ns1child1", [("v1", "ClusterParent", "parentname")]),
            ("ns1child2", [("v1", "xxxxxxxxxxxxx", "parentname")]),
        ),
        _id("v1", "ClusterParent", None, "parentname"),
        _id("v1", "xxxxxxxxxxxxx", "ns1", "parentname"),
        id="6-cluster-kind",
    ),
    pytest.param(
        _deps(
            ("ns1child1", [("v1", "ClusterParent", "parentname")]),
            ("ns2child1", [("v1", "ClusterParent", "parentname")]),
        ),
        _id("v1", "ClusterParent", None, "parentname"),
        None,
        id="7-cluster-namespace",
    ),
    pytest.param(
        _deps(
            ("ns1child1", [("v1", "ClusterParent", "parentname")]),
            ("ns1child1", [("v1", "ClusterParent", "xxxxxxxxxx")]),
        ),
        _id("v1", "ClusterParent", None, "parentname"),
        _id("v1", "ClusterParent", None, "xxxxxxxxxx"),
        id="8-cluster-name",
    ),
    pytest.param(
        _deps(("ns1child1", VERSIONS)),
        _id("v5", "kind", "ns1", "name", "uid"),
        _id("v1", "kind", "ns1", "name", "uid"),
        id="9-namespaced-wrap",
    ),
    pytest.param(
        _deps(("ns1child1", VERSIONS)),
        _id("v4", "kind", "ns1", "name", "uid"),
        _id("v5", "kind", "ns1", "name", "uid"),
        id="10-namespaced-next",
    ),
    pytest.param(
        _deps(("clusterchild1", VERSIONS)),
        _id("v5", "kind", None, "name", "uid"),
        _id("v1", "kind", None, "name", "uid"),
        id="11-cluster-wrap",
    ),
    pytest.param(
        _deps(("clusterchild1", VERSIONS)),
        _id("v4", "kind", None, "name", "uid"),
        _id("v5", "kind", None, "name", "uid"),
        id="12-cluster-next",
    ),
    pytest.param(
        _deps(
            (
                "ns1child1",
                [("v1", "ClusterParent", "parentname"), ("v1", "Parent", "name", "anotheruid")],
            )
        ),
        _id("v1", "ClusterParent", None, "parentname"),
        None,
        id="13-other-uid-ignored",
    ),
    pytest.param(
        _deps(
            (
                "ns1child1",
                [("v1", "ClusterParent", "parentname"), ("v1", "ClusterParent", "parentname")],
            )
        ),
        _id("v1", "ClusterParent", None, "parentname"),
        None,
        id="14-duplicate-of-absent",
    ),
    pytest.param(
        _deps(
            (
                "clusterchild1",
                [
                    ("v1", "ClusterParent", "parentname"),
                    ("v1", "xxxxxxxxxxxxx", "parentname"),
                    ("v1", "xxxxxxxxxxxxx", "parentname"),
                ],
            )
        ),
        _id("v1", "ClusterParent", None, "parentname"),
        _id("v1", "xxxxxxxxxxxxx", None, "parentname"),
        id="15-duplicates-collapse",
    ),
]


@pytest.mark.parametrize(("deps", "absent", "expected"), ALTERNATE_CASES)
def test_get_alternate_owner_identity(deps, absent, expected):
    assert get_alternate_owner_identity(deps, absent) == expected
    # the answer does not depend on the order dependents come in (a set upstream)
    assert get_alternate_owner_identity(list(reversed(deps)), absent) == expected


# -- items 36-40: virtual delete events ---------------------------------------------------


def test_virtual_delete_of_virtual_node_all_matching_removes_it():
    """Item 37: no non-matching dependents -> removed like a delete event."""
    b = GraphBuilder()
    d1 = upsert(b, "D1", [ref("O")], ns="ns1")
    d2 = upsert(b, "D2", [ref("O")], ns="ns1")
    b.drain()
    b.process_virtual_delete(ident("O", ns="ns1"))
    b.uid_to_node.check_invariants()
    assert "O" not in b.uid_to_node
    assert uid_multiset(b.attempt_to_delete) == Counter({"D1": 1, "D2": 1})
    assert list(b.absent_owner_cache) == [ident("O", ns="ns1")]
    assert d1.owners == (ref("O"),) and d2.owners == (ref("O"),)


def test_virtual_delete_with_non_matching_dependents_re_identifies():
    """Item 38 (§10.10 step 5): keep, cache + enqueue matching, replace by the alternate."""
    b = GraphBuilder()
    apps = ref("D", "deployment1", api_version="apps/v1", kind="Deployment")
    ext = ref("D", "deployment1", api_version="extensions/v1beta1", kind="Deployment")
    pod2 = upsert(b, "pod2", [apps], ns="ns1")
    pod1 = upsert(b, "pod1", [ext], ns="ns1")
    virtual = b.uid_to_node["D"]
    b.drain()
    absent = ObjectReference("apps/v1", "Deployment", "deployment1", "D", "ns1")
    b.process_virtual_delete(absent)
    b.uid_to_node.check_invariants()
    replacement = b.uid_to_node["D"]
    assert replacement is not virtual and replacement.virtual
    assert replacement.identity == ObjectReference(
        "extensions/v1beta1", "Deployment", "deployment1", "D", "ns1"
    )
    assert replacement.dependents == {pod1, pod2}
    assert b.attempt_to_delete == [pod2]
    assert b.attempt_to_delete_rate_limited == [replacement]
    assert list(b.absent_owner_cache) == [absent]


def test_virtual_delete_without_alternate_leaves_node_in_steady_state():
    """Item 38, no alternate: §10.14 style (cluster child names a namespaced owner)."""
    b = GraphBuilder()
    node1 = upsert(b, "node1", [ref("P")], kind="Node")  # virtual P, namespace ""
    pod2 = upsert(b, "pod2", [ref("P")], ns="ns1")
    virtual = b.uid_to_node["P"]
    b.drain()
    # the worker verified pod P absent in ns1 (a *different* identity than the node's)
    b.process_virtual_delete(ident("P", ns="ns1"))
    b.uid_to_node.check_invariants()
    assert b.uid_to_node["P"] is virtual
    assert b.attempt_to_delete == [pod2]
    assert ident("P", ns="ns1") in b.absent_owner_cache
    assert b.attempt_to_delete_rate_limited == []
    assert node1 in virtual.dependents


def test_virtual_delete_alternates_between_claimed_namespaces():
    b = GraphBuilder()
    upsert(b, "C1", [ref("P", kind="ClusterParent")], ns="ns1")
    upsert(b, "C2", [ref("P", kind="ClusterParent")], ns="ns2")
    virtual = b.uid_to_node["P"]
    b.drain()
    # identity of the virtual node is namespaced ns1 (first dependent): C2 does not match it
    b.process_virtual_delete(virtual.identity)
    assert b.uid_to_node["P"] is not virtual  # re-identified to C2's namespace
    assert b.uid_to_node["P"].identity.namespace == "ns2"
    b.drain()
    b.process_virtual_delete(b.uid_to_node["P"].identity)
    # now ns1 is the alternate again: it alternates, it never drops both
    assert b.uid_to_node["P"].identity.namespace == "ns1"


def test_virtual_delete_for_observed_node_with_other_identity():
    """Item 39 (§10.12): observed node kept; matching dependents enqueued, identity cached."""
    b = GraphBuilder()
    bad_ref = ref("D", "secretname", kind="Secret")
    good_ref = ref("D", "deployment1", api_version="apps/v1", kind="Deployment")
    bad = upsert(b, "bad", [bad_ref], ns="ns1")
    upsert(b, "good", [good_ref], ns="ns1")
    observed = upsert(b, "D", name="deployment1", ns="ns1", av="apps/v1", kind="Deployment")
    b.drain()
    absent = ObjectReference("v1", "Secret", "secretname", "D", "ns1")
    b.process_virtual_delete(absent)
    b.uid_to_node.check_invariants()
    assert b.uid_to_node["D"] is observed and not observed.virtual
    assert b.attempt_to_delete == [bad]
    assert list(b.absent_owner_cache) == [absent]


def test_virtual_delete_for_observed_node_with_other_identity_no_match():
    b = GraphBuilder()
    upsert(b, "O", ns="ns1")
    upsert(b, "D", [ref("O")], ns="ns1")
    b.drain()
    b.process_virtual_delete(ident("O", name="elsewhere", ns="ns1"))
    assert "O" in b.uid_to_node
    assert b.attempt_to_delete == [] and len(b.absent_owner_cache) == 0


def test_virtual_delete_for_unknown_uid_is_ignored():
    b = GraphBuilder()
    b.process_virtual_delete(ident("nope"))
    assert b.drain() == ([], [], [], []) and len(b.absent_owner_cache) == 0


def test_stale_virtual_delete_after_observation_with_same_identity_removes_observed_node():
    """Item 27: a virtual delete equal to the observed identity is a delete."""
    b = GraphBuilder()
    dep = upsert(b, "D", [ref("O")], ns="ns1")
    upsert(b, "O", ns="ns1")
    b.drain()
    b.process_virtual_delete(ident("O", ns="ns1"))
    assert "O" not in b.uid_to_node
    assert b.attempt_to_delete == [dep]


def test_drain_resets_outboxes():
    b = GraphBuilder()
    upsert(b, "D", [ref("O")])
    first = b.drain()
    assert uids(first[0]) == ["O"]
    assert b.drain() == ([], [], [], [])
