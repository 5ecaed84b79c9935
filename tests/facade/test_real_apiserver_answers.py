"""The facade answers as a real kube-apiserver (v1.20.2) answered the same requests.

tests/data/real-apiserver-1.20/error-answers.json holds 34 requests and the real
server's answers, recorded in order; they are replayed here in the same order
against the facade. Every answer has the real status code, except the one
listed in KNOWN_STATUS_DIFFERENCES; the answers in SAME_ANSWER match in full
(reason, message, details; uids aside).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (Path(__file__).parents[1] / "data/real-apiserver-1.20/error-answers.json").read_text()
)
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

#: Where the status itself differs, and why (docs/serve.md, "Not served yet").
KNOWN_STATUS_DIFFERENCES = {
    # An Exact list at resourceVersion 1: the real etcd compacted it (410); the
    # facade keeps its whole history.
    26: 200,
}

#: The answers the facade gives word for word.
SAME_ANSWER = [
    0,  # create the namespace
    1,  # create
    2,  # already exists
    3,  # an invalid name, with the regex
    4,  # no name
    7,  # a namespace in the body that differs from the URL's
    8,  # not found
    9,  # not found in a namespace that does not exist
    10,  # no such resource
    12,  # delete of a missing object
    13,  # a stale resourceVersion
    14,  # a name in the body that differs from the URL's
    15,  # update of a missing object
    16,  # merge patch
    22,  # patch of a missing object
    23,  # an owner reference without a uid
    28,  # a field selector on a field ConfigMaps do not index
    29,  # an unsupported propagation policy
    31,  # an unsupported dryRun value
    32,  # delete the namespace (Terminating: namespaces have the kubernetes finalizer)
    33,  # create in a terminating namespace
]


def normalized(answer: Any) -> Any:
    return json.loads(UID.sub("<uid>", json.dumps(answer)))


def shape(status: int, answer: Any) -> dict[str, Any]:
    if answer.get("kind") != "Status":
        return {"status": status, "kind": answer.get("kind")}
    kept = {k: answer.get(k) for k in ("kind", "reason", "message", "code")}
    if answer.get("details"):
        details = dict(answer["details"])
        details.pop("uid", None)
        kept["details"] = details
    return {"status": status, **normalized(kept)}


def test_the_recorded_requests_get_the_real_servers_answers() -> None:
    got: list[dict[str, Any]] = []
    # A real apiserver's namespaces terminate (the kubernetes finalizer) before they go.
    with run_in_thread(InMemoryStore(terminating_namespaces=True)) as server:
        for record in RECORDED:
            body = record["body"] if record["body"] is not None else ""
            content_type = record["contentType"] or "application/json"
            status, _, answer = send(server, record["method"], record["path"], body, content_type)
            got.append(shape(status, answer if isinstance(answer, dict) else {}))
    for index, record in enumerate(RECORDED):
        want_status = KNOWN_STATUS_DIFFERENCES.get(index, record["status"])
        where = f"#{index} {record['method']} {record['path']}"
        assert got[index]["status"] == want_status, (where, got[index], record["answer"])
    for index in SAME_ANSWER:
        record = RECORDED[index]
        want = {"status": record["status"], **record["answer"]}
        assert got[index] == want, (index, record["method"], record["path"])
