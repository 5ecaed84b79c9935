"""The status subresource and the Service registry's refusals answer as a real
kube-apiserver (v1.20.2) answered (tests/data/real-apiserver-1.20/status-and-allocation.json).

Compared: each status code; for an object, ``spec.replicas`` and ``status``; for a
refusal, its reason, the fields of its causes and the end of each message (after
the value, which 1.20 prints in Go syntax). One message differs by design: an
address outside the service range names serve's range, in 1.30's words.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "data/real-apiserver-1.20/status-and-allocation.json").read_text()
)
#: Record index -> the message end serve answers instead, and why.
MESSAGE_DIFFERS = {
    # 1.30's allocator words it so, and serve's service range is kubeadm's
    9: "the provided IP (192.168.9.9) is not in the valid range. The range of valid IPs "
    "is 10.96.0.0/12",
}


def essentials(status: int, answer: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"status": status}
    if answer.get("kind") == "Status":
        causes = (answer.get("details") or {}).get("causes") or []
        out["reason"] = answer.get("reason")
        out["fields"] = [c.get("field") for c in causes]
        out["tails"] = [c["message"].rsplit(": ", 1)[-1] for c in causes]
    else:
        out["replicas"] = (answer.get("spec") or {}).get("replicas")
        out["status_body"] = answer.get("status")
    return out


def recorded(index: int, record: dict[str, Any]) -> dict[str, Any]:
    answer = record["answer"]
    out: dict[str, Any] = {"status": answer["code"]}
    if "reason" in answer:
        causes = answer.get("causes") or []
        out["reason"] = answer["reason"]
        out["fields"] = [c.get("field") for c in causes]
        out["tails"] = [
            MESSAGE_DIFFERS.get(index, c["message"].rsplit(": ", 1)[-1]) for c in causes
        ]
    else:
        out["replicas"] = answer["spec_replicas"]
        out["status_body"] = answer["status"]
    return out


def test_status_writes_and_allocation_refusals_answer_as_the_real_server() -> None:
    with run_in_thread(InMemoryStore()) as server:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "status-rec"}}
        assert send(server, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        for index, record in enumerate(RECORDED):
            status, _, answer = send(
                server,
                record["method"],
                record["path"],
                json.dumps(record["body"]),
                record["contentType"],
            )
            where = (index, record["method"], record["path"])
            assert essentials(status, answer) == recorded(index, record), where
