"""Strategic merge patch reads its list strategies from the OpenAPI schema facts.

Cases follow the behaviours Kubernetes' own strategic-merge tests pin
(k8s.io/apimachinery/pkg/util/strategicpatch: merging lists by key, sets of
scalars, ``$patch: delete|replace`` in lists and maps, ``$setElementOrder``,
``$deleteFromPrimitiveList``, ``$retainKeys``), expressed here as data on
built-in kinds whose merge keys come from the recorded v1.24 document.
"""

from __future__ import annotations

from typing import Any

import pytest

from ownergc.protocols import PatchType
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._fieldmanager.schema import strategic_merge_keys
from ownergc_backends.memory._patch import (
    PatchError,
    apply_strategic_merge_patch,
    fallback_schema,
    strategic_schema,
)

POD = strategic_schema("", "v1", "Pod")
DEPLOYMENT = strategic_schema("apps", "v1", "Deployment")
SERVICE = strategic_schema("", "v1", "Service")


def container(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": f"{name}:1", **extra}


def pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": list(containers), **spec}}


def deployment(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": list(containers)}}}}


def containers_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list(obj["spec"]["template"]["spec"]["containers"])


def test_schema_facts_are_cached_per_kind() -> None:
    assert strategic_schema("apps", "v1", "Deployment") is DEPLOYMENT
    assert strategic_schema("unknown.invalid", "v1", "Thing") is fallback_schema()


def test_fallback_is_derived_from_object_meta() -> None:
    from ownergc_backends.memory import _patch

    derived = _patch.METADATA_LIST_STRATEGIES
    assert derived[("metadata", "ownerReferences")] == "uid"
    assert derived[("metadata", "finalizers")] == ""
    assert all(path[0] == "metadata" for path in derived)
    # The same facts a built-in kind has under metadata.
    pod_keys = strategic_merge_keys(POD)
    assert all(pod_keys[path] == key for path, key in derived.items())


# ---------------------------------------------------------------------------
# Nested merges by the schema's merge keys

# (kind schema, original, patch, expected)
NESTED: list[tuple[str, Any, dict[str, Any], dict[str, Any], Any]] = [
    (
        "deployment containers merge by name; the other container is kept",
        DEPLOYMENT,
        deployment(container("a")),
        deployment({"name": "b", "image": "x"}),
        deployment({"name": "b", "image": "x"}, container("a")),
    ),
    (
        "a patched container merges into the one with the same name",
        DEPLOYMENT,
        deployment(container("a"), container("b")),
        deployment({"name": "b", "image": "b:2"}),
        deployment(container("a"), {"name": "b", "image": "b:2"}),
    ),
    (
        "env merges by name inside a container",
        POD,
        pod(container("a", env=[{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}])),
        {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "3"}]}]}},
        pod(container("a", env=[{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}])),
    ),
    (
        "ports merge by containerPort",
        POD,
        pod(container("a", ports=[{"containerPort": 80}, {"containerPort": 443}])),
        {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}},
        pod(container("a", ports=[{"containerPort": 80, "name": "http"}, {"containerPort": 443}])),
    ),
    (
        "volumeMounts merge by mountPath",
        POD,
        pod(container("a", volumeMounts=[{"name": "v", "mountPath": "/a"}])),
        {
            "spec": {
                "containers": [{"name": "a", "volumeMounts": [{"name": "w", "mountPath": "/b"}]}]
            }
        },
        pod(
            container(
                "a",
                volumeMounts=[{"name": "w", "mountPath": "/b"}, {"name": "v", "mountPath": "/a"}],
            )
        ),
    ),
    (
        "service ports merge by port",
        SERVICE,
        {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}},
        {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}},
        {"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}},
    ),
    (
        "a list without a merge strategy is replaced (container args)",
        POD,
        pod(container("a", args=["x", "y"])),
        {"spec": {"containers": [{"name": "a", "args": ["z"]}]}},
        pod(container("a", args=["z"])),
    ),
    (
        "finalizers merge as a set, from the schema",
        POD,
        {"metadata": {"finalizers": ["a.io/x", "b.io/y"]}},
        {"metadata": {"finalizers": ["b.io/y", "c.io/z"]}},
        {"metadata": {"finalizers": ["a.io/x", "b.io/y", "c.io/z"]}},
    ),
    (
        "$patch: delete removes one env entry inside a container",
        POD,
        pod(container("a", env=[{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}])),
        {"spec": {"containers": [{"name": "a", "env": [{"name": "X", "$patch": "delete"}]}]}},
        pod(container("a", env=[{"name": "Y", "value": "2"}])),
    ),
    (
        "$patch: delete removes a container, the rest is kept",
        DEPLOYMENT,
        deployment(container("a"), container("b"), container("c")),
        deployment({"name": "b", "$patch": "delete"}),
        deployment(container("a"), container("c")),
    ),
    (
        "$patch: replace replaces the nested env list only",
        POD,
        pod(
            container("a", env=[{"name": "X", "value": "1"}]),
            container("b", env=[{"name": "Z", "value": "9"}]),
        ),
        {
            "spec": {
                "containers": [
                    {"name": "a", "env": [{"$patch": "replace"}, {"name": "N", "value": "0"}]}
                ]
            }
        },
        pod(
            container("a", env=[{"name": "N", "value": "0"}]),
            container("b", env=[{"name": "Z", "value": "9"}]),
        ),
    ),
    (
        "$patch: replace on a map inside a list element",
        POD,
        pod(container("a", resources={"limits": {"cpu": "1", "memory": "1Gi"}})),
        {
            "spec": {
                "containers": [
                    {"name": "a", "resources": {"$patch": "replace", "limits": {"cpu": "2"}}}
                ]
            }
        },
        pod(container("a", resources={"limits": {"cpu": "2"}})),
    ),
    (
        "null deletes a field of a list element",
        POD,
        pod(container("a", imagePullPolicy="Always")),
        {"spec": {"containers": [{"name": "a", "imagePullPolicy": None}]}},
        pod(container("a")),
    ),
    (
        "$setElementOrder orders containers, with a nested merge",
        POD,
        pod(container("a"), container("b"), container("c")),
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
                "containers": [{"name": "a", "image": "a:2"}],
            }
        },
        pod(container("c"), {"name": "a", "image": "a:2"}, container("b")),
    ),
    (
        "$setElementOrder orders env inside a container",
        POD,
        pod(container("a", env=[{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}])),
        {
            "spec": {
                "containers": [
                    {"name": "a", "$setElementOrder/env": [{"name": "Y"}, {"name": "X"}]}
                ]
            }
        },
        pod(container("a", env=[{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}])),
    ),
    (
        "$deleteFromPrimitiveList removes finalizers",
        POD,
        {"metadata": {"finalizers": ["a", "b", "c"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}},
        {"metadata": {"finalizers": ["a", "c"]}},
    ),
    (
        "$deleteFromPrimitiveList also removes from a list without merge strategy",
        POD,
        pod(container("a", args=["x", "--debug", "y"])),
        {"spec": {"containers": [{"name": "a", "$deleteFromPrimitiveList/args": ["--debug"]}]}},
        pod(container("a", args=["x", "y"])),
    ),
    (
        "$retainKeys drops the other strategy fields (Deployment.spec.strategy)",
        DEPLOYMENT,
        {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
        {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
        {"spec": {"strategy": {"type": "Recreate"}}},
    ),
    (
        "$retainKeys in a volume (merge,retainKeys list) drops the old source",
        POD,
        pod(volumes=[{"name": "v", "emptyDir": {}}]),
        {
            "spec": {
                "volumes": [
                    {"name": "v", "$retainKeys": ["name", "configMap"], "configMap": {"name": "c"}}
                ]
            }
        },
        pod(volumes=[{"name": "v", "configMap": {"name": "c"}}]),
    ),
    (
        "upstream 'retainKeys list of maps clears a field', on Pod volumes",
        POD,
        pod(
            volumes=[
                {"name": "bar", "emptyDir": {}},
                {"name": "foo", "hostPath": {"path": "/a"}, "configMap": {"name": "x"}},
            ]
        ),
        {
            "spec": {
                "$setElementOrder/volumes": [{"name": "bar"}, {"name": "foo"}],
                "volumes": [{"$retainKeys": ["name", "hostPath"], "name": "foo"}],
            }
        },
        pod(volumes=[{"name": "bar", "emptyDir": {}}, {"name": "foo", "hostPath": {"path": "/a"}}]),
    ),
    (
        "upstream 'retainKeys list of maps changes a field and clear a field', on Pod volumes",
        POD,
        pod(
            volumes=[
                {"name": "bar", "emptyDir": {}},
                {"name": "foo", "hostPath": {"path": "/old"}, "configMap": {"name": "x"}},
            ]
        ),
        {
            "spec": {
                "$setElementOrder/volumes": [{"name": "bar"}, {"name": "foo"}],
                "volumes": [
                    {
                        "$retainKeys": ["name", "hostPath"],
                        "name": "foo",
                        "hostPath": {"path": "/new"},
                    }
                ],
            }
        },
        pod(
            volumes=[{"name": "bar", "emptyDir": {}}, {"name": "foo", "hostPath": {"path": "/new"}}]
        ),
    ),
    (
        "upstream 'add field to map in merging list nested in merging list', on containers/env",
        POD,
        pod(
            container("c1", env=[{"name": "E1"}, {"name": "E2", "value": "2"}]),
            container("c2"),
        ),
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "c1"}, {"name": "c2"}],
                "containers": [
                    {
                        "$setElementOrder/env": [{"name": "E1"}, {"name": "E2"}],
                        "name": "c1",
                        "env": [{"name": "E1", "value": "1"}],
                    }
                ],
            }
        },
        pod(
            container("c1", env=[{"name": "E1", "value": "1"}, {"name": "E2", "value": "2"}]),
            container("c2"),
        ),
    ),
    (
        "upstream '$setElementOrder contains item that is not present', on containers",
        POD,
        pod({"name": "1"}, {"name": "3"}),
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "3"}, {"name": "2"}, {"name": "1"}],
                "containers": [{"name": "3", "image": "3"}, {"name": "1", "image": "1"}],
            }
        },
        pod({"name": "3", "image": "3"}, {"name": "1", "image": "1"}),
    ),
    (
        "upstream 'nested patch merge with empty list' (three-way result), on containers",
        POD,
        pod({"name": "hello2"}),
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "hello"}, {"name": "doesntexist"}],
                "containers": [{"name": "hello"}],
            }
        },
        pod({"name": "hello"}, {"name": "hello2"}),
    ),
    (
        "owner references merge by uid, from the schema",
        DEPLOYMENT,
        {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}},
        {"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}},
        {"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}, {"uid": "1", "name": "a"}]}},
    ),
]


@pytest.mark.parametrize(
    ("schema", "original", "patch", "expected"),
    [case[1:] for case in NESTED],
    ids=[case[0] for case in NESTED],
)
def test_nested_merges(schema: Any, original: Any, patch: Any, expected: Any) -> None:
    assert apply_strategic_merge_patch(original, patch, schema) == expected


def test_without_a_schema_only_metadata_lists_merge() -> None:
    original = deployment(container("a"))
    out = apply_strategic_merge_patch(original, deployment({"name": "b", "image": "x"}))
    assert containers_of(out) == [{"name": "b", "image": "x"}]


def test_nulls_in_a_value_taken_as_is_are_dropped() -> None:
    out = apply_strategic_merge_patch(
        {"metadata": {"name": "p"}, "spec": {"containers": [container("a")]}},
        {
            "metadata": {"annotations": {"a": None, "b": "1"}},
            "spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": None}}}]},
        },
        POD,
    )
    assert out["metadata"]["annotations"] == {"b": "1"}
    assert out["spec"]["containers"] == [container("a", resources={"limits": {}})]


def test_missing_merge_key_in_a_nested_list_is_400() -> None:
    with pytest.raises(PatchError) as info:
        apply_strategic_merge_patch(
            pod(container("a", env=[{"name": "X"}])),
            {"spec": {"containers": [{"name": "a", "env": [{"value": "1"}]}]}},
            POD,
        )
    assert info.value.status == 400
    assert "name" in info.value.message


# ---------------------------------------------------------------------------
# Through the store: a built-in kind merges, a custom resource is refused


@pytest.mark.anyio
async def test_store_patch_merges_deployment_containers() -> None:
    store = InMemoryStore()
    deployments = store.resource_for("apps/v1", "Deployment")
    labels = {"app": "d"}
    await store.create(
        deployments,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [container("a", env=[{"name": "X", "value": "1"}])]},
                },
            },
        },
        namespace="default",
    )
    out = await store.patch(
        deployments,
        "d",
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "b", "image": "x"},
                            {"name": "a", "env": [{"name": "Y", "value": "2"}]},
                        ]
                    }
                }
            }
        },
        patch_type=PatchType.STRATEGIC_MERGE,
        namespace="default",
    )
    by_name = {c["name"]: c for c in containers_of(out)}
    assert set(by_name) == {"a", "b"}
    assert by_name["a"]["image"] == "a:1"
    assert [e["name"] for e in by_name["a"]["env"]] == ["Y", "X"]
