"""Label selectors refused on a write as kube-apiserver refuses them
(``_spec_validation``, ``_selectors.label_selector_errors``).

The writes of tests/data/real-apiserver-1.20/label-selectors.json, recorded from a real
kube-apiserver 1.20 (``tools/record_label_selectors.py``), are sent to serve's facade and
each answer is compared with the real one: the status code and, for a Status, its
message, reason, details and every cause exactly. Serve is 1.30: its
PodDisruptionBudgets are written as policy/v1 (1.30 serves no policy/v1beta1; the
selector is validated alike), and where 1.30 answers otherwise than 1.20 the answer
expected is 1.30's, as listed in ``DIFFERS_IN_1_30`` with where that was learned.
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

RECORDED: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "data/real-apiserver-1.20/label-selectors.json").read_text()
)["exchanges"]
NS = "labelsel-rec"

_LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
#: kubernetes/apimachinery, pkg/apis/meta/v1/validation/validation.go at v0.30.0
#: (ValidateLabelSelectorRequirement: each expression value must be a label value unless
#: an update keeps stored bad ones; commits 579ce622 "Add extra value validation for
#: matchExpression field in LabelSelector" (2022-01) and e4637b9f "Update workload
#: selector validation" (2022-11)). 1.20 checked the values only when it turned the
#: selector into one (a workload's "invalid label selector"); a budget's it did not check.
_VALUES_CHECKED = "apimachinery v0.30.0 ValidateLabelSelectorRequirement"


def _value_cause(field: str, value: str) -> dict[str, str]:
    return {
        "field": field,
        "message": f'Invalid value: "{value}": {_LABEL_VALUE}',
        "reason": "FieldValueInvalid",
    }


#: Recorded note -> (the causes 1.30 adds, at which index, or the whole answer when 1.20
#: took the write), and where the 1.30 behaviour was learned.
DIFFERS_IN_1_30: dict[str, tuple[int, list[dict[str, str]], str]] = {
    "Deployment, expression value not a label value": (
        0,
        [_value_cause("spec.selector.matchExpressions[0].values[0]", "not ok")],
        _VALUES_CHECKED,
    ),
    "ReplicaSet, expression value not a label value": (
        0,
        [_value_cause("spec.selector.matchExpressions[0].values[1]", "b c")],
        _VALUES_CHECKED,
    ),
    "PodDisruptionBudget, expression value not a label value": (
        0,
        [_value_cause("spec.selector.matchExpressions[0].values[0]", "we b")],
        _VALUES_CHECKED + " (1.20 created this budget: 201)",
    ),
}
#: A refusal's qualified kind (its message and details.group) where serve names it
#: otherwise than 1.20 (none now: a NetworkPolicy's is ``NetworkPolicy.extensions``,
#: the internal type's first registered group, in 1.20 as in 1.30; see
#: tests/facade/test_networking_validation_real.py).
KIND_NAMED: dict[str, str] = {}
#: Recorded but not replayed: what serve does not validate (none now).
NOT_REPLAYED: set[str] = set()


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    store = InMemoryStore()
    with run_in_thread(store) as running:
        code, _, made = send(
            running,
            "POST",
            "/api/v1/namespaces",
            json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
        )
        assert code == 201, made
        yield running


def _served(text: str) -> str:
    return text.replace("/apis/policy/v1beta1/", "/apis/policy/v1/").replace(
        '"policy/v1beta1"', '"policy/v1"'
    )


def _message(answer: dict[str, Any]) -> str:
    """A 422's message as kube-apiserver builds it from its causes."""
    details = answer["details"]
    group = f".{details['group']}" if details.get("group") else ""
    head = f'{details["kind"]}{group} "{details["name"]}" is invalid: '
    causes = [f"{c['field']}: {c['message']}" for c in details["causes"]]
    return head + (causes[0] if len(causes) == 1 else "[" + ", ".join(causes) + "]")


def expected(exchange: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, answer = exchange["status"], exchange["answer"]
    differs = DIFFERS_IN_1_30.get(exchange["note"])
    if differs is not None:
        at, added, _ = differs
        body = exchange["body"]
        if status == 201:
            group, _, _ = body["apiVersion"].rpartition("/")
            answer = {
                "status": "Failure",
                "reason": "Invalid",
                "details": {"name": body["metadata"]["name"], "group": group, "kind": body["kind"],
                            "causes": []},
                "code": 422,
            }  # fmt: skip
        causes = list(answer["details"]["causes"])
        causes[at:at] = added
        answer = {**answer, "details": {**answer["details"], "causes": causes}}
        answer["message"] = _message(answer)
        status = 422
    message = answer.get("message")
    for theirs, ours in KIND_NAMED.items():
        if isinstance(message, str) and message.startswith(theirs + " "):
            answer = {**answer, "message": ours + message.removeprefix(theirs)}
            group = ours.partition(".")[2]
            answer["details"] = {**answer["details"], "group": group}
    return status, answer


def _essentials(answer: dict[str, Any]) -> dict[str, Any]:
    if answer.get("kind") == "Status":
        keys = ("status", "message", "reason", "details", "code")
        return {k: answer[k] for k in keys if k in answer}
    return {"kind": answer.get("kind")}


def _update(server: KubeAPIServer, exchange: dict[str, Any]) -> tuple[int, Any]:
    """Create the recorded object, then PUT the recorded body over it (its metadata
    serve's: its uid and resourceVersion)."""
    path = _served(exchange["path"]).removesuffix("?dryRun=All")
    collection = path.rpartition("/")[0]
    code, _, made = send(server, "POST", collection, _served(json.dumps(exchange["create"])))
    assert code == 201, made
    body = json.loads(_served(json.dumps(exchange["body"])))
    body["metadata"] = made["metadata"]
    code, _, answer = send(server, "PUT", path + "?dryRun=All", json.dumps(body))
    return code, answer


@pytest.mark.parametrize(
    "exchange", [e for e in RECORDED if e["note"] not in NOT_REPLAYED], ids=lambda e: e["note"]
)
def test_a_recorded_write_is_answered_as_the_real_server_answered(
    server: KubeAPIServer, exchange: dict[str, Any]
) -> None:
    if exchange["method"] == "PUT":
        code, answer = _update(server, exchange)
    else:
        code, _, answer = send(
            server, "POST", _served(exchange["path"]), _served(json.dumps(exchange["body"]))
        )
    status, want = expected(exchange)
    assert (code, _essentials(answer)) == (status, want)


def test_the_recording_has_what_the_tables_name() -> None:
    notes = {e["note"] for e in RECORDED}
    assert set(DIFFERS_IN_1_30) <= notes and notes >= NOT_REPLAYED
    assert len(RECORDED) == 48
