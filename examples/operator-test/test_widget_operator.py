"""Tests of the Widget operator with ownergc's fixtures: the garbage collector runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client, config
from widget_operator import GROUP, PLURAL, VERSION, owner_reference, reconcile

CRD = yaml.safe_load((Path(__file__).parent / "widget-crd.yaml").read_text())


def test_configmaps_are_garbage_collected_with_their_widget(ownergc_cluster):
    """Served cluster + official client, exactly as against envtest or kind."""
    api = config.new_client_from_config(str(ownergc_cluster.kubeconfig_path))
    client.ApiextensionsV1Api(api).create_custom_resource_definition(CRD)
    widgets = client.CustomObjectsApi(api)
    widgets.create_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "spec": {"parts": ["a", "b"]},
        },
    )

    assert reconcile(api, "default", "w1") == ["w1-a", "w1-b"]

    widgets.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    ownergc_cluster.wait_idle()  # the GC has done everything it will do
    left = client.CoreV1Api(api).list_namespaced_config_map("default").items
    assert [cm.metadata.name for cm in left] == []
    api.close()


def test_foreground_deletion_waits_for_the_configmaps(ownergc_cluster):
    api = config.new_client_from_config(str(ownergc_cluster.kubeconfig_path))
    client.ApiextensionsV1Api(api).create_custom_resource_definition(CRD)
    widgets = client.CustomObjectsApi(api)
    widgets.create_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Widget",
            "metadata": {"name": "w2"},
            "spec": {"parts": ["x"]},
        },
    )
    reconcile(api, "default", "w2")
    widgets.delete_namespaced_custom_object(
        GROUP,
        VERSION,
        "default",
        PLURAL,
        "w2",
        body=client.V1DeleteOptions(propagation_policy="Foreground"),
    )
    ownergc_cluster.wait_idle()
    assert widgets.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)["items"] == []
    assert client.CoreV1Api(api).list_namespaced_config_map("default").items == []
    api.close()


@pytest.mark.anyio
async def test_in_process_without_http(ownergc_store):
    """The same check in-process: no HTTP, no client, the store's Python API."""
    await ownergc_store.create_object(CRD)
    widget = await ownergc_store.create_object(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w3", "namespace": "default"},
        }
    )
    await ownergc_store.create_object(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "w3-a",
                "namespace": "default",
                "ownerReferences": [owner_reference(widget)],
            },
        }
    )
    await ownergc_store.delete_object("example.com/v1", "Widget", "w3", "default")
    await ownergc_store.wait_idle()
    assert not ownergc_store.exists("v1", "ConfigMap", "w3-a", "default")


@pytest.fixture
def anyio_backend():
    return "asyncio"
