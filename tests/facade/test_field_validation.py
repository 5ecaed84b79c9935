"""Server-side field validation (``fieldValidation=Strict|Warn|Ignore``) over HTTP.

The wording is kube-apiserver's (``<Kind> in version "<v>" cannot be handled
as a <Kind>: strict decoding error: unknown field "spec.foo"``, fields in the
body's order; ``Warn`` sends ``Warning: 299 - "unknown field ..."``).
"""

from __future__ import annotations

from typing import Any

from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import (
    request,
)


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
        # A structural schema's object without properties keeps no field.
        "spec": {"anything": 1},
        "extra": True,
    }
    reply = request(server, "POST", f"{path}?fieldValidation=Strict", body)
    assert reply.status == 400
    assert reply.json()["message"].endswith(
        'strict decoding error: unknown field "spec.anything", unknown field "extra"'
    )
    # Warn (the default) stores the object without them, as the server prunes.
    warned = request(server, "POST", path, body)
    assert warned.status == 201
    assert warned.json()["spec"] == {} and "extra" not in warned.json()
    assert request(server, "GET", f"{path}/c").json()["spec"] == {}


def test_published_writes_name_field_validation(server: KubeAPIServer) -> None:
    apps = request(server, "GET", "/openapi/v3/apis/apps/v1").json()
    patch = apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
