"""Ingress, IngressClass and NetworkPolicy spec rules as kube-apiserver checks them
(``_networking_validation``), replayed from a real server.

tests/data/real-apiserver-1.20/networking-validation.json holds what a real
kube-apiserver 1.20.2 answered (tools/record_networking_validation.py): creates with
``dryRun=All`` of invalid (and some valid) networking.k8s.io/v1 objects, and
merge-patch updates with ``dryRun=All`` of stored ones (an Ingress's status too,
through ``/status``). Each is sent to serve's facade
and the answer compared: the status, and for a refusal its reason, message and
causes, in order.

Where kube-apiserver 1.30 answers otherwise, serve follows 1.30: those cases are in
:data:`DIFFERENCES` with the 1.30 answer and where it was learnt. One difference
applies to every port name and is made by rewriting the recorded answer instead
(:func:`_port_names_1_30`): apimachinery's IsValidPortName in 1.20 said "must contain
at least one letter or number (a-z, 0-9)" where 1.30 says "must contain at least one
letter (a-z)" (and 1.30 checks for a letter, so "8080" is refused for it too).

Kept as recorded, as 1.30 does: an Ingress's and a NetworkPolicy's refusals are
qualified ``Ingress.extensions`` / ``NetworkPolicy.extensions`` (the internal types
are registered first in the ``extensions`` group: kubernetes pkg/apis/extensions/
register.go, which still lists networking.Ingress and networking.NetworkPolicy after
1.25; a 1.26.3 server's "Ingress.extensions ... is invalid" is quoted in
kochetkov-ma/allure-server#79); an updated NetworkPolicy's causes come twice (its
strategy validates the spec for the object and again for the update; the message
names each once).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (
        Path(__file__).parent.parent / "data/real-apiserver-1.20/networking-validation.json"
    ).read_text()
)
NS = RECORDED["namespace"]
PATHS = {
    "ingresses": f"/apis/networking.k8s.io/v1/namespaces/{NS}/ingresses",
    "ingressclasses": "/apis/networking.k8s.io/v1/ingressclasses",
    "networkpolicies": f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies",
}
KINDS = {
    "ingresses": ("Ingress", "extensions"),
    "ingressclasses": ("IngressClass", "networking.k8s.io"),
    "networkpolicies": ("NetworkPolicy", "extensions"),
}

_NETWORKING = "kubernetes pkg/apis/networking/validation/validation.go"
_END_PORT = (
    f"{_NETWORKING} ValidateNetworkPolicyPort: endPort came in 1.21 (alpha), GA in 1.25 "
    "(KEP-2079, kubernetes PR #97058); 1.20 drops the field it does not know"
)
_SCOPE = (
    f"{_NETWORKING} validateIngressClassParametersReference: parameters.scope and "
    "namespace came in 1.21 (IngressClassNamespacedParams, GA 1.23); 1.20 drops them"
)
_CLASS_ANNOTATION = (
    f"{_NETWORKING} ValidateIngressCreate, kubernetes PR #115447 (1.27): the annotation "
    "and ingressClassName may both be set when they are equal (a warning)"
)
_LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or "
    "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_ENDPORT_AT = "spec.egress[0].ports[0].endPort"
#: (kind, op, case) -> (1.30's errors after "is invalid: ", or None for a success; source)
DIFFERENCES: dict[tuple[str, str, str], tuple[list[str] | None, str]] = {
    ("networkpolicies", "create", "endPort below port"): (
        [f"{_ENDPORT_AT}: Invalid value: 32000: must be greater than or equal to `port`"],
        _END_PORT,
    ),
    ("networkpolicies", "create", "endPort 70000"): (
        [f"{_ENDPORT_AT}: Invalid value: 70000: must be between 1 and 65535, inclusive"],
        _END_PORT,
    ),
    ("networkpolicies", "create", "endPort with named port"): (
        [f"{_ENDPORT_AT}: Invalid value: 90: may not be specified when `port` is non-numeric"],
        _END_PORT,
    ),
    ("networkpolicies", "create", "endPort without port"): (
        [f"{_ENDPORT_AT}: Invalid value: 90: may not be specified when `port` is not specified"],
        _END_PORT,
    ),
    ("ingressclasses", "create", "parameters scope bogus"): (
        [
            'spec.parameters.scope: Unsupported value: "Bogus": supported values: "Cluster", '
            '"Namespace"'
        ],
        _SCOPE,
    ),
    ("ingressclasses", "create", "parameters scope Namespace without namespace"): (
        ["spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"],
        _SCOPE,
    ),
    ("ingressclasses", "create", "parameters scope Namespace bad namespace"): (
        [f'spec.parameters.namespace: Invalid value: "Bad_NS": {_LABEL_RULE}'],
        _SCOPE,
    ),
    ("ingressclasses", "create", "parameters scope Cluster with namespace"): (
        ["spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"],
        _SCOPE,
    ),
    ("ingresses", "create", "class annotation with ingressClassName"): (None, _CLASS_ANNOTATION),
    ("ingresses", "create", "class annotation other than ingressClassName"): (
        [
            'annotations.kubernetes.io/ingress.class: Invalid value: "nginx": must match '
            "`ingressClassName` when both are specified"
        ],
        _CLASS_ANNOTATION,
    ),
}

_LABELS = {
    "FieldValueInvalid": "Invalid value",
    "FieldValueRequired": "Required value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueTooLong": "Too long",
}
_REASONS = {label: reason for reason, label in _LABELS.items()}
_PORT_NAME_1_20 = "must contain at least one letter or number (a-z, 0-9)"
_PORT_NAME_1_30 = "must contain at least one letter (a-z)"


def expand(value: Any) -> Any:
    """The recorder's shorthand: ``@repeat:c:n`` (after a prefix) for c repeated n times."""
    if isinstance(value, dict):
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    if isinstance(value, str) and "@repeat:" in value:
        head, _, spec = value.partition("@repeat:")
        char, count = spec.split(":")
        return head + char * int(count)
    return value


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        for kind, body in RECORDED["objects"].items():
            status, _, answer = send(running, "POST", PATHS[kind], json.dumps(expand(body)))
            assert status == 201, answer
        yield running


def _cause(error: str) -> dict[str, str]:
    field, _, body = error.partition(": ")
    label = body.partition(": ")[0]
    return {"reason": _REASONS[label], "message": body, "field": field}


def _expected_1_30(exchange: dict[str, Any], errors: list[str] | None) -> dict[str, Any]:
    if errors is None:
        return {"status": 201 if exchange["op"] == "create" else 200}  # (an update's: 200)
    kind, group = KINDS[exchange["kind"]]
    name = exchange.get("name", f"netval-{exchange['kind']}-new")
    listed = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return {
        "status": 422,
        "reason": "Invalid",
        "message": f'{kind}.{group} "{name}" is invalid: {listed}',
        "details": {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [_cause(e) for e in errors],
        },
    }


def _port_names_1_30(answer: dict[str, Any]) -> dict[str, Any]:
    """A recorded refusal with 1.20's IsValidPortName words in 1.30's."""
    text = json.dumps(answer)
    if _PORT_NAME_1_20 not in text:
        return answer
    fixed: dict[str, Any] = json.loads(text.replace(_PORT_NAME_1_20, _PORT_NAME_1_30))
    return fixed


def _essentials(status: int, body: dict[str, Any]) -> dict[str, Any]:
    if status in (200, 201):
        return {"status": status}
    return {
        "status": status,
        "reason": body.get("reason"),
        "message": body.get("message"),
        "details": body.get("details"),
    }


def _id(exchange: dict[str, Any]) -> str:
    return f"{exchange['kind']}-{exchange['op']}-{exchange['case']}"


@pytest.mark.parametrize("exchange", RECORDED["exchanges"], ids=_id)
def test_networking_rules_as_recorded(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    kind = exchange["kind"]
    if exchange["op"] == "create":
        body = copy.deepcopy(exchange["body"])
        status, _, answer = send(
            server, "POST", PATHS[kind] + "?dryRun=All", json.dumps(expand(body))
        )
    else:
        status_path = "/status" if exchange["op"] == "status" else ""
        status, _, answer = send(
            server,
            "PATCH",
            f"{PATHS[kind]}/{exchange['name']}{status_path}?dryRun=All",
            json.dumps(expand(exchange["patch"])),
            "application/merge-patch+json",
        )
    difference = DIFFERENCES.get((kind, exchange["op"], exchange["case"]))
    if difference is not None:
        expected = _expected_1_30(exchange, difference[0])
    else:
        recorded = _port_names_1_30(exchange["answer"])
        expected = _essentials(recorded["status"], recorded)
    assert _essentials(status, answer) == expected


def test_every_difference_is_a_recorded_case() -> None:
    recorded = {(e["kind"], e["op"], e["case"]) for e in RECORDED["exchanges"]}
    assert set(DIFFERENCES) <= recorded


def _loaded_ingress(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "netval-loaded", "namespace": NS},
        "spec": spec,
    }


_BAD_SECRET = {
    "rules": [{"host": "a.example.com"}],
    "tls": [{"hosts": ["a.example.com"], "secretName": "Bad_Secret"}],
}
_BAD_WILDCARD_RULE = {
    "rules": [
        {
            "host": "*.example.com",
            "http": {"paths": [{"path": "api", "pathType": "Prefix", "backend": {}}]},
        }
    ]
}


@pytest.mark.parametrize("spec", [_BAD_SECRET, _BAD_WILDCARD_RULE], ids=["secret", "wildcard"])
def test_an_ingress_stored_with_what_1_30_lets_stay_can_be_updated(spec: dict[str, Any]) -> None:
    """An Ingress stored before its TLS secret names or its wildcard rules were checked
    (loaded here) keeps them through an update (1.30 ValidateIngressUpdate's
    allowInvalidSecretName / allowInvalidWildcardHostRule); a new one is refused."""
    store = InMemoryStore()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    store.load_objects([namespace, _loaded_ingress(spec)])
    with run_in_thread(store) as running:
        path = PATHS["ingresses"]
        patch = {"metadata": {"labels": {"touched": "yes"}}, "spec": {"ingressClassName": "x"}}
        status, _, answer = send(
            running,
            "PATCH",
            f"{path}/netval-loaded",
            json.dumps(patch),
            "application/merge-patch+json",
        )
        assert status == 200, answer
        fresh = _loaded_ingress(spec)
        fresh["metadata"]["name"] = "netval-fresh"
        status, _, answer = send(running, "POST", path, json.dumps(fresh))
        assert status == 422, answer


def test_a_network_policy_with_bad_selector_values_stored_can_be_updated() -> None:
    """A NetworkPolicy whose stored pod selector has an expression value that is no label
    value (stored before 1.27 checked them) may be updated with such values (1.30
    ValidationOptionsForNetworking); a new one may not."""
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "netval-loaded", "namespace": NS},
        "spec": {
            "podSelector": {
                "matchExpressions": [{"key": "app", "operator": "In", "values": ["a b"]}]
            }
        },
    }
    store = InMemoryStore()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    store.load_objects([namespace, copy.deepcopy(policy)])
    with run_in_thread(store) as running:
        path = PATHS["networkpolicies"]
        patch = {"spec": {"policyTypes": ["Ingress", "Egress"]}}
        status, _, answer = send(
            running,
            "PATCH",
            f"{path}/netval-loaded",
            json.dumps(patch),
            "application/merge-patch+json",
        )
        assert status == 200, answer
        policy["metadata"]["name"] = "netval-fresh"
        status, _, answer = send(running, "POST", path, json.dumps(policy))
        assert status == 422, answer
        assert answer["details"]["causes"][0]["field"] == (
            "spec.podSelector.matchExpressions[0].values[0]"
        )


def test_a_loaded_invalid_object_keeps_its_metadata_writable() -> None:
    """``serve --load`` does not validate; an update that leaves the spec as stored (a
    label, the garbage collector's owner references) is not refused for the spec."""
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "netval-loaded", "namespace": NS},
        "spec": {"podSelector": {}, "policyTypes": ["Sideways"]},
    }
    store = InMemoryStore()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    store.load_objects([namespace, policy])
    with run_in_thread(store) as running:
        where = f"{PATHS['networkpolicies']}/netval-loaded"
        label = {"metadata": {"labels": {"touched": "yes"}}}
        merge = "application/merge-patch+json"
        status, _, answer = send(running, "PATCH", where, json.dumps(label), merge)
        assert status == 200, answer
        spec = {"spec": {"policyTypes": ["Sideways", "Egress"]}}
        status, _, answer = send(running, "PATCH", where, json.dumps(spec), merge)
        assert status == 422, answer
