"""Role, ClusterRole, RoleBinding and ClusterRoleBinding rules as kube-apiserver checks
them (``_rbac_validation``), replayed from a real server.

tests/data/real-apiserver-1.20/rbac-validation.json holds what a real kube-apiserver
1.20 answered (tools/record_rbac_validation.py): creates with ``dryRun=All`` of invalid
(and some valid) objects, and merge-patch updates with ``dryRun=All`` of stored ones.
Each is sent to serve's facade and the answer compared: the status, and for a refusal
its reason, message and causes.

Where kube-apiserver 1.30 answers otherwise, serve follows 1.30: those cases are in
``DIFFERENCES`` with the 1.30 answer and where it was learnt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.facade_helpers import answer_essentials, expected_answer, replay_dry_run
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/rbac-validation.json").read_text()
)
NS = RECORDED["namespace"]
_GROUP = "rbac.authorization.k8s.io"
_BASE = f"/apis/{_GROUP}/v1"
PATHS = {
    "roles": f"{_BASE}/namespaces/{NS}/roles",
    "clusterroles": f"{_BASE}/clusterroles",
    "rolebindings": f"{_BASE}/namespaces/{NS}/rolebindings",
    "clusterrolebindings": f"{_BASE}/clusterrolebindings",
}
KINDS = {
    "roles": "Role",
    "clusterroles": "ClusterRole",
    "rolebindings": "RoleBinding",
    "clusterrolebindings": "ClusterRoleBinding",
}

_LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', "
    "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
    "or 'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
#: (kind, op, case) -> (1.30's errors after "is invalid: ", or None for a success; source)
DIFFERENCES: dict[tuple[str, str, str], tuple[list[str] | None, str]] = {
    # 1.26+ checks an expression's values are label values (1.20 only failed to make a
    # selector of it).
    ("clusterroles", "create", "aggregationRule expression value invalid"): (
        [
            "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]: "
            f'Invalid value: "x y": {_LABEL_VALUE}',
            'aggregationRule.clusterRoleSelectors[0]: Invalid value: "null": '
            "invalid label selector.",
        ],
        "kubernetes/kubernetes#113699 (apimachinery pkg/apis/meta/v1/validation "
        "ValidateLabelSelectorRequirement; pkg/apis/rbac/validation ValidateClusterRole)",
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        for kind, named in RECORDED["objects"].items():
            for body in named.values():
                status, _, answer = send(running, "POST", PATHS[kind], json.dumps(body))
                assert status == 201, answer
        yield running


def _id(exchange: dict[str, Any]) -> str:
    return f"{exchange['kind']}-{exchange['op']}-{exchange.get('name', '')}-{exchange['case']}"


@pytest.mark.parametrize("exchange", RECORDED["exchanges"], ids=_id)
def test_rbac_rules_as_recorded(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    kind = exchange["kind"]
    status, answer = replay_dry_run(server, PATHS[kind], exchange)
    difference = DIFFERENCES.get((kind, exchange["op"], exchange["case"]), (False, ""))
    name = exchange.get("name") or exchange["body"]["metadata"]["name"]
    expected = expected_answer(exchange, difference[0], KINDS[kind], name, _GROUP)
    got = answer_essentials(status, answer)
    if exchange["op"] == "update" and any(
        c["field"].startswith("metadata.") for c in expected.get("details", {}).get("causes", [])
    ):
        # A real server repeats an update's metadata errors (three to five times: the
        # generic checks, then the strategy's); serve lists them once, as for every kind
        # (test_labels_annotations_real): the message and the distinct causes compared.
        expected, got = _distinct_causes(expected), _distinct_causes(got)
    assert got == expected


def _distinct_causes(answer: dict[str, Any]) -> dict[str, Any]:
    details = dict(answer.get("details") or {})
    details["causes"] = frozenset(json.dumps(c, sort_keys=True) for c in details["causes"])
    return {**answer, "details": details}


def test_every_difference_is_a_recorded_case() -> None:
    recorded = {(e["kind"], e["op"], e["case"]) for e in RECORDED["exchanges"]}
    assert set(DIFFERENCES) <= recorded


def test_a_loaded_binding_that_breaks_the_rules_stays_writable() -> None:
    """``serve --load`` does not validate; an update that leaves roleRef and subjects as
    loaded (a label added) is not refused for them."""
    store = InMemoryStore()
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "loaded"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "x"},
        "subjects": [{"kind": "ServiceAccount", "name": "default"}],
    }
    store.load_objects([binding])
    with run_in_thread(store) as running:
        status, _, answer = send(
            running,
            "PATCH",
            f"{PATHS['clusterrolebindings']}/loaded",
            json.dumps({"metadata": {"labels": {"a": "b"}}}),
            "application/merge-patch+json",
        )
        assert status == 200, answer
        status, _, answer = send(
            running,
            "PATCH",
            f"{PATHS['clusterrolebindings']}/loaded",
            json.dumps({"subjects": [{"kind": "User", "name": "u"}]}),
            "application/merge-patch+json",
        )
        assert status == 422
        assert answer["details"]["causes"][0]["field"] == "roleRef.kind"


def test_a_stored_bad_selector_value_is_not_reported_again_on_update() -> None:
    """1.30 lets an update keep expression values a stored ClusterRole already had that
    are no label values (no ``values[i]`` error; kubernetes/kubernetes#113699), though
    such a selector still fails to convert ("invalid label selector.")."""
    store = InMemoryStore()
    selector = {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x y"]}]}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "loaded"},
        "aggregationRule": {"clusterRoleSelectors": [selector]},
    }
    store.load_objects([role])
    with run_in_thread(store) as running:
        status, _, answer = send(
            running,
            "PATCH",
            f"{PATHS['clusterroles']}/loaded",
            json.dumps({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            "application/merge-patch+json",
        )
    assert status == 422
    assert [c["field"] for c in answer["details"]["causes"]] == [
        "aggregationRule.clusterRoleSelectors[0]",
        "aggregationRule.clusterRoleSelectors[0]",
    ]
