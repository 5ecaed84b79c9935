"""APIServices and ComponentStatuses as a real kube-apiserver serves them.

The core group's APIService is named ``v1.``; an aggregated APIService whose
extension server is not there is unavailable, and discovery of its group
version fails (what keeps namespaces Terminating); ComponentStatuses are
computed objects: listable, not deletable, without a uid.
"""

from __future__ import annotations

from typing import Any

import pytest

from ownergc.errors import MethodNotAllowed
from ownergc_backends.memory import InMemoryStore

pytestmark = pytest.mark.anyio


def api_service(name: str, group: str, version: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name},
        "spec": {"group": group, "version": version, "groupPriorityMinimum": 100, **spec},
    }


def available(obj: dict[str, Any]) -> tuple[str, str]:
    [cond] = [c for c in obj["status"]["conditions"] if c["type"] == "Available"]
    return cond["status"], cond["reason"]


async def test_the_core_group_api_service_is_named_v1_dot_and_is_local() -> None:
    store = InMemoryStore()
    core = await store.create_object(api_service("v1.", "", "v1"))
    assert core["metadata"]["name"] == "v1."
    assert available(core) == ("True", "Local")
    assert (await store.discover()).failed == {}


async def test_an_aggregated_api_without_its_server_fails_discovery() -> None:
    store = InMemoryStore()
    metrics = api_service(
        "v1beta1.metrics.k8s.io",
        "metrics.k8s.io",
        "v1beta1",
        service={"namespace": "kube-system", "name": "metrics-server"},
    )
    created = await store.create_object(metrics)
    assert available(created) == ("False", "ServiceNotFound")
    failed = (await store.discover()).failed
    assert failed == {
        "metrics.k8s.io/v1beta1": "the server is currently unable to handle the request"
    }

    await store.create_object(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "custom-metrics", "namespace": "kube-system"},
            "spec": {"ports": [{"port": 443}]},
        }
    )
    custom = api_service(
        "v1beta1.custom.metrics.k8s.io",
        "custom.metrics.k8s.io",
        "v1beta1",
        service={"namespace": "kube-system", "name": "custom-metrics"},
    )
    assert available(await store.create_object(custom)) == ("False", "MissingEndpoints")


async def test_a_stated_available_status_is_kept() -> None:
    store = InMemoryStore()
    up = api_service("v1.example.com", "example.com", "v1", service={"namespace": "x", "name": "y"})
    up["status"] = {"conditions": [{"type": "Available", "status": "True", "reason": "Passed"}]}
    await store.create_object(up)
    assert (await store.discover()).failed == {}


async def test_component_statuses_are_computed_objects() -> None:
    store = InMemoryStore()
    [cs] = store.load_objects(
        [
            {
                "apiVersion": "v1",
                "kind": "ComponentStatus",
                "metadata": {"name": "scheduler", "creationTimestamp": None},
                "conditions": [{"type": "Healthy", "status": "True"}],
            }
        ]
    )
    assert "uid" not in cs["metadata"]
    resource = store.resource_for("v1", "ComponentStatus")
    assert resource.verbs == {"get", "list"}
    assert [o["metadata"]["name"] for o in (await store.list(resource)).items] == ["scheduler"]
    with pytest.raises(MethodNotAllowed):
        await store.delete(resource, "scheduler")
