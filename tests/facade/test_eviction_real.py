"""``pods/eviction`` answered as kube-apiserver answers it (``_apiserver/eviction.py``).

The same requests as tests/data/real-apiserver-1.20/eviction.json, recorded from a
real kube-apiserver 1.20, are sent to serve's facade in the same order, and each
answer is compared with the real one: the status code, every field of a Status, and
of a budget read back the status fields the eviction wrote. Serve is 1.30: its
budgets are written as policy/v1 (1.30 serves no policy/v1beta1) and the Evictions
sent as policy/v1beta1, as recorded (1.30 still reads them). What 1.30 adds to a
1.20 answer is listed in ``ADDED_BY_1_30`` and checked too.
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
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/eviction.json").read_text()
)["exchanges"]
NS = "evict-rec3"
#: What a 1.30 server adds to the recorded 1.20 budget: the eviction that takes the last
#: disruption sets the DisruptionAllowed condition (1.26+).
ADDED_BY_1_30 = {"PDB after the eviction": {"conditions"}}
#: And to a recorded answer's details: 1.20 suggested no retry for a budget not yet
#: processed (its TODO), 1.2x+ ten seconds (also the Retry-After header).
DETAILS_ADDED_BY_1_30 = {
    "Running pod, its PDB not processed (observedGeneration < generation)": {
        "retryAfterSeconds": 10
    }
}


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    store = InMemoryStore()
    with run_in_thread(store) as running:
        yield running


def post(server: KubeAPIServer, path: str, body: Any) -> tuple[int, Any]:
    status, _, answer = send(server, "POST", path, json.dumps(body))
    return status, answer


def pod(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
    }


def running(server: KubeAPIServer, name: str, *, ready: bool = True) -> None:
    path = f"/api/v1/namespaces/{NS}/pods/{name}"
    status, _, current = send(server, "GET", path, "")
    assert status == 200, current
    current["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    status, _, answer = send(server, "PUT", path + "/status", json.dumps(current))
    assert status == 200, answer


def budget(
    server: KubeAPIServer, name: str, labels: dict[str, str], status: dict[str, Any] | None
) -> None:
    path = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
    }
    code, made = post(server, path, body)
    assert code == 201, made
    if status is not None:
        made["status"] = status
        code, _, made = send(server, "PUT", f"{path}/{name}/status", json.dumps(made))
        assert code == 200, made


def create(server: KubeAPIServer, name: str, labels: dict[str, str] | None = None) -> None:
    code, made = post(server, f"/api/v1/namespaces/{NS}/pods", pod(name, labels))
    assert code == 201, made


PROCESSED = {"observedGeneration": 1, "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 1}
#: Before the recorded request with this note, what the recording script did.
SETUP = {
    "a Pending pod is deleted, no PDB consulted": lambda s: (
        create(s, "pending", {"app": "web"}),
        budget(s, "blocks-all", {"app": "web"}, None),
    ),
    "name in URL differs from the Eviction's": lambda s: create(s, "other"),
    "Running pod, its PDB not processed (observedGeneration < generation)": lambda s: (
        create(s, "run1", {"app": "web"}),
        running(s, "run1"),
    ),
    "dry run, allowed: nothing changes": lambda s: (
        send(s, "DELETE", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/blocks-all", ""),
        budget(
            s,
            "allows-one",
            {"app": "api"},
            {**PROCESSED, "disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1,
             "expectedPods": 2},
        ),
        create(s, "api1", {"app": "api"}),
        running(s, "api1"),
        create(s, "api2", {"app": "api"}),
        running(s, "api2"),
    ),
    "unready pod, budget healthy: deleted, PDB untouched": lambda s: (
        budget(
            s,
            "healthy",
            {"app": "db"},
            {**PROCESSED, "disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2,
             "expectedPods": 3},
        ),
        create(s, "db1", {"app": "db"}),
        running(s, "db1", ready=False),
    ),
    "two PDBs match": lambda s: (
        budget(s, "two-a", {"app": "two"}, {**PROCESSED, "disruptionsAllowed": 1}),
        budget(s, "two-b", {"app": "two"}, {**PROCESSED, "disruptionsAllowed": 1}),
        create(s, "two1", {"app": "two"}),
        running(s, "two1"),
    ),
    "uid precondition fails": lambda s: create(s, "pre", {"app": "none"}),
}  # fmt: skip


def test_every_recorded_eviction_is_answered_as_the_real_server_answered(
    server: KubeAPIServer,
) -> None:
    code, made = post(
        server,
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    assert code == 201, made
    checked = 0
    for exchange in RECORDED:
        note = exchange["note"]
        if note in SETUP:
            SETUP[note](server)
        path = exchange["path"].replace("/apis/policy/v1beta1/", "/apis/policy/v1/")
        body = "" if exchange["body"] is None else json.dumps(exchange["body"])
        status, _, answer = send(server, exchange["method"], path, body)
        expected = exchange["answer"]
        assert status == exchange["status"], (note, answer)
        if expected.get("kind") == "Status":
            if note == "uid precondition fails":
                real_uid = expected["message"].split("UID in record (")[1].split(")")[0]
                _, _, stored = send(server, "GET", f"/api/v1/namespaces/{NS}/pods/pre", "")
                expected = json.loads(
                    json.dumps(expected).replace(real_uid, stored["metadata"]["uid"])
                )
            added = DETAILS_ADDED_BY_1_30.get(note)
            if added is not None:
                expected = {**expected, "details": {**expected["details"], **added}}
            assert answer == expected, note
        elif expected.get("kind") == "PodDisruptionBudget":
            ours, theirs = answer["status"], expected["status"]
            added = ADDED_BY_1_30.get(note, set())
            assert set(ours) - set(theirs) == added, note
            for key, value in theirs.items():
                if key == "disruptedPods":
                    assert set(ours[key]) == set(value), note  # (when: the clock's)
                else:
                    assert ours[key] == value, (note, key)
        checked += 1
    assert checked == len(RECORDED) == 18


def test_the_last_disruption_taken_sets_disruption_allowed_false(
    server: KubeAPIServer,
) -> None:
    _, _, pdb = send(
        server, "GET", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/allows-one", ""
    )
    [condition] = pdb["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "observedGeneration")} == {
        "type": "DisruptionAllowed",
        "status": "False",
        "reason": "InsufficientPods",
        "observedGeneration": 1,
    }
