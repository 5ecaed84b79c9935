"""Record a real kube-apiserver 1.20's answers to PriorityClass creates, dry runs and
updates (tests/data/real-apiserver-1.20/priority-classes.json).

Run: ``python tools/record_priority_classes.py > tests/data/.../priority-classes.json``.
"""

import json
import sys

from _real_apiserver import call  # tools/

P = "/apis/scheduling.k8s.io/v1/priorityclasses"


def pc(name, value, **extra):
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


def ess(s, b):
    if s in (200, 201):
        return {
            "status": s,
            "value": b.get("value"),
            "globalDefault": b.get("globalDefault"),
            "preemptionPolicy": b.get("preemptionPolicy"),
        }
    return {
        "status": s,
        "reason": b.get("reason"),
        "message": b.get("message"),
        "details": b.get("details"),
    }


for n in ("lead-pc-a", "lead-pc-b", "lead-pc-c"):
    call("DELETE", f"{P}/{n}")
steps = [
    ("create a default", "POST", P, pc("lead-pc-a", 10, globalDefault=True)),
    ("create a second default", "POST", P, pc("lead-pc-b", 20, globalDefault=True)),
    (
        "dry-run a second default",
        "POST",
        P + "?dryRun=All",
        pc("lead-pc-b", 20, globalDefault=True),
    ),
    ("create a non-default", "POST", P, pc("lead-pc-c", 30)),
    ("make the non-default a default", "PUT", P + "/lead-pc-c", None),
    ("update the default, still default", "PUT", P + "/lead-pc-a", None),
    ("change a value", "PUT", P + "/lead-pc-c", "value"),
    ("change a preemptionPolicy", "PUT", P + "/lead-pc-c", "policy"),
    ("a value over a billion", "POST", P + "?dryRun=All", pc("lead-pc-big", 1000000001)),
    ("a value of a billion", "POST", P + "?dryRun=All", pc("lead-pc-billion", 1000000000)),
    ("a system- name", "POST", P + "?dryRun=All", pc("system-lead", 10)),
    (
        "a bad preemptionPolicy",
        "POST",
        P + "?dryRun=All",
        pc("lead-pc-bad", 10, preemptionPolicy="Sometimes"),
    ),
    (
        "no value",
        "POST",
        P + "?dryRun=All",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "lead-pc-novalue"},
        },
    ),
    ("a negative value", "POST", P + "?dryRun=All", pc("lead-pc-neg", -5)),
]
out = []
for note, method, path, body in steps:
    if method == "PUT":
        s, cur = call("GET", path)
        if body is None:
            cur["globalDefault"] = True
        elif body == "value":
            cur["value"] = cur["value"] + 1
        elif body == "policy":
            cur["preemptionPolicy"] = "Never"
        body = cur
    s, b = call(method, path, body)
    out.append(
        {
            "note": note,
            "method": method,
            "path": path,
            "body": body
            if method == "POST"
            else {k: body[k] for k in ("value", "globalDefault", "preemptionPolicy") if k in body},
            "answer": ess(s, b),
        }
    )
for n in ("lead-pc-a", "lead-pc-b", "lead-pc-c"):
    call("DELETE", f"{P}/{n}")
json.dump({"server": "kube-apiserver v1.20.2", "steps": out}, sys.stdout, indent=1)
