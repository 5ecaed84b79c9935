"""`ownergc why` against the in-memory store's REST facade, with no controller running.

Without a garbage collector or namespace controller the states stay as they
are the moment before the controllers act, which is what these causes need:
a reference the collector is about to treat as absent, an aggregated API
that blocks a namespace, an orphaning owner with dependents left to patch.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.cli.cli_helpers import Kubectl
from tests.why.why_helpers import why, with_code


@pytest.fixture
def server() -> Iterator[KubeAPIServer]:
    store = InMemoryStore(terminating_namespaces=True)
    # The store serves no apiregistration.k8s.io: serve APIServices as plain objects.
    store.register_resource(
        group="apiregistration.k8s.io",
        versions=["v1"],
        resource="apiservices",
        kind="APIService",
        namespaced=False,
    )
    with run_in_thread(store) as srv:
        yield srv


@pytest.fixture
def kubeconfig(server: KubeAPIServer, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    server.write_kubeconfig(path)
    return path


@pytest.fixture
def kubectl(kubeconfig: Path, tmp_path: Path) -> Kubectl:
    binary = os.environ.get("OWNERGC_KUBECTL") or shutil.which("kubectl")
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kubectl is required in CI (Debian package kubernetes-client)")
        pytest.skip("no kubectl (install kubernetes-client or set OWNERGC_KUBECTL)")
    return Kubectl(binary, kubeconfig, tmp_path)


def _configmap(kubectl: Kubectl, name: str, namespace: str) -> str:
    kubectl.run("create", "configmap", name, "-n", namespace)
    return kubectl.uid("configmap", name, "-n", namespace)


def test_namespace_held_by_an_unavailable_aggregated_api(
    kubectl: Kubectl, kubeconfig: Path
) -> None:
    kubectl.apply(
        "apiservice.yaml",
        """
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {namespace: kube-system, name: metrics-server, port: 443}
status:
  conditions:
  - type: Available
    status: "False"
    reason: MissingEndpoints
    message: endpoints for service/metrics-server in "kube-system" have no addresses
""",
    )
    kubectl.run("create", "namespace", "monitoring")
    kubectl.run("delete", "namespace", "monitoring", "--wait=false")
    condition = {
        "type": "NamespaceDeletionDiscoveryFailure",
        "status": "True",
        "reason": "DiscoveryFailed",
        "message": "Discovery failed for some groups, 1 failing: unable to retrieve the "
        "complete list of server APIs: metrics.k8s.io/v1beta1: the server is currently "
        "unable to handle the request",
    }
    kubectl.run(
        "patch",
        "namespace",
        "monitoring",
        "--type=merge",
        "-p",
        json.dumps({"status": {"conditions": [condition]}}),
    )

    answer = why("namespace/monitoring", kubeconfig=kubeconfig)

    assert answer["verdict"] == "deleting"
    [cause] = with_code(answer, "namespace.apiServiceUnavailable")
    assert cause["summary"] == (
        "cause: aggregated API metrics.k8s.io/v1beta1 is unavailable "
        "(APIService v1beta1.metrics.k8s.io: MissingEndpoints)"
    )
    assert cause["object"]["name"] == "v1beta1.metrics.k8s.io"
    assert cause["details"][0].startswith("served by Service kube-system/metrics-server: ")
    assert [s["command"] for s in cause["nextSteps"]][1] == (
        "kubectl delete apiservice v1beta1.metrics.k8s.io"
    )
    [cond] = with_code(answer, "namespace.condition")
    assert cond["summary"] == "condition NamespaceDeletionDiscoveryFailure: DiscoveryFailed"
    assert "aggregated API" in cond["details"][1]


def test_available_aggregated_api_is_not_blamed(kubectl: Kubectl, kubeconfig: Path) -> None:
    kubectl.apply(
        "apiservice.yaml",
        """
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {namespace: kube-system, name: metrics-server, port: 443}
status:
  conditions: [{type: Available, status: "True", reason: Passed, message: all checks passed}]
""",
    )
    kubectl.run("create", "namespace", "calm")
    kubectl.run("delete", "namespace", "calm", "--wait=false")

    answer = why("namespace/calm", kubeconfig=kubeconfig)

    assert not with_code(answer, "namespace.apiServiceUnavailable")
    [fin] = with_code(answer, "finalizer.kubernetes")
    assert any("namespace controller is not running" in d for d in fin["details"])


def test_cross_namespace_reference_before_the_collector_acts(
    kubectl: Kubectl, kubeconfig: Path
) -> None:
    kubectl.run("create", "namespace", "here")
    kubectl.run("create", "namespace", "there")
    boss = _configmap(kubectl, "boss", "there")
    kubectl.apply(
        "worker.yaml",
        f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: worker
  namespace: here
  ownerReferences:
  - {{apiVersion: v1, kind: ConfigMap, name: boss, uid: {boss}}}
""",
    )

    answer = why("cm/worker", "-n", "here", kubeconfig=kubeconfig)

    assert answer["verdict"] == "collectable"
    assert answer["explanation"]["summary"] == (
        "ConfigMap here/worker: to be deleted — every owner is gone"
    )
    [invalid] = with_code(answer, "owner.invalidNamespace")
    assert "treats the reference as absent" in invalid["details"][1]
    assert invalid["nextSteps"][0]["command"] == (
        "kubectl patch configmaps worker -n here --type=json -p "
        f'\'[{{"op":"test","path":"/metadata/ownerReferences/0/uid","value":"{boss}"}},'
        '{"op":"remove","path":"/metadata/ownerReferences/0"}]\''
    )


def test_second_solid_owner_before_the_collector_acts(kubectl: Kubectl, kubeconfig: Path) -> None:
    first = _configmap(kubectl, "first", "default")
    second = _configmap(kubectl, "second", "default")
    kubectl.apply(
        "dep.yaml",
        f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: dep
  ownerReferences:
  - {{apiVersion: v1, kind: ConfigMap, name: first, uid: {first}}}
  - {{apiVersion: v1, kind: ConfigMap, name: second, uid: {second}}}
""",
    )
    kubectl.run("delete", "configmap", "first")

    answer = why("cm/dep", kubeconfig=kubeconfig)

    root = answer["explanation"]
    assert root["code"] == "object.heldByOwner"
    assert root["details"] == [
        "held by another owner: the collector keeps it and only removes its references to "
        "ConfigMap first"
    ]
    assert [c["code"] for c in root["children"]] == ["owner.dangling", "owner.solid"]


def test_orphan_finalizer_with_dependents_left(kubectl: Kubectl, kubeconfig: Path) -> None:
    owner = _configmap(kubectl, "owner", "default")
    kubectl.apply(
        "dep.yaml",
        f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: dep
  ownerReferences: [{{apiVersion: v1, kind: ConfigMap, name: owner, uid: {owner}}}]
""",
    )
    kubectl.run("delete", "configmap", "owner", "--cascade=orphan", "--wait=false")

    answer = why("cm/owner", kubeconfig=kubeconfig)

    [fin] = with_code(answer, "finalizer.orphan")
    assert fin["summary"] == "finalizer orphan: 1 dependent(s) still to orphan"
    assert [c["object"]["name"] for c in fin["children"]] == ["dep"]
    assert "DELETED by the collector" in fin["nextSteps"][0]["consequence"]
