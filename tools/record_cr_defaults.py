"""Record how the real kube-apiserver 1.20 defaults custom resources from their CRD's
structural schema (and drops the nulls of fields that are not nullable), for
tests/facade/test_cr_schema_real.py.

Run: python tools/record_cr_defaults.py > tests/data/real-apiserver-1.20/cr-defaults.json
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from _real_apiserver import call  # tools/

NS = "lead-schema"
GROUP = "lead-defaults.example.com"
CRD_NAME = f"widgets.{GROUP}"

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "default": {},
    "properties": {
        "replicas": {"type": "integer", "default": 1},
        "mode": {"type": "string", "default": "auto"},
        "plain": {"type": "string"},
        "keep": {"type": "string", "nullable": True, "default": "kept"},
        "nested": {
            "type": "object",
            "properties": {
                "x": {"type": "string", "default": "x"},
                "deeper": {
                    "type": "object",
                    "default": {"z": 1},
                    "properties": {
                        "z": {"type": "integer"},
                        "w": {"type": "integer", "default": 2},
                    },
                },
            },
        },
        "ports": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "port": {"type": "integer", "default": 80},
                },
            },
        },
        "byName": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {"weight": {"type": "integer", "default": 5}},
            },
        },
        "tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": GROUP,
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "listKind": "WidgetList",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": SPEC_SCHEMA,
                            "status": {
                                "type": "object",
                                "properties": {"phase": {"type": "string", "default": "New"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}

#: case -> the body below metadata
CASES: dict[str, Any] = {
    "no spec": {},
    "spec null": {"spec": None},
    "empty spec": {"spec": {}},
    "explicit values kept": {"spec": {"replicas": 3, "mode": "manual", "tags": []}},
    "null of a defaulted field": {"spec": {"replicas": None, "mode": None}},
    "null of a plain field": {"spec": {"plain": None}},
    "null of a nullable defaulted field": {"spec": {"keep": None}},
    "nested present and empty": {"spec": {"nested": {}}},
    "nested deeper null": {"spec": {"nested": {"deeper": None}}},
    "nested deeper partial": {"spec": {"nested": {"deeper": {"z": 7}}}},
    "list items": {"spec": {"ports": [{"name": "a"}, {"name": "b", "port": 8080}, {}]}},
    "list item null": {"spec": {"ports": [None]}},
    "map values": {"spec": {"byName": {"a": {}, "b": {"weight": 1}}}},
    "free keeps nulls": {"spec": {"free": {"a": None, "b": [None]}}},
    "status given": {"spec": {}, "status": {}},
    "wrong type where default": {"spec": {"replicas": "x"}},
}


def main() -> None:
    call("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}")
    for _ in range(60):
        if (
            call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}")[0]
            == 404
        ):
            break
        time.sleep(1)
    status, answer = call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    assert status == 201, answer
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    path = f"/apis/{GROUP}/v1/namespaces/{NS}/widgets"
    for _ in range(60):
        if call("GET", path)[0] == 200:
            break
        time.sleep(1)
    time.sleep(2)
    exchanges = []
    for name, rest in CASES.items():
        body = {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Widget",
            "metadata": {"name": "widget"},
            **rest,
        }
        status, answer = call("POST", path + "?dryRun=All", body)
        exchanges.append(
            {"case": name, "op": "create", "body": body, "status": status, "answer": answer}
        )
    stored = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "stored"},
        "spec": {"mode": "manual"},
    }
    call("DELETE", f"{path}/stored")
    status, answer = call("POST", path, stored)
    assert status == 201, answer
    for name, patch in {
        "update removes a defaulted field": {"spec": {"mode": None}},
        "update sets a nested object": {"spec": {"nested": {}}},
    }.items():
        status, answer = call(
            "PATCH", f"{path}/stored?dryRun=All", patch, "application/merge-patch+json"
        )
        exchanges.append(
            {"case": name, "op": "update", "body": patch, "status": status, "answer": answer}
        )
    json.dump(
        {"namespace": NS, "crd": CRD, "stored": stored, "exchanges": exchanges},
        sys.stdout,
        indent=1,
    )
    print()


if __name__ == "__main__":
    main()
