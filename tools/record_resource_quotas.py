"""Record a real kube-apiserver 1.20's answers to ResourceQuota creates (dry runs) with
invalid ``spec.hard`` entries (tests/data/real-apiserver-1.20/resource-quotas.json).

Run: ``python tools/record_resource_quotas.py > tests/data/.../resource-quotas.json``.
"""

import json
import sys

from _real_apiserver import call  # tools/

NS = "lead-quota"
CASES = [
    ("a standard quota", {"pods": "10", "requests.cpu": "1", "limits.memory": "1Gi"}),
    ("an unknown name", {"bogus": "2"}),
    ("a negative count", {"pods": "-1"}),
    ("a negative cpu", {"cpu": "-100m"}),
    ("a fractional count", {"pods": "1500m"}),
    ("a fractional count, decimal", {"services": "1.5"}),
    ("an object count", {"count/deployments.apps": "2"}),
    ("an object count, fractional", {"count/pods": "500m"}),
    ("a storage class quota", {"gold.storageclass.storage.k8s.io/requests.storage": "10Gi"}),
    ("an extended resource", {"requests.nvidia.com/gpu": "2"}),
    ("an extended resource, fractional", {"requests.nvidia.com/gpu": "500m"}),
    ("huge pages", {"hugepages-2Mi": "1Gi", "requests.hugepages-1Gi": "2Gi"}),
    ("storage (not a quota name)", {"storage": "1Gi"}),
    ("a bad qualified name", {"a/b/c": "1"}),
    ("an upper-case prefix", {"Example.com/x": "1"}),
    ("a name with a space", {"my thing": "1"}),
]


def main() -> None:
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    out = []
    for note, hard in CASES:
        body = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q"},
            "spec": {"hard": hard},
        }
        status, answer = call("POST", f"/api/v1/namespaces/{NS}/resourcequotas?dryRun=All", body)
        if status == 201:
            essentials = {"status": status, "hard": answer["spec"]["hard"]}
        else:
            essentials = {
                "status": status,
                **{k: answer.get(k) for k in ("reason", "message", "details")},
            }
        out.append({"note": note, "hard": hard, "answer": essentials})
    json.dump(
        {"server": "kube-apiserver v1.20.2", "namespace": NS, "creates": out}, sys.stdout, indent=1
    )


if __name__ == "__main__":
    main()
