"""ResourceQuota ``spec.hard`` validated as kube-apiserver validates it (``_quota_validation``).

The dry-run creates of tests/data/real-apiserver-1.20/resource-quotas.json, recorded
from a real kube-apiserver 1.20 (the same rules and words in 1.30), are sent to
serve's facade: each is stored with the same canonical quantities or refused with the
same 422. One difference is listed: serve validates the defaulted object, whose
quantities are already canonical (``1.5`` is ``1500m``), so the ``resource.Quantity``
it prints for ``services: "1.5"`` is the one parsed from ``1500m``.
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
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/resource-quotas.json").read_text()
)
NS = RECORDED["namespace"]
PARSED_FROM_CANONICAL = {
    "a fractional count, decimal": (
        "resource.Quantity{i:resource.int64Amount{value:15, scale:-1}, "
        'd:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"", Format:"DecimalSI"}',
        "resource.Quantity{i:resource.int64Amount{value:1500, scale:-3}, "
        'd:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"1500m", Format:"DecimalSI"}',
    )
}


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        yield running


def _expected(create: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(create["answer"])
    if create["note"] in PARSED_FROM_CANONICAL:
        real, serve = PARSED_FROM_CANONICAL[create["note"]]
        text = text.replace(json.dumps(real)[1:-1], json.dumps(serve)[1:-1])
    return dict(json.loads(text))


@pytest.mark.parametrize("create", RECORDED["creates"], ids=lambda c: c["note"])
def test_resource_quota_as_recorded(server: KubeAPIServer, create: dict[str, Any]) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q"},
        "spec": {"hard": create["hard"]},
    }
    status, _, answer = send(
        server, "POST", f"/api/v1/namespaces/{NS}/resourcequotas?dryRun=All", json.dumps(body)
    )
    if status == 201:
        got: dict[str, Any] = {"status": status, "hard": answer["spec"]["hard"]}
    else:
        got = {"status": status, **{k: answer.get(k) for k in ("reason", "message", "details")}}
    assert got == _expected(create)
