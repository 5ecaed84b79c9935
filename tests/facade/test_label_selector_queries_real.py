"""``labelSelector`` queries read as kube-apiserver reads them (``_label_query``).

The 65 lists of tests/data/real-apiserver-1.20/label-selector-queries.json, recorded
from a real kube-apiserver 1.20 on eight labelled ConfigMaps, are sent to serve's
facade: each answers the same ConfigMaps, or the same 400.

1.30's parser is 1.20's, but for its words where a requirement is not valid (it
reports a field error since apimachinery 0.2x: ``labels/selector.go``'s
``NewRequirement`` and ``validateLabelKey``, read at v0.30.0) and for the operators
it lists; :func:`as_1_30` rewrites the recorded words into 1.30's.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (
        Path(__file__).parent.parent / "data/real-apiserver-1.20/label-selector-queries.json"
    ).read_text()
)
NS = RECORDED["namespace"]


def as_1_30(message: str, selector: str) -> str:
    """The recorded (1.20) answer in 1.30's words."""
    message = message.replace(
        "expected: '=', '!=', '==', 'in', notin'", "expected: in, notin, =, ==, !=, gt, lt"
    )
    message = re.sub(r'invalid label key ("[^"]*"): ', r"<nil>: Invalid value: \1: ", message)
    message = re.sub(
        r'invalid label value: ("[^"]*"): at key: "([^"]*)": ',
        r"values[0][\2]: Invalid value: \1: ",
        message,
    )
    integer = "for 'Gt', 'Lt' operators, the value must be an integer"
    if message.endswith(integer):
        value = re.split("[<>]", selector, maxsplit=1)[1]
        message = message.replace(integer, f'values[0]: Invalid value: "{value}": {integer}')
    return message


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        for name, labels in RECORDED["objects"].items():
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "labels": labels},
            }
            status, _, answer = send(
                running, "POST", f"/api/v1/namespaces/{NS}/configmaps", json.dumps(body)
            )
            # "aneg" (a label "-3") was refused by the real server too: no list shows it
            assert status == (422 if name == "aneg" else 201), answer
        yield running


@pytest.mark.parametrize("listed", RECORDED["lists"], ids=lambda e: repr(e["selector"]))
def test_label_selector_as_recorded(server: KubeAPIServer, listed: dict[str, Any]) -> None:
    selector = listed["selector"]
    path = f"/api/v1/namespaces/{NS}/configmaps?labelSelector={urllib.parse.quote(selector)}"
    status, _, body = send(server, "GET", path, "")
    recorded = listed["answer"]
    if recorded["status"] == 200:
        assert (status, sorted(i["metadata"]["name"] for i in body["items"])) == (
            200,
            recorded["names"],
        )
    else:
        expected = as_1_30(recorded["message"], selector)
        assert (status, body["reason"], body["message"]) == (400, recorded["reason"], expected)


def test_the_1_30_words_differ_where_said() -> None:
    """as_1_30 rewrites the answers it says it rewrites, and no other."""
    changed = [
        e["selector"]
        for e in RECORDED["lists"]
        if e["answer"]["status"] == 400
        and as_1_30(e["answer"]["message"], e["selector"]) != e["answer"]["message"]
    ]
    assert changed == [
        "a>-5", "a<x", "a>", "bad key=v", "a b", "a!", "a/b/c=1", "Example.com/k=v", "-a=1",
        "a=-1", "a=" + "v" * 64, "k" * 64 + "=1",
    ]  # fmt: skip
