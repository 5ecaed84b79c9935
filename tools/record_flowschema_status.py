"""Record how a real kube-apiserver maintains a FlowSchema's ``Dangling`` condition.

Against the running kube-apiserver (HELPERS.md: v1.20.2, flowcontrol v1beta1), with
objects named ``flowstatus-*`` and labelled ``flowstatus-rec=1``: FlowSchemas naming
a missing and an existing PriorityLevelConfiguration, the missing one created and
deleted, a FlowSchema's level changed, a client's status write, and a watch on the
labelled FlowSchemas throughout. Each step's answer and the FlowSchemas read back
after the server's APF configuration controller settled go to
``tests/data/real-apiserver-1.20/flowschema-status.json`` (uids, times and
resourceVersions replaced by placeholders that keep their order). Usage::

    python tools/record_flowschema_status.py [--server https://127.0.0.1:16443]
"""

from __future__ import annotations

import argparse
import copy
import json
import threading
import time
from pathlib import Path
from typing import Any

import requests
import urllib3

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/data/real-apiserver-1.20/flowschema-status.json"
GV = "flowcontrol.apiserver.k8s.io/v1beta1"
BASE = f"/apis/{GV}"
LABEL = {"flowstatus-rec": "1"}
SETTLE = 3.0  # seconds: the controller's writes are asynchronous


def flow_schema(name: str, level: str) -> dict[str, Any]:
    return {
        "apiVersion": GV,
        "kind": "FlowSchema",
        "metadata": {"name": name, "labels": LABEL},
        "spec": {
            "priorityLevelConfiguration": {"name": level},
            "matchingPrecedence": 5000,
            "rules": [
                {
                    "subjects": [{"kind": "User", "user": {"name": "flowstatus-nobody"}}],
                    "resourceRules": [
                        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"],
                         "namespaces": ["flowstatus"]}
                    ],
                }
            ],
        },
    }  # fmt: skip


def priority_level(name: str) -> dict[str, Any]:
    return {
        "apiVersion": GV,
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name, "labels": LABEL},
        "spec": {
            "type": "Limited",
            "limited": {"assuredConcurrencyShares": 1, "limitResponse": {"type": "Reject"}},
        },
    }


class Recorder:
    def __init__(self, server: str, token: str) -> None:
        self.server = server
        self.session = requests.Session()
        self.session.verify = False
        self.session.trust_env = False  # (a CA bundle from the environment would verify)
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.exchanges: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []

    def send(self, note: str, method: str, path: str, body: Any = None,
             content_type: str = "application/json") -> Any:  # fmt: skip
        data = None if body is None else json.dumps(body)
        answer = self.session.request(
            method, self.server + path, data=data, headers={"Content-Type": content_type}
        )
        got = answer.json()
        self.exchanges.append(
            {"note": note, "method": method, "path": path, "body": body,
             "status": answer.status_code, "answer": got}
        )  # fmt: skip
        return got

    def read(self, note: str, name: str) -> Any:
        return self.send(note, "GET", f"{BASE}/flowschemas/{name}")

    def watch(self, since: str, stop: threading.Event) -> None:
        path = (
            f"{BASE}/flowschemas?watch=1&resourceVersion={since}"
            f"&labelSelector=flowstatus-rec%3D1&timeoutSeconds=120"
        )
        with self.session.get(self.server + path, stream=True) as stream:
            for line in stream.iter_lines():
                if stop.is_set():
                    return
                if line:
                    event = json.loads(line)
                    obj = event["object"]
                    self.events.append(
                        {"type": event["type"], "name": obj["metadata"]["name"],
                         "resourceVersion": obj["metadata"]["resourceVersion"],
                         "level": obj["spec"]["priorityLevelConfiguration"]["name"],
                         "status": obj.get("status"),
                         "managers": [
                             {k: m.get(k) for k in ("manager", "operation", "subresource")}
                             for m in obj["metadata"].get("managedFields") or []
                         ]}
                    )  # fmt: skip


_PLACEHOLDERS = {"uid": "uid", "creationTimestamp": "time", "lastTransitionTime": "time",
                 "time": "time", "resourceVersion": "rv"}  # fmt: skip


def collect(value: Any, found: dict[str, set[str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in _PLACEHOLDERS and isinstance(v, str):
                found.setdefault(_PLACEHOLDERS[k], set()).add(v)
            else:
                collect(v, found)
    elif isinstance(value, list):
        for v in value:
            collect(v, found)


def scrub(value: Any, names: dict[str, str]) -> Any:
    """Uids, times and resourceVersions as placeholders, the same value the same one."""
    if isinstance(value, dict):
        return {
            k: names.get(v, v) if k in _PLACEHOLDERS and isinstance(v, str) else scrub(v, names)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [scrub(v, names) for v in value]
    return value


def placeholders(*values: Any) -> dict[str, str]:
    """Each uid, time and resourceVersion's placeholder, numbered in sorted order (times
    and resourceVersions in the order they happened)."""
    found: dict[str, set[str]] = {}
    for value in values:
        collect(value, found)
    names: dict[str, str] = {}
    for kind, seen in found.items():
        order = sorted(seen, key=lambda v: (len(v), v) if kind == "rv" else v)
        names.update({v: f"<{kind}-{i}>" for i, v in enumerate(order, 1)})
    return names


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="https://127.0.0.1:16443")
    parser.add_argument("--token", default="kcm-bench-token")
    args = parser.parse_args()
    urllib3.disable_warnings()
    rec = Recorder(args.server, args.token)
    for name in ("flowstatus-dangling", "flowstatus-found"):
        rec.session.delete(f"{args.server}{BASE}/flowschemas/{name}")
    rec.session.delete(f"{args.server}{BASE}/prioritylevelconfigurations/flowstatus-pl")
    time.sleep(SETTLE)
    since = rec.session.get(f"{args.server}{BASE}/flowschemas").json()["metadata"][
        "resourceVersion"
    ]
    stop = threading.Event()
    watcher = threading.Thread(target=rec.watch, args=(since, stop), daemon=True)
    watcher.start()
    time.sleep(1)

    rec.send("create a FlowSchema naming a missing level", "POST", f"{BASE}/flowschemas",
             flow_schema("flowstatus-dangling", "flowstatus-pl"))  # fmt: skip
    time.sleep(SETTLE)
    rec.read("settled: Dangling True", "flowstatus-dangling")
    rec.send("create a FlowSchema naming an existing level", "POST", f"{BASE}/flowschemas",
             flow_schema("flowstatus-found", "global-default"))  # fmt: skip
    time.sleep(SETTLE)
    rec.read("settled: Dangling False", "flowstatus-found")
    rec.send("create the missing level", "POST", f"{BASE}/prioritylevelconfigurations",
             priority_level("flowstatus-pl"))  # fmt: skip
    time.sleep(SETTLE)
    rec.read("settled: the level's FlowSchema flipped to False", "flowstatus-dangling")
    current = copy.deepcopy(rec.read("before a client's status write", "flowstatus-found"))
    current["status"] = {
        "conditions": [
            {"type": "Dangling", "status": "True", "reason": "ByClient",
             "message": "written by a client", "lastTransitionTime": "2020-01-01T00:00:00Z"},
            {"type": "Other", "status": "True", "reason": "ByClient",
             "lastTransitionTime": "2020-01-01T00:00:00Z"},
        ]
    }  # fmt: skip
    rec.send("a client writes the status", "PUT", f"{BASE}/flowschemas/flowstatus-found/status",
             current)  # fmt: skip
    time.sleep(SETTLE)
    rec.read("settled after the client's status write", "flowstatus-found")
    rec.send("a spec change that keeps the level", "PATCH", f"{BASE}/flowschemas/flowstatus-found",
             {"spec": {"matchingPrecedence": 5001}}, "application/merge-patch+json")  # fmt: skip
    time.sleep(SETTLE)
    rec.read("settled after a spec change that keeps the level", "flowstatus-found")
    rec.send("a FlowSchema's level changed to a missing one", "PATCH",
             f"{BASE}/flowschemas/flowstatus-found",
             {"spec": {"priorityLevelConfiguration": {"name": "flowstatus-none"}}},
             "application/merge-patch+json")  # fmt: skip
    time.sleep(SETTLE)
    rec.read("settled: the changed FlowSchema Dangling True", "flowstatus-found")
    rec.send("delete the level", "DELETE", f"{BASE}/prioritylevelconfigurations/flowstatus-pl")
    time.sleep(SETTLE)
    rec.read("settled: the level's FlowSchema flipped to True", "flowstatus-dangling")
    rec.send("delete a FlowSchema", "DELETE", f"{BASE}/flowschemas/flowstatus-dangling")
    rec.send("delete a FlowSchema", "DELETE", f"{BASE}/flowschemas/flowstatus-found")
    time.sleep(SETTLE)
    stop.set()

    seen = placeholders(rec.exchanges, rec.events)
    record = {
        "recorded": (
            "kube-apiserver v1.20.2 (this machine's /work/k8sbuild), flowcontrol v1beta1, "
            f"{time.strftime('%Y-%m-%d')}, by tools/record_flowschema_status.py: each step "
            f"then a read after {SETTLE}s, while a watch on the labelled FlowSchemas ran "
            "from before the first step. uids, times and resourceVersions are placeholders "
            "numbered in sorted order (the same value, the same placeholder; rv-N before "
            "rv-N+1 as the server counted)."
        ),
        "exchanges": scrub(rec.exchanges, seen),
        "watch": scrub(rec.events, seen),
    }
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"{len(rec.exchanges)} exchanges, {len(rec.events)} events -> {OUT}")


if __name__ == "__main__":
    main()
