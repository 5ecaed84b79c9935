"""A FlowSchema's ``Dangling`` condition, kept as kube-apiserver's APF configuration
controller keeps it (``_flowschemas.py``).

tests/data/real-apiserver-1.20/flowschema-status.json was recorded from a real
kube-apiserver 1.20.2 (flowcontrol v1beta1) by tools/record_flowschema_status.py: each
step, then the FlowSchema read back once the controller had settled, and a watch on the
recorded FlowSchemas throughout. The same steps are sent here to serve (in v1, which 1.30
serves in place of v1beta1; the level's ``assuredConcurrencyShares`` is
``nominalConcurrencyShares`` there), and each answer and the watch compared with the
recording: status codes, every condition's type, status, reason and message, and which
``lastTransitionTime`` is the client's and which the controller's.

serve is 1.30, whose controller differs from 1.20's (learned from k8s.io/apiserver
v0.30.0, ``pkg/util/flowcontrol/apf_controller.go``: its FlowSchema informer's update
handler, ``digestConfigObjects`` / ``apply`` / ``toFlowSchemaApplyConfiguration`` and
``presyncFlowSchemaStatus``; its field manager in ``apf_filter.go``):

================================  ==========================  ===========================
what                              1.20 (recorded)             1.30 (serve)
================================  ==========================  ===========================
a client's status write that      kept until the next spec    rewritten at once (the
makes the condition wrong         change or level add/delete  handler reacts to a status
                                                              change too)
a client's other conditions       dropped by the controller's kept: it applies the one
                                  write (a merge patch of the condition (server-side
                                  whole list)                 apply, list keyed by type)
the controller's managedFields    ``Update``, no subresource  ``Apply``, subresource
entry (same manager)                                          ``status``, apiVersion v1
wording, reasons, status values   as recorded                 the same (same format
                                                              strings in 1.30)
================================  ==========================  ===========================

``OVERRIDES_1_30`` holds the recorded answers and events that these differences change,
as 1.30 answers them. What serve does differently from any real server: the controller's
write is synchronous (made in the same write section as the write that called for it, so
a read right after sees it) and is not admitted (a real server's status write goes
through admission like any request); the real controller's rate limit (a FlowSchema
written more than about 20 times a minute waits) is not kept; objects loaded with
``load_objects`` keep their status as loaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._flowschemas import MANAGER
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.facade_helpers import Kubectl
from tests.facade.test_facade_lists_watches import read_events
from tests.facade.test_field_validation_cases import send
from tests.served_v130 import as_v130

RECORD = json.loads(
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/flowschema-status.json").read_text()
)
NOW = datetime(2026, 11, 27, 9, 0, 0, tzinfo=timezone.utc)
CONTROLLER_TIME = "2026-11-27T09:00:00Z"
#: The client's own lastTransitionTime (``<time-1>`` in the recording: times are
#: numbered in order, and it is the oldest).
CLIENT_TIME = "2020-01-01T00:00:00Z"
BASE = "/apis/flowcontrol.apiserver.k8s.io/v1"


def found(level: str) -> tuple[str, str, str, str]:
    return (
        "Dangling",
        "False",
        "Found",
        f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" '
        "and it exists",
    )


def not_found(level: str) -> tuple[str, str, str, str]:
    return (
        "Dangling",
        "True",
        "NotFound",
        f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" '
        "but there is no such object",
    )


OTHER = ("Other", "True", "ByClient", None)
#: Recorded answers (by note) whose conditions 1.30 answers otherwise: the client's
#: write is rewritten at once, and its Other condition stays.
OVERRIDES_1_30: dict[str, list[tuple[str, str, str, str | None]]] = {
    "settled after the client's status write": [found("global-default"), OTHER],
    "a spec change that keeps the level": [found("global-default"), OTHER],
    "settled after a spec change that keeps the level": [found("global-default"), OTHER],
    "a FlowSchema's level changed to a missing one": [found("global-default"), OTHER],
    "settled: the changed FlowSchema Dangling True": [not_found("flowstatus-none"), OTHER],
}


def conditions(obj: dict[str, Any] | None) -> list[tuple[str, str, str, str | None]]:
    status = (obj or {}).get("status") or {}
    return [
        (c["type"], c["status"], c.get("reason"), c.get("message"))
        for c in status.get("conditions") or []
    ]


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    store = InMemoryStore(clock=lambda: NOW)
    with run_in_thread(store) as running:
        # The real server's bootstrap level that a recorded FlowSchema names.
        level = {
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration",
            "metadata": {"name": "global-default"},
            "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}},
        }
        code, _, made = send(
            running, "POST", f"{BASE}/prioritylevelconfigurations", json.dumps(level)
        )
        assert code == 201, made
        yield running


def replay(server: KubeAPIServer, exchange: dict[str, Any]) -> tuple[int, Any]:
    path = exchange["path"].replace("/v1beta1/", "/v1/")
    body = exchange["body"]
    if exchange["note"] == "a client writes the status":
        # The recorded body carried the real server's resourceVersion: the same write
        # on the object as serve holds it.
        _, _, current = send(server, "GET", path.removesuffix("/status"), "")
        current["status"] = json.loads(
            json.dumps(body["status"]).replace('"<time-1>"', f'"{CLIENT_TIME}"')
        )
        body = current
    elif isinstance(body, dict) and "apiVersion" in body:
        body = as_v130(body)
    content_type = (
        "application/merge-patch+json" if exchange["method"] == "PATCH" else "application/json"
    )
    text = "" if body is None else json.dumps(body)
    code, _, answer = send(server, exchange["method"], path, text, content_type)
    return code, answer


def test_the_recorded_steps_are_answered_as_1_30_answers_them(server: KubeAPIServer) -> None:
    _, _, listed = send(server, "GET", f"{BASE}/flowschemas", "")
    since = listed["metadata"]["resourceVersion"]
    answers = []
    for exchange in RECORD["exchanges"]:
        code, answer = replay(server, exchange)
        note = exchange["note"]
        assert code == exchange["status"], (note, answer)
        answers.append(answer)
        recorded = exchange["answer"]
        if recorded.get("kind") != "FlowSchema":
            continue
        expected = OVERRIDES_1_30.get(note, conditions(recorded))
        assert conditions(answer) == expected, note
        for got, real in zip(
            answer["status"].get("conditions") or [],
            (recorded["status"].get("conditions") or []) if note not in OVERRIDES_1_30 else [],
            strict=False,
        ):
            # The client's own time stays; the controller's is when it wrote.
            was_client = real["lastTransitionTime"] == "<time-1>"
            assert got["lastTransitionTime"] == (CLIENT_TIME if was_client else CONTROLLER_TIME)
        entries = {m["manager"]: m for m in answer["metadata"].get("managedFields") or []}
        recorded_managers = {m["manager"] for m in recorded["metadata"]["managedFields"]}
        if MANAGER in recorded_managers:
            entry = entries[MANAGER]
            # 1.20: operation Update, no subresource (its managedFields had none).
            assert (entry["operation"], entry["subresource"], entry["apiVersion"]) == (
                "Apply",
                "status",
                "flowcontrol.apiserver.k8s.io/v1",
            )
            owned = {".", "f:lastTransitionTime", "f:message", "f:reason", "f:status", "f:type"}
            if note == "a client writes the status":
                # the client's write takes the fields it changed from the controller, as
                # recorded (1.30's rewrite gives them back at once: the next step)
                owned = {".", "f:type"}
            conditions_owned = entry["fieldsV1"]["f:status"]["f:conditions"]
            assert {k: set(v) for k, v in conditions_owned.items()} == {
                'k:{"type":"Dangling"}': owned
            }, note
        else:
            assert MANAGER not in entries, note

    # The watch: the recorded events, in order, with their conditions (1.30's where the
    # differences above change them).
    recorded_events = RECORD["watch"]
    events = read_events(
        server,
        f"{BASE}/flowschemas?watch=1&resourceVersion={since}&labelSelector=flowstatus-rec%3D1",
        len(recorded_events),
    )
    got = [(e["type"], e["object"]["metadata"]["name"], conditions(e["object"])) for e in events]
    expected = [(e["type"], e["name"], conditions(e)) for e in recorded_events]
    # 1.20: the client's write (5), the spec change (6), then the controller's rewrite
    # (7) dropping Other; 1.30: the rewrite (keeping Other) right after the client's
    # write, and none after the spec change. Other stays in the later events.
    client_write, spec_change, rewrite = expected[5], expected[6], expected[7]
    assert rewrite[2] == [found("global-default")]
    fixed = [found("global-default"), OTHER]
    expected[5:8] = [
        client_write,
        ("MODIFIED", "flowstatus-found", fixed),
        (spec_change[0], spec_change[1], fixed),
    ]
    expected[8] = ("MODIFIED", "flowstatus-found", fixed)
    expected[9] = ("MODIFIED", "flowstatus-found", [not_found("flowstatus-none"), OTHER])
    expected[12] = ("DELETED", "flowstatus-found", [not_found("flowstatus-none"), OTHER])
    assert got == expected

    # resourceVersions: every event its own, increasing; the controller's write is the
    # revision right after the write that called for it, and a create's answer is the
    # client's own revision (without the condition), as a real server's is.
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(set(rvs))
    created = int(answers[0]["metadata"]["resourceVersion"])
    assert answers[0]["status"] == {} and rvs[:2] == [created, created + 1]
    settled = int(answers[1]["metadata"]["resourceVersion"])
    assert settled == created + 1


def test_a_condition_right_already_is_not_written_again(server: KubeAPIServer) -> None:
    """The controller compares status, reason and message only: a client's other
    lastTransitionTime stays, and a write that leaves the level alone adds no revision."""
    body = as_v130(RECORD["exchanges"][2]["body"])  # names global-default
    body["metadata"]["name"] = "flowstatus-steady"
    code, _, made = send(server, "POST", f"{BASE}/flowschemas", json.dumps(body))
    assert code == 201, made
    path = f"{BASE}/flowschemas/flowstatus-steady"
    _, _, current = send(server, "GET", path, "")
    [condition] = current["status"]["conditions"]
    condition["lastTransitionTime"] = CLIENT_TIME
    code, _, written = send(server, "PUT", f"{path}/status", json.dumps(current))
    assert code == 200, written
    _, _, read = send(server, "GET", path, "")
    assert read["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
    assert read["status"]["conditions"][0]["lastTransitionTime"] == CLIENT_TIME
    # A level update (not a create or delete) rewrites nothing either.
    level_path = f"{BASE}/prioritylevelconfigurations/global-default"
    code, _, _ = send(
        server,
        "PATCH",
        level_path,
        json.dumps({"metadata": {"labels": {"x": "y"}}}),
        "application/merge-patch+json",
    )
    assert code == 200
    _, _, again = send(server, "GET", path, "")
    assert again["metadata"]["resourceVersion"] == read["metadata"]["resourceVersion"]


def test_a_dry_run_writes_no_condition(server: KubeAPIServer) -> None:
    body = as_v130(RECORD["exchanges"][0]["body"])
    body["metadata"]["name"] = "flowstatus-dry"
    code, _, made = send(server, "POST", f"{BASE}/flowschemas?dryRun=All", json.dumps(body))
    assert code == 201 and made["status"] == {}, made
    code, _, _ = send(server, "GET", f"{BASE}/flowschemas/flowstatus-dry", "")
    assert code == 404


def test_the_python_store_api_gets_the_condition_without_managed_fields() -> None:
    """Objects written through the store's Python API carry no managedFields: the
    condition is set without starting them."""
    import anyio

    store = InMemoryStore(clock=lambda: NOW)

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        fs = store.resource_for("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema")
        pl = store.resource_for(
            "flowcontrol.apiserver.k8s.io/v1beta3", "PriorityLevelConfiguration"
        )
        body = as_v130(RECORD["exchanges"][0]["body"])
        body["apiVersion"] = "flowcontrol.apiserver.k8s.io/v1beta3"
        await store.create(fs, body)
        before = await store.get(fs, "flowstatus-dangling", metadata_only=False)
        level = as_v130(RECORD["exchanges"][4]["body"])
        level["apiVersion"] = "flowcontrol.apiserver.k8s.io/v1beta3"
        await store.create(pl, level)
        after = await store.get(fs, "flowstatus-dangling", metadata_only=False)
        return before, after

    before, after = anyio.run(run)
    assert conditions(before) == [not_found("flowstatus-pl")]
    assert conditions(after) == [found("flowstatus-pl")]
    assert "managedFields" not in after["metadata"]
    assert after["status"]["conditions"][0]["lastTransitionTime"] == CONTROLLER_TIME


KUBECTL_MANIFESTS = """\
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: kubectl-dangling}
spec:
  priorityLevelConfiguration: {name: kubectl-level}
  matchingPrecedence: 7000
  distinguisherMethod: {type: ByUser}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata: {name: kubectl-found}
spec:
  priorityLevelConfiguration: {name: global-default}
  matchingPrecedence: 7001
"""

KUBECTL_LEVEL = """\
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: kubectl-level}
spec:
  type: Limited
  limited: {limitResponse: {type: Reject}}
"""


def test_kubectl_get_flowschemas_fills_missingpl(kubectl: Kubectl) -> None:
    """kubectl's MISSINGPL column is the Dangling condition's status ("?" without one)."""
    (kubectl.workdir / "fs.yaml").write_text(KUBECTL_MANIFESTS)
    (kubectl.workdir / "pl.yaml").write_text(KUBECTL_LEVEL)
    kubectl.run("create", "-f", "fs.yaml")

    def missing() -> dict[str, str]:
        lines = kubectl.run("get", "flowschemas").stdout.splitlines()
        header = lines[0].split()
        assert header[-1] == "MISSINGPL", lines[0]
        return {line.split()[0]: line.split()[-1] for line in lines[1:]}

    got = missing()
    assert (got["kubectl-dangling"], got["kubectl-found"]) == ("True", "False")
    kubectl.run("create", "-f", "pl.yaml")
    assert missing()["kubectl-dangling"] == "False"
    kubectl.run("delete", "-f", "pl.yaml")
    assert missing()["kubectl-dangling"] == "True"
