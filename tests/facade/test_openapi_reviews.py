"""The published OpenAPI documents and the answered review kinds, each on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ownergc.errors import BadRequest
from ownergc_backends.memory._openapi import OpenAPIDocuments, builtin_v2, definition_name
from ownergc_backends.memory._reviews import ALLOW_ALL_REASON, answer_review

EXCHANGES = json.loads(
    (
        Path(__file__).resolve().parents[1] / "data/real-apiserver-1.24/ssa-dryrun-exchanges.json"
    ).read_text()
)


def crontab_crd(*, established: bool = True, rv: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com", "uid": "u1", "resourceVersion": rv},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab", "singular": "crontab"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "description": "the spec",
                                    "properties": {
                                        "cron": {"type": "string", "nullable": True},
                                        "size": {
                                            "oneOf": [{"type": "integer"}, {"type": "string"}]
                                        },
                                    },
                                }
                            },
                        }
                    },
                },
                {"name": "v0", "served": False, "storage": False},
            ],
        },
        "status": {
            "conditions": [{"type": "Established", "status": "True" if established else "False"}]
        },
    }


def _without_field_validation(document: dict[str, Any]) -> dict[str, Any]:
    """The document less the ``fieldValidation`` parameter serve adds to every write."""
    paths = {}
    for path, item in document["paths"].items():
        paths[path] = {
            verb: (
                {
                    **op,
                    "parameters": [
                        p for p in op.get("parameters", []) if p.get("name") != "fieldValidation"
                    ],
                }
                if verb in ("post", "put", "patch")
                else op
            )
            for verb, op in item.items()
        }
        for verb in ("post", "put", "patch"):
            original = builtin_v2()["paths"].get(path, {}).get(verb, {})
            if verb in paths[path] and "parameters" not in original:
                del paths[path][verb]["parameters"]
    return {**document, "paths": paths}


def test_v2_is_the_real_servers_document_until_a_crd_is_added() -> None:
    crds: list[dict[str, Any]] = []
    docs = OpenAPIDocuments(lambda: crds)
    assert _without_field_validation(docs.v2()) == builtin_v2()
    post = docs.v2()["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["post"]
    assert "fieldValidation" in [p["name"] for p in post["parameters"]]
    crds.append(crontab_crd(established=False))
    # not served until established
    assert _without_field_validation(docs.v2()) == builtin_v2()
    crds[0] = crontab_crd(rv="2")
    name = definition_name("stable.example.com", "v1", "CronTab")
    assert name == "com.example.stable.v1.CronTab"
    schema = docs.v2()["definitions"][name]
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "stable.example.com", "version": "v1", "kind": "CronTab"}
    ]
    assert schema["properties"]["metadata"] == {
        "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    }
    spec = schema["properties"]["spec"]["properties"]
    assert spec["cron"] == {"type": "string"} and "oneOf" not in spec["size"]  # Swagger 2.0
    assert (
        "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}" in docs.v2()["paths"]
    )
    assert definition_name("stable.example.com", "v0", "CronTab") not in docs.v2()["definitions"]


def test_v3_is_published_per_group_version_with_hashes() -> None:
    crds = [crontab_crd()]
    docs = OpenAPIDocuments(lambda: crds)
    index = docs.v3_index()["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/stable.example.com/v1"} <= index.keys()
    url = index["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=") and len(url.split("=")[1]) == 128
    crd_doc = docs.v3("apis/stable.example.com/v1")
    assert crd_doc is not None and crd_doc["openapi"].startswith("3.")
    schema = crd_doc["components"]["schemas"]["com.example.stable.v1.CronTab"]
    assert schema["properties"]["spec"]["properties"]["cron"]["nullable"] is True  # v3 keeps it
    assert schema["properties"]["metadata"] == {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    }
    before = index["apis/stable.example.com/v1"]["serverRelativeURL"]
    crds[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "changed"
    crds[0]["metadata"]["resourceVersion"] = "9"
    assert docs.v3_index()["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"] != before
    assert docs.v3("apis/nothing/v1") is None


def _refs(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str):
            found.add(value["$ref"])
        for item in value.values():
            found |= _refs(item)
    elif isinstance(value, list):
        for item in value:
            found |= _refs(item)
    return found


def test_every_v3_document_resolves_its_own_references() -> None:
    docs = OpenAPIDocuments(lambda: [crontab_crd()])
    for gv in docs.v3_index()["paths"]:
        doc = docs.v3(gv)
        assert doc is not None
        schemas = doc["components"]["schemas"]
        for ref in _refs(doc):
            assert ref.startswith("#/components/schemas/"), (gv, ref)
            assert ref.removeprefix("#/components/schemas/") in schemas, (gv, ref)


def test_v3_operations_take_bodies_as_request_bodies() -> None:
    doc = OpenAPIDocuments(lambda: []).v3("api/v1")
    assert doc is not None
    post = doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["post"]
    assert post["requestBody"]["content"]["*/*"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.core.v1.ConfigMap"
    }
    assert all(p["in"] != "body" for p in post.get("parameters", ()))
    kinds = {
        (g["group"], g["version"], g["kind"])
        for s in doc["components"]["schemas"].values()
        for g in s.get("x-kubernetes-group-version-kind", ())
    }
    assert ("", "v1", "ConfigMap") in kinds


def test_an_access_review_is_allowed_with_the_reason_why() -> None:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {"verb": "delete", "resource": "configmaps", "namespace": "x"}
        },
    }
    answer = answer_review("authorization.k8s.io", "v1", "selfsubjectaccessreviews", body, {})
    assert answer["status"] == {"allowed": True, "reason": ALLOW_ALL_REASON}
    assert answer["spec"] == body["spec"]
    recorded = [e for e in EXCHANGES if "selfsubjectaccessreviews" in e["request"]["path"]]
    assert recorded
    for exchange in recorded:  # the real server's answer has the same shape
        real = exchange["response"]["body"]
        ours = answer_review(
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
            exchange["request"]["body"],
            {},
        )
        assert (
            ours["spec"] == real["spec"] and ours["status"]["allowed"] is real["status"]["allowed"]
        )
    with pytest.raises(BadRequest, match="exactly one of"):
        answer_review("authorization.k8s.io", "v1", "selfsubjectaccessreviews", {"spec": {}}, {})


def test_whoami_and_rules_reviews() -> None:
    user = {"username": "system:admin", "groups": ["system:masters"]}
    who = answer_review("authentication.k8s.io", "v1", "selfsubjectreviews", {}, user)
    assert who["kind"] == "SelfSubjectReview" and who["status"] == {"userInfo": user}
    rules = answer_review(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        {"spec": {"namespace": "default"}},
        user,
    )
    assert rules["status"]["resourceRules"] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    ]
    with pytest.raises(BadRequest, match="no namespace"):
        answer_review("authorization.k8s.io", "v1", "selfsubjectrulesreviews", {"spec": {}}, user)
