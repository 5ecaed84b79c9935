"""The plugin's fixtures in this suite, and what they rest on: CRDs served by the store,
terminating namespaces and the namespace controller."""

from __future__ import annotations

from typing import Any

import pytest

from ownergc.errors import Forbidden, Invalid
from ownergc.testing import ClusterThread, OwnerGCStore

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Cluster",
        "names": {"plural": "gadgets", "kind": "Gadget"},
        "versions": [
            {"name": "v1alpha1", "served": True, "storage": False},
            {"name": "v1", "served": True, "storage": True},
            {"name": "v2beta1", "served": False, "storage": False},
        ],
    },
}


def cm(name: str, ns: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, **meta},
    }


@pytest.mark.anyio
async def test_crd_serves_its_kind_and_the_gc_picks_it_up(ownergc_store: OwnerGCStore) -> None:
    crd = await ownergc_store.create_object(CRD)
    assert {c["type"] for c in crd["status"]["conditions"]} == {"NamesAccepted", "Established"}
    assert crd["status"]["storedVersions"] == ["v1"]
    resource = ownergc_store.resource_for("example.com/v1", "Gadget")
    assert resource.preferred and not resource.namespaced
    assert not ownergc_store.resource_for("example.com/v1alpha1", "Gadget").preferred
    gadget = await ownergc_store.create_object(
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    )
    ref = {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "name": "g",
        "uid": gadget["metadata"]["uid"],
    }
    await ownergc_store.create_object(cm("dep", ownerReferences=[ref]))
    await ownergc_store.delete_object("example.com/v1", "Gadget", "g")
    await ownergc_store.wait_idle()
    assert not ownergc_store.exists("v1", "ConfigMap", "dep", "default")


@pytest.mark.anyio
async def test_crd_update_and_delete(ownergc_store: OwnerGCStore) -> None:
    await ownergc_store.create_object(CRD)
    crds = ownergc_store.resource_for("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    await ownergc_store.patch(
        crds,
        "gadgets.example.com",
        [{"op": "replace", "path": "/spec/versions/0/served", "value": False}],
        patch_type="application/json-patch+json",
    )
    with pytest.raises(Exception, match="no resource mapping"):
        ownergc_store.resource_for("example.com/v1alpha1", "Gadget")
    with pytest.raises(Invalid, match="immutable"):
        await ownergc_store.patch(
            crds,
            "gadgets.example.com",
            {"spec": {"scope": "Namespaced"}},
            patch_type="application/merge-patch+json",
        )
    await ownergc_store.create_object(
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    )
    await ownergc_store.delete(crds, "gadgets.example.com")
    with pytest.raises(Exception, match="no resource mapping"):
        ownergc_store.resource_for("example.com/v1", "Gadget")


@pytest.mark.anyio
async def test_invalid_crd_is_422(ownergc_store: OwnerGCStore) -> None:
    bad = {**CRD, "metadata": {"name": "wrong.example.com"}}
    with pytest.raises(Invalid, match=r"metadata\.name"):
        await ownergc_store.create_object(bad)
    no_storage = {
        **CRD,
        "spec": {**CRD["spec"], "versions": [{"name": "v1", "served": True, "storage": False}]},
    }
    with pytest.raises(Invalid, match="storage version"):
        await ownergc_store.create_object(no_storage)


@pytest.mark.anyio
async def test_namespace_terminates_and_is_emptied(ownergc_store: OwnerGCStore) -> None:
    await ownergc_store.create_object(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    )
    owner = await ownergc_store.create_object(cm("owner", "team"))
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    await ownergc_store.create_object(cm("dep", "team", ownerReferences=[ref]))
    await ownergc_store.create_object(cm("held", "team", finalizers=["example.com/hold"]))
    ns = await ownergc_store.delete_object("v1", "Namespace", "team")
    assert ns is not None and ns["status"]["phase"] == "Terminating"
    assert ns["spec"]["finalizers"] == ["kubernetes"]
    with pytest.raises(Forbidden, match="being terminated"):
        await ownergc_store.create_object(cm("late", "team"))
    await ownergc_store.wait_idle()
    assert not ownergc_store.exists("v1", "ConfigMap", "owner", "team")
    assert not ownergc_store.exists("v1", "ConfigMap", "dep", "team")
    assert ownergc_store.exists("v1", "Namespace", "team")  # held by the finalizer
    resource = ownergc_store.resource_for("v1", "ConfigMap")
    await ownergc_store.patch(
        resource,
        "held",
        {"metadata": {"finalizers": None}},
        patch_type="application/merge-patch+json",
        namespace="team",
    )
    await ownergc_store.wait_idle()
    assert not ownergc_store.exists("v1", "Namespace", "team")
    assert "team" in ownergc_store.namespaces.finalized


@pytest.mark.anyio
async def test_namespace_foreground_finalizer_is_set_based(ownergc_store: OwnerGCStore) -> None:
    await ownergc_store.create_object(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fg"}}
    )
    ns = await ownergc_store.delete_object("v1", "Namespace", "fg", propagation_policy="Foreground")
    assert ns is not None and ns["metadata"]["finalizers"] == ["foregroundDeletion"]
    await ownergc_store.wait_idle()
    assert not ownergc_store.exists("v1", "Namespace", "fg")


def test_load_objects_keeps_uids_and_deletion_state() -> None:
    from ownergc_backends.memory import InMemoryStore

    store = InMemoryStore()
    [obj] = store.load_objects(
        [
            cm(
                "x",
                "nowhere",
                uid="u-1",
                finalizers=["a/b"],
                deletionTimestamp="2020-01-01T00:00:00Z",
            )
        ]
    )
    assert obj["metadata"]["uid"] == "u-1"
    assert obj["metadata"]["deletionTimestamp"] == "2020-01-01T00:00:00Z"
    with pytest.raises(Exception, match="uid 'u-1' is already stored"):
        store.load_objects([cm("y", uid="u-1")])


def test_cluster_fixture_is_usable_from_sync_code(
    ownergc_cluster: ClusterThread, ownergc_kubeconfig
) -> None:
    import os

    assert os.environ["KUBECONFIG"] == str(ownergc_kubeconfig)
    owner = ownergc_cluster.call(ownergc_cluster.store.create_object, cm("o"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": owner["metadata"]["uid"]}
    ownergc_cluster.call(ownergc_cluster.store.create_object, cm("d", ownerReferences=[ref]))
    resource = ownergc_cluster.store.resource_for("v1", "ConfigMap")
    ownergc_cluster.call(lambda: ownergc_cluster.store.delete(resource, "o", namespace="default"))
    ownergc_cluster.wait_idle()
    assert not ownergc_cluster.store.exists("v1", "ConfigMap", "d", "default")
    assert ownergc_cluster.url.startswith("http://127.0.0.1:")
