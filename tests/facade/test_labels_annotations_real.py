"""Labels and annotations validated as kube-apiserver validates them (``_validation``).

The creates and merge-patch updates of
tests/data/real-apiserver-1.20/labels-annotations.json, recorded from a real
kube-apiserver 1.20 (all ``dryRun=All``; 22 label and annotation cases on a
ConfigMap and a Deployment, three on six other kinds), are sent to serve's facade
and each answer is compared with the real one: the status code, the labels and
annotations kept, or the Status's reason, message and causes. The wording of these
checks is the same in 1.30 (apimachinery's validation helpers did not change).

Two things are compared loosely, on purpose:

* a real server checks a map's entries in Go's random map order, so where several
  entries are wrong the message's list and the causes are compared as sets;
* a real server lists each error of an update several times (three to five times,
  by kind: its validation passes each check the metadata again); serve lists it
  once, and the distinct causes are compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/labels-annotations.json").read_text()
)
NS = RECORDED["namespace"]
PATHS = {
    "configmaps": f"/api/v1/namespaces/{NS}/configmaps",
    "deployments": f"/apis/apps/v1/namespaces/{NS}/deployments",
    "pods": f"/api/v1/namespaces/{NS}/pods",
    "services": f"/api/v1/namespaces/{NS}/services",
    "secrets": f"/api/v1/namespaces/{NS}/secrets",
    "namespaces": "/api/v1/namespaces",
    "jobs": f"/apis/batch/v1/namespaces/{NS}/jobs",
    "roles": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles",
}
#: The Go decoder of the recorded server (json-iterator) words a wrong type in its own way;
#: 1.30's (sigs.k8s.io/json) otherwise: for those answers the status and reason are compared.
DECODER_WORDED = {"label value number"}


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
        send(running, "POST", f"/api/v1/namespaces/{NS}/serviceaccounts", json.dumps(account))
        for kind, obj in RECORDED["objects"].items():
            body = {**obj, "metadata": {"name": f"lbl-{kind}"}}
            status, _, answer = send(running, "POST", PATHS[kind], json.dumps(body))
            assert status == 201, answer
        yield running


def _listed(message: str) -> tuple[str, frozenset[str]]:
    """A message's head and its errors (``[a, b]`` or one), as a set."""
    head, sep, errors = message.partition(" is invalid: ")
    if not sep:
        return message, frozenset()
    if errors.startswith("[") and errors.endswith("]"):
        return head, frozenset(
            e.removeprefix("metadata.") for e in errors[1:-1].split(", metadata.")
        )
    return head, frozenset([errors])


def _essentials(status: int, body: Any, case: str) -> dict[str, Any]:
    if status in (200, 201):
        meta = body.get("metadata", body)  # (a recorded success keeps only these two)
        return {
            "status": status,
            "labels": meta.get("labels"),
            "annotations": meta.get("annotations"),
        }
    if case in DECODER_WORDED:
        return {"status": status, "reason": body.get("reason")}
    details = dict(body.get("details") or {})
    causes = details.pop("causes", [])
    return {
        "status": status,
        "reason": body.get("reason"),
        "message": _listed(body.get("message") or ""),
        "details": details,
        "causes": frozenset(json.dumps(c, sort_keys=True) for c in causes),
    }


@pytest.mark.parametrize(
    "exchange",
    RECORDED["exchanges"],
    ids=lambda e: f"{e['kind']}-{e['op']}-{e['case']}",
)
def test_labels_and_annotations_as_recorded(
    server: KubeAPIServer, exchange: dict[str, Any]
) -> None:
    kind, case = exchange["kind"], exchange["case"]
    if exchange["op"] == "create":
        obj = RECORDED["objects"][kind]
        body = {**obj, "metadata": {"name": f"lbl-{kind}-new", **exchange["metadata"]}}
        status, _, answer = send(server, "POST", PATHS[kind] + "?dryRun=All", json.dumps(body))
    else:
        status, _, answer = send(
            server,
            "PATCH",
            f"{PATHS[kind]}/lbl-{kind}?dryRun=All",
            json.dumps({"metadata": exchange["metadata"]}),
            "application/merge-patch+json",
        )
    recorded = exchange["answer"]
    assert _essentials(status, answer, case) == _essentials(recorded["status"], recorded, case)
