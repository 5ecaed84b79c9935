"""The everyday surface of the facade over HTTP: access reviews, built-in ``/scale``, OpenAPI.

The review and ``/scale`` requests are replayed from the real 1.24 server's
recorded exchanges (``ssa-dryrun-exchanges.json``) and the answers compared in
status, reason and body shape; discovery entries against the recorded
discovery (``discovery.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._reviews import ALLOW_ALL_REASON
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import request

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "real-apiserver-1.24"


def _exchanges() -> list[dict[str, Any]]:
    return list(json.loads((FIXTURES / "ssa-dryrun-exchanges.json").read_text()))


def _exchange(path_part: str) -> dict[str, Any]:
    return next(e for e in _exchanges() if path_part in e["request"]["path"])


def _discovery() -> dict[str, Any]:
    return dict(json.loads((FIXTURES / "discovery.json").read_text()))


def _shape(value: Any) -> Any:
    """Keys and value types, recursively: what 'the same body shape' compares."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


def _namespace(server: KubeAPIServer, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    assert request(server, "POST", "/api/v1/namespaces", body).status == 201


# ---------------------------------------------------------------- access reviews


def test_recorded_access_review_is_answered_as_the_real_server(server: KubeAPIServer) -> None:
    recorded = _exchange("selfsubjectaccessreviews")
    req, want = recorded["request"], recorded["response"]
    reply = request(server, req["method"], req["path"], req["body"])
    assert reply.status == want["status"]
    got = reply.json()
    assert got["kind"] == want["body"]["kind"]
    assert got["apiVersion"] == want["body"]["apiVersion"]
    assert got["spec"] == want["body"]["spec"]
    assert got["status"]["allowed"] is want["body"]["status"]["allowed"] is True
    # serve says why it allowed: the one key the real answer does not have.
    assert got["status"]["reason"] == ALLOW_ALL_REASON
    # metadata.managedFields is the field manager's (another part); the rest matches.
    want_shape = _shape(want["body"])
    want_shape["metadata"] = {}
    got_shape = _shape(got)
    got_shape["metadata"] = {}
    del got_shape["status"]["reason"]
    assert got_shape == want_shape


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
    real = _discovery()["/apis/authorization.k8s.io/v1"]["resources"]
    served = request(server, "GET", "/apis/authorization.k8s.io/v1").json()["resources"]
    key = ("name", "namespaced", "kind", "verbs")
    assert sorted(tuple(str(r[k]) for k in key) for r in served) == sorted(
        tuple(str(r[k]) for k in key) for r in real
    )
    auth = request(server, "GET", "/apis/authentication.k8s.io/v1").json()["resources"]
    assert {"selfsubjectreviews"} <= {r["name"] for r in auth}


# ---------------------------------------------------------------- /scale


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


def test_recorded_deployment_scale_is_answered_as_the_real_server(server: KubeAPIServer) -> None:
    recorded = _exchange("/scale")
    req, want = recorded["request"], recorded["response"]
    _namespace(server, "ssa-rec2")
    created = request(
        server, "POST", "/apis/apps/v1/namespaces/ssa-rec2/deployments", _deployment("d")
    )
    assert created.status == 201, created.text
    reply = request(server, req["method"], req["path"])
    assert reply.status == want["status"]
    got = reply.json()
    assert _shape(got) == _shape(want["body"])
    assert got["spec"] == want["body"]["spec"]
    assert got["status"]["selector"] == want["body"]["status"]["selector"]
    assert got["metadata"]["uid"] == created.json()["metadata"]["uid"]


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
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "a"}]}}
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
        real = {r["name"]: r for r in _discovery()[gv]["resources"] if r["name"].endswith("/scale")}
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


# ---------------------------------------------------------------- OpenAPI


def _crontab_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": {"type": "object"}},
                        }
                    },
                }
            ],
        },
    }


def test_openapi_follows_crds_created_and_removed(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    v2 = request(server, "GET", "/openapi/v2", headers={"Accept": "application/json"}).json()
    assert "io.k8s.api.apps.v1.Deployment" in v2["definitions"]
    assert "com.example.stable.v1.CronTab" not in v2["definitions"]
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert request(server, "POST", crds, _crontab_crd()).status == 201
    v2 = request(server, "GET", "/openapi/v2", headers={"Accept": "application/json"}).json()
    assert "com.example.stable.v1.CronTab" in v2["definitions"]
    index = request(server, "GET", "/openapi/v3").json()["paths"]
    url = index["apis/stable.example.com/v1"]["serverRelativeURL"]
    v3 = request(server, "GET", url).json()
    assert "com.example.stable.v1.CronTab" in v3["components"]["schemas"]
    apps = request(server, "GET", "/openapi/v3/apis/apps/v1").json()
    assert "io.k8s.api.apps.v1.Deployment" in apps["components"]["schemas"]
    assert request(server, "DELETE", f"{crds}/crontabs.stable.example.com").status == 200
    index = request(server, "GET", "/openapi/v3").json()["paths"]
    assert "apis/stable.example.com/v1" not in index
    assert request(server, "GET", "/openapi/v3/apis/stable.example.com/v1").status == 404


# ---------------------------------------------------------------- fieldValidation


def _with_unknown_fields(name: str) -> dict[str, Any]:
    body = _deployment(name)
    body["foo"] = "bar"
    body["spec"]["template"]["spec"]["containers"][0]["bogus"] = 1
    body["metadata"]["labels"] = {"any": "label"}  # a map: every key is known
    return body


def test_strict_field_validation_refuses_unknown_fields(server: KubeAPIServer) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments"
    reply = request(server, "POST", f"{path}?fieldValidation=Strict", _with_unknown_fields("s"))
    assert reply.status == 400
    status = reply.json()
    assert status["reason"] == "BadRequest"
    assert status["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.template.spec.containers[0].bogus", unknown field "foo"'
    )  # in the body's order, as the decoder meets them
    assert request(server, "GET", f"{path}/s").status == 404
    # A known body passes Strict.
    ok = request(server, "POST", f"{path}?fieldValidation=Strict", _deployment("s"))
    assert ok.status == 201, ok.text


def test_warn_is_the_default_and_ignore_says_nothing(server: KubeAPIServer) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments"
    warned = request(server, "POST", path, _with_unknown_fields("w"))
    assert warned.status == 201
    assert '299 - "unknown field \\"foo\\""' in warned.headers["warning"]
    ignored = request(server, "POST", f"{path}?fieldValidation=Ignore", _with_unknown_fields("i"))
    assert ignored.status == 201 and "warning" not in ignored.headers
    bad = request(server, "POST", f"{path}?fieldValidation=Loud", _deployment("x"))
    assert bad.status == 400 and "Unsupported value" in bad.json()["message"]


def test_strict_field_validation_reads_a_crds_schema(server: KubeAPIServer) -> None:
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert request(server, "POST", crds, _crontab_crd()).status == 201
    path = "/apis/stable.example.com/v1/namespaces/default/crontabs"
    body = {
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "c", "annotations": {"a": "b"}},
        "spec": {"anything": 1},  # spec has no properties: open
        "extra": True,
    }
    reply = request(server, "POST", f"{path}?fieldValidation=Strict", body)
    assert reply.status == 400
    assert reply.json()["message"].endswith('strict decoding error: unknown field "extra"')
    del body["extra"]
    assert request(server, "POST", f"{path}?fieldValidation=Strict", body).status == 201


def test_published_writes_name_field_validation(server: KubeAPIServer) -> None:
    apps = request(server, "GET", "/openapi/v3/apis/apps/v1").json()
    patch = apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]


def _fields(data: bytes) -> list[tuple[int, bytes]]:
    """The length-delimited fields of a protobuf message (number, bytes), in order."""
    out, i = [], 0

    def varint() -> int:
        nonlocal i
        shift = value = 0
        while True:
            byte = data[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while i < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 2:
            size = varint()
            out.append((number, data[i : i + size]))
            i += size
        elif wire == 0:
            varint()
        elif wire == 1:
            i += 8
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    return out


def test_openapi_v2_in_protobuf_carries_every_definition(server: KubeAPIServer) -> None:
    accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    reply = request(server, "GET", "/openapi/v2", headers={"Accept": accept})
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/octet-stream"
    v2 = request(server, "GET", "/openapi/v2", headers={"Accept": "application/json"}).json()
    document = dict(_fields(reply.body))
    assert document[1] == b"2.0"  # swagger
    # definitions (9): NamedSchema entries (1), each a name (1) and a Schema (2)
    names = [dict(_fields(named))[1].decode() for _, named in _fields(document[9])]
    assert names == list(v2["definitions"])
    paths = [dict(_fields(named))[1].decode() for _, named in _fields(document[8])]
    assert paths == list(v2["paths"])
