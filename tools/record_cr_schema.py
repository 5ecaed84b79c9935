"""Record how the real kube-apiserver 1.20 validates custom resources against their
CRD's structural schema, for tests/facade/test_cr_schema_real.py.

One CRD (``gadgets.lead-schema.example.com``) declares a field for each OpenAPI v3
rule a structural schema may carry: types, formats, enums, bounds, lengths, patterns,
item and property counts, required fields, nullable, int-or-string, embedded
resources, list types (set, map) and the value validations (allOf, anyOf, oneOf,
not). Custom resources breaking one rule or several are created (``?dryRun=All``)
and a stored one is merge-patched; each answer's status, reason, message and causes
are kept.

Run: python tools/record_cr_schema.py > tests/data/real-apiserver-1.20/cr-schema.json
"""

from __future__ import annotations

import copy
import json
import sys
import time
from typing import Any

from _real_apiserver import call  # tools/

NS = "lead-schema"
GROUP = "lead-schema.example.com"
CRD_NAME = f"gadgets.{GROUP}"

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["size"],
    "properties": {
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {
            "type": "number",
            "minimum": 0,
            "exclusiveMinimum": True,
            "maximum": 1,
            "exclusiveMaximum": True,
        },
        "step": {"type": "integer", "multipleOf": 5},
        "weight": {"type": "number", "multipleOf": 0.5},
        "size": {"type": "string", "enum": ["small", "large"]},
        "level": {"type": "integer", "enum": [1, 2, 3]},
        "name": {"type": "string", "minLength": 3, "maxLength": 8, "pattern": "^[a-z]+$"},
        "uid": {"type": "string", "format": "uuid"},
        "when": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "data": {"type": "string", "format": "byte"},
        "address": {"type": "string", "format": "ipv4"},
        "network": {"type": "string", "format": "cidr"},
        "email": {"type": "string", "format": "email"},
        "host": {"type": "string", "format": "hostname"},
        "timeout": {"type": "string", "format": "duration"},
        "small": {"type": "integer", "format": "int32"},
        "enabled": {"type": "boolean"},
        "tags": {
            "type": "array",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string"},
            "x-kubernetes-list-type": "set",
        },
        "ports": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "port": {"type": "integer", "minimum": 1},
                },
            },
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
        },
        "matrix": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "integer", "maximum": 9}},
        },
        "labels": {
            "type": "object",
            "additionalProperties": {"type": "string", "maxLength": 5},
            "maxProperties": 2,
            "minProperties": 1,
        },
        "mode": {
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": "^(auto|[0-9]+%)$",
        },
        "nested": {
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "object", "properties": {"c": {"type": "integer", "minimum": 0}}},
            },
        },
        "optional": {"type": "string", "nullable": True},
        "choice": {
            "type": "object",
            "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
            "oneOf": [{"required": ["x"]}, {"required": ["y"]}],
        },
        "either": {
            "type": "string",
            "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}],
        },
        "both": {
            "type": "string",
            "allOf": [{"minLength": 2}, {"pattern": "^z"}],
        },
        "never": {"type": "string", "not": {"enum": ["bad"]}},
        "embedded": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        },
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
            "plural": "gadgets",
            "singular": "gadget",
            "kind": "Gadget",
            "listKind": "GadgetList",
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
                        "required": ["spec"],
                        "properties": {
                            "spec": SPEC_SCHEMA,
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}

VALID = {"size": "small", "replicas": 2}

#: case -> spec (a dict merged over VALID; a key with value "@drop" removed), or, for
#: the whole body, {"@body": {...}}
CASES: dict[str, Any] = {
    "valid": {},
    "valid everything": {
        "ratio": 0.5,
        "step": 10,
        "weight": 1.5,
        "level": 2,
        "name": "abc",
        "uid": "0b6c1d4e-4f33-4c5e-9a8b-1234567890ab",
        "when": "2026-11-27T10:00:00Z",
        "day": "2026-11-27",
        "data": "aGVsbG8=",
        "address": "10.0.0.1",
        "network": "10.0.0.0/8",
        "email": "a@example.com",
        "host": "example.com",
        "timeout": "5s",
        "small": 7,
        "enabled": True,
        "tags": ["a"],
        "ports": [{"name": "http", "port": 80}],
        "matrix": [[1, 2], [3]],
        "labels": {"a": "b"},
        "mode": "auto",
        "nested": {"a": "x", "b": {"c": 1}},
        "optional": None,
        "choice": {"x": "1"},
        "either": "apple",
        "both": "zz",
        "never": "good",
        "embedded": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        "free": {"anything": [1, {"x": None}]},
    },
    "no spec": {"@body": {}},
    "spec not an object": {"@body": {"spec": "text"}},
    "spec null": {"@body": {"spec": None}},
    "required missing": {"size": "@drop"},
    "integer as string": {"replicas": "three"},
    "integer as float": {"replicas": 2.5},
    "integer as bool": {"replicas": True},
    "integer as float with zero fraction": {"replicas": 2.0},
    "string as integer": {"size": 1},
    "string as object": {"name": {"a": 1}},
    "bool as string": {"enabled": "true"},
    "array as object": {"tags": {"a": 1}},
    "object as array": {"nested": [1]},
    "object as string": {"labels": "x"},
    "null not nullable": {"name": None},
    "below minimum": {"replicas": 0},
    "above maximum": {"replicas": 11},
    "exclusive minimum": {"ratio": 0},
    "exclusive maximum": {"ratio": 1},
    "multipleOf integer": {"step": 7},
    "multipleOf float": {"weight": 1.2},
    "enum string": {"size": "medium"},
    "enum integer": {"level": 4},
    "too short": {"name": "ab"},
    "too long": {"name": "abcdefghi"},
    "pattern": {"name": "ABC"},
    "too long and pattern": {"name": "ABCDEFGHIJ"},
    "format uuid": {"uid": "not-a-uuid"},
    "format date-time": {"when": "yesterday"},
    "format date": {"day": "2026-13-45"},
    "format byte": {"data": "%%%"},
    "format ipv4": {"address": "300.1.1.1"},
    "format cidr": {"network": "10.0.0.0/99"},
    "format email": {"email": "nobody"},
    "format hostname": {"host": "-bad-"},
    "format duration": {"timeout": "forever"},
    "format int32 overflow": {"small": 3000000000},
    "too few items": {"tags": []},
    "too many items": {"tags": ["a", "b", "c", "d"]},
    "set duplicate": {"tags": ["a", "a"]},
    "map list duplicate key": {
        "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]
    },
    "map list item without key": {"ports": [{"port": 80}]},
    "map list item below minimum": {"ports": [{"name": "http", "port": 0}]},
    "nested array item": {"matrix": [[1, 10], [3, 11]]},
    "nested array type": {"matrix": [[1, "x"]]},
    "too many properties": {"labels": {"a": "1", "b": "2", "c": "3"}},
    "too few properties": {"labels": {}},
    "additionalProperties value too long": {"labels": {"a": "123456"}},
    "additionalProperties value type": {"labels": {"a": 1}},
    "int-or-string pattern": {"mode": "manual"},
    "int-or-string integer": {"mode": 5},
    "int-or-string bool": {"mode": True},
    "nested required": {"nested": {"b": {"c": 1}}},
    "nested deep minimum": {"nested": {"a": "x", "b": {"c": -1}}},
    "nullable null": {"optional": None},
    "oneOf none": {"choice": {}},
    "oneOf both": {"choice": {"x": "1", "y": "2"}},
    "anyOf none": {"either": "cherry"},
    "allOf one fails": {"both": "za" + "", "name": "abc"},
    "allOf both fail": {"both": "a"},
    "not": {"never": "bad"},
    "embedded without kind": {"embedded": {"apiVersion": "v1", "metadata": {"name": "x"}}},
    "embedded without apiVersion": {"embedded": {"kind": "ConfigMap"}},
    "embedded bad metadata name": {
        "embedded": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}
    },
    "embedded empty": {"embedded": {}},
    "unknown field pruned": {"surprise": 1},
    "several errors": {
        "replicas": 0,
        "size": "medium",
        "name": "ABCDEFGHIJ",
        "tags": [],
        "labels": {"a": 1},
    },
    "several errors in order of keys": {
        "weight": 1.2,
        "address": "x",
        "enabled": "no",
        "level": 9,
        "step": 1,
    },
}

#: Merge patches of a stored valid gadget: name -> patch
UPDATES: dict[str, Any] = {
    "update valid": {"spec": {"replicas": 3}},
    "update above maximum": {"spec": {"replicas": 11}},
    "update drops required": {"spec": {"size": None}},
    "update enum": {"spec": {"size": "medium"}},
    "update type": {"spec": {"tags": "a"}},
}


def body_of(case: Any) -> dict[str, Any]:
    if "@body" in case:
        body = dict(case["@body"])
    else:
        spec = copy.deepcopy(VALID)
        for key, value in case.items():
            if value == "@drop":
                spec.pop(key, None)
            else:
                spec[key] = value
        body = {"spec": spec}
    return {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": "gadget"}, **body}


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
    path = f"/apis/{GROUP}/v1/namespaces/{NS}/gadgets"
    for _ in range(60):
        if call("GET", path)[0] == 200:
            break
        time.sleep(1)
    time.sleep(2)
    exchanges = []
    for name, case in CASES.items():
        body = body_of(case)
        status, answer = call("POST", path + "?dryRun=All", body)
        exchanges.append(
            {"case": name, "op": "create", "body": body, "status": status, "answer": answer}
        )
    stored = body_of({"tags": ["a"], "name": "abc"})
    stored["metadata"]["name"] = "stored"
    call("DELETE", f"{path}/stored")
    status, answer = call("POST", path, stored)
    assert status == 201, answer
    for name, patch in UPDATES.items():
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
