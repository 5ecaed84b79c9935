"""The add path of a dependent whose owner is already in the graph (issue 11).

Most objects of a cluster are siblings: pods of one ReplicaSet, each carrying
the same single owner reference. The builder takes a short path for them (the
reference reused from the first sibling's parse, the node linked straight into
its owner's dependents); these tests pin that the short path sees everything
the full rules see, for the first dependent of an owner and for its siblings.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from ownergc import GraphBuilder, OwnerReference
from ownergc.errors import InvalidOwnerReference
from tests.core.core_factories import FG, name_for, obj, ref, uids, upsert

SIBLINGS = ("d1", "d2", "d3")


def _owner_ref(**kw: Any) -> Any:
    return ref("o", kind="ReplicaSet", api_version="apps/v1", block=True, ctrl=True, **kw)


def _add_owner(b: GraphBuilder, **kw: Any) -> None:
    upsert(b, "o", av="apps/v1", kind="ReplicaSet", **kw)


def test_siblings_share_one_parsed_reference_and_are_linked() -> None:
    b = GraphBuilder()
    _add_owner(b, ns="ns1")
    nodes = [upsert(b, uid, [_owner_ref()], ns="ns1") for uid in SIBLINGS]
    assert all(node.owners is nodes[0].owners for node in nodes)
    assert {d.uid for d in b.uid_to_node["o"].dependents} == set(SIBLINGS)
    assert b.drain() == ([], [], [], [])


@pytest.mark.parametrize("field", ["controller", "blockOwnerDeletion"])
@pytest.mark.parametrize("value", [1, 1.0])
def test_sibling_with_a_number_for_a_boolean_is_refused(field: str, value: Any) -> None:
    """``1 == True``: a sibling's entry equal to the cached one except for the type of a
    flag must still be refused, as parsing it would be."""
    b = GraphBuilder()
    _add_owner(b)
    upsert(b, "d1", [_owner_ref()])
    body = obj("d2", [_owner_ref()])
    body["metadata"]["ownerReferences"][0][field] = value
    with pytest.raises(InvalidOwnerReference):
        b.process_upsert(body, "v1", "Pod")
    assert "d2" not in b.uid_to_node


def test_dependents_observed_while_the_owner_deletes_foreground_are_enqueued() -> None:
    b = GraphBuilder()
    _add_owner(b, deleting=True, finalizers=[FG])
    b.drain()
    for uid in SIBLINGS:
        upsert(b, uid, [_owner_ref()])
        assert uids(b.drain()[0]) == [uid]


def test_siblings_in_another_namespace_than_the_owner_are_flagged() -> None:
    b = GraphBuilder()
    _add_owner(b, ns="ns1")
    for uid in SIBLINGS:
        upsert(b, uid, [_owner_ref()], ns="ns2")
        to_delete, _, _, events = b.drain()
        assert uids(to_delete) == [uid]
        assert [e.reason for e in events] == ["OwnerRefInvalidNamespace"]


def test_cluster_scoped_owner_of_namespaced_siblings_is_not_flagged() -> None:
    b = GraphBuilder()
    _add_owner(b)
    for uid in SIBLINGS:
        upsert(b, uid, [_owner_ref()], ns="ns1")
        assert b.drain() == ([], [], [], [])


@pytest.mark.parametrize(
    "coordinates",
    [
        ("apps/v1", "ReplicaSet", "other"),
        ("apps/v1", "Deployment", name_for("o")),
        ("apps/v2", "ReplicaSet", name_for("o")),
    ],
)
def test_siblings_naming_the_owner_uid_with_other_coordinates_are_flagged(
    coordinates: tuple[str, str, str],
) -> None:
    api_version, kind, name = coordinates
    b = GraphBuilder()
    _add_owner(b, ns="ns1")
    wrong = ref("o", name, kind=kind, api_version=api_version, block=True, ctrl=True)
    for uid in SIBLINGS:
        upsert(b, uid, [wrong], ns="ns1")
        to_delete, _, _, events = b.drain()
        assert uids(to_delete) == [uid]
        assert events == []


def test_siblings_of_a_virtual_owner_in_their_namespace_are_not_flagged() -> None:
    b = GraphBuilder()
    upsert(b, "d1", [_owner_ref()], ns="ns1")
    assert uids(b.drain()[0]) == ["o"]  # the virtual owner, to be verified
    for uid in SIBLINGS[1:]:
        upsert(b, uid, [_owner_ref()], ns="ns1")
        assert b.drain() == ([], [], [], [])
    assert b.uid_to_node["o"].virtual
    assert {d.uid for d in b.uid_to_node["o"].dependents} == set(SIBLINGS)


class _Str(str):
    """A str subclass: OwnerReference.from_dict takes it; the builder's own check does not."""


_GOOD_ENTRY = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "o-name", "uid": "o"}


def _add_with_entry(entry: Any) -> Any:
    """The first dependent of owner ``o`` (observed), its reference given as ``entry``."""
    body = obj("d1")
    body["metadata"]["ownerReferences"] = [entry]
    b = GraphBuilder()
    _add_owner(b, name="o-name")
    node = b.process_upsert(body, "v1", "Pod")
    b.uid_to_node.check_invariants()
    return node


@pytest.mark.parametrize(
    "entry",
    [
        _GOOD_ENTRY,
        {**_GOOD_ENTRY, "controller": True, "blockOwnerDeletion": False},
        {**_GOOD_ENTRY, "controller": None, "blockOwnerDeletion": None, "extra": 1},
        {**_GOOD_ENTRY, "name": _Str("o-name"), "kind": _Str("ReplicaSet")},
    ],
)
def test_an_owners_first_dependent_parses_its_reference_as_from_dict(entry: Any) -> None:
    """The builder parses a new owner's reference itself (issue 19); it must be the
    reference ``OwnerReference.from_dict`` makes, field for field and type for type."""
    dep = _add_with_entry(dict(entry))
    (got,) = dep.owners
    want = OwnerReference.from_dict(entry)
    assert got == want and hash(got) == hash(want)
    fields = ("api_version", "kind", "name", "uid", "controller", "block_owner_deletion")
    assert [type(getattr(got, f)) for f in fields] == [type(getattr(want, f)) for f in fields]
    with pytest.raises(FrozenInstanceError):
        got.name = "other"


def test_a_str_subclass_in_a_reference_to_an_unobserved_owner_is_taken_as_pure_takes_it() -> None:
    entry = {**_GOOD_ENTRY, "name": _Str("o-name"), "kind": _Str("ReplicaSet")}
    body = obj("d1")
    body["metadata"]["ownerReferences"] = [entry]
    b = GraphBuilder()
    b.process_upsert(body, "v1", "Pod")
    virtual = b.uid_to_node["o"]
    assert virtual.virtual and virtual.identity.name == "o-name"
    assert type(virtual.name) is _Str


@pytest.mark.parametrize(
    "change",
    [
        {"controller": 1},
        {"blockOwnerDeletion": "yes"},
        {"name": ""},
        {"kind": None},
        {"uid": 7},
        {"apiVersion": b"apps/v1"},
    ],
)
def test_an_owners_first_dependent_refuses_what_from_dict_refuses(change: Any) -> None:
    entry = {**_GOOD_ENTRY, **change}
    with pytest.raises(InvalidOwnerReference) as expected:
        OwnerReference.from_dict(entry)
    with pytest.raises(InvalidOwnerReference) as got:
        _add_with_entry(entry)
    assert str(got.value) == str(expected.value)


def test_an_owners_first_dependent_missing_a_field_is_refused_as_from_dict_refuses() -> None:
    entry = {k: v for k, v in _GOOD_ENTRY.items() if k != "name"}
    with pytest.raises(InvalidOwnerReference) as expected:
        OwnerReference.from_dict(entry)
    with pytest.raises(InvalidOwnerReference) as got:
        _add_with_entry(entry)
    assert str(got.value) == str(expected.value)
