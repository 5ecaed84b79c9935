"""Service, ConfigMap, Secret and Endpoints spec rules as kube-apiserver checks them
(``_core_validation``), replayed from a real server.

tests/data/real-apiserver-1.20/core-validation.json holds what a real
kube-apiserver 1.20 answered (tools/record_core_validation.py): creates with
``dryRun=All`` of invalid (and a few valid) objects, and merge-patch updates with
``dryRun=All`` of stored ones. Each is sent to serve's facade and the answer
compared: the status, and for a refusal its reason, message and causes.

Where kube-apiserver 1.30 answers otherwise, serve follows 1.30: those cases are
in ``DIFFERENCES`` with the 1.30 answer and where it was learnt.
"""

from __future__ import annotations

import base64
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
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/core-validation.json").read_text()
)
NS = RECORDED["namespace"]
KINDS = {
    "services": "Service",
    "configmaps": "ConfigMap",
    "secrets": "Secret",
    "endpoints": "Endpoints",
}
PATHS = {
    "services": f"/api/v1/namespaces/{NS}/services",
    "configmaps": f"/api/v1/namespaces/{NS}/configmaps",
    "secrets": f"/api/v1/namespaces/{NS}/secrets",
    "endpoints": f"/api/v1/namespaces/{NS}/endpoints",
}

_VALIDATION_GO = "kubernetes/kubernetes pkg/apis/core/validation/validation.go"
_ETP = "validateServiceExternalTrafficPolicy (1.26+)"
#: (kind, op, case) -> (1.30's errors after "is invalid: ", or None for a success; source)
DIFFERENCES: dict[tuple[str, str, str], tuple[list[str] | None, str]] = {
    ("services", "create", "targetPort name digits"): (
        ['spec.ports[0].targetPort: Invalid value: "8080": must contain at least one letter (a-z)'],
        "apimachinery v0.30.0 pkg/util/validation/validation.go IsValidPortName",
    ),
    ("services", "create", "port name with dots"): (
        ['spec.ports[0].name: Invalid value: "a.b": must not contain dots'],
        "apimachinery v0.30.0 pkg/util/validation/validation.go IsDNS1123Label",
    ),
    ("services", "create", "externalTrafficPolicy bogus"): (
        [
            'spec.externalTrafficPolicy: Unsupported value: "Bogus": supported values: '
            '"Cluster", "Local"'
        ],
        f"{_VALIDATION_GO} {_ETP}",
    ),
    ("services", "update", "externalTrafficPolicy bogus"): (
        [
            'spec.externalTrafficPolicy: Unsupported value: "Bogus": supported values: '
            '"Cluster", "Local"'
        ],
        f"{_VALIDATION_GO} {_ETP}",
    ),
    ("services", "create", "externalTrafficPolicy on ClusterIP"): (
        [
            'spec.externalTrafficPolicy: Invalid value: "Local": may only be set for '
            "externally-accessible services"
        ],
        f"{_VALIDATION_GO} {_ETP}",
    ),
    ("services", "create", "healthCheckNodePort on NodePort"): (
        [
            "spec.healthCheckNodePort: Invalid value: 30999: may only be set when `type` is "
            "'LoadBalancer' and `externalTrafficPolicy` is 'Local'"
        ],
        f"{_VALIDATION_GO} {_ETP}",
    ),
    # 1.20 has no internalTrafficPolicy (1.21 alpha, GA 1.26) and keeps the dual-stack
    # fields behind its off IPv6DualStack gate (GA 1.23): it drops them and creates.
    ("services", "create", "internalTrafficPolicy bogus"): (
        [
            'spec.internalTrafficPolicy: Unsupported value: "Bogus": supported values: '
            '"Cluster", "Local"'
        ],
        f"{_VALIDATION_GO} validateServiceInternalTrafficFieldsValue",
    ),
    ("services", "create", "ipFamilyPolicy bogus"): (
        [
            'spec.ipFamilyPolicy: Unsupported value: "Bogus": supported values: '
            '"PreferDualStack", "RequireDualStack", "SingleStack"'
        ],
        f"{_VALIDATION_GO} ValidateServiceClusterIPsRelatedFields",
    ),
    ("services", "create", "ipFamilies bogus"): (
        ['spec.ipFamilies[0]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6"'],
        f"{_VALIDATION_GO} ValidateServiceClusterIPsRelatedFields",
    ),
    # (1.20: behind the off ServiceLBNodePortControl gate, dropped; GA 1.24)
    ("services", "create", "allocateLoadBalancerNodePorts on ClusterIP"): (
        [
            "spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` "
            "is 'LoadBalancer'"
        ],
        f"{_VALIDATION_GO} ValidateService",
    ),
    # 1.20 does not allocate on a dry run; 1.30 does (with a dry-run allocator) and so
    # refuses a node port outside the range (the words of serve's allocator, _service_ips).
    ("services", "create", "nodePort below range"): (
        [
            "spec.ports[0].nodePort: Invalid value: 29999: provided port is not in the valid "
            "range. The range of valid ports is 30000-32767"
        ],
        "kubernetes/kubernetes pkg/registry/core/service/storage/alloc.go (dryRun allocators)",
    ),
    ("services", "create", "nodePort above range"): (
        [
            "spec.ports[0].nodePort: Invalid value: 70000: provided port is not in the valid "
            "range. The range of valid ports is 30000-32767"
        ],
        "kubernetes/kubernetes pkg/registry/core/service/storage/alloc.go (dryRun allocators)",
    ),
    # 1.20 printed a literal "%s" into these paths; fixed since.
    ("secrets", "create", "basic-auth empty"): (
        ["data[username]: Required value", "data[password]: Required value"],
        f"{_VALIDATION_GO} ValidateSecret",
    ),
    ("secrets", "create", "ssh-auth empty"): (
        ["data[ssh-privatekey]: Required value"],
        f"{_VALIDATION_GO} ValidateSecret",
    ),
    ("secrets", "create", "ssh-auth empty key"): (
        ["data[ssh-privatekey]: Required value"],
        f"{_VALIDATION_GO} ValidateSecret",
    ),
}


def expand(value: Any) -> Any:
    """The recorder's shorthands: ``@repeat:c:n`` and ``@b64repeat:c:n``."""
    if isinstance(value, dict):
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    if isinstance(value, str) and value.startswith(("@repeat:", "@b64repeat:")):
        how, char, count = value.split(":")
        text = char * int(count)
        return base64.b64encode(text.encode()).decode() if how == "@b64repeat" else text
    return value


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        for kind, named in RECORDED["objects"].items():
            for body in named.values():
                status, _, answer = send(running, "POST", PATHS[kind], json.dumps(expand(body)))
                assert status == 201, answer
        yield running


def _id(exchange: dict[str, Any]) -> str:
    return f"{exchange['kind']}-{exchange['op']}-{exchange.get('name', '')}-{exchange['case']}"


@pytest.mark.parametrize("exchange", RECORDED["exchanges"], ids=_id)
def test_core_spec_rules_as_recorded(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    kind = exchange["kind"]
    status, answer = replay_dry_run(server, PATHS[kind], exchange, expand)
    difference = DIFFERENCES.get((kind, exchange["op"], exchange["case"]), (False, ""))
    expected = expected_answer(
        exchange, difference[0], KINDS[kind], exchange.get("name", "svcspec-new")
    )
    assert answer_essentials(status, answer) == expected


def test_every_difference_is_a_recorded_case() -> None:
    recorded = {(e["kind"], e["op"], e["case"]) for e in RECORDED["exchanges"]}
    assert set(DIFFERENCES) <= recorded
