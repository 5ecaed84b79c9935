"""Built-in kinds' ``status`` subresource, as on a real server: discovery lists it,
``/status`` writes the status alone, and an update of the object keeps the stored one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._resources import BUILTIN_RESOURCES
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
RECORDED_DISCOVERY = Path(__file__).parents[1] / "data/real-apiserver-1.24/discovery.json"
MERGE = "application/merge-patch+json"


@pytest.fixture
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        yield running


def deployment(**extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
            },
        },
        **extra,
    }


def test_discovery_lists_the_status_subresources(server: KubeAPIServer) -> None:
    status, _, answer = send(server, "GET", "/apis/apps/v1", "")
    assert status == 200
    names = {r["name"] for r in answer["resources"]}
    assert {"deployments/status", "replicasets/status", "statefulsets/status"} <= names
    status, _, core = send(server, "GET", "/api/v1", "")
    assert {"pods/status", "services/status", "nodes/status"} <= {
        r["name"] for r in core["resources"]
    }


def test_the_kinds_with_status_are_the_real_servers() -> None:
    """Every built-in ``x/status`` the recorded v1.24 server's discovery lists is served,
    but the two whose status serve's own controllers write. (``namespaces/status`` is
    served too; an update of a Namespace itself still writes its status, which serve's
    namespace controller relies on: tests/facade/test_pod_subresources_real.py.)"""
    recorded = json.loads(RECORDED_DISCOVERY.read_text())
    real = {
        (path.removeprefix("/apis/").removeprefix("/api/").rpartition("/")[0], r["name"])
        for path, doc in recorded.items()
        if isinstance(doc, dict)
        for r in doc.get("resources", [])
        if r["name"].endswith("/status")
    }
    real_resources = {(group, name.split("/")[0]) for group, name in real}
    ours = {
        (spec.group, spec.resource) for spec in BUILTIN_RESOURCES if "status" in spec.subresources
    }
    kept_by_serve = {
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("apiregistration.k8s.io", "apiservices"),
    }
    # (ValidatingAdmissionPolicy is GA in 1.30, after the recording, with a /status.)
    added_since = {("admissionregistration.k8s.io", "validatingadmissionpolicies")}
    assert ours == (real_resources | added_since) - kept_by_serve


def test_status_is_written_through_status_only(server: KubeAPIServer) -> None:
    status, _, created = send(
        server, "POST", DEPLOYMENTS, json.dumps(deployment(status={"replicas": 9}))
    )
    assert status == 201
    assert created["status"] == {}  # a create starts from the empty status
    written = {"status": {"replicas": 3, "readyReplicas": 3}}
    status, _, answer = send(
        server, "PATCH", f"{DEPLOYMENTS}/web/status", json.dumps(written), MERGE
    )
    assert status == 200, answer
    assert answer["status"] == {"replicas": 3, "readyReplicas": 3}
    assert answer["metadata"]["generation"] == 1
    # an update of the object leaves the status as stored, and /status leaves the spec
    ignored = {"spec": {"replicas": 5}, "status": {"replicas": 0}}
    status, _, answer = send(server, "PATCH", f"{DEPLOYMENTS}/web", json.dumps(ignored), MERGE)
    assert (answer["spec"]["replicas"], answer["status"]["replicas"]) == (5, 3)
    status, _, answer = send(
        server, "PATCH", f"{DEPLOYMENTS}/web/status", json.dumps({"spec": {"replicas": 1}}), MERGE
    )
    assert answer["spec"]["replicas"] == 5
