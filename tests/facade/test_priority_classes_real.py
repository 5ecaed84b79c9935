"""PriorityClasses validated and admitted as kube-apiserver does (the Priority plugin).

The steps of tests/data/real-apiserver-1.20/priority-classes.json, recorded from a real
kube-apiserver 1.20 (creates, dry runs and updates of PriorityClasses), are replayed
against serve's facade in order and each answer compared with the real one: a second
``globalDefault`` class is refused by the Priority admission plugin (403, dry run
too), a value above a billion or a ``system-`` name by validation, and the value and
preemptionPolicy may not change. 1.25+ names the value's field ``value`` where 1.20
said ``Value`` (kubernetes/kubernetes#111398).
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
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/priority-classes.json").read_text()
)["steps"]


def as_1_30(answer: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(answer).replace(
        "Value: Forbidden: may not be changed", "value: Forbidden: may not be changed"
    )
    text = text.replace('"field": "Value"', '"field": "value"')
    return dict(json.loads(text))


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        yield running


def _essentials(status: int, body: Any) -> dict[str, Any]:
    if status in (200, 201):
        return {
            "status": status,
            "value": body.get("value"),
            "globalDefault": body.get("globalDefault"),
            "preemptionPolicy": body.get("preemptionPolicy"),
        }
    return {
        "status": status,
        "reason": body.get("reason"),
        "message": body.get("message"),
        "details": body.get("details"),
    }


def test_the_recorded_steps(server: KubeAPIServer) -> None:
    for step in RECORDED:
        body = step["body"]
        if step["method"] == "PUT":
            status, _, current = send(server, "GET", step["path"], "")
            assert status == 200, current
            body = {**current, **body}
        status, _, answer = send(server, step["method"], step["path"], json.dumps(body))
        assert _essentials(status, answer) == as_1_30(step["answer"]), step["note"]


def test_a_system_name_is_one_of_the_system_classes_as_they_are() -> None:
    from ownergc_backends.memory._priority_classes import priority_class_errors

    def refusal(**obj: Any) -> list[str]:
        return [e.message() for e in priority_class_errors(obj)]

    prefix = (
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved "
        "for system use only. error: "
    )
    name = {"name": "system-cluster-critical"}
    assert refusal(metadata=name, value=2000000000) == []
    assert refusal(metadata=name, value=1) == [
        prefix + "value of system-cluster-critical PriorityClass must be 2000000000"
    ]
    assert refusal(metadata=name, value=2000000000, globalDefault=True) == [
        prefix + "system-cluster-critical PriorityClass must not be marked as global default"
    ]
