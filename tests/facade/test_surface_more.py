"""More of the everyday surface over HTTP: every review kind, every workload's ``/scale``.

Complements test_surface.py (which replays the recorded access review and
Deployment scale): the other review kinds, the scale of ReplicaSets,
StatefulSets and ReplicationControllers with the selector worded as the
apiserver words it, and the official client's scale calls.
"""

from __future__ import annotations

from typing import Any

import pytest

from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import (
    recorded_discovery,
    request,
)

# ---------------------------------------------------------------- reviews


@pytest.mark.parametrize(
    ("path", "body", "check"),
    [
        (
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}},
            lambda s: s["resourceRules"][0]["verbs"] == ["*"],
        ),
        (
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {
                "kind": "SubjectAccessReview",
                "spec": {"user": "bob", "resourceAttributes": {"verb": "get", "resource": "pods"}},
            },
            lambda s: s["allowed"] is True,
        ),
        (
            "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
            {
                "kind": "LocalSubjectAccessReview",
                "spec": {"user": "bob", "resourceAttributes": {"verb": "get", "resource": "pods"}},
            },
            lambda s: s["allowed"] is True,
        ),
        (
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            {"kind": "SelfSubjectReview"},
            lambda s: s["userInfo"]["username"] == "system:anonymous",
        ),
    ],
)
def test_every_review_kind_is_answered_and_not_stored(
    server: KubeAPIServer, path: str, body: dict[str, Any], check: Any
) -> None:
    reply = request(server, "POST", path, body)
    assert reply.status == 201, reply.text
    assert check(reply.json()["status"])
    # Never stored: a review cannot be listed (kube-apiserver answers 405).
    assert request(server, "GET", path).status == 405


def test_a_review_without_attributes_is_invalid(server: KubeAPIServer) -> None:
    reply = request(
        server,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {"kind": "SelfSubjectAccessReview", "spec": {}},
    )
    assert reply.status == 400
    assert "exactly one of nonResourceAttributes or resourceAttributes" in reply.json()["message"]


def test_review_kinds_are_in_discovery_as_the_real_server_lists_them(
    server: KubeAPIServer,
) -> None:
    real = recorded_discovery()["/apis/authorization.k8s.io/v1"]["resources"]
    served = request(server, "GET", "/apis/authorization.k8s.io/v1").json()["resources"]
    key = ("name", "namespaced", "kind", "verbs")
    assert sorted(tuple(str(r[k]) for k in key) for r in served) == sorted(
        tuple(str(r[k]) for k in key) for r in real
    )
    auth = request(server, "GET", "/apis/authentication.k8s.io/v1").json()["resources"]
    assert {"selfsubjectreviews"} <= {r["name"] for r in auth}


def _deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    """The Deployment the recording applied (``d``, selector ``app=d``)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "a", "image": "busybox"}]},
            },
        },
    }


@pytest.mark.parametrize(
    ("base", "kind", "selector", "expected"),
    [
        ("/apis/apps/v1", "ReplicaSet", {"matchLabels": {"app": "x"}}, "app=x"),
        (
            "/apis/apps/v1",
            "StatefulSet",
            {
                "matchLabels": {"app": "x"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
            },
            "app=x,tier in (a,b)",
        ),
        ("/api/v1", "ReplicationController", {"app": "x"}, "app=x"),
    ],
)
def test_scale_of_every_builtin_workload_reads_and_writes(
    server: KubeAPIServer, base: str, kind: str, selector: dict[str, Any], expected: str
) -> None:
    plural = kind.lower() + "s"
    labels = {"app": "x", "tier": "a"}
    template = {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "a", "image": "nginx"}]},
    }
    body = {
        "apiVersion": "v1" if base == "/api/v1" else "apps/v1",
        "kind": kind,
        "metadata": {"name": "w"},
        "spec": {"replicas": 2, "selector": selector, "template": template},
    }
    collection = f"{base}/namespaces/default/{plural}"
    assert request(server, "POST", collection, body).status == 201
    scale_path = f"{collection}/w/scale"
    scale = request(server, "GET", scale_path).json()
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"]["replicas"] == 2
    assert scale["status"]["selector"] == expected
    scale["spec"]["replicas"] = 4
    put = request(server, "PUT", scale_path, scale)
    assert put.status == 200 and put.json()["spec"]["replicas"] == 4
    patch = request(
        server,
        "PATCH",
        scale_path,
        {"spec": {"replicas": 5}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patch.status == 200 and patch.json()["spec"]["replicas"] == 5
    assert request(server, "GET", f"{collection}/w").json()["spec"]["replicas"] == 5
    # A stale resourceVersion conflicts, as on the object itself.
    stale = request(server, "PUT", scale_path, scale)
    assert stale.status == 409 and stale.json()["reason"] == "Conflict"


def test_scale_is_in_discovery_as_the_real_server_lists_it(server: KubeAPIServer) -> None:
    for gv in ("/apis/apps/v1", "/api/v1"):
        real = {
            r["name"]: r
            for r in recorded_discovery()[gv]["resources"]
            if r["name"].endswith("/scale")
        }
        served = {
            r["name"]: r
            for r in request(server, "GET", gv).json()["resources"]
            if r["name"].endswith("/scale")
        }
        assert set(served) == set(real)
        for name, entry in real.items():
            for key in ("namespaced", "kind", "group", "version", "verbs"):
                assert served[name][key] == entry[key], (name, key)


def test_scale_of_a_missing_deployment_is_404(server: KubeAPIServer) -> None:
    reply = request(server, "GET", "/apis/apps/v1/namespaces/default/deployments/none/scale")
    assert reply.status == 404 and reply.json()["reason"] == "NotFound"


def test_official_client_reads_and_patches_deployment_scale(
    server: KubeAPIServer, api_client: Any
) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    apps = kubernetes.client.AppsV1Api(api_client)
    apps.create_namespaced_deployment("default", _deployment("web"))
    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert scale.spec.replicas == 1 and scale.status.selector == "app=web"
    patched = apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 3}})
    assert patched.spec.replicas == 3
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 3
