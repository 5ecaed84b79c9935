"""Custom resources checked and defaulted by their CRD's structural schema, replayed from
a real kube-apiserver.

tests/data/real-apiserver-1.20/cr-schema.json (tools/record_cr_schema.py) holds what a
real kube-apiserver 1.20 answered to custom resources breaking each OpenAPI v3 rule a
structural schema may carry (and a few valid ones), created with ``?dryRun=All`` and
merge-patched; cr-defaults.json (tools/record_cr_defaults.py) what it made of bodies
with fields left out or null under a schema with defaults. Each request is sent to
serve's facade and the answer compared: the status, and for a refusal its causes (as a
multiset: Go visits an object's properties in an order that changes per request), for
a success the object's content.

Where kube-apiserver 1.30 answers otherwise, serve follows 1.30:

* kube-openapi names a list item by its index since December 2021
  (kubernetes/kube-openapi 4c65bda, "Use JSONPath syntax for path indices"): 1.20 says
  ``spec.ports.name``, 1.30 ``spec.ports[0].name``; and 1.20 reported one error per list
  where 1.30 reports one per item. Those cases are in ``DIFFERENCES``.
* apiextensions-apiserver turns some of kube-openapi's errors into field errors of
  their own kind since 1.24 (kubernetes/kubernetes 899817b05;
  ``kubeOpenAPIResultToFieldErrors`` in v0.30.0 pkg/apiserver/validation/validation.go),
  and kube-openapi reports an object's property count where 1.20 reported the limit
  (``TooFewProperties`` / ``TooManyProperties``, kube-openapi 70dd3763 errors/schema.go).
  :func:`as_1_30` rewrites a recorded cause by those rules.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

DATA = Path(__file__).parent.parent / "data/real-apiserver-1.20"
SCHEMA = json.loads((DATA / "cr-schema.json").read_text())
DEFAULTS = json.loads((DATA / "cr-defaults.json").read_text())
NS = SCHEMA["namespace"]
_PATH_INDICES = "kubernetes/kube-openapi 4c65bda (JSONPath syntax for path indices)"


def _cause(reason: str, field: str, message: str) -> dict[str, str]:
    return {"reason": reason, "field": field, "message": message}


#: case -> (1.30's causes, where it was learnt)
DIFFERENCES: dict[str, tuple[list[dict[str, str]], str]] = {
    "map list item without key": (
        [_cause("FieldValueRequired", "spec.ports[0].name", "Required value")],
        _PATH_INDICES,
    ),
    "map list item below minimum": (
        [
            _cause(
                "FieldValueInvalid",
                "spec.ports[0].port",
                "Invalid value: 0: spec.ports[0].port in body should be greater than or equal to 1",
            )
        ],
        _PATH_INDICES,
    ),
    "nested array item": (
        [
            _cause(
                "FieldValueInvalid",
                "spec.matrix[0][1]",
                "Invalid value: 10: spec.matrix[0][1] in body should be less than or equal to 9",
            ),
            _cause(
                "FieldValueInvalid",
                "spec.matrix[1][1]",
                "Invalid value: 11: spec.matrix[1][1] in body should be less than or equal to 9",
            ),
        ],
        _PATH_INDICES,
    ),
    "nested array type": (
        [
            _cause(
                "FieldValueTypeInvalid",
                "spec.matrix[0][1]",
                'Invalid value: "string": spec.matrix[0][1] in body must be of type integer: '
                '"string"',
            )
        ],
        _PATH_INDICES,
    ),
}


def _at(body: Any, field: str) -> Any:
    value = body
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def as_1_30(cause: dict[str, str], body: dict[str, Any]) -> dict[str, str]:
    """A cause a 1.20 server gave, as 1.30 gives it (the module's rules)."""
    reason, field, message = cause["reason"], cause["field"], cause["message"]
    longest = re.fullmatch(
        r"Invalid value: .*: \S+ in body should be at most (\d+) chars long", message
    )
    if longest:
        return _cause("FieldValueTooLong", field, f"Too long: may not be longer than {longest[1]}")
    most_items = re.fullmatch(
        r"Invalid value: (\d+): \S+ in body should have at most (\d+) items", message
    )
    if most_items:
        return _cause(
            "FieldValueTooMany",
            field,
            f"Too many: {most_items[1]}: must have at most {most_items[2]} items",
        )
    most = re.fullmatch(
        r"Invalid value: \d+: \S+ in body should have at most (\d+) properties", message
    )
    if most:
        count = len(_at(body, field))
        return _cause(
            "FieldValueTooMany", field, f"Too many: {count}: must have at most {most[1]} items"
        )
    fewest = re.fullmatch(
        r"Invalid value: \d+: (\S+ in body should have at least \d+ properties)", message
    )
    if fewest:
        count = len(_at(body, field))
        return _cause(reason, field, f"Invalid value: {count}: {fewest[1]}")
    if " in body must be of type " in message:
        return _cause("FieldValueTypeInvalid", field, message)
    return cause


def _sorted(causes: list[dict[str, str]]) -> list[tuple[str, str, str]]:
    return sorted((c["field"], c["reason"], c["message"]) for c in causes)


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        for recorded in (SCHEMA, DEFAULTS):
            status, _, answer = send(
                running,
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                json.dumps(recorded["crd"]),
            )
            assert status == 201, answer
            path = _path(recorded)
            status, _, answer = send(running, "POST", path, json.dumps(recorded["stored"]))
            assert status == 201, answer
        yield running


def _path(recorded: dict[str, Any]) -> str:
    spec = recorded["crd"]["spec"]
    return f"/apis/{spec['group']}/v1/namespaces/{NS}/{spec['names']['plural']}"


def _send(
    server: KubeAPIServer, recorded: dict[str, Any], exchange: dict[str, Any]
) -> tuple[int, Any]:
    path = _path(recorded)
    if exchange["op"] == "create":
        status, _, answer = send(server, "POST", path + "?dryRun=All", json.dumps(exchange["body"]))
    else:
        status, _, answer = send(
            server,
            "PATCH",
            f"{path}/{recorded['stored']['metadata']['name']}?dryRun=All",
            json.dumps(exchange["body"]),
            "application/merge-patch+json",
        )
    return status, answer


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")}


def _patched_body(recorded: dict[str, Any], exchange: dict[str, Any]) -> dict[str, Any]:
    """The object a merge patch of the stored one asks for (for the counts of as_1_30)."""
    body = copy.deepcopy(recorded["stored"])
    for key, value in exchange["body"].get("spec", {}).items():
        body["spec"][key] = value
    return body


@pytest.mark.parametrize("exchange", SCHEMA["exchanges"], ids=lambda e: e["case"])
def test_schema_rules_as_recorded(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    status, answer = _send(server, SCHEMA, exchange)
    assert status == exchange["status"], answer
    recorded = exchange["answer"]
    if status >= 400:
        assert answer["reason"] == recorded["reason"] == "Invalid"
        body = exchange["body"] if exchange["op"] == "create" else _patched_body(SCHEMA, exchange)
        if exchange["case"] in DIFFERENCES:
            expected = DIFFERENCES[exchange["case"]][0]
        else:
            expected = [as_1_30(c, body) for c in recorded["details"]["causes"]]
        assert _sorted(answer["details"]["causes"]) == _sorted(expected)
        for cause in expected:  # the message lists each cause
            assert f"{cause['field']}: {cause['message']}" in answer["message"]
    else:
        assert _content(answer) == _content(recorded)


@pytest.mark.parametrize("exchange", DEFAULTS["exchanges"], ids=lambda e: e["case"])
def test_defaults_as_recorded(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    status, answer = _send(server, DEFAULTS, exchange)
    assert status == exchange["status"], answer
    recorded = exchange["answer"]
    if status >= 400:
        expected = DIFFERENCES_DEFAULTS.get(exchange["case"]) or [
            as_1_30(c, exchange["body"]) for c in recorded["details"]["causes"]
        ]
        assert _sorted(answer["details"]["causes"]) == _sorted(expected)
    else:
        assert _content(answer) == _content(recorded)


#: The defaults recording's cases where 1.30 answers otherwise (list item paths).
DIFFERENCES_DEFAULTS: dict[str, list[dict[str, str]]] = {
    "list item null": [
        _cause(
            "FieldValueTypeInvalid",
            "spec.ports[0]",
            'Invalid value: "null": spec.ports[0] in body must be of type object: "null"',
        )
    ],
}


def test_an_object_stored_with_a_bad_value_stays_writable(server: KubeAPIServer) -> None:
    """Ratcheting (1.30's CRDValidationRatcheting, on by default): an update is refused
    only for what it changes. A gadget loaded with a value its schema refuses (as after
    the CRD tightened its schema) can still be updated elsewhere; changing the bad value
    to another bad value is refused."""
    path = _path(SCHEMA)
    loaded = copy.deepcopy(SCHEMA["stored"])
    loaded["metadata"] = {"name": "ratchet", "namespace": NS}
    loaded["spec"]["replicas"] = 50  # above the maximum of 10

    async def load() -> None:
        server.store.load_objects([loaded])

    server.call(load)
    patch = {"spec": {"size": "large"}}
    status, _, answer = send(
        server, "PATCH", f"{path}/ratchet", json.dumps(patch), "application/merge-patch+json"
    )
    assert status == 200, answer
    assert answer["spec"]["replicas"] == 50 and answer["spec"]["size"] == "large"
    patch = {"spec": {"replicas": 60}}
    status, _, answer = send(
        server, "PATCH", f"{path}/ratchet", json.dumps(patch), "application/merge-patch+json"
    )
    assert status == 422, answer
    assert [c["field"] for c in answer["details"]["causes"]] == ["spec.replicas"]


def test_every_difference_is_a_recorded_case() -> None:
    assert set(DIFFERENCES) <= {e["case"] for e in SCHEMA["exchanges"]}
    assert set(DIFFERENCES_DEFAULTS) <= {e["case"] for e in DEFAULTS["exchanges"]}
