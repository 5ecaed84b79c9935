"""Record a real kube-apiserver's answers to pods/binding, bindings, namespaces/finalize,
namespaces/status and pods/ephemeralcontainers (tests/data/real-apiserver-1.20/
pod-subresources.json).

Run against a throwaway server (no kube-controller-manager needed):
``python scripts/record_pod_subresources.py https://127.0.0.1:16443 TOKEN > out.json``.
It creates namespaces ``podsubres-rec`` and ``podsubres-fin`` and leaves nothing behind.
Requests and answers are kept whole; uids, timestamps, resourceVersions and
managedFields are replaced by placeholders (tests compare what does not vary between
servers, and send their own server's values).
"""

from __future__ import annotations

import json
import ssl
import sys
import urllib.error
import urllib.request
from typing import Any

NS = "podsubres-rec"
FIN = "podsubres-fin"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def scrub(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "managedFields":
                out[key] = "<managedFields>"
            elif key in ("uid", "resourceVersion") and isinstance(item, str):
                out[key] = f"<{key}>"
            elif key in ("creationTimestamp", "deletionTimestamp", "lastTransitionTime") and item:
                out[key] = f"<{key}>"
            else:
                out[key] = scrub(item)
        return out
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


class Recorder:
    def __init__(self, base: str, token: str) -> None:
        self.base = base
        self.token = token
        self.ctx = ssl._create_unverified_context()
        self.exchanges: list[dict[str, Any]] = []

    def send(
        self, method: str, path: str, body: Any = None, ctype: str = "application/json"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(request, context=self.ctx) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw)
            except ValueError:
                return error.code, raw.decode()

    def record(
        self, note: str, method: str, path: str, body: Any = None, ctype: str = "application/json"
    ) -> Any:
        status, answer = self.send(method, path, body, ctype)
        entry: dict[str, Any] = {"note": note, "method": method, "path": path}
        if body is not None:
            entry["contentType"] = ctype
        entry.update(body=scrub(body), status=status, answer=scrub(answer))
        self.exchanges.append(entry)
        return answer


def pod(name: str, finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
    }


def binding(name: str, node: str | None = "node-1", **meta: Any) -> dict[str, Any]:
    target: dict[str, Any] = {"kind": "Node"}
    if node is not None:
        target["name"] = node
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, **meta},
        "target": target,
    }


def main() -> None:
    base, token = sys.argv[1], sys.argv[2]
    r = Recorder(base, token)
    pods = f"/api/v1/namespaces/{NS}/pods"
    # setup (not recorded)
    r.send(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    r.send(
        "POST",
        f"/api/v1/namespaces/{NS}/serviceaccounts",
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default"},
            "automountServiceAccountToken": False,
        },
    )
    for name in ("p1", "p2", "p3", "p4", "p5", "p6"):
        r.send("POST", pods, pod(name))
    r.send("POST", pods, pod("held", ["example.com/hold"]))

    # ---- pods/binding and bindings
    r.record("bind p1 through pods/p1/binding", "POST", f"{pods}/p1/binding", binding("p1"))
    r.record("p1 bound: spec.nodeName and the PodScheduled condition", "GET", f"{pods}/p1")
    r.record(
        "bind p1 again: already assigned", "POST", f"{pods}/p1/binding", binding("p1", "node-2")
    )
    r.record(
        "bind p2 through the bindings resource",
        "POST",
        f"/api/v1/namespaces/{NS}/bindings",
        binding("p2"),
    )
    r.record("p2 bound", "GET", f"{pods}/p2")
    r.record(
        "the Binding names another pod than the path", "POST", f"{pods}/p3/binding", binding("p4")
    )
    r.record("no target name", "POST", f"{pods}/p3/binding", binding("p3", None))
    bad_kind = binding("p3")
    bad_kind["target"]["kind"] = "Pod"
    r.record("a target of another kind than Node", "POST", f"{pods}/p3/binding", bad_kind)
    r.record("no such pod", "POST", f"{pods}/nothere/binding", binding("nothere"))
    r.record("dry run", "POST", f"{pods}/p3/binding?dryRun=All", binding("p3"))
    r.record("after the dry run: not bound", "GET", f"{pods}/p3")
    r.record(
        "annotations of the Binding land on the pod",
        "POST",
        f"{pods}/p3/binding",
        binding("p3", annotations={"example.com/why": "test"}),
    )
    r.record("p3 bound with the annotation", "GET", f"{pods}/p3")
    r.record(
        "a Binding with another uid than the pod's",
        "POST",
        f"{pods}/p5/binding",
        binding("p5", uid="00000000-0000-0000-0000-000000000000"),
    )
    r.record("GET of pods/binding", "GET", f"{pods}/p5/binding")
    r.record("PATCH of pods/binding", "PATCH", f"{pods}/p5/binding", {}, MERGE)
    r.record("GET of the bindings collection", "GET", f"/api/v1/namespaces/{NS}/bindings")
    r.record(
        "a Binding of another kind in the body",
        "POST",
        f"{pods}/p5/binding",
        {**binding("p5"), "kind": "Pod"},
    )
    r.send("DELETE", f"{pods}/held")
    r.record(
        "bind a pod with a stale resourceVersion",
        "POST",
        f"{pods}/p6/binding",
        binding("p6", resourceVersion="1"),
    )
    r.record("bind a pod being deleted", "POST", f"{pods}/held/binding", binding("held"))

    # ---- pods/ephemeralcontainers: the EphemeralContainers feature is off in 1.20
    r.record(
        "GET pods/p6/ephemeralcontainers (feature gate off in 1.20)",
        "GET",
        f"{pods}/p6/ephemeralcontainers",
    )
    r.record(
        "PATCH pods/p6/ephemeralcontainers (feature gate off in 1.20)",
        "PATCH",
        f"{pods}/p6/ephemeralcontainers",
        {"spec": {"ephemeralContainers": [{"name": "debugger", "image": "busybox"}]}},
        STRATEGIC,
    )

    # ---- namespaces/status and namespaces/finalize
    nss = "/api/v1/namespaces"
    r.send("POST", nss, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FIN}})
    r.send(
        "POST",
        f"{nss}/{FIN}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}},
    )
    ns = r.record("GET namespaces/X/status", "GET", f"{nss}/{FIN}/status")
    _, ns = r.send("GET", f"{nss}/{FIN}")
    changed = json.loads(json.dumps(ns))
    changed["metadata"].setdefault("labels", {})["example.com/l"] = "status"
    changed["spec"]["finalizers"] = ["kubernetes", "example.com/x"]
    changed["status"] = {"phase": "Terminating"}
    r.record(
        "PUT namespaces/X/status: the status changes, the spec does not",
        "PUT",
        f"{nss}/{FIN}/status",
        changed,
    )
    _, ns = r.send("GET", f"{nss}/{FIN}")
    changed = json.loads(json.dumps(ns))
    changed["metadata"].setdefault("labels", {})["example.com/l"] = "status"
    changed["spec"]["finalizers"] = ["kubernetes", "example.com/x"]
    changed["status"]["conditions"] = [
        {
            "type": "NamespaceContentRemaining",
            "status": "False",
            "reason": "ContentRemoved",
            "message": "written through /status",
        }
    ]
    r.record(
        "PUT namespaces/X/status with a condition: the status changes alone",
        "PUT",
        f"{nss}/{FIN}/status",
        changed,
    )
    r.record(
        "PATCH namespaces/X/status: the condition removed",
        "PATCH",
        f"{nss}/{FIN}/status",
        {"status": {"conditions": None}},
        MERGE,
    )
    _, ns = r.send("GET", f"{nss}/{FIN}")
    changed = json.loads(json.dumps(ns))
    changed["metadata"].setdefault("labels", {})["example.com/l"] = "finalize"
    changed["spec"]["finalizers"] = ["kubernetes", "example.com/x"]
    changed["status"] = {"phase": "Terminating"}
    r.record(
        "PUT namespaces/X/finalize: spec.finalizers changes, the status does not",
        "PUT",
        f"{nss}/{FIN}/finalize",
        changed,
    )
    r.record("the namespace after /finalize", "GET", f"{nss}/{FIN}")
    stale = json.loads(json.dumps(changed))
    r.record("PUT /finalize with a stale resourceVersion", "PUT", f"{nss}/{FIN}/finalize", stale)
    _, ns = r.send("GET", f"{nss}/{FIN}")
    bad = json.loads(json.dumps(ns))
    bad["spec"]["finalizers"] = ["kubernetes", "bad"]
    r.record(
        "PUT /finalize with a finalizer name that is not qualified",
        "PUT",
        f"{nss}/{FIN}/finalize",
        bad,
    )
    r.record(
        "PATCH of namespaces/X/finalize",
        "PATCH",
        f"{nss}/{FIN}/finalize",
        {"spec": {"finalizers": []}},
        MERGE,
    )
    r.record("GET of namespaces/X/finalize", "GET", f"{nss}/{FIN}/finalize")
    other = json.loads(json.dumps(ns))
    other["metadata"]["name"] = "podsubres-other"
    r.record("PUT /finalize naming another namespace", "PUT", f"{nss}/{FIN}/finalize", other)
    r.record("DELETE the namespace: Terminating, held by spec.finalizers", "DELETE", f"{nss}/{FIN}")
    _, ns = r.send("GET", f"{nss}/{FIN}")
    one = json.loads(json.dumps(ns))
    one["spec"]["finalizers"] = ["example.com/x"]
    r.record(
        "PUT /finalize of the Terminating namespace, one finalizer left",
        "PUT",
        f"{nss}/{FIN}/finalize",
        one,
    )
    _, ns = r.send("GET", f"{nss}/{FIN}")
    none = json.loads(json.dumps(ns))
    none["spec"]["finalizers"] = []
    r.record(
        "PUT /finalize with no finalizers: the namespace goes at once",
        "PUT",
        f"{nss}/{FIN}/finalize",
        none,
    )
    r.record("the namespace is gone", "GET", f"{nss}/{FIN}")
    r.record("its content is left behind in storage", "GET", f"{nss}/{FIN}/configmaps/cm")

    # cleanup (not recorded)
    r.send("DELETE", f"{nss}/{FIN}/configmaps/cm")
    # (bound pods are deleted gracefully, for a kubelet that never comes: forced here)
    for name in ("p1", "p2", "p3", "p4", "p5", "p6"):
        r.send("DELETE", f"{pods}/{name}?gracePeriodSeconds=0")
    r.send("PATCH", f"{pods}/held", {"metadata": {"finalizers": None}}, MERGE)
    r.send("DELETE", f"{pods}/held?gracePeriodSeconds=0")
    r.send("DELETE", f"/api/v1/namespaces/{NS}/serviceaccounts/default")
    r.send("DELETE", f"{nss}/{NS}")
    # no namespace controller runs there: the emptied namespace is finalized by hand
    _, ns = r.send("GET", f"{nss}/{NS}")
    ns["spec"]["finalizers"] = []
    r.send("PUT", f"{nss}/{NS}/finalize", ns)
    json.dump(
        {
            "recorded": "kube-apiserver v1.20.2 (this machine's /work/k8sbuild), by "
            "scripts/record_pod_subresources.py; no kube-controller-manager running, so "
            "nothing else writes the namespaces or pods. uids, timestamps, "
            "resourceVersions and managedFields replaced by placeholders, in requests too.",
            "exchanges": r.exchanges,
        },
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
