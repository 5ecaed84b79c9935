"""JSON patches answered as kube-apiserver answers them (``_patch.apply_json_patch``).

kube-apiserver applies a JSON patch (RFC 6902) with evanphx/json-patch v4, whose
reading of the RFC is looser in places: a missing ``value`` is null, ``replace``
and ``copy`` of a missing object member act on null, array indices may be
negative (counted from the end), ``+1`` and ``01`` are indices, a ``~`` not
followed by ``0`` or ``1`` stays as it is. And it answers every patch that
cannot be applied with the same 422 (no word of what failed). The patches of
tests/data/real-apiserver-1.20/json-patch.json, recorded from a real
kube-apiserver 1.20 (all ``dryRun=All`` on one Deployment), are sent to serve's
facade and each answer is compared with the real one: the status code, and for
a success the fields the patches touch, for a Status every field.

Serve is 1.30, whose json-patch (v4.12) differs from 1.20's (v4.9) where
``CHANGED_IN_1_30`` says. The two patches that made the 1.20 server panic are
checked against 1.30's answer there too.
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
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/json-patch.json").read_text()
)
NS = RECORDED["namespace"]
PATH = f"/apis/apps/v1/namespaces/{NS}/deployments/jp"
GENERIC = "the server rejected our request due to an error in our request"


def _containers(args: list[str]) -> list[dict[str, Any]]:
    return [
        {"name": "c", "image": "nginx", "args": args},
        {"name": "d", "image": "busybox", "args": None},
    ]


#: Where 1.30 (json-patch v4.12) answers otherwise than the recorded 1.20 (v4.9): negative
#: indices also for replace and test (1.20 crashed on them: no answer was recorded), and the
#: whole document tested or replaced through the empty path.
CHANGED_IN_1_30: dict[str, dict[str, Any]] = {
    "array replace -1": {"status": 200, "changed": {"containers": _containers(["a", "b", "n"])}},
    "array test -1": {"status": 200, "changed": {"replicas": 4}},
}
#: The Go that built the recorded server (1.27) names an array element's path in a decoding
#: error; 1.30's (Go 1.22) does not.
WORDED_IN_1_30 = {
    "an operation that is not an object": (
        "json: cannot unmarshal number into Go value of type jsonpatch.Operation"
    ),
}
#: Not replayed. ``replace the root``: 1.30 replaces the whole document, and what its
#: decoder then makes of ``{"x": 1}`` as a Deployment was not recorded (serve refuses it:
#: no name). ``not JSON``: serve words a malformed body its own way (still a 400).
NOT_REPLAYED = {"replace the root": None, "not JSON": 400}


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    store = InMemoryStore()
    with run_in_thread(store) as running:
        status, _, answer = send(
            running,
            "POST",
            "/api/v1/namespaces",
            json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
        )
        assert status == 201, answer
        status, _, answer = send(
            running, "POST", PATH.rsplit("/", 1)[0], json.dumps(RECORDED["object"])
        )
        assert status == 201, answer
        yield running


def _projection(obj: dict[str, Any]) -> dict[str, Any]:
    meta, spec = obj.get("metadata", {}), obj.get("spec", {})
    return {
        "labels": meta.get("labels"),
        "annotations": dict(meta.get("annotations") or {}),
        "replicas": spec.get("replicas"),
        "minReadySeconds": spec.get("minReadySeconds"),
        "containers": [
            {k: c.get(k) for k in ("name", "image", "args")}
            for c in spec.get("template", {}).get("spec", {}).get("containers", [])
        ],
    }


def _essentials(status: int, body: Any) -> dict[str, Any]:
    if status == 200:
        return {"status": 200, "object": _projection(body)}
    return {
        "status": status,
        "kind": body.get("kind"),
        "reason": body.get("reason"),
        "message": body.get("message"),
        "details": body.get("details"),
    }


def _expected(exchange: dict[str, Any]) -> dict[str, Any]:
    change = CHANGED_IN_1_30.get(exchange["name"])
    if change is None:
        answer = dict(exchange["answer"])
        if exchange["name"] in WORDED_IN_1_30:
            answer["message"] = WORDED_IN_1_30[exchange["name"]]
        return answer
    return {"status": 200, "object": {**RECORDED["stored"], **change["changed"]}}


def _comparable(answer: dict[str, Any]) -> dict[str, Any]:
    """A decode error quotes the whole patched object (uid, times, managedFields): its
    first words, up to the object, are compared. A real server lists an update's
    metadata errors several times (its validation passes each check them): each
    distinct cause is compared once."""
    message = answer.get("message") or ""
    if message.startswith(' "" is invalid: patch: Invalid value: '):
        return {**answer, "message": message[:38], "details": None}
    details = answer.get("details")
    if details and "causes" in details:
        distinct = list({json.dumps(c, sort_keys=True): c for c in details["causes"]}.values())
        return {**answer, "details": {**details, "causes": distinct}}
    return answer


def _patch(server: KubeAPIServer, patch: str) -> tuple[int, Any]:
    status, _, body = send(
        server, "PATCH", PATH + "?dryRun=All", patch, "application/json-patch+json"
    )
    return status, body


@pytest.mark.parametrize(
    "exchange",
    [e for e in RECORDED["exchanges"] if e["name"] not in NOT_REPLAYED],
    ids=lambda e: e["name"],
)
def test_json_patch_as_recorded(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    status, body = _patch(server, exchange["patch"])
    assert _comparable(_essentials(status, body)) == _comparable(_expected(exchange))


def test_a_malformed_patch_is_a_400(server: KubeAPIServer) -> None:
    status, body = _patch(server, "[{")
    assert (status, body["reason"]) == (400, "BadRequest")


def test_the_root_is_replaced_or_tested_whole(server: KubeAPIServer) -> None:
    """1.30's json-patch reads the empty path as the whole document for replace and test."""
    status, _, current = send(server, "GET", PATH, "")
    assert status == 200
    status, body = _patch(server, json.dumps([{"op": "test", "path": "", "value": current}]))
    assert status == 200, body
    current["spec"]["replicas"] = 7
    status, body = _patch(server, json.dumps([{"op": "replace", "path": "", "value": current}]))
    assert (status, body["spec"]["replicas"]) == (200, 7)
    status, body = _patch(server, json.dumps([{"op": "test", "path": "", "value": current}]))
    assert (status, body.get("message")) == (422, GENERIC)


def test_the_most_operations_a_patch_may_have(server: KubeAPIServer) -> None:
    noop = {"op": "test", "path": "/spec/replicas", "value": 3}
    status, body = _patch(server, json.dumps([noop] * 10_000))
    assert status == 200, body
    status, body = _patch(server, json.dumps([noop] * 10_001))
    assert (status, body["reason"], body["message"]) == (
        413,
        "RequestEntityTooLarge",
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
        "got 10001",
    )
