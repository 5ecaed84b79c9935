"""Record a real kube-apiserver's answers to writes of objects with invalid label
selectors (tests/data/real-apiserver-1.20/label-selectors.json).

Run against a test cluster only: it creates namespace ``labelsel-rec`` and objects in it
(and cluster-scoped webhook configurations named ``labelsel-*``), all with ``dryRun=All``
except the few an update needs. Usage::

    python tools/record_label_selectors.py https://127.0.0.1:16443 TOKEN OUT.json
"""

from __future__ import annotations

import copy
import json
import ssl
import sys
import urllib.error
import urllib.request
from typing import Any

NS = "labelsel-rec"
CONTAINERS = [{"name": "c", "image": "nginx:1.25"}]


def template(labels: dict[str, str] | None, restart: str = "Always") -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": labels} if labels is not None else {}
    return {"metadata": meta, "spec": {"containers": CONTAINERS, "restartPolicy": restart}}


def workload(kind: str, name: str, selector: Any, labels: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": template(labels)}
    if selector is not None:
        spec["selector"] = selector
    if kind == "StatefulSet":
        spec["serviceName"] = "svc"
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


APPS = {
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "DaemonSet": "daemonsets",
    "StatefulSet": "statefulsets",
}
WEB = {"app": "web"}


def apps(kind: str, name: str, selector: Any, labels: dict[str, str] | None) -> dict[str, Any]:
    return {
        "method": "POST",
        "path": f"/apis/apps/v1/namespaces/{NS}/{APPS[kind]}?dryRun=All",
        "body": workload(kind, name, selector, labels),
    }


def job(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": template(spec.pop("labels", None), "Never"), **spec},
    }
    return {
        "method": "POST",
        "path": f"/apis/batch/v1/namespaces/{NS}/jobs?dryRun=All",
        "body": body,
    }


def rc(name: str, selector: Any, labels: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": template(labels)}
    if selector is not None:
        spec["selector"] = selector
    body = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name},
        "spec": spec,
    }
    return {
        "method": "POST",
        "path": f"/api/v1/namespaces/{NS}/replicationcontrollers?dryRun=All",
        "body": body,
    }


def pdb(name: str, selector: Any) -> dict[str, Any]:
    body = {
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"minAvailable": 1, "selector": selector},
    }
    return {
        "method": "POST",
        "path": f"/apis/policy/v1beta1/namespaces/{NS}/poddisruptionbudgets?dryRun=All",
        "body": body,
    }


def netpol(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    body = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }
    return {
        "method": "POST",
        "path": f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies?dryRun=All",
        "body": body,
    }


def webhooks(kind: str, name: str, hook: dict[str, Any]) -> dict[str, Any]:
    plural = kind[0].lower() + kind[1:] + "s"
    base = {
        "name": "a.example.com",
        "clientConfig": {"url": "https://example.com/hook"},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **hook,
    }
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [base],
    }
    return {
        "method": "POST",
        "path": f"/apis/admissionregistration.k8s.io/v1/{plural.lower()}?dryRun=All",
        "body": body,
    }


def expr(key: str, operator: str, values: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        out["values"] = values
    return out


def sel(labels: dict[str, str] | None = None, *expressions: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if labels is not None:
        out["matchLabels"] = labels
    if expressions:
        out["matchExpressions"] = list(expressions)
    return out


EXCHANGES: list[tuple[str, dict[str, Any]]] = [
    ("Deployment without a selector", apps("Deployment", "labelsel-d1", None, WEB)),
    ("Deployment with an empty selector", apps("Deployment", "labelsel-d2", {}, WEB)),
    (
        "Deployment whose selector does not select its template",
        apps("Deployment", "labelsel-d3", sel({"app": "api"}), WEB),
    ),
    ("Deployment, template without labels", apps("Deployment", "labelsel-d4", sel(WEB), None)),
    (
        "Deployment, unknown operator",
        apps("Deployment", "labelsel-d5", sel(WEB, expr("tier", "Equals", ["a"])), WEB),
    ),
    (
        "Deployment, In without values",
        apps("Deployment", "labelsel-d6", sel(WEB, expr("tier", "In")), WEB),
    ),
    (
        "Deployment, NotIn with empty values",
        apps("Deployment", "labelsel-d7", sel(WEB, expr("tier", "NotIn", [])), WEB),
    ),
    (
        "Deployment, Exists with values",
        apps("Deployment", "labelsel-d8", sel(WEB, expr("tier", "Exists", ["a"])), WEB),
    ),
    (
        "Deployment, DoesNotExist with values",
        apps("Deployment", "labelsel-d9", sel(WEB, expr("tier", "DoesNotExist", ["a"])), WEB),
    ),
    (
        "Deployment, expression key not a qualified name",
        apps("Deployment", "labelsel-d10", sel(WEB, expr("bad key", "Exists")), WEB),
    ),
    (
        "Deployment, expression value not a label value",
        apps("Deployment", "labelsel-d11", sel(WEB, expr("tier", "In", ["not ok"])), WEB),
    ),
    (
        "Deployment, matchLabels key not a qualified name",
        apps(
            "Deployment",
            "labelsel-d12",
            sel({"app": "web", "-bad": "x"}),
            {"app": "web", "-bad": "x"},
        ),
    ),
    (
        "Deployment, matchLabels value not a label value",
        apps("Deployment", "labelsel-d13", sel({"app": "web/x"}), WEB),
    ),
    (
        "Deployment, key with an invalid prefix",
        apps("Deployment", "labelsel-d14", sel(WEB, expr("Example.COM/tier", "Exists")), WEB),
    ),
    (
        "Deployment, two bad expressions and a mismatch",
        apps(
            "Deployment",
            "labelsel-d15",
            sel({"app": "api"}, expr("a", "In"), expr("b", "Nope")),
            WEB,
        ),
    ),
    (
        "Deployment, bad name and bad selector",
        apps("Deployment", "Labelsel_D16", sel(WEB, expr("tier", "In")), WEB),
    ),
    (
        "Deployment, only expressions, not selecting",
        apps("Deployment", "labelsel-d17", sel(None, expr("app", "NotIn", ["web"])), WEB),
    ),
    ("ReplicaSet without a selector", apps("ReplicaSet", "labelsel-rs1", None, WEB)),
    (
        "ReplicaSet whose selector does not select its template",
        apps("ReplicaSet", "labelsel-rs2", sel(None, expr("app", "In", ["api"])), WEB),
    ),
    ("ReplicaSet with an empty selector", apps("ReplicaSet", "labelsel-rs3", {}, WEB)),
    ("DaemonSet without a selector", apps("DaemonSet", "labelsel-ds1", None, WEB)),
    (
        "DaemonSet whose selector does not select its template",
        apps("DaemonSet", "labelsel-ds2", sel({"app": "api"}), WEB),
    ),
    (
        "DaemonSet, Exists with values",
        apps("DaemonSet", "labelsel-ds3", sel(WEB, expr("tier", "Exists", ["x"])), WEB),
    ),
    ("StatefulSet without a selector", apps("StatefulSet", "labelsel-ss1", None, WEB)),
    (
        "StatefulSet whose selector does not select its template",
        apps("StatefulSet", "labelsel-ss2", sel({"app": "api"}), WEB),
    ),
    ("StatefulSet with an empty selector", apps("StatefulSet", "labelsel-ss3", {}, WEB)),
    (
        "StatefulSet, unknown operator",
        apps("StatefulSet", "labelsel-ss4", sel(WEB, expr("tier", "Equals", ["a"])), WEB),
    ),
    ("DaemonSet with an empty selector", apps("DaemonSet", "labelsel-ds4", {}, WEB)),
    (
        "DaemonSet, unknown operator, not selecting",
        apps("DaemonSet", "labelsel-ds5", sel({"app": "api"}, expr("tier", "Equals", ["a"])), WEB),
    ),
    (
        "ReplicaSet, expression value not a label value",
        apps("ReplicaSet", "labelsel-rs4", sel(WEB, expr("tier", "NotIn", ["a", "b c"])), WEB),
    ),
    (
        "PodDisruptionBudget, expression value not a label value",
        pdb("labelsel-pdb3", sel(None, expr("app", "In", ["we b"]))),
    ),
    (
        "PodDisruptionBudget, key with two slashes, empty selector allowed",
        pdb("labelsel-pdb4", sel(None, expr("a/b/c", "Exists"))),
    ),
    (
        "ReplicationController whose selector does not select its template",
        rc("labelsel-rc1", {"app": "api"}, WEB),
    ),
    (
        "ReplicationController, selector key not a qualified name",
        rc("labelsel-rc2", {"bad key": "x"}, {"bad key": "x"}),
    ),
    ("ReplicationController, no selector, template without labels", rc("labelsel-rc3", None, None)),
    (
        "Job, manualSelector without a selector",
        job("labelsel-j1", {"manualSelector": True, "labels": WEB}),
    ),
    (
        "Job, manualSelector, selector does not select its template",
        job(
            "labelsel-j2", {"manualSelector": True, "selector": sel({"app": "api"}), "labels": WEB}
        ),
    ),
    (
        "Job, manualSelector, In without values",
        job(
            "labelsel-j3",
            {"manualSelector": True, "selector": sel(WEB, expr("x", "In")), "labels": WEB},
        ),
    ),
    (
        "Job, generated selector, unknown operator",
        job("labelsel-j4", {"selector": sel(None, expr("x", "Equals", ["y"])), "labels": WEB}),
    ),
    (
        "PodDisruptionBudget, unknown operator",
        pdb("labelsel-pdb1", sel(None, expr("app", "Is", ["web"]))),
    ),
    (
        "PodDisruptionBudget, Exists with values, bad label value",
        pdb("labelsel-pdb2", sel({"app": "-web"}, expr("app", "Exists", ["web"]))),
    ),
    (
        "NetworkPolicy, podSelector In without values",
        netpol("labelsel-np1", {"podSelector": sel(None, expr("app", "In"))}),
    ),
    (
        "NetworkPolicy, ingress and egress peers",
        netpol(
            "labelsel-np2",
            {
                "podSelector": {},
                "ingress": [
                    {
                        "from": [
                            {"podSelector": sel({"bad key": "x"})},
                            {"namespaceSelector": sel(None, expr("team", "Exists", ["a"]))},
                        ]
                    }
                ],
                "egress": [{"to": [{"namespaceSelector": sel(None, expr("team", "Bogus"))}]}],
                "policyTypes": ["Ingress", "Egress"],
            },
        ),
    ),
    (
        "ValidatingWebhookConfiguration, namespaceSelector unknown operator",
        webhooks(
            "ValidatingWebhookConfiguration",
            "labelsel-vwc1",
            {"namespaceSelector": sel(None, expr("env", "Is", ["x"]))},
        ),
    ),
    (
        "MutatingWebhookConfiguration, objectSelector bad key and In without values",
        webhooks(
            "MutatingWebhookConfiguration",
            "labelsel-mwc1",
            {"objectSelector": sel({"bad key": "x"}, expr("app", "In"))},
        ),
    ),
]

#: Updates: an object created first (really), then written with another selector.
UPDATES: list[tuple[str, dict[str, Any], Any]] = [
    (
        "Deployment update changes its selector",
        apps("Deployment", "labelsel-u1", sel(WEB), WEB),
        lambda o: o["spec"].update(
            selector=sel({"app": "web", "t": "x"}), template=template({"app": "web", "t": "x"})
        ),
    ),
    (
        "Deployment update makes its template unselected",
        apps("Deployment", "labelsel-u2", sel(WEB), WEB),
        lambda o: o["spec"]["template"]["metadata"].update(labels={"app": "api"}),
    ),
    (
        "PodDisruptionBudget update to an invalid selector",
        pdb("labelsel-u3", sel(WEB)),
        lambda o: o["spec"].update(selector=sel(None, expr("app", "In"))),
    ),
]


def call(base: str, token: str, method: str, path: str, body: Any) -> tuple[int, Any]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, context=ctx) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def essentials(answer: Any) -> Any:
    if isinstance(answer, dict) and answer.get("kind") == "Status":
        return {
            k: answer[k] for k in ("status", "message", "reason", "details", "code") if k in answer
        }
    return {"kind": answer.get("kind")}


def main() -> None:
    base, token, out = sys.argv[1:4]
    status, answer = call(base, token, "GET", f"/api/v1/namespaces/{NS}", None)
    if status == 404:
        call(
            base,
            token,
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        )
    records = []
    for note, request in EXCHANGES:
        status, answer = call(base, token, request["method"], request["path"], request["body"])
        records.append({"note": note, **request, "status": status, "answer": essentials(answer)})
    for note, create, change in UPDATES:
        path = create["path"].removesuffix("?dryRun=All")
        name = create["body"]["metadata"]["name"]
        call(base, token, "DELETE", f"{path}/{name}", None)
        status, made = call(base, token, "POST", path, create["body"])
        assert status == 201, made
        body = copy.deepcopy(made)
        change(body)
        status, answer = call(base, token, "PUT", f"{path}/{name}?dryRun=All", body)
        records.append(
            {
                "note": note,
                "method": "PUT",
                "path": f"{path}/{name}?dryRun=All",
                "create": create["body"],
                "body": body,
                "status": status,
                "answer": essentials(answer),
            }
        )
        call(base, token, "DELETE", f"{path}/{name}", None)
    version = call(base, token, "GET", "/version", None)[1]["gitVersion"]
    with open(out, "w") as f:
        json.dump(
            {"recorded": f"kube-apiserver {version}", "exchanges": records},
            f,
            indent=1,
            sort_keys=True,
        )
        f.write("\n")


if __name__ == "__main__":
    main()
