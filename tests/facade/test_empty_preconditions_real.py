"""DELETE and ``pods/eviction`` with preconditions that are present but empty
(``{"uid": ""}``, ``{"resourceVersion": ""}``): the exchanges of
tests/data/real-apiserver-1.20/empty-preconditions.json (recorded by
tools/record_fieldsel.py) made again on serve's facade, each answer compared with the
real one (status, reason, message with the uid / resourceVersion it names, details), and
whether the object is still there after.

A present-but-empty value is a precondition like any other: it is compared with the
object's (never equal), so the DELETE is a 409. A ``null`` one is no precondition.

Differences between 1.20 and 1.30 (serve follows 1.30), in ``EVICTION_IN_1_30``: 1.30
marks the Pod with the ``DisruptionTarget`` condition before deleting it (feature
PodDisruptionConditions, beta and on in 1.26-1.30). That write checks the Eviction's
preconditions only when they are non-empty, and when the Eviction gave a
``resourceVersion`` (set, even empty: its ``resourceVersionIsUnset`` asks only whether it
is there) the delete then uses the version the write produced. So a Pod evicted with
``{"resourceVersion": ""}`` is deleted (201), and one evicted with ``{"uid": ""}`` keeps
the condition and the 409 of the delete's uid check. A dry run writes nothing, and
answers as 1.20. Learned from pkg/registry/core/pod/storage/eviction.go of
kubernetes/kubernetes 1.26-1.30 (``addConditionAndDeletePod``, ``resourceVersionIsUnset``;
found with the code search, not run)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/empty-preconditions.json").read_text()
)
NS = RECORDED["namespace"]

#: note -> (status, reason, whether the Pod is left with a DisruptionTarget condition)
EVICTION_IN_1_30: dict[str, tuple[int, str | None, bool]] = {
    "eviction of a Pending Pod, empty resourceVersion": (201, None, False),
    "eviction of a Pending Pod, empty uid": (409, "Conflict", True),
    "eviction of a Pending Pod, both empty": (409, "Conflict", True),
}


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    store = InMemoryStore()
    with run_in_thread(store) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        yield running


def _without_ids(message: str | None) -> str | None:
    """A message with the uid or resourceVersion it names taken out (each server has
    its own)."""
    if message is None:
        return None
    return re.sub(r"in record \([^)]*\)", "in record (<id>)", message)


@pytest.mark.parametrize("exchange", RECORDED["exchanges"], ids=lambda e: e["note"])
def test_an_empty_precondition_is_answered_as_on_a_real_server(
    server: KubeAPIServer, exchange: dict[str, Any]
) -> None:
    # (.../<resource>/<name>, or .../pods/<name>/eviction)
    collection = exchange["path"].rsplit("/", 2 if exchange["method"] == "POST" else 1)[0]
    status, _, made = send(server, "POST", collection, json.dumps(exchange["setup"]))
    assert status == 201, made
    status, _, answer = send(
        server, exchange["method"], exchange["path"], json.dumps(exchange["body"])
    )
    name = exchange["setup"]["metadata"]["name"]
    object_path = f"{collection}/{name}"
    after, _, left = send(server, "GET", object_path, "")
    in_1_30 = EVICTION_IN_1_30.get(exchange["note"])
    if in_1_30 is not None:
        expected_status, expected_reason, marked = in_1_30
        assert (status, answer.get("reason")) == (expected_status, expected_reason), answer
        if status == 409:
            assert _without_ids(answer["message"]) == _without_ids(exchange["message"])
        conditions = (left.get("status") or {}).get("conditions") or [] if after == 200 else []
        assert any(c.get("type") == "DisruptionTarget" for c in conditions) == marked
        assert after == (200 if status == 409 else 404)
    else:
        assert status == exchange["status"], answer
        if exchange.get("reason") is not None:
            assert answer["reason"] == exchange["reason"]
            assert _without_ids(answer["message"]) == _without_ids(exchange["message"])
            assert answer["details"] == exchange["details"]
        assert after == exchange["after"]
    if after == 200:
        send(server, "DELETE", object_path, "")
