"""InMemoryStore writes with ``dry_run=True`` (kube-apiserver's ``dryRun=All``).

A dry run answers what the real write would answer (the fixture
``ssa-dryrun-exchanges.json`` of the real apiserver 1.24 shows the shapes: a
dry-run create has a uid and creationTimestamp but no resourceVersion, a dry-run
update keeps the stored resourceVersion) and raises the same errors, but stores
nothing, sends no watch event and uses no resourceVersion.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from ownergc.errors import AlreadyExists, BadRequest, Conflict, Forbidden, Invalid, NotFound
from ownergc.protocols import APIResource, PatchType, Preconditions, PropagationPolicy
from ownergc_backends.memory import InMemoryStore

pytestmark = pytest.mark.anyio

#: A copy of ../shared/fixtures/real-apiserver-1.24/ssa-dryrun-exchanges.json.
FIXTURE = Path(__file__).resolve().parents[1] / "data/real-apiserver-1.24/ssa-dryrun-exchanges.json"
NOW = "2026-01-02T03:04:05Z"


def cm(store: InMemoryStore) -> APIResource:
    return store.resource_for("v1", "ConfigMap")


def recorded(path_part: str, method: str) -> dict[str, Any]:
    """The real server's answer to the dry-run request whose path contains ``path_part``."""
    for exchange in json.loads(FIXTURE.read_text()):
        request = exchange["request"]
        if request["method"] == method and path_part in request["path"]:
            return dict(exchange["response"])
    raise LookupError(path_part)


@asynccontextmanager
async def unchanged(store: InMemoryStore) -> AsyncIterator[None]:
    """Assert that the block stores nothing, uses no resourceVersion and sends no event.

    A watch opened before the block must see, as its first event, the real
    write made after it (with the very next resourceVersion).
    """
    before = store.snapshot()
    rv = store.resource_version
    stream = store.watch(cm(store), resource_version=rv, namespace="default")
    async with aclosing(stream):
        yield
        assert store.snapshot() == before
        assert store.resource_version == rv
        marker = await store.create(
            cm(store), {"metadata": {"name": "marker"}}, namespace="default"
        )
        with anyio.fail_after(5):  # a hang guard, not a timing
            event = await stream.__anext__()
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "marker")
    assert event.object["metadata"]["resourceVersion"] == str(int(rv) + 1)
    await store.delete(cm(store), "marker", namespace="default")
    assert marker["metadata"]["resourceVersion"] == str(int(rv) + 1)


async def test_create_answers_the_would_be_object_without_a_resource_version(
    store: InMemoryStore,
) -> None:
    real = recorded("configmaps?dryRun=All", "POST")
    async with unchanged(store):
        out = await store.create(
            cm(store),
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}},
            namespace="default",
            dry_run=True,
        )
    want_keys = set(real["body"]["metadata"])
    assert want_keys == {"name", "namespace", "uid", "creationTimestamp"}
    assert want_keys <= set(out["metadata"]) and "resourceVersion" not in out["metadata"]
    assert out["metadata"]["creationTimestamp"] == NOW
    assert (out["kind"], out["metadata"]["name"], out["metadata"]["namespace"]) == (
        "ConfigMap",
        "dry",
        "default",
    )
    assert not store.exists("v1", "ConfigMap", "dry", "default")


async def test_create_with_generate_name_names_the_object(store: InMemoryStore) -> None:
    async with unchanged(store):
        out = await store.create(
            cm(store), {"metadata": {"generateName": "gen-"}}, namespace="default", dry_run=True
        )
    name = out["metadata"]["name"]
    assert name.startswith("gen-") and len(name) == len("gen-") + 5
    assert not store.exists("v1", "ConfigMap", name, "default")


async def test_create_errors_are_the_real_writes(store: InMemoryStore) -> None:
    await store.create(cm(store), {"metadata": {"name": "taken"}}, namespace="default")
    cases: list[tuple[type[Exception], dict[str, Any], str]] = [
        (AlreadyExists, {"metadata": {"name": "taken"}}, "default"),
        (Invalid, {"metadata": {"name": "Not_A_Name"}}, "default"),
        (Invalid, {"metadata": {}}, "default"),
        (NotFound, {"metadata": {"name": "x"}}, "no-such-namespace"),
        (BadRequest, {"metadata": {"name": "x", "resourceVersion": "1"}}, "default"),
    ]
    for error, body, namespace in cases:
        async with unchanged(store):
            with pytest.raises(error) as dry:
                await store.create(cm(store), body, namespace=namespace, dry_run=True)
        with pytest.raises(error) as real:
            await store.create(cm(store), body, namespace=namespace)
        assert str(dry.value) == str(real.value)


async def test_create_in_a_terminating_namespace_is_forbidden(clock: Any) -> None:
    store = InMemoryStore(clock=clock, terminating_namespaces=True)
    namespaces = store.resource_for("v1", "Namespace")
    await store.create(namespaces, {"metadata": {"name": "going"}})
    await store.delete(namespaces, "going")
    with pytest.raises(Forbidden):
        await store.create(cm(store), {"metadata": {"name": "x"}}, namespace="going", dry_run=True)


async def test_a_dry_run_crd_serves_nothing(store: InMemoryStore) -> None:
    crds = store.resource_for("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    crd = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    async with unchanged(store):
        out = await store.create(crds, crd, dry_run=True)
    assert out["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    assert {c["type"] for c in out["status"]["conditions"]} >= {"Established"}
    with pytest.raises(Exception, match="Widget"):
        store.resource_for("example.com/v1", "Widget")


async def test_update_answers_the_new_object_with_the_stored_resource_version(
    store: InMemoryStore,
) -> None:
    live = await store.create(
        cm(store), {"metadata": {"name": "a"}, "data": {"k": "1"}}, namespace="default"
    )
    new = {**live, "data": {"k": "2"}}
    async with unchanged(store):
        out = await store.update(cm(store), new, namespace="default", dry_run=True)
    assert out["data"] == {"k": "2"}
    assert out["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
    assert out["metadata"]["uid"] == live["metadata"]["uid"]
    assert (await store.get(cm(store), "a", namespace="default", metadata_only=False)) == live
    real = await store.update(cm(store), new, namespace="default")
    assert real["data"] == out["data"]
    assert real["metadata"]["resourceVersion"] != out["metadata"]["resourceVersion"]


async def test_update_errors_are_the_real_writes(store: InMemoryStore) -> None:
    live = await store.create(cm(store), {"metadata": {"name": "a"}}, namespace="default")
    stale = {**live, "metadata": {**live["metadata"], "resourceVersion": "1"}}
    new_uid = {**live, "metadata": {**live["metadata"], "uid": "other"}}
    missing = {"metadata": {"name": "nope"}}
    for error, body in ((Conflict, stale), (Invalid, new_uid), (NotFound, missing)):
        async with unchanged(store):
            with pytest.raises(error) as dry:
                await store.update(cm(store), body, namespace="default", dry_run=True)
        with pytest.raises(error) as real:
            await store.update(cm(store), body, namespace="default")
        assert str(dry.value) == str(real.value)


async def test_patch_answers_the_patched_object_and_stores_nothing(store: InMemoryStore) -> None:
    live = await store.create(
        cm(store), {"metadata": {"name": "a"}, "data": {"k": "1"}}, namespace="default"
    )
    for patch_type, patch in (
        (PatchType.MERGE, {"data": {"k": "2"}}),
        (PatchType.STRATEGIC_MERGE, {"data": {"k": "2"}}),
        (PatchType.JSON, [{"op": "replace", "path": "/data/k", "value": "2"}]),
    ):
        async with unchanged(store):
            out = await store.patch(
                cm(store), "a", patch, patch_type=patch_type, namespace="default", dry_run=True
            )
        assert out["data"] == {"k": "2"}
        assert out["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]


async def test_patch_errors_are_the_real_writes(store: InMemoryStore) -> None:
    live = await store.create(cm(store), {"metadata": {"name": "a"}}, namespace="default")
    cases: list[tuple[type[Exception], str, Any]] = [
        (Conflict, "a", {"metadata": {"resourceVersion": "1"}}),
        (Invalid, "a", {"metadata": {"uid": "other"}}),
        (Invalid, "a", {"metadata": {"ownerReferences": [{"name": "x"}]}}),
        (NotFound, "nope", {"data": {"k": "v"}}),
    ]
    assert live["metadata"]["resourceVersion"] != "1"
    for error, name, patch in cases:
        async with unchanged(store):
            with pytest.raises(error) as dry:
                await store.patch(
                    cm(store),
                    name,
                    patch,
                    patch_type=PatchType.MERGE,
                    namespace="default",
                    dry_run=True,
                )
        with pytest.raises(error) as real:
            await store.patch(
                cm(store), name, patch, patch_type=PatchType.MERGE, namespace="default"
            )
        assert str(dry.value) == str(real.value)


async def test_emptying_the_finalizers_of_a_deleting_object_keeps_it(store: InMemoryStore) -> None:
    await store.create(
        cm(store), {"metadata": {"name": "held", "finalizers": ["x.io/f"]}}, namespace="default"
    )
    deleting = await store.delete(cm(store), "held", namespace="default")
    assert deleting is not None
    async with unchanged(store):
        out = await store.patch(
            cm(store),
            "held",
            {"metadata": {"finalizers": None}},
            patch_type=PatchType.MERGE,
            namespace="default",
            dry_run=True,
        )
    assert "finalizers" not in out["metadata"]
    assert out["metadata"]["resourceVersion"] == deleting["metadata"]["resourceVersion"]
    assert store.exists("v1", "ConfigMap", "held", "default")


async def test_delete_that_would_remove_answers_the_stored_object(store: InMemoryStore) -> None:
    real = recorded("configmaps/a?dryRun=All", "DELETE")
    assert real["body"]["status"] == "Success" and "uid" in real["body"]["details"]
    live = await store.create(cm(store), {"metadata": {"name": "a"}}, namespace="default")
    async with unchanged(store):
        obj, removed = await store.delete_and_report(
            cm(store), "a", namespace="default", dry_run=True
        )
        assert await store.delete(cm(store), "a", namespace="default", dry_run=True) is None
    assert removed and obj == live
    assert store.exists("v1", "ConfigMap", "a", "default")


@pytest.mark.parametrize(
    ("finalizers", "policy", "want"),
    [
        (["x.io/f"], None, ["x.io/f"]),
        ([], PropagationPolicy.ORPHAN, ["orphan"]),
        ([], PropagationPolicy.FOREGROUND, ["foregroundDeletion"]),
    ],
)
async def test_delete_held_by_finalizers_changes_nothing(
    store: InMemoryStore, finalizers: list[str], policy: PropagationPolicy | None, want: list[str]
) -> None:
    meta: dict[str, Any] = {"name": "a"}
    if finalizers:
        meta["finalizers"] = finalizers
    live = await store.create(cm(store), {"metadata": meta}, namespace="default")
    async with unchanged(store):
        obj, removed = await store.delete_and_report(
            cm(store), "a", namespace="default", propagation_policy=policy, dry_run=True
        )
    assert not removed
    assert obj["metadata"]["finalizers"] == want
    assert obj["metadata"]["deletionTimestamp"] == NOW
    assert obj["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
    stored = await store.get(cm(store), "a", namespace="default", metadata_only=False)
    assert stored == live and "deletionTimestamp" not in stored["metadata"]


async def test_delete_errors_are_the_real_writes(store: InMemoryStore) -> None:
    live = await store.create(cm(store), {"metadata": {"name": "a"}}, namespace="default")
    namespaces = store.resource_for("v1", "Namespace")
    calls: list[tuple[type[Exception], Callable[[bool], Awaitable[Any]]]] = [
        (NotFound, lambda d: store.delete(cm(store), "nope", namespace="default", dry_run=d)),
        (
            Conflict,
            lambda d: store.delete(
                cm(store),
                "a",
                namespace="default",
                preconditions=Preconditions(uid="other"),
                dry_run=d,
            ),
        ),
        (
            Conflict,
            lambda d: store.delete(
                cm(store),
                "a",
                namespace="default",
                preconditions=Preconditions(resource_version="1"),
                dry_run=d,
            ),
        ),
        (Forbidden, lambda d: store.delete(namespaces, "default", dry_run=d)),
        (
            Invalid,
            lambda d: store.delete(
                cm(store),
                "a",
                namespace="default",
                propagation_policy=PropagationPolicy.ORPHAN,
                orphan_dependents=True,
                dry_run=d,
            ),
        ),
    ]
    assert live["metadata"]["resourceVersion"] != "1"
    for error, call in calls:
        async with unchanged(store):
            with pytest.raises(error) as dry:
                await call(True)
        with pytest.raises(error) as real:
            await call(False)
        assert str(dry.value) == str(real.value)


async def test_namespace_delete_with_terminating_namespaces(clock: Any) -> None:
    store = InMemoryStore(clock=clock, terminating_namespaces=True)
    namespaces = store.resource_for("v1", "Namespace")
    await store.create(namespaces, {"metadata": {"name": "team"}})
    await store.create(cm(store), {"metadata": {"name": "inside"}}, namespace="team")
    async with unchanged(store):
        out = await store.delete(namespaces, "team", dry_run=True)
    assert out is not None and out["status"]["phase"] == "Terminating"
    live = await store.get(namespaces, "team", metadata_only=False)
    assert live["status"]["phase"] == "Active"
    await store.create(cm(store), {"metadata": {"name": "later"}}, namespace="team")


async def test_crd_delete_keeps_its_kind_and_objects(store: InMemoryStore) -> None:
    crds = store.resource_for("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    await store.create(
        crds,
        {
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True}],
            },
        },
    )
    widgets = store.resource_for("example.com/v1", "Widget")
    await store.create(widgets, {"metadata": {"name": "w"}}, namespace="default")
    async with unchanged(store):
        out = await store.delete(crds, "widgets.example.com", dry_run=True)
    assert out is not None and "deletionTimestamp" in out["metadata"]
    assert store.resource_for("example.com/v1", "Widget") == widgets
    assert store.exists("example.com/v1", "Widget", "w", "default")
