"""CRD validation rules (``x-kubernetes-validations``, CEL) enforced by serve's facade as
kube-apiserver 1.30 enforces them.

No real kube-apiserver 1.30 runs here (the real server of this project's recordings is
1.20, which has no validation rules: they came in 1.23 as alpha, GA in 1.29). The
expected answers are therefore facts read from the sources, named on each case:

* ``validation.go``: kubernetes/apiextensions-apiserver v0.30.0,
  pkg/apiserver/schema/cel/validation.go: the error of a failed rule is
  ``field.Invalid(path, <schema type>, message)`` (``spec: Invalid value: "object":
  ...``), the default message ``failed rule: <rule>``, a runtime error ``<error>
  evaluating rule: <rule>``, a failing messageExpression falls back to the message,
  ``reason`` picks Forbidden / Required / Duplicate, ``fieldPath`` is appended to the
  path, rules with ``oldSelf`` run only on updates with an old value (unless
  ``optionalOldSelf``), and an unchanged value's failures are only warned about
  (ratcheting);
* ``strategy.go``: v0.30.0 pkg/registry/customresource/strategy.go: the rules run after
  the schema's checks, and not at all when one of those is NotSupported, Required,
  TooLong, TooMany or TypeInvalid (``<nil>: Invalid value: "null": some validation
  rules were not checked ...``); the root's rules see apiVersion, kind,
  metadata.name and metadata.generateName;
* ``validation_test.go``: v0.30.0 pkg/apiserver/schema/cel/validation_test.go
  (TestReasonAndFldPath, TestMessageExpression, the transition rule cases);
* ``docs``: the Kubernetes documentation, "Extend the Kubernetes API with
  CustomResourceDefinitions", section "Validation rules" (its example rules:
  minReplicas / replicas / maxReplicas, immutability with ``self == oldSelf``,
  ``self.metadata.name.startsWith(self.prefix)``, ``type(self) == string ? ...``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

NS = "celrules"
GROUP = "rules.example.com"
PATH = f"/apis/{GROUP}/v1/namespaces/{NS}/widgets"

_SPEC: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-validations": [
        {
            "rule": "self.minReplicas <= self.replicas",
            "message": "replicas should be greater than or equal to minReplicas.",
        },
        {"rule": "self.replicas <= self.maxReplicas"},
        {
            "rule": "!has(self.mode) || self.mode != 'legacy' || self.replicas == 1",
            "messageExpression": "'legacy mode runs 1 replica, not ' + string(self.replicas)",
        },
        {
            "rule": "!has(self.owner) || self.owner != 'nobody'",
            "fieldPath": ".owner",
            "reason": "FieldValueForbidden",
        },
        {
            "rule": "!has(self.backup) || has(self.backupSchedule)",
            "message": "backupSchedule is required with backup",
            "fieldPath": ".backupSchedule",
            "reason": "FieldValueRequired",
        },
        {
            "rule": "!has(self.mode) || self.mode != 'twin' || false",
            "reason": "FieldValueDuplicate",
        },
        {
            "rule": "!has(self.mode) || self.mode != 'oops' || self.missing == 1",
        },
        {"rule": "self.replicas < 1000 || self.unknownFunction()"},
        {"rule": "self.replicas <"},
    ],
    "properties": {
        "replicas": {"type": "integer"},
        "minReplicas": {"type": "integer", "default": 0},
        "maxReplicas": {"type": "integer", "default": 10},
        "mode": {"type": "string"},
        "owner": {"type": "string"},
        "backup": {"type": "boolean"},
        "backupSchedule": {"type": "string"},
        "missing": {"type": "integer"},
        "prefix": {"type": "string"},
        "name": {
            "type": "string",
            "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "Value is immutable"}
            ],
        },
        "size": {
            "type": "integer",
            "x-kubernetes-validations": [
                {
                    "rule": "!oldSelf.hasValue() || self >= oldSelf.value()",
                    "message": "size may only grow",
                    "optionalOldSelf": True,
                },
                {
                    "rule": "oldSelf.hasValue() || self <= 100",
                    "message": "a new size is at most 100",
                    "optionalOldSelf": True,
                },
            ],
        },
        "tags": {
            "type": "array",
            "items": {
                "type": "string",
                "x-kubernetes-validations": [{"rule": "self.lowerAscii() == self"}],
            },
        },
        "limits": {
            "type": "object",
            "additionalProperties": {
                "x-kubernetes-int-or-string": True,
                "x-kubernetes-validations": [
                    {
                        "rule": "type(self) == string ? self.endsWith('%') : self >= 0",
                        "message": "a limit is a percentage or a count",
                    }
                ],
            },
        },
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "port": {
                        "type": "integer",
                        "x-kubernetes-validations": [
                            {"rule": "self == oldSelf", "message": "port is immutable"}
                        ],
                    },
                },
            },
        },
        "kind": {"type": "string", "enum": ["small", "large"]},
    },
    "required": ["replicas"],
}

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-validations": [
                            {
                                "rule": "!has(self.spec.prefix) || "
                                "self.metadata.name.startsWith(self.spec.prefix)",
                                "message": "the name must start with spec.prefix",
                            }
                        ],
                        "properties": {"spec": _SPEC},
                    }
                },
            }
        ],
    },
}


def widget(obj_name: str, /, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": obj_name},
        "spec": {"replicas": 1, **spec},
    }


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        status, _, answer = send(
            running,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            json.dumps(CRD),
        )
        assert status == 201, answer
        yield running


def _causes(answer: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in answer["details"]["causes"]]


def _create(server: KubeAPIServer, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, _, answer = send(server, "POST", PATH + "?dryRun=All", json.dumps(body))
    return status, answer


def _patch(
    server: KubeAPIServer, name: str, patch: dict[str, Any]
) -> tuple[int, list[str], dict[str, Any]]:
    return send(
        server,
        "PATCH",
        f"{PATH}/{name}",
        json.dumps(patch),
        "application/merge-patch+json",
    )


_INVALID = "FieldValueInvalid"

#: case -> (spec fields, metadata name, expected causes as (reason, field, message), source)
CREATES: dict[str, tuple[dict[str, Any], str, list[tuple[str, str, str]], str]] = {
    "valid": ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5}, "w-ok", [], "docs"),
    "message": (
        {"replicas": 1, "minReplicas": 2},
        "w-min",
        [
            (
                _INVALID,
                "spec",
                'Invalid value: "object": replicas should be greater than or equal to minReplicas.',
            )
        ],
        "docs; validation.go (the value is the schema's type)",
    ),
    "default message": (
        {"replicas": 11},
        "w-max",
        [
            (
                _INVALID,
                "spec",
                'Invalid value: "object": failed rule: self.replicas <= self.maxReplicas',
            )
        ],
        "validation.go ruleMessageOrDefault",
    ),
    "messageExpression": (
        {"replicas": 2, "mode": "legacy"},
        "w-legacy",
        [(_INVALID, "spec", 'Invalid value: "object": legacy mode runs 1 replica, not 2')],
        "validation.go evalMessageExpression",
    ),
    "reason Forbidden and fieldPath": (
        {"owner": "nobody"},
        "w-owner",
        [
            (
                "FieldValueForbidden",
                "spec.owner",
                "Forbidden: failed rule: !has(self.owner) || self.owner != 'nobody'",
            )
        ],
        "validation.go fieldErrorForReason; validation_test.go TestReasonAndFldPath",
    ),
    "reason Required and fieldPath": (
        {"backup": True},
        "w-backup",
        [
            (
                "FieldValueRequired",
                "spec.backupSchedule",
                "Required value: backupSchedule is required with backup",
            )
        ],
        "validation.go fieldErrorForReason",
    ),
    "reason Duplicate": (
        {"mode": "twin"},
        "w-twin",
        [("FieldValueDuplicate", "spec", 'Duplicate value: "object"')],
        "validation.go fieldErrorForReason (field.Duplicate(path, type))",
    ),
    "runtime error": (
        {"mode": "oops"},
        "w-oops",
        [
            (
                _INVALID,
                "spec",
                'Invalid value: "object": no such key: missing evaluating rule: '
                "!has(self.mode) || self.mode != 'oops' || self.missing == 1",
            )
        ],
        "validation.go (\"%v evaluating rule: %v\"); validation_test.go 'no such key'",
    ),
    "list item rule": (
        {"tags": ["ok", "NotOk", "fine"]},
        "w-tags",
        [
            (
                _INVALID,
                "spec.tags[1]",
                'Invalid value: "string": failed rule: self.lowerAscii() == self',
            )
        ],
        "validation.go validateArray (fldPath.Index)",
    ),
    "map value rule, int-or-string": (
        {"limits": {"cpu": "50%", "mem": "half", "pods": -1, "jobs": 3}},
        "w-limits",
        [
            (_INVALID, "spec.limits[mem]", 'Invalid value: "": a limit is a percentage or a count'),
            (
                _INVALID,
                "spec.limits[pods]",
                'Invalid value: "": a limit is a percentage or a count',
            ),
        ],
        "validation.go validateMap (fldPath.Key); docs (type(self) == string ? ...)",
    ),
    "root rule sees metadata.name": (
        {"prefix": "web-"},
        "db-1",
        [(_INVALID, "<nil>", 'Invalid value: "object": the name must start with spec.prefix')],
        "docs (self.metadata.name.startsWith(self.prefix)); strategy.go (root path nil)",
    ),
    "optionalOldSelf on create": (
        {"size": 500},
        "w-size",
        [(_INVALID, "spec.size", 'Invalid value: "integer": a new size is at most 100')],
        "validation.go (optionalOldSelf: oldSelf is optional.none() on create)",
    ),
    "transition rule skipped on create": (
        {"name": "first"},
        "w-name",
        [],
        "validation.go (UsesOldSelf and no old value: skipped)",
    ),
    "rules that do not compile are skipped": (
        {"replicas": 5},
        "w-skip",
        [],
        "a real server refuses such a CRD (rule compile error); serve skips the rule",
    ),
    "a blocking schema error stops the rules": (
        {"replicas": 99, "kind": "medium"},
        "w-block",
        [
            (
                "FieldValueNotSupported",
                "spec.kind",
                'Unsupported value: "medium": supported values: "small", "large"',
            ),
            (
                _INVALID,
                "<nil>",
                'Invalid value: "null": some validation rules were not checked because the '
                "object was invalid; correct the existing errors to complete validation",
            ),
        ],
        "strategy.go hasBlockingErr",
    ),
}


@pytest.mark.parametrize("case", list(CREATES), ids=list(CREATES))
def test_create(server: KubeAPIServer, case: str) -> None:
    spec, name, expected, _source = CREATES[case]
    body = widget(name, **spec)
    status, answer = _create(server, body)
    if not expected:
        assert status == 201, answer
        return
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    assert sorted(_causes(answer)) == sorted(expected)
    shown = [f"{field}: {message}" for _, field, message in expected]
    assert answer["message"].startswith(f'Widget.{GROUP} "{name}" is invalid: ')
    for text in shown:
        assert text in answer["message"]


def test_transition_rules_on_update(server: KubeAPIServer) -> None:
    """Immutability (docs: ``self == oldSelf``, "Value is immutable"); optionalOldSelf
    with an old value; oldSelf of a map-list item found by its key (validation.go
    validateArray, makeMapList)."""
    body = widget("w-update", name="first", size=10, ports=[{"name": "http", "port": 80}])
    status, _, answer = send(server, "POST", PATH, json.dumps(body))
    assert status == 201, answer
    status, _, answer = _patch(server, "w-update", {"spec": {"name": "second"}})
    assert status == 422
    assert _causes(answer) == [
        (_INVALID, "spec.name", 'Invalid value: "string": Value is immutable')
    ]
    status, _, answer = _patch(server, "w-update", {"spec": {"size": 5}})
    assert _causes(answer) == [
        (_INVALID, "spec.size", 'Invalid value: "integer": size may only grow')
    ]
    # (an old size exists: "a new size is at most 100" does not apply)
    status, _, answer = _patch(server, "w-update", {"spec": {"size": 500}})
    assert status == 200, answer
    ports = [{"name": "admin", "port": 9000}, {"name": "http", "port": 81}]
    status, _, answer = _patch(server, "w-update", {"spec": {"ports": ports}})
    assert status == 422
    assert _causes(answer) == [
        (_INVALID, "spec.ports[1].port", 'Invalid value: "integer": port is immutable')
    ]
    ports = [{"name": "admin", "port": 9000}, {"name": "http", "port": 80}]
    status, _, answer = _patch(server, "w-update", {"spec": {"ports": ports}})
    assert status == 200, answer


def test_unchanged_values_are_ratcheted(server: KubeAPIServer) -> None:
    """Ratcheting (validation.go: a rule without oldSelf that fails on a value equal to
    the stored one is only warned about, ``warning.AddWarning(ctx, "", e.Error())``;
    validation_test.go TestRatcheting's ``warnings``): a widget stored breaking a rule (as after
    the CRD added it) can still be updated elsewhere; a change to the failing value is
    refused."""
    loaded = widget("w-ratchet", tags=["Upper"], replicas=20)
    loaded["metadata"]["namespace"] = NS
    loaded["spec"].update(minReplicas=0, maxReplicas=10)

    async def load() -> None:
        server.store.load_objects([copy.deepcopy(loaded)])

    server.call(load)
    status, _, answer = _patch(server, "w-ratchet", {"spec": {"owner": "me"}})
    # (spec changed, so its rules are not ratcheted: replicas <= maxReplicas fails)
    assert status == 422
    assert _causes(answer) == [
        (
            _INVALID,
            "spec",
            'Invalid value: "object": failed rule: self.replicas <= self.maxReplicas',
        )
    ]
    status, warnings, answer = _patch(server, "w-ratchet", {"spec": {"owner": "me", "replicas": 5}})
    assert status == 200, answer  # (tags[0] "Upper" unchanged: ratcheted, and warned about)
    assert warnings == [
        'spec.tags[0]: Invalid value: "string": failed rule: self.lowerAscii() == self'
    ]
    # (items of a list that is not a map list are not matched to stored ones: once the
    # list changes, the stored "Upper" is reported too; apiserver v0.30.0
    # pkg/cel/common/equality.go correlateOldValueForChildAtNewIndex)
    status, _, answer = _patch(server, "w-ratchet", {"spec": {"tags": ["Upper", "Lower"]}})
    assert status == 422
    message = 'Invalid value: "string": failed rule: self.lowerAscii() == self'
    assert _causes(answer) == [(_INVALID, f"spec.tags[{i}]", message) for i in (0, 1)]
