"""Record label/annotation validation answers from the real kube-apiserver 1.20."""

import json
import sys

from _real_apiserver import call  # tools/

NS = "lead-labels"

KINDS = {
    "configmaps": (
        f"/api/v1/namespaces/{NS}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}},
    ),
    "deployments": (
        f"/apis/apps/v1/namespaces/{NS}/deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        },
    ),
    "pods": (
        f"/api/v1/namespaces/{NS}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    ),
    "services": (
        f"/api/v1/namespaces/{NS}/services",
        {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80}]}},
    ),
    "secrets": (f"/api/v1/namespaces/{NS}/secrets", {"apiVersion": "v1", "kind": "Secret"}),
    "namespaces": ("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace"}),
    "jobs": (
        f"/apis/batch/v1/namespaces/{NS}/jobs",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                }
            },
        },
    ),
    "roles": (
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles",
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "rules": []},
    ),
}
METAS = [
    ("label key with a space", {"labels": {"a b": "x"}}),
    ("label key empty", {"labels": {"": "x"}}),
    ("label key prefix/name", {"labels": {"example.com/a": "x"}}),
    ("label key bad prefix", {"labels": {"Example_com/a": "x"}}),
    ("label key two slashes", {"labels": {"a/b/c": "x"}}),
    ("label key name 64 chars", {"labels": {"a" * 64: "x"}}),
    ("label key prefix 254 chars", {"labels": {("a" * 63 + ".") * 3 + "a" * 62 + "/n": "x"}}),
    ("label value with a space", {"labels": {"a": "x y"}}),
    ("label value 64 chars", {"labels": {"a": "v" * 64}}),
    ("label value ends with dash", {"labels": {"a": "x-"}}),
    ("label value empty", {"labels": {"a": ""}}),
    ("label value null", {"labels": {"a": None}}),
    ("label value number", {"labels": {"a": 1}}),
    ("two bad labels", {"labels": {"a b": "x y", "c": "-"}}),
    ("annotation key with ~", {"annotations": {"a~b": "v"}}),
    ("annotation key upper case", {"annotations": {"Example.COM/Key": "v"}}),
    ("annotation key empty", {"annotations": {"": "v"}}),
    ("annotation value null", {"annotations": {"a": None}}),
    ("annotation value with anything", {"annotations": {"a": "x y\nz ~!"}}),
    ("annotations too large", {"annotations": {"a": "v" * (256 * 1024)}}),
    (
        "annotations too large together",
        {"annotations": {"a": "v" * (128 * 1024), "b": "v" * (128 * 1024)}},
    ),
    ("labels and annotations bad", {"labels": {"a b": "x"}, "annotations": {"c~d": "v"}}),
]


def essentials(status, body):
    if status in (200, 201):
        m = body["metadata"]
        return {"status": status, "labels": m.get("labels"), "annotations": m.get("annotations")}
    return {
        "status": status,
        "reason": body.get("reason"),
        "message": body.get("message"),
        "details": body.get("details"),
    }


def main() -> None:
    out = []
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    call(
        "POST",
        f"/api/v1/namespaces/{NS}/serviceaccounts",
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default"},
            "automountServiceAccountToken": False,
        },
    )
    for kind, (path, base) in KINDS.items():
        name = f"lbl-{kind}"
        call("DELETE", f"{path}/{name}")
        s, b = call("POST", path, {**base, "metadata": {"name": name}})
        assert s == 201, (kind, b)
        for what, meta in METAS:
            if kind not in ("configmaps", "deployments") and what not in (
                "label key with a space",
                "annotation key with ~",
                "labels and annotations bad",
            ):
                continue
            obj = {**base, "metadata": {"name": f"{name}-new", **meta}}
            s, b = call("POST", path + "?dryRun=All", obj)
            out.append(
                {
                    "kind": kind,
                    "case": what,
                    "op": "create",
                    "metadata": meta,
                    "answer": essentials(s, b),
                }
            )
            s, b = call(
                "PATCH",
                f"{path}/{name}?dryRun=All",
                {"metadata": meta},
                "application/merge-patch+json",
            )
            out.append(
                {
                    "kind": kind,
                    "case": what,
                    "op": "update",
                    "metadata": meta,
                    "answer": essentials(s, b),
                }
            )
        call("DELETE", f"{path}/{name}")
    json.dump(
        {
            "server": "kube-apiserver v1.20.2",
            "namespace": NS,
            "objects": {k: v[1] for k, v in KINDS.items()},
            "exchanges": out,
        },
        sys.stdout,
        indent=1,
    )


if __name__ == "__main__":
    main()
