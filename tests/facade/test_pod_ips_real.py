"""A Pod's ``status.podIP`` / ``status.podIPs``, made to agree as kube-apiserver makes
them (``_pod_ips``): the writes of tests/data/real-apiserver-1.20/pod-ips.json
(recorded by tools/record_fieldsel.py) made again on serve's facade, each answer's
``podIP``/``podIPs`` (or the 422's reason and message) compared with the real one, then
the Pods a ``status.podIP=<ip>`` field selector lists.

The rule (1.20, recorded): ``podIP`` alone fills ``podIPs``; ``podIPs`` alone fills
``podIP`` with its first address; both, disagreeing, ``podIP`` wins and ``podIPs``
becomes that one address (the other family's is dropped). A merge patch of ``podIPs``
alone is therefore undone by the ``podIP`` it leaves. ``/status`` writes refuse an
invalid address, two of a family, more than two, and repeats.

Differences between 1.20 and 1.30: none known for these two fields. The rule is the
v1<->internal conversion of PodStatus (pkg/apis/core/v1/conversion.go of
kubernetes/kubernetes), unchanged as far as could be found (the KEP-563 design text's
"V1 to Core (Internal) Conversion" says ``podIP`` is verified against ``podIPs[0]``; the
code, 1.16 on, overrides instead, as recorded); 1.30 words the invalid address the same
(k8s.io/apimachinery v0.30.0 ``IsValidIP``) but parses it as ``ParseIPSloppy`` (IPv4
parts with leading zeros accepted, which a 1.20 built with a recent Go refuses): serve
accepts them, and no case here has one. 1.28+ applies the same rule to
``hostIP``/``hostIPs``, which serve does not yet do."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/pod-ips.json").read_text()
)
NS = RECORDED["namespace"]
PODS = f"/api/v1/namespaces/{NS}/pods"


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    store = InMemoryStore()
    with run_in_thread(store) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        for exchange in RECORDED["exchanges"]:
            replay(running, exchange)
        yield running


#: The answers of the setup above, by exchange note.
ANSWERS: dict[str, tuple[int, Any]] = {}


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
    }


def replay(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    name = exchange["name"]
    status, _, made = send(server, "POST", PODS, json.dumps(pod(name)))
    assert status == 201, made
    if exchange["method"] == "PUT":
        made["status"] = {**made["status"], **exchange["written"]}
        status, _, answer = send(server, "PUT", f"{PODS}/{name}/status", json.dumps(made))
    else:
        made["status"] = {**made["status"], **exchange["start"]}
        status, _, answer = send(server, "PUT", f"{PODS}/{name}/status", json.dumps(made))
        assert status == 200, answer
        status, _, answer = send(
            server,
            "PATCH",
            f"{PODS}/{name}/status",
            json.dumps(exchange["patch"]),
            "application/merge-patch+json",
        )
    ANSWERS[exchange["note"]] = (status, answer)


@pytest.mark.parametrize("exchange", RECORDED["exchanges"], ids=lambda e: e["note"])
def test_pod_ips_are_written_as_on_a_real_server(
    server: KubeAPIServer, exchange: dict[str, Any]
) -> None:
    status, answer = ANSWERS[exchange["note"]]
    assert status == exchange["status"], answer
    if status == 200:
        written = answer.get("status") or {}
        assert {k: written[k] for k in ("podIP", "podIPs") if k in written} == exchange.get(
            "ips", {}
        )
    else:
        assert (answer["reason"], answer["message"]) == (exchange["reason"], exchange["message"])


@pytest.mark.parametrize("ip", sorted(RECORDED["selected"]))
def test_status_pod_ip_selects_the_pods_a_real_server_selects(
    server: KubeAPIServer, ip: str
) -> None:
    path = f"{PODS}?fieldSelector=" + urllib.parse.quote(f"status.podIP={ip}", safe="")
    status, _, answer = send(server, "GET", path, "")
    assert status == 200, answer
    assert sorted(p["metadata"]["name"] for p in answer["items"]) == RECORDED["selected"][ip]


def test_an_update_of_the_pod_keeps_its_ips_agreeing(server: KubeAPIServer) -> None:
    """A PUT of the Pod itself keeps the stored status (what it says of the IPs is not
    written), and a Pod created with a status starts Pending without IPs."""
    status, _, made = send(server, "GET", f"{PODS}/ip0", "")
    made["status"]["podIPs"] = [{"ip": "10.9.9.9"}]
    made["metadata"]["labels"] = {"touched": "yes"}
    status, _, answer = send(server, "PUT", f"{PODS}/ip0", json.dumps(made))
    assert status == 200, answer
    assert (answer["status"]["podIP"], answer["status"]["podIPs"]) == (
        "10.0.0.1",
        [{"ip": "10.0.0.1"}],
    )
    body = {**pod("born"), "status": {"podIP": "10.9.9.8"}}
    status, _, answer = send(server, "POST", PODS, json.dumps(body))
    assert status == 201, answer
    assert "podIP" not in answer["status"] and "podIPs" not in answer["status"]
