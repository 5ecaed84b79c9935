"""Record what a real kube-apiserver answers to three things serve must do alike:

- field selectors' syntax (escapes, whitespace, empty terms, terms without an
  operator, ``=``/``==``/``!=``, repeated fields, which of several bad terms is
  reported): ``tests/data/real-apiserver-1.20/field-selector-syntax.json``;
- DELETE and eviction preconditions whose ``uid`` or ``resourceVersion`` is present
  but empty: ``tests/data/real-apiserver-1.20/empty-preconditions.json``;
- a Pod's ``status.podIP`` / ``status.podIPs`` written through ``/status`` (how one
  fills or overrides the other, what is refused), and which Pods
  ``status.podIP=...`` selects after: ``tests/data/real-apiserver-1.20/pod-ips.json``.

Every object made lives in a namespace whose name starts with ``fieldsel-``; the
namespaces are deleted first if a run left them. Usage::

    python tools/record_fieldsel.py [--server https://127.0.0.1:16443] [--token T]
"""

from __future__ import annotations

import argparse
import http.client
import json
import ssl
import time
import urllib.parse
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/data/real-apiserver-1.20"


class Server:
    def __init__(self, url: str, token: str) -> None:
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port, self.token = parsed.hostname or "", parsed.port or 443, token

    def __call__(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        conn = http.client.HTTPSConnection(
            self.host, self.port, context=ssl._create_unverified_context()
        )
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read() or b"null")
        finally:
            conn.close()


def fresh_namespace(server: Server, name: str) -> None:
    """``name`` created anew, with a ServiceAccount ``default`` that mounts no token."""
    server("DELETE", f"/api/v1/namespaces/{name}")
    for _ in range(120):
        if server("GET", f"/api/v1/namespaces/{name}")[0] == 404:
            break
        # (no namespace controller runs: what is left is removed by hand)
        for resource in ("pods", "events", "configmaps"):
            status, listed = server("GET", f"/api/v1/namespaces/{name}/{resource}")
            for item in (listed or {}).get("items") or [] if status == 200 else []:
                path = f"/api/v1/namespaces/{name}/{resource}/{item['metadata']['name']}"
                server("DELETE", path, {"gracePeriodSeconds": 0})
        server(
            "PUT",
            f"/api/v1/namespaces/{name}/finalize",
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name},
                "spec": {"finalizers": []},
            },
        )
        time.sleep(0.5)
    made = server(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    assert made[0] == 201, made
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default"},
        "automountServiceAccountToken": False,
    }
    assert server("POST", f"/api/v1/namespaces/{name}/serviceaccounts", account)[0] == 201


def pod(name: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx:1.25"}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def essentials(status: int, answer: Any) -> dict[str, Any]:
    if isinstance(answer, dict) and answer.get("kind") == "Status":
        return {
            "status": status,
            "reason": answer.get("reason"),
            "message": answer.get("message"),
            "details": answer.get("details"),
        }
    return {"status": status}


# -- field selectors -----------------------------------------------------------------

SYNTAX_NS = "fieldsel-rec"
#: (resource path under the namespace, or an absolute path; the selector as typed)
SELECTORS: list[tuple[str, str]] = [
    ("pods", "spec.nodeName=node-a"),
    ("pods", "spec.nodeName==node-a"),
    ("pods", "spec.nodeName!=node-a"),
    ("pods", "spec.nodeName = node-a"),
    ("pods", " spec.nodeName=node-a"),
    ("pods", "spec.nodeName=node-a "),
    ("pods", "spec.nodeName= node-a"),
    ("pods", "spec.nodeName =node-a"),
    ("pods", "spec.nodeName"),
    ("pods", "!spec.nodeName"),
    ("pods", "spec.nodeName in (node-a)"),
    ("pods", "spec.nodeName<node-a"),
    ("pods", "spec.nodeName!node-a"),
    ("pods", "spec.nodeName=node-a,"),
    ("pods", ",spec.nodeName=node-a"),
    ("pods", "spec.nodeName=node-a,,metadata.name=a"),
    ("pods", "spec.nodeName=node-a, "),
    ("pods", ","),
    ("pods", " "),
    ("pods", "spec.nodeName===node-a"),
    ("pods", "spec.nodeName!==node-a"),
    ("pods", "spec.nodeName=a=b"),
    ("pods", "spec.nodeName=a!=b"),
    ("pods", "spec.nodeName=!node-a"),
    ("pods", "spec.nodeName=a\\b"),
    ("pods", "spec.nodeName=a\\"),
    ("pods", "spec.nodeName=node\\-a"),
    ("pods", "spec.nodeName\\=node-a"),
    ("pods", "spec.node\\Name=x"),
    ("pods", "x\\,y=1"),
    ("pods", "=node-a"),
    ("pods", "=="),
    ("pods", "="),
    ("pods", "!="),
    ("pods", "!=x"),
    ("pods", "metadata.name=a,metadata.name=b"),
    ("pods", "metadata.name=a,metadata.name!=a"),
    ("pods", "metadata.name=a,metadata.name=a"),
    ("pods", "spec.nodeName=node-a,spec.nodeName=node-a"),
    ("pods", "spec.nodeName!=node-a,spec.nodeName!=node-b"),
    ("pods", "metadata.name=a\\,metadata.name=a"),
    ("pods", "metadata.name=a\\\\,metadata.name=a"),
    ("pods", "metadata.name=a,b"),
    ("pods", "zzz=1,aaa=1"),
    ("pods", "x,a"),
    ("pods", "zzz=1,a"),
    ("pods", "spec.nodeName=a=b,b"),
    ("pods", "spec.nodeName=a\\b,zz"),
    ("pods", "spec.nodeName=a\\b,aa"),
    ("pods", "spec.foo=1,spec.nodeName=a=b"),
    ("pods", "spec.foo=1,spec.nodeName"),
    ("events", "reason=a\\,b\\=c\\\\d"),
    ("events", "reason==a\\,b\\=c\\\\d"),
    ("events", "reason!=a\\,b\\=c\\\\d"),
    ("events", "reason=a,b=c\\\\d"),
    ("events", "reason=Plain,type=Normal,="),
    ("events", "reason=Plain,reason=Plain"),
    ("events", "reason=Plain,reason!=Plain"),
    ("configmaps", " metadata.name=x"),
    ("configmaps", "metadata.name"),
    ("configmaps", "=x"),
    ("configmaps", "metadata.name=x=y"),
    ("/api/v1/namespaces", f"metadata.name={SYNTAX_NS},metadata.name={SYNTAX_NS}"),
    ("/api/v1/namespaces", f"metadata.name = {SYNTAX_NS}"),
]


def record_field_selectors(server: Server) -> dict[str, Any]:
    fresh_namespace(server, SYNTAX_NS)
    base = f"/api/v1/namespaces/{SYNTAX_NS}"
    setup: list[dict[str, Any]] = [
        {"path": f"{base}/pods", "body": pod("a", "node-a")},
        {"path": f"{base}/pods", "body": pod("b", "node-b")},
    ]
    for name, reason in (("weird", "a,b=c\\d"), ("plain", "Plain")):
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "a", "namespace": SYNTAX_NS},
            "reason": reason,
            "message": "m",
            "type": "Normal",
        }
        setup.append({"path": f"{base}/events", "body": event})
    for step in setup:
        made = server("POST", step["path"], step["body"])
        assert made[0] == 201, made
    queries = []
    for where, selector in SELECTORS:
        path = where if where.startswith("/") else f"{base}/{where}"
        path += "?fieldSelector=" + urllib.parse.quote(selector, safe="")
        status, answer = server("GET", path)
        record: dict[str, Any] = {"selector": selector, "path": path, "status": status}
        if status == 200:
            names = sorted(i["metadata"]["name"] for i in answer["items"])
            if where.startswith("/api/v1/namespaces"):
                names = [n for n in names if n.startswith("fieldsel")]
            record["names"] = names
        else:
            record.update(essentials(status, answer))
        queries.append(record)
    return {
        "recorded": (
            "kube-apiserver v1.20.2 (this machine's /work/k8sbuild), by "
            "tools/record_fieldsel.py: the setup objects created in order, then each list "
            "with its field selector (as typed, and percent-encoded in the path); for each, "
            "the status and the names listed (namespaces: only those named fieldsel*), or "
            "the refusal's reason and message."
        ),
        "namespace": SYNTAX_NS,
        "setup": setup,
        "queries": queries,
    }


# -- empty preconditions --------------------------------------------------------------

PRE_NS = "fieldsel-pre"


def record_preconditions(server: Server) -> dict[str, Any]:
    fresh_namespace(server, PRE_NS)
    base = f"/api/v1/namespaces/{PRE_NS}"
    exchanges: list[dict[str, Any]] = []
    cases: list[tuple[str, dict[str, Any]]] = [
        ("empty resourceVersion", {"resourceVersion": ""}),
        ("empty uid", {"uid": ""}),
        ("both empty", {"uid": "", "resourceVersion": ""}),
        ("null resourceVersion", {"resourceVersion": None}),
        ("no preconditions", {}),
    ]
    for index, (note, pre) in enumerate(cases):
        for resource in ("pods", "configmaps"):
            name = f"d{index}"
            body = (
                pod(name)
                if resource == "pods"
                else {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
            )
            assert server("POST", f"{base}/{resource}", body)[0] == 201
            options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": pre}
            path = f"{base}/{resource}/{name}"
            status, answer = server("DELETE", path, options)
            exchanges.append(
                {
                    "note": f"DELETE, {note}",
                    "setup": body,
                    "method": "DELETE",
                    "path": path,
                    "body": options,
                    **essentials(status, answer),
                    "after": server("GET", path)[0],
                }
            )
    evictions: list[tuple[str, dict[str, Any], list[str] | None]] = [
        ("empty resourceVersion", {"resourceVersion": ""}, None),
        ("empty uid", {"uid": ""}, None),
        ("both empty", {"uid": "", "resourceVersion": ""}, None),
        ("empty resourceVersion, dry run", {"resourceVersion": ""}, ["All"]),
        ("empty uid, dry run", {"uid": ""}, ["All"]),
    ]
    for index, (note, pre, dry) in enumerate(evictions):
        name = f"e{index}"
        body = pod(name)
        assert server("POST", f"{base}/pods", body)[0] == 201
        options: dict[str, Any] = {"preconditions": pre}
        if dry:
            options["dryRun"] = dry
        eviction = {
            "apiVersion": "policy/v1beta1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": PRE_NS},
            "deleteOptions": options,
        }
        path = f"{base}/pods/{name}/eviction"
        status, answer = server("POST", path, eviction)
        exchanges.append(
            {
                "note": f"eviction of a Pending Pod, {note}",
                "setup": body,
                "method": "POST",
                "path": path,
                "body": eviction,
                **essentials(status, answer),
                "after": server("GET", f"{base}/pods/{name}")[0],
            }
        )
    return {
        "recorded": (
            "kube-apiserver v1.20.2 (this machine's /work/k8sbuild), by "
            "tools/record_fieldsel.py: each object created (setup), then deleted or evicted "
            "(policy/v1beta1) with the preconditions shown; the answer's status, and for a "
            "Status its reason, message and details (uids and resourceVersions as they were), "
            "and the status of a GET of the object after (200: still there)."
        ),
        "namespace": PRE_NS,
        "exchanges": exchanges,
    }


# -- pod IPs --------------------------------------------------------------------------

IPS_NS = "fieldsel-ips"
IP_CASES: list[tuple[str, dict[str, Any]]] = [
    ("podIP only", {"podIP": "10.0.0.1"}),
    ("podIPs only", {"podIPs": [{"ip": "10.0.0.2"}]}),
    ("both, differing", {"podIP": "10.0.0.3", "podIPs": [{"ip": "10.0.0.4"}]}),
    (
        "dual stack, podIP first",
        {"podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}]},
    ),
    (
        "dual stack, podIP not first",
        {"podIP": "10.0.0.6", "podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}]},
    ),
    ("dual stack, podIPs only", {"podIPs": [{"ip": "fd00::8"}, {"ip": "10.0.0.8"}]}),
    ("podIP is podIPs[1]", {"podIP": "fd00::9", "podIPs": [{"ip": "10.0.0.9"}, {"ip": "fd00::9"}]}),
    ("empty podIP, podIPs", {"podIP": "", "podIPs": [{"ip": "10.0.0.10"}]}),
    ("invalid podIP", {"podIP": "nope"}),
    ("invalid podIPs", {"podIPs": [{"ip": "nope"}]}),
    ("two IPv4", {"podIPs": [{"ip": "10.0.0.11"}, {"ip": "10.0.0.12"}]}),
    ("three", {"podIPs": [{"ip": "10.0.0.13"}, {"ip": "fd00::13"}, {"ip": "10.0.0.14"}]}),
    ("duplicate", {"podIPs": [{"ip": "10.0.0.15"}, {"ip": "10.0.0.15"}]}),
    ("an empty ip", {"podIPs": [{"ip": ""}]}),
]


def record_pod_ips(server: Server) -> dict[str, Any]:
    fresh_namespace(server, IPS_NS)
    base = f"/api/v1/namespaces/{IPS_NS}"
    exchanges: list[dict[str, Any]] = []

    def ips(answer: dict[str, Any]) -> dict[str, Any]:
        status = answer.get("status") or {}
        return {k: status[k] for k in ("podIP", "podIPs") if k in status}

    for index, (note, written) in enumerate(IP_CASES):
        name = f"ip{index}"
        status, made = server("POST", f"{base}/pods", pod(name))
        assert status == 201, made
        made["status"] = {**made["status"], **written}
        status, answer = server("PUT", f"{base}/pods/{name}/status", made)
        record: dict[str, Any] = {
            "note": f"PUT /status, {note}",
            "name": name,
            "method": "PUT",
            "subresource": "status",
            "written": written,
            **essentials(status, answer),
        }
        if status == 200:
            record["ips"] = ips(answer)
        exchanges.append(record)
    # patches of one of the two on a Pod that has both
    patches: list[tuple[str, dict[str, Any]]] = [
        ("merge patch of podIP alone", {"status": {"podIP": "10.0.1.2"}}),
        ("merge patch of podIPs alone", {"status": {"podIPs": [{"ip": "10.0.1.3"}]}}),
        ("merge patch removing podIP", {"status": {"podIP": None}}),
        ("merge patch removing both", {"status": {"podIP": None, "podIPs": None}}),
    ]
    for index, (note, patch) in enumerate(patches):
        name = f"patch{index}"
        status, made = server("POST", f"{base}/pods", pod(name))
        made["status"] = {**made["status"], "podIP": "10.0.1.1", "podIPs": [{"ip": "10.0.1.1"}]}
        assert server("PUT", f"{base}/pods/{name}/status", made)[0] == 200
        conn_status, answer = patch_status(server, f"{base}/pods/{name}/status", patch)
        record = {
            "note": note,
            "name": name,
            "method": "PATCH",
            "subresource": "status",
            "start": {"podIP": "10.0.1.1", "podIPs": [{"ip": "10.0.1.1"}]},
            "patch": patch,
            **essentials(conn_status, answer),
        }
        if conn_status == 200:
            record["ips"] = ips(answer)
        exchanges.append(record)
    selected = {}
    for ip in (
        "10.0.0.1",
        "10.0.0.2",
        "10.0.0.3",
        "10.0.0.4",
        "10.0.0.7",
        "fd00::8",
        "10.0.0.9",
        "fd00::9",
        "10.0.1.3",
    ):
        path = f"{base}/pods?fieldSelector=" + urllib.parse.quote(f"status.podIP={ip}", safe="")
        status, answer = server("GET", path)
        assert status == 200, answer
        selected[ip] = sorted(i["metadata"]["name"] for i in answer["items"])
    return {
        "recorded": (
            "kube-apiserver v1.20.2 (this machine's /work/k8sbuild), by "
            "tools/record_fieldsel.py: for each exchange a Pod (image nginx:1.25, no node) "
            "created, then its status written through /status with the given podIP/podIPs "
            "(a PUT of the Pod as created, its status updated with `written`), or first set to "
            "`start` and then merge-patched; the answer's podIP/podIPs, or the refusal. Then "
            "the Pods each status.podIP=<ip> field selector lists (`selected`)."
        ),
        "namespace": IPS_NS,
        "exchanges": exchanges,
        "selected": selected,
    }


def patch_status(server: Server, path: str, patch: dict[str, Any]) -> tuple[int, Any]:
    conn = http.client.HTTPSConnection(
        server.host, server.port, context=ssl._create_unverified_context()
    )
    headers = {
        "Authorization": f"Bearer {server.token}",
        "Accept": "application/json",
        "Content-Type": "application/merge-patch+json",
    }
    try:
        conn.request("PATCH", path, body=json.dumps(patch).encode(), headers=headers)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="https://127.0.0.1:16443")
    parser.add_argument("--token", default="kcm-bench-token")
    parser.add_argument("--only", choices=("selectors", "preconditions", "ips"))
    args = parser.parse_args()
    server = Server(args.server, args.token)
    outputs = {
        "selectors": ("field-selector-syntax.json", record_field_selectors),
        "preconditions": ("empty-preconditions.json", record_preconditions),
        "ips": ("pod-ips.json", record_pod_ips),
    }
    for key, (file, record) in outputs.items():
        if args.only in (None, key):
            (OUT / file).write_text(json.dumps(record(server), indent=1) + "\n")
            print("wrote", OUT / file)


if __name__ == "__main__":
    main()
