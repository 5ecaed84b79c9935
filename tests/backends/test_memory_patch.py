"""Patches: strategic merge (table 7 rows 10-13), JSON merge (RFC 7386), JSON patch (RFC 6902),
and the update validation of item 89."""

from __future__ import annotations

import itertools

import pytest

from ownergc.errors import BadRequest, Conflict, Invalid, UnsupportedPatchType
from ownergc.protocols import APIResource, PatchType
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._patch import (
    PatchError,
    apply_json_merge_patch,
    apply_json_patch,
    apply_strategic_merge_patch,
)

pytestmark = pytest.mark.anyio

SMP = PatchType.STRATEGIC_MERGE
MERGE = PatchType.MERGE
JSONP = PatchType.JSON


def ref(uid: str, name: str | None = None, **flags) -> dict:
    out = {"apiVersion": "v1", "kind": "ConfigMap", "name": name or f"cm{uid}", "uid": uid}
    out.update(flags)
    return out


def pods(store: InMemoryStore) -> APIResource:
    return store.resource_for("v1", "Pod")


@pytest.fixture
def store100(clock) -> InMemoryStore:
    """A store whose first user object gets uid "100" (the namespaces take the first four)."""
    uids = itertools.chain(
        ["ns1", "ns2", "ns3", "ns4", "100"], (f"u{i}" for i in itertools.count())
    )
    return InMemoryStore(clock=clock, uid_factory=lambda: next(uids))


async def make_pod(store: InMemoryStore, refs: list[dict], **meta) -> dict:
    body = {
        "metadata": {"name": "p", "namespace": "default", "ownerReferences": refs, **meta},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    return await store.create(pods(store), body)


# ---------------------------------------------------------------------------
# Table 7, rows 10-13 (the GC's patches applied by the apiserver)


async def test_row10_delete_owner_refs(store100: InMemoryStore) -> None:
    pod = await make_pod(store100, [ref("1"), ref("2"), ref("3")])
    assert pod["metadata"]["uid"] == "100"
    patch = {
        "metadata": {
            "uid": "100",
            "ownerReferences": [{"$patch": "delete", "uid": "2"}, {"$patch": "delete", "uid": "3"}],
        }
    }
    out = await store100.patch(pods(store100), "p", patch, patch_type=SMP, namespace="default")
    assert out["metadata"]["ownerReferences"] == [ref("1")]


async def test_row11_unblock_owner_refs(store100: InMemoryStore) -> None:
    await make_pod(
        store100,
        [
            ref("1", "a", controller=True, blockOwnerDeletion=True),
            ref("2", "b", blockOwnerDeletion=False),
            ref("3", "c"),
        ],
    )
    patch = {
        "metadata": {
            "uid": "100",
            "creationTimestamp": None,
            "ownerReferences": [ref("1", "a", controller=True, blockOwnerDeletion=False)],
        }
    }
    out = await store100.patch(pods(store100), "p", patch, patch_type=SMP, namespace="default")
    assert out["metadata"]["ownerReferences"] == [
        ref("1", "a", controller=True, blockOwnerDeletion=False),
        ref("2", "b", blockOwnerDeletion=False),
        ref("3", "c"),
    ]
    assert out["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"  # restored, not an error


async def test_row12_deleting_a_missing_uid_is_ignored(store100: InMemoryStore) -> None:
    a = ref("1", "a", controller=True, blockOwnerDeletion=True)
    c = ref("3", "c")
    await make_pod(store100, [a, ref("2", "b", blockOwnerDeletion=False), c])
    patch = {
        "metadata": {
            "uid": "100",
            "ownerReferences": [{"$patch": "delete", "uid": "2"}, {"$patch": "delete", "uid": "9"}],
        }
    }
    out = await store100.patch(pods(store100), "p", patch, patch_type=SMP, namespace="default")
    assert out["metadata"]["ownerReferences"] == [a, c]


async def test_row13_uid_precondition_is_422(store100: InMemoryStore) -> None:
    before = await make_pod(store100, [ref("1"), ref("2")])
    patch = {"metadata": {"uid": "999", "ownerReferences": [{"$patch": "delete", "uid": "2"}]}}
    with pytest.raises(Invalid) as info:
        await store100.patch(pods(store100), "p", patch, patch_type=SMP, namespace="default")
    assert info.value.status == 422
    assert "metadata.uid" in info.value.message and "immutable" in info.value.message
    after = await store100.get(pods(store100), "p", namespace="default", metadata_only=False)
    assert after == before


# ---------------------------------------------------------------------------
# Strategic merge patch details


def test_smp_maps_merge_and_null_deletes() -> None:
    original = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"x": 1, "y": {"z": 2}}}
    patch = {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"y": {"w": 3}}}
    assert apply_strategic_merge_patch(original, patch) == {
        "metadata": {"labels": {"b": "2", "c": "3"}},
        "spec": {"x": 1, "y": {"z": 2, "w": 3}},
    }
    assert original["metadata"]["labels"] == {"a": "1", "b": "2"}  # input untouched


def test_smp_replaces_lists_without_strategy() -> None:
    original = {"spec": {"ports": [{"name": "a"}, {"name": "b"}]}}
    out = apply_strategic_merge_patch(original, {"spec": {"ports": [{"name": "c"}]}})
    assert out == {"spec": {"ports": [{"name": "c"}]}}


def test_smp_owner_refs_merge_by_uid_and_add_new_entries() -> None:
    original = {"metadata": {"ownerReferences": [ref("1"), ref("2")]}}
    patch = {"metadata": {"ownerReferences": [ref("2", blockOwnerDeletion=True), ref("3")]}}
    out = apply_strategic_merge_patch(original, patch)["metadata"]["ownerReferences"]
    # Kubernetes order: patched entries in patch order, interleaved with server-only ones.
    assert out == [ref("1"), ref("2", blockOwnerDeletion=True), ref("3")]


def test_smp_new_list_entry_goes_before_server_only_entries() -> None:
    # mergeSortedSlice: a brand-new entry is not in the server order, so it is placed first.
    out = apply_strategic_merge_patch(
        {"metadata": {"finalizers": ["a.io/x"]}}, {"metadata": {"finalizers": ["b.io/y"]}}
    )
    assert out["metadata"]["finalizers"] == ["b.io/y", "a.io/x"]


def test_smp_finalizers_merge_as_a_set() -> None:
    out = apply_strategic_merge_patch(
        {"metadata": {"finalizers": ["a.io/x", "b.io/y"]}},
        {"metadata": {"finalizers": ["b.io/y"]}},
    )
    assert out["metadata"]["finalizers"] == ["a.io/x", "b.io/y"]


def test_smp_delete_from_primitive_list() -> None:
    out = apply_strategic_merge_patch(
        {"metadata": {"finalizers": ["a.io/x", "orphan", "b.io/y"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["orphan", "zzz"]}},
    )
    assert out["metadata"]["finalizers"] == ["a.io/x", "b.io/y"]
    absent = apply_strategic_merge_patch(
        {"metadata": {}}, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["orphan"]}}
    )
    assert absent == {"metadata": {}}


def test_smp_set_element_order() -> None:
    out = apply_strategic_merge_patch(
        {"metadata": {"ownerReferences": [ref("1"), ref("2"), ref("3")]}},
        {
            "metadata": {
                "$setElementOrder/ownerReferences": [{"uid": "3"}, {"uid": "1"}, {"uid": "2"}]
            }
        },
    )
    assert [r["uid"] for r in out["metadata"]["ownerReferences"]] == ["3", "1", "2"]


def test_smp_list_replace_directive() -> None:
    out = apply_strategic_merge_patch(
        {"metadata": {"ownerReferences": [ref("1"), ref("2")]}},
        {"metadata": {"ownerReferences": [{"$patch": "replace"}, ref("9")]}},
    )
    assert out["metadata"]["ownerReferences"] == [ref("9")]


def test_smp_map_directives() -> None:
    original = {"spec": {"a": 1, "b": 2}, "x": 1}
    assert apply_strategic_merge_patch(original, {"spec": {"$patch": "replace", "c": 3}}) == {
        "spec": {"c": 3},
        "x": 1,
    }
    assert apply_strategic_merge_patch(original, {"spec": {"$patch": "delete"}}) == {
        "spec": {},
        "x": 1,
    }
    assert apply_strategic_merge_patch(original, {"$retainKeys": ["spec"], "spec": {"a": 5}}) == {
        "spec": {"a": 5, "b": 2}
    }


@pytest.mark.parametrize(
    "patch",
    [
        [],
        "text",
        {"metadata": {"ownerReferences": [{"$patch": "delete"}]}},  # no merge key
        {"metadata": {"ownerReferences": [{"name": "no-uid"}]}},
        {"metadata": {"ownerReferences": [{"$patch": "explode", "uid": "1"}]}},
        {"spec": {"$patch": "explode"}},
        {"metadata": {"ownerReferences": ["1"]}},
        {"$retainKeys": ["spec"], "metadata": {}},
    ],
)
def test_smp_malformed_patches_are_400(patch) -> None:
    with pytest.raises(PatchError) as info:
        apply_strategic_merge_patch(
            {"metadata": {"ownerReferences": [ref("1")]}, "spec": {"a": 1}}, patch
        )
    assert info.value.status == 400


async def test_smp_malformed_patch_through_the_store_is_bad_request(store: InMemoryStore) -> None:
    await make_pod(store, [ref("1")])
    with pytest.raises(BadRequest):
        await store.patch(
            pods(store),
            "p",
            {"metadata": {"ownerReferences": [{"name": "x"}]}},
            patch_type=SMP,
            namespace="default",
        )


async def test_smp_delete_on_absent_owner_refs_is_422_like_kubernetes(store: InMemoryStore) -> None:
    # A key missing from the object takes the patch value verbatim; the lone uid fails validation.
    await make_pod(store, [])
    with pytest.raises(Invalid):
        await store.patch(
            pods(store),
            "p",
            {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "2"}]}},
            patch_type=SMP,
            namespace="default",
        )


# ---------------------------------------------------------------------------
# Custom resources refuse strategic merge (415) and accept the other two


async def test_custom_resource_rejects_strategic_merge_with_415(store: InMemoryStore) -> None:
    widgets = store.register_resource(
        group="example.com", versions="v1", resource="widgets", kind="Widget"
    )
    await store.create(widgets, {"metadata": {"name": "w", "namespace": "default"}})
    with pytest.raises(UnsupportedPatchType) as info:
        await store.patch(
            widgets, "w", {"metadata": {"labels": {"a": "b"}}}, patch_type=SMP, namespace="default"
        )
    assert info.value.status == 415
    merged = await store.patch(
        widgets, "w", {"metadata": {"labels": {"a": "b"}}}, patch_type=MERGE, namespace="default"
    )
    assert merged["metadata"]["labels"] == {"a": "b"}
    patched = await store.patch(
        widgets,
        "w",
        [{"op": "add", "path": "/metadata/labels/c", "value": "d"}],
        patch_type=JSONP,
        namespace="default",
    )
    assert patched["metadata"]["labels"] == {"a": "b", "c": "d"}


async def test_415_even_when_the_object_does_not_exist(store: InMemoryStore) -> None:
    widgets = store.register_resource(
        group="example.com", versions="v1", resource="widgets", kind="Widget"
    )
    with pytest.raises(UnsupportedPatchType):
        await store.patch(widgets, "nope", {}, patch_type=SMP, namespace="default")


async def test_unknown_patch_type_is_415(store: InMemoryStore) -> None:
    await make_pod(store, [])
    with pytest.raises(UnsupportedPatchType):
        await store.patch(
            pods(store),
            "p",
            {},
            patch_type="application/yaml",  # type: ignore[arg-type]
            namespace="default",
        )


# ---------------------------------------------------------------------------
# JSON merge patch: RFC 7386 appendix A, every example

RFC7386 = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "result"), RFC7386)
def test_json_merge_patch_rfc7386(target, patch, result) -> None:
    assert apply_json_merge_patch(target, patch) == result


async def test_merge_patch_with_stale_resource_version_conflicts(store: InMemoryStore) -> None:
    created = await make_pod(store, [ref("1")])
    rv = created["metadata"]["resourceVersion"]
    await store.patch(
        pods(store),
        "p",
        {"metadata": {"labels": {"a": "b"}}},
        patch_type=MERGE,
        namespace="default",
    )
    with pytest.raises(Conflict) as info:
        await store.patch(
            pods(store),
            "p",
            {"metadata": {"resourceVersion": rv, "ownerReferences": None}},
            patch_type=MERGE,
            namespace="default",
        )
    assert info.value.status == 409
    live = await store.get(pods(store), "p", namespace="default")
    assert live["metadata"]["ownerReferences"] == [ref("1")]
    fresh = live["metadata"]["resourceVersion"]
    out = await store.patch(
        pods(store),
        "p",
        {"metadata": {"resourceVersion": fresh, "ownerReferences": None}},
        patch_type=MERGE,
        namespace="default",
    )
    assert "ownerReferences" not in out["metadata"]


async def test_merge_patch_must_be_an_object(store: InMemoryStore) -> None:
    await make_pod(store, [])
    with pytest.raises(BadRequest):
        await store.patch(pods(store), "p", [], patch_type=MERGE, namespace="default")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# JSON patch: RFC 6902 appendix A


RFC6902_OK = [
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
    (
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    (
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    (
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    ({"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": "/c"}], {"a": {"b": 1}, "c": {"b": 1}}),
    # Looser than RFC 6902, as kube-apiserver's json-patch (v4) reads a patch (recorded in
    # tests/data/real-apiserver-1.20/json-patch.json): replacing an absent member adds it,
    # "01" is an index, a missing value is null, a negative index counts from the end.
    ({"a": 1}, [{"op": "replace", "path": "/b", "value": 2}], {"a": 1, "b": 2}),
    ({"a": [1]}, [{"op": "add", "path": "/a/01", "value": 2}], {"a": [1, 2]}),
    ({"a": 1}, [{"op": "add", "path": "/b"}], {"a": 1, "b": None}),
    ({"a": [1, 2]}, [{"op": "remove", "path": "/a/-1"}], {"a": [1]}),
]


@pytest.mark.parametrize(("doc", "patch", "result"), RFC6902_OK)
def test_json_patch_rfc6902(doc, patch, result) -> None:
    assert apply_json_patch(doc, patch) == result


RFC6902_FAIL = [
    ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}]),
    ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}]),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}]),
    ({"a": True}, [{"op": "test", "path": "/a", "value": 1}]),
    ({"a": 1}, [{"op": "remove", "path": "/b"}]),
    ({"a": [1]}, [{"op": "add", "path": "/a/5", "value": 2}]),
    ({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a/c"}]),
    ({"a": 1}, [{"op": "frobnicate", "path": "/a"}]),
    ({"a": 1}, [{"op": "add", "path": "a", "value": 1}]),
    # json-patch compares numbers by their text: 1 is not 1.0 (recorded, as above)
    ({"a": 1}, [{"op": "test", "path": "/a", "value": 1.0}]),
]


@pytest.mark.parametrize(("doc", "patch"), RFC6902_FAIL)
def test_json_patch_errors_are_422(doc, patch) -> None:
    with pytest.raises(PatchError) as info:
        apply_json_patch(doc, patch)
    assert info.value.status == 422


def test_json_patch_is_applied_atomically_to_a_copy() -> None:
    doc = {"a": 1}
    with pytest.raises(PatchError):
        apply_json_patch(
            doc, [{"op": "add", "path": "/b", "value": 2}, {"op": "remove", "path": "/x"}]
        )
    assert doc == {"a": 1}


async def test_failed_json_patch_test_is_invalid(store: InMemoryStore) -> None:
    created = await make_pod(store, [])
    rv = created["metadata"]["resourceVersion"]
    with pytest.raises(Invalid):
        await store.patch(
            pods(store),
            "p",
            [
                {"op": "test", "path": "/metadata/resourceVersion", "value": "0"},
                {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}},
            ],
            patch_type=JSONP,
            namespace="default",
        )
    assert store.resource_version == rv
    out = await store.patch(
        pods(store),
        "p",
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "add", "path": "/metadata/finalizers", "value": ["x.io/y"]},
            {"op": "add", "path": "/metadata/finalizers/-", "value": "x.io/z"},
        ],
        patch_type=JSONP,
        namespace="default",
    )
    assert out["metadata"]["finalizers"] == ["x.io/y", "x.io/z"]


async def test_json_patch_document_must_be_a_list(store: InMemoryStore) -> None:
    await make_pod(store, [])
    with pytest.raises(BadRequest):
        await store.patch(pods(store), "p", {"op": "add"}, patch_type=JSONP, namespace="default")


# ---------------------------------------------------------------------------
# Item 89: update validation through patches


@pytest.mark.parametrize(
    "refs",
    [
        [{"kind": "ConfigMap", "name": "a", "uid": "1"}],
        [{"apiVersion": "apps/", "kind": "ConfigMap", "name": "a", "uid": "1"}],
        [{"apiVersion": "a/b/c", "kind": "ConfigMap", "name": "a", "uid": "1"}],
        [{"apiVersion": "v1", "name": "a", "uid": "1"}],
        [{"apiVersion": "v1", "kind": "ConfigMap", "uid": "1"}],
        [{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": ""}],
        [ref("1", controller=True), ref("2", controller=True)],
        [{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"}],
    ],
)
async def test_bad_owner_references_are_invalid(store: InMemoryStore, refs) -> None:
    await make_pod(store, [ref("9")])
    with pytest.raises(Invalid):
        await store.patch(
            pods(store),
            "p",
            {"metadata": {"ownerReferences": refs}},
            patch_type=MERGE,
            namespace="default",
        )
    with pytest.raises(Invalid):
        await store.create(
            pods(store),
            {"metadata": {"name": "q", "namespace": "default", "ownerReferences": refs}},
        )


async def test_acceptable_owner_references(store: InMemoryStore) -> None:
    refs = [
        ref("1", controller=True),
        ref("2", controller=False),
        {"apiVersion": "events.k8s.io/v1", "kind": "Event", "name": "e", "uid": "3"},
        {
            "apiVersion": "example.com/v1",
            "kind": "Missing",
            "name": "m",
            "uid": "4",
            "blockOwnerDeletion": True,
        },
    ]
    out = await make_pod(store, refs)
    assert out["metadata"]["ownerReferences"] == refs  # owners need not exist


@pytest.mark.parametrize(
    "refs",
    [
        "not-a-list",
        ["not-a-dict"],
        [{"apiVersion": 1, "kind": "A", "name": "a", "uid": "1"}],
        [{"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": "yes"}],
    ],
)
async def test_wrongly_typed_owner_references_are_bad_requests(store: InMemoryStore, refs) -> None:
    await make_pod(store, [])
    with pytest.raises(BadRequest):
        await store.patch(
            pods(store),
            "p",
            {"metadata": {"ownerReferences": refs}},
            patch_type=MERGE,
            namespace="default",
        )


async def test_orphan_and_foreground_together_are_invalid(store: InMemoryStore) -> None:
    await make_pod(store, [])
    with pytest.raises(Invalid) as info:
        await store.patch(
            pods(store),
            "p",
            {"metadata": {"finalizers": ["orphan", "foregroundDeletion"]}},
            patch_type=MERGE,
            namespace="default",
        )
    assert "cannot be both set" in info.value.message
    with pytest.raises(Invalid):
        await store.create(
            pods(store),
            {
                "metadata": {
                    "name": "q",
                    "namespace": "default",
                    "finalizers": ["orphan", "foregroundDeletion"],
                }
            },
        )


async def test_no_new_finalizers_while_deleting(store: InMemoryStore) -> None:
    await make_pod(store, [], finalizers=["a.io/x"])
    await store.delete(pods(store), "p", namespace="default")
    with pytest.raises(Invalid) as info:
        await store.patch(
            pods(store),
            "p",
            {"metadata": {"finalizers": ["a.io/x", "b.io/y"]}},
            patch_type=MERGE,
            namespace="default",
        )
    assert info.value.details["causes"][0]["reason"] == "FieldValueForbidden"
    # removing and reordering existing ones is fine
    out = await store.patch(
        pods(store),
        "p",
        {"metadata": {"finalizers": ["a.io/x"], "labels": {"k": "v"}}},
        patch_type=MERGE,
        namespace="default",
    )
    assert out["metadata"]["labels"] == {"k": "v"}


async def test_server_owned_metadata(store: InMemoryStore) -> None:
    created = await make_pod(store, [])
    meta = created["metadata"]
    # generation and creationTimestamp changes are silently ignored
    out = await store.patch(
        pods(store),
        "p",
        {"metadata": {"generation": 42, "creationTimestamp": "2000-01-01T00:00:00Z"}},
        patch_type=MERGE,
        namespace="default",
    )
    assert out["metadata"].get("generation") == meta.get("generation")  # none on v1.30 Pods
    assert out["metadata"]["creationTimestamp"] == meta["creationTimestamp"]
    assert out == created  # nothing changed: no write
    for field, value in [
        ("uid", "other"),
        ("deletionTimestamp", "2026-01-02T03:04:05Z"),
        ("deletionGracePeriodSeconds", 30),
    ]:
        with pytest.raises(Invalid) as info:
            await store.patch(
                pods(store),
                "p",
                {"metadata": {field: value}},
                patch_type=MERGE,
                namespace="default",
            )
        assert f"metadata.{field}" in info.value.message


async def test_deletion_timestamp_cannot_be_changed_once_set(store: InMemoryStore) -> None:
    await make_pod(store, [], finalizers=["a.io/x"])
    held = await store.delete(pods(store), "p", namespace="default")
    assert held is not None
    out = await store.patch(
        pods(store),
        "p",
        {"metadata": {"deletionTimestamp": None, "deletionGracePeriodSeconds": None}},
        patch_type=MERGE,
        namespace="default",
    )
    assert out["metadata"]["deletionTimestamp"] == held["metadata"]["deletionTimestamp"]
    assert out["metadata"]["deletionGracePeriodSeconds"] == 0
    with pytest.raises(Invalid):
        await store.patch(
            pods(store),
            "p",
            {"metadata": {"deletionGracePeriodSeconds": 30}},
            patch_type=MERGE,
            namespace="default",
        )


async def test_name_and_namespace_cannot_be_patched(store: InMemoryStore) -> None:
    await make_pod(store, [])
    for meta in ({"name": "other"}, {"namespace": "kube-system"}):
        with pytest.raises(BadRequest):
            await store.patch(
                pods(store), "p", {"metadata": meta}, patch_type=MERGE, namespace="default"
            )


async def test_kind_cannot_be_patched(store: InMemoryStore) -> None:
    await make_pod(store, [])
    with pytest.raises(BadRequest):
        await store.patch(
            pods(store), "p", {"kind": "Secret"}, patch_type=MERGE, namespace="default"
        )


async def test_generation_bumps_only_on_spec_changes(store: InMemoryStore) -> None:
    deployments = store.resource_for("apps/v1", "Deployment")
    created = await store.create(
        deployments, {"metadata": {"name": "d"}, "spec": {"replicas": 1}}, namespace="default"
    )
    assert created["metadata"]["generation"] == 1
    rv0 = int(created["metadata"]["resourceVersion"])
    labelled = await store.patch(
        deployments, "d", {"metadata": {"labels": {"a": "b"}}}, patch_type=SMP, namespace="default"
    )
    assert labelled["metadata"]["generation"] == 1
    assert int(labelled["metadata"]["resourceVersion"]) == rv0 + 1
    status = await store.patch(
        deployments,
        "d",
        {"status": {"replicas": 1}},
        patch_type=MERGE,
        namespace="default",
        subresource="status",
    )
    assert status["metadata"]["generation"] == 1 and status["status"] == {"replicas": 1}
    spec = await store.patch(
        deployments, "d", {"spec": {"replicas": 2}}, patch_type=MERGE, namespace="default"
    )
    assert spec["metadata"]["generation"] == 2
    assert int(spec["metadata"]["resourceVersion"]) == rv0 + 3
    same = await store.patch(
        deployments, "d", {"spec": {"replicas": 2}}, patch_type=MERGE, namespace="default"
    )
    assert same == spec  # no-op: no new resourceVersion


async def test_pods_have_no_generation_in_v1_30(store: InMemoryStore) -> None:
    created = await make_pod(store, [])
    assert "generation" not in created["metadata"]
    # (a change a Pod's update may make: its image)
    spec = await store.patch(
        pods(store),
        "p",
        [{"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:1"}],
        patch_type=JSONP,
        namespace="default",
    )
    assert spec["spec"]["containers"][0]["image"] == "busybox:1"
    assert "generation" not in spec["metadata"]


async def test_patch_result_is_a_copy(store: InMemoryStore) -> None:
    await make_pod(store, [ref("1")])
    out = await store.patch(
        pods(store), "p", {"metadata": {"labels": {"a": "b"}}}, patch_type=SMP, namespace="default"
    )
    out["metadata"]["ownerReferences"].clear()
    out["metadata"]["labels"]["a"] = "mutated"
    live = await store.get(pods(store), "p", namespace="default")
    assert live["metadata"]["ownerReferences"] == [ref("1")]
    assert live["metadata"]["labels"] == {"a": "b"}


async def test_patch_of_non_json_is_bad_request(store: InMemoryStore) -> None:
    await make_pod(store, [])
    with pytest.raises(BadRequest):
        await store.patch(
            pods(store),
            "p",
            {"metadata": {"labels": {"a": object()}}},
            patch_type=MERGE,
            namespace="default",
        )
    with pytest.raises(BadRequest):
        await store.patch(
            pods(store),
            "p",
            {"metadata": {"labels": {"a": 1}}},
            patch_type=MERGE,
            namespace="default",
        )
