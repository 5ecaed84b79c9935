"""The CRD finalizer: customresourcecleanup.apiextensions.k8s.io, as kube-apiserver runs it.

Every CRD gets the finalizer at creation; deleting the CRD deletes its custom
objects, keeps the CRD (and its kind) while any of them remains, refuses new
ones, and removes the CRD once the last one is gone.
"""

from __future__ import annotations

from typing import Any

import pytest

from ownergc.errors import MethodNotAllowed, NotFound, RESTMappingError
from ownergc.protocols import PatchType
from ownergc_backends.memory import InMemoryStore

pytestmark = pytest.mark.anyio

CLEANUP = "customresourcecleanup.apiextensions.k8s.io"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True}],
    },
}


def widget(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", **meta},
    }


@pytest.fixture
async def store() -> InMemoryStore:
    s = InMemoryStore()
    crd = await s.create_object(CRD)
    assert crd["metadata"]["finalizers"] == [CLEANUP]
    return s


def crds(store: InMemoryStore) -> Any:
    return store.resource_for("apiextensions.k8s.io/v1", "CustomResourceDefinition")


async def test_a_crd_with_no_objects_goes_at_once(store: InMemoryStore) -> None:
    assert await store.delete(crds(store), "widgets.example.com") is None
    assert not store.exists(
        "apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com"
    )
    with pytest.raises(RESTMappingError):
        store.resource_for("example.com/v1", "Widget")


async def test_its_objects_are_deleted_first(store: InMemoryStore) -> None:
    await store.create_object(widget("a"))
    await store.create_object(widget("b"))
    assert await store.delete(crds(store), "widgets.example.com") is None
    assert store.snapshot() == [o for o in store.snapshot() if o["kind"] != "Widget"]
    with pytest.raises(RESTMappingError):
        store.resource_for("example.com/v1", "Widget")


async def test_an_object_held_by_a_finalizer_keeps_the_crd_terminating(
    store: InMemoryStore,
) -> None:
    await store.create_object(widget("held", finalizers=["example.com/teardown"]))
    await store.create_object(widget("free"))
    kept = await store.delete(crds(store), "widgets.example.com")
    assert kept is not None and kept["metadata"]["deletionTimestamp"]
    assert kept["metadata"]["finalizers"] == [CLEANUP]
    [terminating] = [c for c in kept["status"]["conditions"] if c["type"] == "Terminating"]
    assert (terminating["status"], terminating["reason"]) == ("True", "InstanceDeletionInProgress")
    widgets = store.resource_for("example.com/v1", "Widget")
    assert not store.exists("example.com/v1", "Widget", "free", "default")
    held = await store.get(widgets, "held", namespace="default")
    assert held["metadata"]["deletionTimestamp"]
    with pytest.raises(MethodNotAllowed, match="terminating"):
        await store.create_object(widget("late"))

    await store.patch(
        widgets,
        "held",
        {"metadata": {"finalizers": None}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    with pytest.raises(NotFound):
        await store.get(crds(store), "widgets.example.com")
    with pytest.raises(RESTMappingError):
        store.resource_for("example.com/v1", "Widget")


async def test_the_finalizer_is_not_added_twice_and_loads_keep_what_they_carry() -> None:
    s = InMemoryStore()
    crd = await s.create_object(
        {**CRD, "metadata": {"name": CRD["metadata"]["name"], "finalizers": [CLEANUP]}}
    )
    assert crd["metadata"]["finalizers"] == [CLEANUP]
    loaded = InMemoryStore()
    [copy] = loaded.load_objects([{**CRD, "metadata": {**crd["metadata"], "finalizers": []}}])
    assert not copy["metadata"].get("finalizers")
