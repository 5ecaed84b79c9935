"""The group versions serve serves are a kube-apiserver v1.30.0's, as kubectl 1.37 and 1.20
see them: what 1.25-1.29 stopped serving is refused as a 1.30 cluster refuses it (kubectl
finds no mapping), and the versions 1.30 has that the recorded 1.24 server did not
(flowcontrol.apiserver.k8s.io v1 and v1beta3, storage.k8s.io/v1 CSIStorageCapacity)
work: apply, get, explain, strict field validation, server-side apply."""

from __future__ import annotations

import json
import re

import pytest

from tests import served_v130
from tests.cli.cli_helpers import Kubectl

#: What `kubectl api-versions` prints for a default-configured 1.30 server, for the
#: kinds serve has (ValidatingAdmissionPolicy's admissionregistration.k8s.io/v1 is
#: there anyway, for the webhook configurations).
API_VERSIONS_130 = [
    "admissionregistration.k8s.io/v1",
    "apiextensions.k8s.io/v1",
    "apiregistration.k8s.io/v1",
    "apps/v1",
    "authentication.k8s.io/v1",
    "authorization.k8s.io/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "certificates.k8s.io/v1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "events.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "node.k8s.io/v1",
    "policy/v1",
    "rbac.authorization.k8s.io/v1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1",
    "v1",
]

PDB_V1BETA1 = """
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: pdb, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: x}}
"""

#: One manifest per removed group version (kind, apiVersion, a minimal body).
REMOVED_MANIFESTS = {
    ("CronJob", "batch/v1beta1"): (
        "spec: {schedule: '* * * * *', jobTemplate: {spec: {template: {spec: "
        "{restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}}"
    ),
    ("HorizontalPodAutoscaler", "autoscaling/v2beta2"): (
        "spec: {maxReplicas: 2, scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}}"
    ),
    ("HorizontalPodAutoscaler", "autoscaling/v2beta1"): (
        "spec: {maxReplicas: 2, scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}}"
    ),
    ("EndpointSlice", "discovery.k8s.io/v1beta1"): "addressType: IPv4\nendpoints: []",
    ("RuntimeClass", "node.k8s.io/v1beta1"): "handler: runc",
    ("FlowSchema", "flowcontrol.apiserver.k8s.io/v1beta2"): (
        "spec: {priorityLevelConfiguration: {name: global-default}}"
    ),
    ("PriorityLevelConfiguration", "flowcontrol.apiserver.k8s.io/v1beta1"): (
        "spec: {type: Limited, limited: {limitResponse: {type: Reject}}}"
    ),
}

FLOW_CONTROL = """
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: fs1}
spec:
  priorityLevelConfiguration: {name: pl1}
  rules:
  - subjects: [{kind: Group, group: {name: "system:authenticated"}}]
    resourceRules:
    - {verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: PriorityLevelConfiguration
metadata: {name: pl1}
spec:
  type: Limited
  limited:
    limitResponse: {type: Queue, queuing: {}}
"""

CAPACITY = """
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: zone-a, namespace: default}
storageClassName: standard
capacity: 100Gi
"""


def _no_match(kind: str, api_version: str) -> str:
    return f'no matches for kind "{kind}" in version "{api_version}"'


def test_api_versions_are_a_1_30_servers(kubectl: Kubectl) -> None:
    listed = kubectl.run("api-versions").stdout.split()
    assert listed == API_VERSIONS_130
    assert not set(listed) & served_v130.REMOVED_GROUP_VERSIONS


def test_api_resources_name_the_1_30_versions(kubectl: Kubectl) -> None:
    out = kubectl.run("api-resources", "--no-headers").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()}
    assert "flowcontrol.apiserver.k8s.io/v1" in rows["flowschemas"]
    assert "flowcontrol.apiserver.k8s.io/v1" in rows["prioritylevelconfigurations"]
    assert "storage.k8s.io/v1" in rows["csistoragecapacities"]
    assert "policy/v1" in rows["poddisruptionbudgets"]


def test_a_removed_version_is_refused_as_on_a_1_30_cluster(kubectl: Kubectl) -> None:
    path = kubectl.workdir / "pdb.yaml"
    path.write_text(PDB_V1BETA1)
    refused = kubectl.run("apply", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert _no_match("PodDisruptionBudget", "policy/v1beta1") in refused.stderr
    assert not kubectl.exists("poddisruptionbudgets", "-n", "default")
    for (kind, api_version), body in REMOVED_MANIFESTS.items():
        path = kubectl.workdir / "removed.yaml"
        namespace = (
            ""
            if kind in ("RuntimeClass", "FlowSchema", "PriorityLevelConfiguration")
            else ("namespace: default, ")
        )
        path.write_text(
            f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{{namespace}name: x}}\n{body}\n"
        )
        refused = kubectl.run("create", "-f", str(path), check=False)
        assert refused.returncode != 0, (kind, api_version)
        assert _no_match(kind, api_version) in refused.stderr, refused.stderr


def test_the_versions_1_30_added_work(kubectl: Kubectl) -> None:
    kubectl.apply("fc.yaml", FLOW_CONTROL)
    kubectl.apply("capacity.yaml", CAPACITY)
    schemas = kubectl.run("get", "flowschemas").stdout
    assert re.search(r"^fs1 +pl1 +1000 ", schemas, re.M), schemas
    levels = kubectl.run("get", "prioritylevelconfigurations").stdout
    assert re.search(r"^pl1 +Limited +30 +64 +8 +50 ", levels, re.M), levels
    level = kubectl.json(
        "get", "prioritylevelconfigurations.v1beta3.flowcontrol.apiserver.k8s.io", "pl1"
    )
    assert level["apiVersion"] == "flowcontrol.apiserver.k8s.io/v1beta3"
    assert level["spec"]["limited"]["nominalConcurrencyShares"] == 30
    assert level["spec"]["limited"]["lendablePercent"] == 0
    capacity = kubectl.json("get", "csistoragecapacities", "zone-a", "-n", "default")
    assert (capacity["apiVersion"], capacity["capacity"]) == ("storage.k8s.io/v1", "100Gi")


@pytest.mark.parametrize("version", ["v1", "v1beta3"])
def test_explain_validation_and_server_side_apply_of_the_new_versions(
    kubectl: Kubectl, version: str
) -> None:
    explained = kubectl.run(
        "explain",
        "prioritylevelconfigurations.spec.limited",
        f"--api-version=flowcontrol.apiserver.k8s.io/{version}",
    ).stdout
    assert "lendablePercent" in explained and "nominalConcurrencyShares" in explained
    bad = FLOW_CONTROL.split("---")[1].replace("v1beta3", version) + "  bogus: 1\n"
    path = kubectl.workdir / "bad.yaml"
    path.write_text(bad)
    refused = kubectl.run("create", "-f", str(path), check=False)
    assert refused.returncode != 0 and "bogus" in refused.stderr, refused.stderr
    good = kubectl.workdir / "good.yaml"
    good.write_text(FLOW_CONTROL.replace("v1beta3", version))
    kubectl.run("apply", "--server-side", "--field-manager=tester", "-f", str(good))
    resource = f"prioritylevelconfigurations.{version}.flowcontrol.apiserver.k8s.io"
    # (kubectl >= 1.21 hides managedFields unless asked; 1.20 has no such flag)
    shown = kubectl.run("get", resource, "pl1", "-o", "json", "--show-managed-fields", check=False)
    level = (
        json.loads(shown.stdout) if shown.returncode == 0 else kubectl.json("get", resource, "pl1")
    )
    managers = {m["manager"] for m in level["metadata"]["managedFields"]}
    assert "tester" in managers


def test_explain_self_subject_reviews(kubectl: Kubectl) -> None:
    """SelfSubjectReview (authentication.k8s.io/v1, GA in 1.28: ``kubectl auth whoami``)
    has its path in the OpenAPI documents, as on 1.30, so explain finds it."""
    out = kubectl.run("explain", "selfsubjectreviews").stdout
    assert re.search(r"KIND: +SelfSubjectReview", out), out
