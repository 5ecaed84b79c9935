"""gc-unit-cases.md §7 rows 1-9: the patch bodies, byte for byte (gc-semantics.md 60-64, 68),
plus the orphaning plan that uses them (items 51-54)."""

from __future__ import annotations

import pytest

from ownergc import (
    GraphBuilder,
    OwnerReference,
    Patch,
    RemoveFinalizer,
    delete_owner_refs_json_merge_patch,
    delete_owner_refs_strategic_merge_patch,
    plan_attempt_to_orphan,
    remove_finalizer_json_merge_patch,
    unblock_owner_refs_json_merge_patch,
    unblock_owner_refs_strategic_merge_patch,
)
from tests.core.core_factories import ORPHAN, compact, obj, ref, upsert

A = OwnerReference("v1", "ConfigMap", "a", "1", controller=True, block_owner_deletion=True)
B = OwnerReference("v1", "ConfigMap", "b", "2", block_owner_deletion=False)
C = OwnerReference("v1", "ConfigMap", "c", "3")


def _with(refs, *, uid="100", rv="42", finalizers=None):
    meta = {"name": "x", "uid": uid, "resourceVersion": rv}
    if refs is not None:
        meta["ownerReferences"] = [r.to_dict() for r in refs]
    if finalizers is not None:
        meta["finalizers"] = finalizers
    return {"metadata": meta}


PATCH_ROWS = [
    pytest.param(
        lambda: delete_owner_refs_strategic_merge_patch("100", "2", "3"),
        '{"metadata":{"uid":"100","ownerReferences":[{"$patch":"delete","uid":"2"},'
        '{"$patch":"delete","uid":"3"}]}}',
        id="1-delete-refs-smp",
    ),
    pytest.param(
        lambda: delete_owner_refs_strategic_merge_patch("100"),
        '{"metadata":{"uid":"100","ownerReferences":null}}',
        id="2-delete-refs-smp-empty",
    ),
    pytest.param(
        lambda: unblock_owner_refs_strategic_merge_patch(_with([A, B, C])),
        '{"metadata":{"uid":"100","creationTimestamp":null,"ownerReferences":[{"apiVersion":"v1",'
        '"kind":"ConfigMap","name":"a","uid":"1","controller":true,"blockOwnerDeletion":false}]}}',
        id="3-unblock-smp",
    ),
    pytest.param(
        lambda: unblock_owner_refs_strategic_merge_patch(_with([C])),
        '{"metadata":{"uid":"100","creationTimestamp":null}}',
        id="4-unblock-smp-nothing-blocks",
    ),
    pytest.param(
        lambda: delete_owner_refs_json_merge_patch(_with([A, B, C]), "2", "3"),
        '{"metadata":{"resourceVersion":"42","ownerReferences":[{"apiVersion":"v1",'
        '"kind":"ConfigMap","name":"a","uid":"1","controller":true,"blockOwnerDeletion":true}]}}',
        id="5-delete-refs-jmp",
    ),
    pytest.param(
        lambda: delete_owner_refs_json_merge_patch(_with([A, B]), "1", "2"),
        '{"metadata":{"resourceVersion":"42","ownerReferences":null}}',
        id="6-delete-refs-jmp-nothing-left",
    ),
    pytest.param(
        lambda: unblock_owner_refs_json_merge_patch(_with([A, B, C])),
        '{"metadata":{"resourceVersion":"42","ownerReferences":[{"apiVersion":"v1",'
        '"kind":"ConfigMap","name":"a","uid":"1","controller":true,"blockOwnerDeletion":false},'
        '{"apiVersion":"v1","kind":"ConfigMap","name":"b","uid":"2","blockOwnerDeletion":false},'
        '{"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"3","blockOwnerDeletion":false}]}}',
        id="7-unblock-jmp",
    ),
    pytest.param(
        lambda: remove_finalizer_json_merge_patch(
            _with(None, rv="7", finalizers=["foregroundDeletion", "x/y"]), "foregroundDeletion"
        ),
        '{"metadata":{"resourceVersion":"7","finalizers":["x/y"]}}',
        id="8-remove-finalizer",
    ),
    pytest.param(
        lambda: remove_finalizer_json_merge_patch(_with(None, rv="7", finalizers=[ORPHAN]), ORPHAN),
        '{"metadata":{"resourceVersion":"7","finalizers":null}}',
        id="9-remove-finalizer-none-left",
    ),
]


@pytest.mark.parametrize(("build", "expected"), PATCH_ROWS)
def test_patch_bytes(build, expected):
    assert compact(build()) == expected


def test_unblock_patches_prefer_the_given_cached_owners():
    live = _with([C])
    assert compact(unblock_owner_refs_strategic_merge_patch(live, [A, B, C])) == compact(
        unblock_owner_refs_strategic_merge_patch(_with([A, B, C]))
    )
    assert compact(unblock_owner_refs_json_merge_patch(live, [A])) == (
        '{"metadata":{"resourceVersion":"42","ownerReferences":[{"apiVersion":"v1",'
        '"kind":"ConfigMap","name":"a","uid":"1","controller":true,"blockOwnerDeletion":false}]}}'
    )


def test_unblock_jmp_with_no_cached_owners_is_null():
    """Go marshals the nil slice as null (a virtual node has no cached owners)."""
    assert compact(unblock_owner_refs_json_merge_patch(_with([A]), [])) == (
        '{"metadata":{"resourceVersion":"42","ownerReferences":null}}'
    )


def test_remove_finalizer_drops_every_occurrence_keeps_order():
    patch = remove_finalizer_json_merge_patch(
        _with(None, rv="7", finalizers=["a", ORPHAN, "b", ORPHAN, "c"]), ORPHAN
    )
    assert patch["metadata"]["finalizers"] == ["a", "b", "c"]


def test_delete_refs_jmp_drops_every_ref_with_the_uid():
    dup = OwnerReference("v1", "Secret", "other", "2")
    patch = delete_owner_refs_json_merge_patch(_with([B, A, dup, C]), "2")
    assert [r["uid"] for r in patch["metadata"]["ownerReferences"]] == ["1", "3"]


# -- orphaning (items 51-54) -------------------------------------------------------------------


def test_plan_attempt_to_orphan_patches_each_dependent_then_removes_finalizer():
    b = GraphBuilder()
    owner = upsert(b, "O", ns="ns1")
    keep = ref("K", block=True)
    d1 = upsert(b, "D1", [ref("O", block=True), keep], ns="ns1", rv="11")
    d2 = upsert(b, "D2", [ref("O"), ref("O", "alias")], ns="ns1", rv="12")
    owner = upsert(b, "O", ns="ns1", deleting=True, finalizers=[ORPHAN], rv="2")
    assert b.attempt_to_orphan[-1] is owner
    patches, finish = plan_attempt_to_orphan(owner)
    assert finish == RemoveFinalizer(owner.identity, ORPHAN)
    by_target = {p.target.uid: p for p in patches}
    assert set(by_target) == {"D1", "D2"}
    assert all(isinstance(p, Patch) for p in patches)
    assert compact(by_target["D1"].smp) == (
        '{"metadata":{"uid":"D1","ownerReferences":[{"$patch":"delete","uid":"O"}]}}'
    )
    assert by_target["D1"].target == d1.identity
    assert compact(by_target["D1"].jmp) == (
        '{"metadata":{"resourceVersion":"11","ownerReferences":[{"apiVersion":"v1","kind":"Pod",'
        '"name":"obj-K","uid":"K","blockOwnerDeletion":true}]}}'
    )
    assert by_target["D2"].target == d2.identity
    assert compact(by_target["D2"].jmp) == (
        '{"metadata":{"resourceVersion":"12","ownerReferences":null}}'
    )


def test_plan_attempt_to_orphan_without_dependents_only_removes_finalizer():
    b = GraphBuilder()
    owner = upsert(b, "O", deleting=True, finalizers=[ORPHAN])
    assert plan_attempt_to_orphan(owner) == ([], RemoveFinalizer(owner.identity, ORPHAN))


def test_objects_helpers_are_consistent():
    # the factory's refs parse back to themselves (guards the fixtures used above)
    body = obj("x", [A, B, C])
    assert [OwnerReference.from_dict(r) for r in body["metadata"]["ownerReferences"]] == [A, B, C]
