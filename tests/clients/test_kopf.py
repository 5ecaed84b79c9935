"""A kopf operator against `ownergc serve`: a CRD with a status subresource,
children adopted through ownerReferences, status written by kopf through
/status, and the cascade on delete done by ownergc's garbage collector."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.cli_helpers import Served, wait_for

pytest.importorskip("kopf")

OPERATOR = """
import kopf
import kubernetes


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.posting.enabled = False
    settings.watching.server_timeout = 10


@kopf.on.create("example.com", "v1", "widgets")
def create_fn(spec, name, namespace, body, **_):
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-child"},
        "data": {"size": str(spec.get("size", 0))},
    }
    kopf.adopt(child, owner=body)
    kubernetes.config.load_kube_config()
    kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, child)
    return {"child": child["metadata"]["name"]}
"""

WIDGETS = ("example.com", "v1", "default", "widgets")
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def test_operator_adopts_children_and_the_gc_cascades(served: Served, tmp_path: Path) -> None:
    import kubernetes

    api = kubernetes.config.new_client_from_config(config_file=str(served.kubeconfig))
    kubernetes.client.ApiextensionsV1Api(api).create_custom_resource_definition(CRD)
    custom = kubernetes.client.CustomObjectsApi(api)
    core = kubernetes.client.CoreV1Api(api)

    (tmp_path / "operator.py").write_text(OPERATOR)
    env = {**os.environ, "KUBECONFIG": str(served.kubeconfig)}
    kopf = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces", "operator.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(2)
        custom.create_namespaced_custom_object(
            "example.com",
            "v1",
            "default",
            "widgets",
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": "w1"},
                "spec": {"size": 3},
            },
        )
        widget = custom.get_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", "w1"
        )

        def child() -> Any:
            try:
                return core.read_namespaced_config_map("w1-child", "default")
            except kubernetes.client.ApiException:
                return None

        wait_for(lambda: child() is not None, what="kopf to create the child", timeout=30)
        [ref] = child().metadata.owner_references
        assert (ref.kind, ref.name, ref.uid) == ("Widget", "w1", widget["metadata"]["uid"])

        def status() -> Any:
            obj = custom.get_namespaced_custom_object(
                "example.com", "v1", "default", "widgets", "w1"
            )
            return obj.get("status")

        wait_for(
            lambda: status() == {"create_fn": {"child": "w1-child"}}, what="status via /status"
        )

        custom.delete_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", "w1", propagation_policy="Background"
        )
        wait_for(lambda: child() is None, what="the collector to delete the child", timeout=30)
    finally:
        kopf.terminate()
        out, _ = kopf.communicate(timeout=30)
    assert "Handler 'create_fn' succeeded" in out, out
