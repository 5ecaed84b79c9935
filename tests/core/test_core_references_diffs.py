"""gc-unit-cases.md §1 (referencesDiffs, item 19) and parsing of bad input."""

from __future__ import annotations

import pytest

from ownergc import (
    GraphBuilder,
    OwnerReference,
    decide_attempt_to_delete,
    references_diffs,
    starts_waiting_for_dependents_deleted,
    starts_waiting_for_dependents_orphaned,
)
from ownergc._core.refs import owner_references_of
from ownergc.errors import InvalidObject, InvalidOwnerReference
from tests.core.core_factories import obj, ref

# (old, new, added, removed (a set: map order upstream), changed)
DIFF_CASES = [
    pytest.param(
        [ref("1"), ref("2")], [ref("2"), ref("3")], [ref("3")], {ref("1")}, [], id="1-bench"
    ),
    pytest.param(None, None, [], set(), [], id="2-nil-nil"),
    pytest.param(None, [ref("1")], [ref("1")], set(), [], id="3-nil-new"),
    pytest.param([ref("1")], None, [], {ref("1")}, [], id="4-old-nil"),
    pytest.param(
        [ref("1", block=True)],
        [ref("1", block=False)],
        [],
        set(),
        [(ref("1", block=True), ref("1", block=False))],
        id="5-block-flip",
    ),
    pytest.param(
        [ref("1")],
        [ref("1", block=False)],
        [],
        set(),
        [(ref("1"), ref("1", block=False))],
        id="6-nil-vs-false",
    ),
    pytest.param(
        [ref("1", "a")], [ref("1", "b")], [], set(), [(ref("1", "a"), ref("1", "b"))], id="7-name"
    ),
    pytest.param([ref("1"), ref("2")], [ref("2"), ref("1")], [], set(), [], id="8-order"),
    pytest.param(
        [ref("1", "a"), ref("1", "b")],
        [ref("1", "a")],
        [],
        set(),
        [(ref("1", "b"), ref("1", "a"))],
        id="9-dup-old-last-wins",
    ),
    pytest.param(
        [ref("1", "a")],
        [ref("1", "a"), ref("1", "b")],
        [ref("1", "b")],
        set(),
        [],
        id="10-dup-new-added",
    ),
]


@pytest.mark.parametrize(("old", "new", "added", "removed", "changed"), DIFF_CASES)
def test_references_diffs(old, new, added, removed, changed):
    diff = references_diffs(old, new)
    assert diff.added == added
    assert len(diff.removed) == len(removed)
    assert set(diff.removed) == removed
    assert diff.changed == changed
    assert bool(diff) == bool(added or removed or changed)


def test_references_diffs_added_keeps_new_order():
    diff = references_diffs([], [ref("3"), ref("1"), ref("2")])
    assert [r.uid for r in diff.added] == ["3", "1", "2"]


def test_changed_compares_every_field():
    base = ref("1", "a", ctrl=True, block=True)
    for other in (
        ref("1", "a", ctrl=None, block=True),
        ref("1", "a", ctrl=False, block=True),
        ref("1", "a", ctrl=True, block=None),
        ref("1", "a", ctrl=True, block=True, kind="ReplicaSet"),
        ref("1", "a", ctrl=True, block=True, api_version="apps/v1"),
    ):
        assert references_diffs([base], [other]).changed == [(base, other)]
    assert not references_diffs([base], [ref("1", "a", ctrl=True, block=True)])


# -- OwnerReference JSON round trip --------------------------------------------


def test_owner_reference_round_trip_keeps_unset_flags_unset():
    raw = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"}
    parsed = OwnerReference.from_dict(raw)
    assert parsed.controller is None and parsed.block_owner_deletion is None
    assert parsed.to_dict() == raw
    full = dict(raw, controller=False, blockOwnerDeletion=True)
    assert OwnerReference.from_dict(full).to_dict() == full
    assert OwnerReference.from_dict(full) != parsed


# -- bad input -------------------------------------------------------------------

GOOD_REF = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}


@pytest.mark.parametrize(
    "refs",
    [
        pytest.param({"0": GOOD_REF}, id="dict"),
        pytest.param("u", id="string"),
        pytest.param(7, id="int"),
        pytest.param(True, id="bool"),
        pytest.param({}, id="empty-dict"),
        pytest.param("", id="empty-string"),
    ],
)
def test_owner_references_not_a_list(refs):
    body = {"metadata": {"name": "x", "uid": "1", "ownerReferences": refs}}
    with pytest.raises(InvalidOwnerReference, match="must be a list"):
        owner_references_of(body)
    with pytest.raises(InvalidOwnerReference):
        GraphBuilder().process_upsert(body, "v1", "Pod")


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param({k: v for k, v in GOOD_REF.items() if k != "uid"}, id="no-uid"),
        pytest.param({k: v for k, v in GOOD_REF.items() if k != "kind"}, id="no-kind"),
        pytest.param({k: v for k, v in GOOD_REF.items() if k != "name"}, id="no-name"),
        pytest.param({k: v for k, v in GOOD_REF.items() if k != "apiVersion"}, id="no-apiVersion"),
        pytest.param(dict(GOOD_REF, uid=""), id="empty-uid"),
        pytest.param(dict(GOOD_REF, uid=12), id="int-uid"),
        pytest.param(dict(GOOD_REF, kind=None), id="null-kind"),
        pytest.param(dict(GOOD_REF, controller="true"), id="string-controller"),
        pytest.param(dict(GOOD_REF, controller=1), id="int-controller"),
        pytest.param(dict(GOOD_REF, blockOwnerDeletion="false"), id="string-block"),
        pytest.param(dict(GOOD_REF, blockOwnerDeletion=0), id="int-block"),
        pytest.param(["u"], id="list-entry"),
        pytest.param("u", id="string-entry"),
        pytest.param(None, id="null-entry"),
    ],
)
def test_bad_owner_reference_entry(entry):
    body = {"metadata": {"name": "x", "uid": "1", "ownerReferences": [GOOD_REF, entry]}}
    with pytest.raises(InvalidOwnerReference):
        owner_references_of(body)
    builder = GraphBuilder()
    with pytest.raises(InvalidOwnerReference):
        builder.process_upsert(body, "v1", "Pod")
    assert not builder.uid_to_node, "a rejected event must leave the graph untouched"


def test_bad_owner_reference_in_live_object_of_decision():
    builder = GraphBuilder()
    node = builder.process_upsert(obj("1"), "v1", "Pod")
    live = {"metadata": {"name": "obj-1", "uid": "1", "ownerReferences": [{"uid": "2"}]}}
    with pytest.raises(InvalidOwnerReference):
        decide_attempt_to_delete(node, live)


def test_null_and_empty_owner_references_are_no_owners():
    for value in (None, []):
        assert owner_references_of({"metadata": {"ownerReferences": value}}) == ()
    assert owner_references_of({"metadata": {}}) == ()
    assert owner_references_of({}) == ()


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"metadata": ["name", "x"]}, id="metadata-list"),
        pytest.param({"metadata": "x"}, id="metadata-string"),
        pytest.param({"metadata": 3}, id="metadata-int"),
        pytest.param(["metadata"], id="object-list"),
        pytest.param("object", id="object-string"),
    ],
)
def test_metadata_not_a_dict(body):
    with pytest.raises(InvalidObject):
        GraphBuilder().process_upsert(body, "v1", "Pod")
    with pytest.raises(InvalidObject):
        GraphBuilder().process_delete(body, "v1", "Pod")
    with pytest.raises(InvalidObject):
        owner_references_of(body)
    with pytest.raises(InvalidObject):
        starts_waiting_for_dependents_deleted(None, body)
    with pytest.raises(InvalidObject):
        starts_waiting_for_dependents_orphaned(body, obj("1", deleting=True))
    builder = GraphBuilder()
    node = builder.process_upsert(obj("1"), "v1", "Pod")
    with pytest.raises(InvalidObject):
        decide_attempt_to_delete(node, body)


@pytest.mark.parametrize(
    "meta",
    [
        pytest.param({"uid": "1"}, id="no-name"),
        pytest.param({"name": "x"}, id="no-uid"),
        pytest.param({"name": "x", "uid": 1}, id="int-uid"),
        pytest.param({"name": "x", "uid": "1", "namespace": 5}, id="int-namespace"),
        pytest.param({"name": "x", "uid": "1", "finalizers": "orphan"}, id="string-finalizers"),
        pytest.param({"name": "x", "uid": "1", "finalizers": {"a": 1}}, id="dict-finalizers"),
    ],
)
def test_unusable_metadata_fields(meta):
    builder = GraphBuilder()
    with pytest.raises(InvalidObject):
        builder.process_upsert({"metadata": meta}, "v1", "Pod")
    assert not builder.uid_to_node


def test_bad_input_errors_are_value_errors_not_key_or_type_errors():
    # The error tree promises InvalidObject is a ValueError; callers catch one class.
    assert issubclass(InvalidOwnerReference, InvalidObject)
    assert issubclass(InvalidObject, ValueError)
    assert not issubclass(InvalidObject, (KeyError, TypeError))
