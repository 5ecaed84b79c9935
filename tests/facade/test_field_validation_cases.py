"""Kubernetes' own field-validation cases (test/integration/apiserver/field_validation_test.go:
the typed POST, PUT, merge patch, JSON patch and strategic merge patch cases), replayed
over HTTP against the facade.

The request bodies (with their repeated keys) and the expected errors and warnings are
the upstream test's data; the checks are its checks: the ``Strict`` error ends with the
expected ``strict decoding error: ...`` and the warnings are the expected ones, in order.
Beyond the upstream test, the stored object has no unknown field left (the server drops
them whatever the mode).
"""

from __future__ import annotations

import http.client
import json
import re
from typing import Any

import pytest

from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import connect

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"

INVALID_BODY = """
{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "dupename",
    "name": "%s",
    "labels": {"app": "nginx"},
    "unknownMeta": "metaVal"
  },
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {
        "containers": [{
          "name": "nginx",
          "image": "nginx:latest",
          "unknownNested": "val1",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "Never"
        }]
      }
    }
  }
}
"""

VALID_BODY = """
{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "%s", "labels": {"app": "nginx"}, "annotations": {"a1": "foo", "a2": "bar"}},
  "spec": {
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {"containers": [
        {"name": "nginx", "image": "nginx:latest", "imagePullPolicy": "Always"}
      ]}
    },
    "replicas": 2
  }
}
"""

MERGE_PATCH = """
{
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "template": {
      "spec": {
        "containers": [{
          "name": "nginx",
          "image": "nginx:latest",
          "unknownNested": "val1",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "Never"
        }]
      }
    }
  }
}
"""

JSON_PATCH = """
[
  {"op": "add", "path": "/spec/unknown1", "value": "val1", "foo":"bar"},
  {"op": "add", "path": "/spec/unknown2", "path": "/spec/unknown3", "value": "val1"},
  {"op": "add", "path": "/spec/unknownDupe", "value": "valDupe"},
  {"op": "add", "path": "/spec/unknownDupe", "value": "valDupe2"},
  {"op": "add", "path": "/spec/paused", "value": true},
  {"op": "add", "path": "/spec/paused", "value": false},
  {"op": "add", "path": "/spec/template/spec/containers/0/unknownNested", "value": "val1"},
  {"op": "add", "path": "/spec/template/spec/containers/0/imagePullPolicy", "value": "Always"},
  {"op": "add", "path": "/spec/template/spec/containers/0/imagePullPolicy", "value": "Never"}
]
"""

NONCONFLICTING_MERGE_PATCH = """
{
  "spec": {
    "paused": true,
    "paused": false,
    "template": {
      "spec": {
        "containers": [{
          "name": "nginx",
          "image": "nginx:latest",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "Never"
        }]
      }
    }
  }
}
"""

SMP = """
{
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {
        "containers": [{
          "name": "nginx",
          "unknownNested": "val1",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "Never"
        }]
      }
    }
  }
}
"""

DECODE_WARNINGS = [
    'duplicate field "metadata.name"',
    'unknown field "metadata.unknownMeta"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    # A field both unknown and duplicated is detected as unknown for typed kinds.
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
]

PATCH_WARNINGS = [
    'duplicate field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
]

JSON_PATCH_WARNINGS = [
    'json patch unknown field "[0].foo"',
    'json patch duplicate field "[1].path"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknown3"',
    'unknown field "spec.unknownDupe"',
]

NONCONFLICTING_WARNINGS = [
    'duplicate field "spec.paused"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
]

MERGE = "application/merge-patch+json"
JSONPATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"

PATCH_CASES = {
    "merge-patch": (MERGE, MERGE_PATCH, PATCH_WARNINGS),
    "json-patch": (JSONPATCH, JSON_PATCH, JSON_PATCH_WARNINGS),
    "nonconflicting-merge-patch": (MERGE, NONCONFLICTING_MERGE_PATCH, NONCONFLICTING_WARNINGS),
    "smp": (STRATEGIC, SMP, PATCH_WARNINGS),
}

UNKNOWN = ("unknownMeta", "unknown1", "unknown2", "unknown3", "unknownDupe", "unknownNested")


def send(
    server: KubeAPIServer, method: str, path: str, body: str, content_type: str = "application/json"
) -> tuple[int, list[str], Any]:
    """One request with a raw body; the status, the Warning texts in order, the JSON answer."""
    conn = connect(server)
    try:
        conn.request(method, path, body=body.encode(), headers={"Content-Type": content_type})
        resp: http.client.HTTPResponse = conn.getresponse()
        data = resp.read()
        warnings = [
            re.sub(r"\\(.)", r"\1", value.removeprefix('299 - "').removesuffix('"'))
            for value in resp.headers.get_all("Warning") or []
        ]
        return resp.status, warnings, json.loads(data)
    finally:
        conn.close()


def no_unknown_fields(obj: Any) -> bool:
    text = json.dumps(obj)
    return not any(f'"{name}"' in text for name in UNKNOWN)


def query(mode: str | None) -> str:
    return f"?fieldValidation={mode}" if mode else ""


@pytest.mark.parametrize("mode", ["Strict", "Warn", "Ignore", None])
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_create_and_update_bodies(server: KubeAPIServer, method: str, mode: str | None) -> None:
    name = f"test-deployment-{method.lower()}-{mode}".lower()
    path = DEPLOYMENTS
    if method == "PUT":
        status, _, _ = send(server, "POST", DEPLOYMENTS, VALID_BODY % name)
        assert status == 201
        path = f"{DEPLOYMENTS}/{name}"
    status, warnings, answer = send(server, method, path + query(mode), INVALID_BODY % name)
    if mode == "Strict":
        assert status == 400, answer
        assert answer["reason"] == "BadRequest"
        assert answer["message"].endswith("strict decoding error: " + ", ".join(DECODE_WARNINGS)), (
            answer["message"]
        )
        assert warnings == []
        return
    assert status == (201 if method == "POST" else 200), answer
    assert warnings == ([] if mode == "Ignore" else DECODE_WARNINGS)
    assert no_unknown_fields(answer), answer
    assert answer["metadata"]["name"] == name  # the last of the repeated key
    assert answer["spec"]["paused"] is False
    container = answer["spec"]["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "Never"


@pytest.mark.parametrize("mode", ["Strict", "Warn", "Ignore", None])
@pytest.mark.parametrize("case", sorted(PATCH_CASES))
def test_patches(server: KubeAPIServer, case: str, mode: str | None) -> None:
    content_type, body, expected = PATCH_CASES[case]
    name = f"{case}-{mode}".lower()
    status, _, _ = send(server, "POST", DEPLOYMENTS, VALID_BODY % name)
    assert status == 201
    path = f"{DEPLOYMENTS}/{name}{query(mode)}"
    status, warnings, answer = send(server, "PATCH", path, body, content_type)
    if mode == "Strict":
        assert status == 422, answer
        assert answer["reason"] == "Invalid"
        assert answer["message"].endswith("strict decoding error: " + ", ".join(expected)), answer[
            "message"
        ]
        [cause] = answer["details"]["causes"]
        assert cause["field"] == "patch" and cause["reason"] == "FieldValueInvalid"
        assert warnings == []
        # Nothing was written.
        _, _, live = send(server, "GET", f"{DEPLOYMENTS}/{name}", "")
        assert live["metadata"]["generation"] == 1
        return
    assert status == 200, answer
    assert warnings == ([] if mode == "Ignore" else expected)
    assert no_unknown_fields(answer), answer
    assert answer["spec"]["paused"] is False
    container = answer["spec"]["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "Never"
