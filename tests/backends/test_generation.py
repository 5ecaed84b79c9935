"""metadata.generation per kind, as kube-apiserver v1.30's registry strategies keep it.

The rules and their sources are in ``ownergc_backends/memory/_generation.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ownergc.errors import Invalid
from ownergc.protocols import APIResource, PatchType
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._generation import (
    CUSTOM_RESOURCE,
    GENERATION_RULES,
    NO_GENERATION,
    generation_rule,
)
from ownergc_backends.memory._resources import BUILTIN_RESOURCES

pytestmark = pytest.mark.anyio

MERGE = PatchType.MERGE
SMP = PatchType.STRATEGIC_MERGE


def res(store: InMemoryStore, api_version: str, kind: str) -> APIResource:
    return store.resource_for(api_version, kind)


async def create(
    store: InMemoryStore, resource: APIResource, body: dict[str, Any], **kwargs: Any
) -> dict[str, Any]:
    ns = "default" if resource.namespaced else None
    return await store.create(resource, body, namespace=ns, **kwargs)


async def patch(
    store: InMemoryStore,
    resource: APIResource,
    name: str,
    body: dict[str, Any],
    patch_type: PatchType = MERGE,
    **kwargs: Any,
) -> dict[str, Any]:
    ns = "default" if resource.namespaced else None
    return await store.patch(resource, name, body, patch_type=patch_type, namespace=ns, **kwargs)


def gen(obj: dict[str, Any]) -> int | None:
    value = obj["metadata"].get("generation")
    assert value is None or isinstance(value, int)
    return value


# ---------------------------------------------------------------------------
# The table


def test_every_ruled_kind_is_a_served_builtin() -> None:
    served = {(s.group, s.resource) for s in BUILTIN_RESOURCES}
    assert set(GENERATION_RULES) <= served


@pytest.mark.parametrize(
    ("group", "resource", "has_one"),
    [
        ("", "configmaps", False),
        ("", "secrets", False),
        ("", "services", False),
        ("", "namespaces", False),
        ("", "endpoints", False),
        ("", "pods", False),  # Pods got a generation in v1.33, not v1.30
        ("apiregistration.k8s.io", "apiservices", False),
        ("autoscaling", "horizontalpodautoscalers", False),
        ("apps", "deployments", True),
        ("discovery.k8s.io", "endpointslices", True),
        ("scheduling.k8s.io", "priorityclasses", True),
        ("flowcontrol.apiserver.k8s.io", "flowschemas", True),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", True),
        ("apiextensions.k8s.io", "customresourcedefinitions", True),
        ("example.com", "widgets", True),  # any custom resource
    ],
)
def test_which_kinds_have_a_generation(group: str, resource: str, has_one: bool) -> None:
    # The v1.24 recording (tests/data/real-apiserver-1.24/cluster.json) agrees for
    # the kinds it holds: see test_the_recorded_cluster_agrees.
    assert generation_rule(group, resource).set_on_create is has_one


def test_the_recorded_cluster_agrees() -> None:
    path = Path(__file__).resolve().parents[1] / "data/real-apiserver-1.24/cluster.json"
    by_kind = {(s.group, s.kind): s.resource for s in BUILTIN_RESOURCES}
    seen = 0
    for item in json.loads(path.read_text())["items"]:
        group = item["apiVersion"].rpartition("/")[0]
        resource = by_kind[(group, item["kind"])]
        if resource == "componentstatuses":
            continue  # computed on read: no uid, no generation
        rule = generation_rule(group, resource)
        assert ("generation" in item["metadata"]) is rule.set_on_create, item["kind"]
        seen += 1
    assert seen > 10


def test_custom_resources_and_unknown_groups() -> None:
    assert generation_rule("example.com", "widgets") is CUSTOM_RESOURCE
    assert generation_rule("", "configmaps") is NO_GENERATION


# ---------------------------------------------------------------------------
# ConfigMap: none, ever


async def test_configmap_has_no_generation(store: InMemoryStore) -> None:
    cm = res(store, "v1", "ConfigMap")
    created = await create(store, cm, {"metadata": {"name": "c"}, "data": {"a": "1"}})
    assert gen(created) is None
    changed = await patch(store, cm, "c", {"data": {"a": "2"}})
    assert gen(changed) is None
    put = await store.update(cm, {**changed, "data": {"a": "3"}})
    assert gen(put) is None


async def test_configmap_delete_with_a_finalizer_leaves_no_generation(
    store: InMemoryStore,
) -> None:
    cm = res(store, "v1", "ConfigMap")
    await create(store, cm, {"metadata": {"name": "c", "finalizers": ["x.io/y"]}})
    held = await store.delete(cm, "c", namespace="default")
    assert held is not None and "deletionTimestamp" in held["metadata"]
    assert gen(held) is None


async def test_client_generation_on_a_configmap(store: InMemoryStore) -> None:
    """Create keeps it (the create handler does not wipe it and the ConfigMap strategy
    does not set it); an update cannot change it; a DELETE marking bumps it (> 0)."""
    cm = res(store, "v1", "ConfigMap")
    created = await create(store, cm, {"metadata": {"name": "c", "generation": 5}})
    assert gen(created) == 5
    updated = await patch(store, cm, "c", {"metadata": {"generation": 9}, "data": {"a": "1"}})
    assert gen(updated) == 5
    await patch(store, cm, "c", {"metadata": {"finalizers": ["x.io/y"]}})
    held = await store.delete(cm, "c", namespace="default")
    assert held is not None and gen(held) == 6
    await create(store, cm, {"metadata": {"name": "p"}})
    assert gen(await patch(store, cm, "p", {"metadata": {"generation": 3}})) is None


async def test_negative_client_generation_is_invalid(store: InMemoryStore) -> None:
    cm = res(store, "v1", "ConfigMap")
    with pytest.raises(Invalid) as info:
        await create(store, cm, {"metadata": {"name": "c", "generation": -1}})
    assert "metadata.generation" in info.value.message
    # A kind whose strategy sets 1 never sees the client's value.
    deployments = res(store, "apps/v1", "Deployment")
    created = await create(store, deployments, {"metadata": {"name": "d", "generation": -1}})
    assert gen(created) == 1


# ---------------------------------------------------------------------------
# Deployment: spec or annotations


async def test_deployment_generation(store: InMemoryStore) -> None:
    d = res(store, "apps/v1", "Deployment")
    created = await create(
        store, d, {"metadata": {"name": "d", "generation": 7}, "spec": {"replicas": 1}}
    )
    assert gen(created) == 1  # the client's value is replaced
    assert gen(await patch(store, d, "d", {"metadata": {"labels": {"a": "b"}}}, SMP)) == 1
    assert gen(await patch(store, d, "d", {"status": {"replicas": 1}})) == 1
    assert gen(await patch(store, d, "d", {"spec": {"replicas": 2}})) == 2
    assert gen(await patch(store, d, "d", {"spec": {"replicas": 2}})) == 2  # no change
    # Annotations are copied to the ReplicaSets, so they count.
    assert gen(await patch(store, d, "d", {"metadata": {"annotations": {"x": "y"}}})) == 3
    # An update cannot set it.
    assert gen(await patch(store, d, "d", {"metadata": {"generation": 40}})) == 3
    # A replicas change (what /scale writes) is a spec change.
    assert gen(await patch(store, d, "d", {"spec": {"replicas": 5}})) == 4


async def test_deployment_delete_with_a_finalizer_bumps_once(store: InMemoryStore, clock) -> None:
    d = res(store, "apps/v1", "Deployment")
    await create(store, d, {"metadata": {"name": "d", "finalizers": ["x.io/y"]}, "spec": {}})
    held = await store.delete(d, "d", namespace="default")
    assert held is not None and gen(held) == 2
    clock.advance(5)
    again = await store.delete(d, "d", namespace="default", propagation_policy="Orphan")
    assert again is not None and gen(again) == 2  # only the first marking bumps


async def test_empty_and_missing_spec_values_are_the_same(store: InMemoryStore) -> None:
    d = res(store, "apps/v1", "Deployment")
    await create(store, d, {"metadata": {"name": "d"}, "spec": {"replicas": 1}})
    same = await patch(store, d, "d", {"spec": {"paused": None, "template": {}}})
    assert gen(same) == 1


# ---------------------------------------------------------------------------
# Other built-in rules


async def test_job_bumps_on_spec_only(store: InMemoryStore) -> None:
    jobs = res(store, "batch/v1", "Job")
    created = await create(store, jobs, {"metadata": {"name": "j"}, "spec": {"parallelism": 1}})
    assert gen(created) == 1
    assert gen(await patch(store, jobs, "j", {"metadata": {"annotations": {"a": "b"}}})) == 1
    assert gen(await patch(store, jobs, "j", {"spec": {"suspend": True}})) == 2


async def test_priority_class_never_bumps_on_update(store: InMemoryStore) -> None:
    pcs = res(store, "scheduling.k8s.io/v1", "PriorityClass")
    created = await create(store, pcs, {"metadata": {"name": "high"}, "value": 1000})
    assert gen(created) == 1
    changed = await patch(store, pcs, "high", {"description": "d", "globalDefault": False})
    assert gen(changed) == 1  # its update strategy is empty
    await patch(store, pcs, "high", {"metadata": {"finalizers": ["x.io/y"]}})
    held = await store.delete(pcs, "high")
    assert held is not None and gen(held) == 2  # the DELETE marking still bumps it


async def test_endpointslice_bumps_on_content_or_labels(store: InMemoryStore) -> None:
    eps = res(store, "discovery.k8s.io/v1", "EndpointSlice")
    await create(store, eps, {"metadata": {"name": "e"}, "addressType": "IPv4", "endpoints": []})
    assert gen(await patch(store, eps, "e", {"metadata": {"annotations": {"a": "b"}}})) == 1
    assert gen(await patch(store, eps, "e", {"metadata": {"labels": {"a": "b"}}})) == 2
    assert gen(await patch(store, eps, "e", {"ports": [{"port": 80}]})) == 3


async def test_webhook_configuration_bumps_on_webhooks(store: InMemoryStore) -> None:
    hooks = res(store, "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")
    await create(store, hooks, {"metadata": {"name": "h"}, "webhooks": []})
    assert gen(await patch(store, hooks, "h", {"metadata": {"labels": {"a": "b"}}})) == 1
    assert gen(await patch(store, hooks, "h", {"webhooks": [{"name": "a.example.com"}]})) == 2


async def test_pod_template_bumps_on_template(store: InMemoryStore) -> None:
    templates = res(store, "v1", "PodTemplate")
    await create(store, templates, {"metadata": {"name": "t"}, "template": {}})
    changed = await patch(store, templates, "t", {"template": {"metadata": {"labels": {"a": "b"}}}})
    assert gen(changed) == 2


async def test_csidriver_starts_without_one(store: InMemoryStore) -> None:
    drivers = res(store, "storage.k8s.io/v1", "CSIDriver")
    created = await create(store, drivers, {"metadata": {"name": "c"}, "spec": {}})
    assert gen(created) is None  # its create strategy does not set one
    changed = await patch(store, drivers, "c", {"spec": {"requiresRepublish": True}})
    assert gen(changed) == 1  # ... but a spec change adds 1 to the 0 it had


# ---------------------------------------------------------------------------
# Custom resources: anything but metadata


async def test_custom_resource_without_status_subresource(store: InMemoryStore) -> None:
    widgets = store.register_resource(
        group="example.com", versions="v1", resource="widgets", kind="Widget"
    )
    created = await create(store, widgets, {"metadata": {"name": "w"}, "spec": {"a": 1}})
    assert gen(created) == 1
    assert gen(await patch(store, widgets, "w", {"metadata": {"labels": {"a": "b"}}})) == 1
    assert gen(await patch(store, widgets, "w", {"metadata": {"annotations": {"a": "b"}}})) == 1
    assert gen(await patch(store, widgets, "w", {"spec": {"a": 2}})) == 2
    assert gen(await patch(store, widgets, "w", {"data": "x"})) == 3  # any top-level field
    assert gen(await patch(store, widgets, "w", {"status": {"ok": True}})) == 4  # no /status


async def test_custom_resource_with_status_subresource(store: InMemoryStore) -> None:
    crds = res(store, "apiextensions.k8s.io/v1", "CustomResourceDefinition")
    crd = await create(
        store,
        crds,
        {
            "metadata": {"name": "gadgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "gadgets", "kind": "Gadget"},
                "versions": [
                    {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}
                ],
            },
        },
    )
    assert gen(crd) == 1
    gadgets = res(store, "example.com/v1", "Gadget")
    await create(store, gadgets, {"metadata": {"name": "g"}, "spec": {"a": 1}})
    status = await patch(store, gadgets, "g", {"status": {"ok": True}}, subresource="status")
    assert status["status"] == {"ok": True} and gen(status) == 1  # /status never bumps
    ignored = await patch(store, gadgets, "g", {"status": {"ok": False}})
    assert ignored["status"] == {"ok": True} and gen(ignored) == 1  # status kept: no change
    assert gen(await patch(store, gadgets, "g", {"spec": {"a": 2}})) == 2
    # The CRD's own generation follows its spec.
    assert (
        gen(await patch(store, crds, "gadgets.example.com", {"metadata": {"labels": {"a": "b"}}}))
        == 1
    )


# ---------------------------------------------------------------------------
# Dry run and load


async def test_dry_run_computes_the_same_generation(store: InMemoryStore) -> None:
    d = res(store, "apps/v1", "Deployment")
    cm = res(store, "v1", "ConfigMap")
    assert gen(await create(store, d, {"metadata": {"name": "d"}}, dry_run=True)) == 1
    assert gen(await create(store, cm, {"metadata": {"name": "c"}}, dry_run=True)) is None
    await create(store, d, {"metadata": {"name": "d"}, "spec": {"replicas": 1}})
    would = await patch(store, d, "d", {"spec": {"replicas": 3}}, dry_run=True)
    assert gen(would) == 2
    assert gen(await store.get(d, "d", namespace="default", metadata_only=False)) == 1


def test_load_keeps_the_generation_it_is_given(store: InMemoryStore) -> None:
    def obj(api_version: str, kind: str, name: str, **meta: Any) -> dict[str, Any]:
        metadata = {"name": name, "namespace": "default", **meta}
        return {"apiVersion": api_version, "kind": kind, "metadata": metadata}

    loaded = store.load_objects(
        [
            obj("v1", "ConfigMap", "c", generation=4),
            obj("v1", "ConfigMap", "n"),
            obj("apps/v1", "Deployment", "d", generation=9),
            obj("apps/v1", "Deployment", "e"),  # none given: created as a Deployment is
        ]
    )
    assert [gen(o) for o in loaded] == [4, None, 9, 1]
