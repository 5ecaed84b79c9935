"""Record what the real kube-apiserver 1.20 answers to ResourceQuota scopes and scope
selectors, LimitRanges and Namespaces (spec.finalizers, names): creates with
``dryRun=All`` of invalid (and some valid) objects, and merge-patch updates with
``dryRun=All`` of stored ones, for tests/facade/test_quota_scopes_real.py.

Run: python tools/record_quota_scopes.py > tests/data/real-apiserver-1.20/quota-scopes.json
"""

import json
import sys

from _real_apiserver import call  # tools/

NS = "quotascope-rec"
PATHS = {
    "resourcequotas": f"/api/v1/namespaces/{NS}/resourcequotas",
    "limitranges": f"/api/v1/namespaces/{NS}/limitranges",
    "namespaces": "/api/v1/namespaces",
}
KINDS = {"resourcequotas": "ResourceQuota", "limitranges": "LimitRange", "namespaces": "Namespace"}
NEW = "quotascope-new"


def rq(hard=None, scopes=None, *expressions):
    spec = {"hard": hard or {"pods": "10"}}
    if scopes is not None:
        spec["scopes"] = scopes
    if expressions:
        spec["scopeSelector"] = {"matchExpressions": list(expressions)}
    return {"spec": spec}


def expr(scope, operator, values=None):
    out = {"scopeName": scope, "operator": operator}
    if values is not None:
        out["values"] = values
    return out


def lr(*limits):
    return {"spec": {"limits": list(limits)}}


def item(kind, **lists):
    return {"type": kind, **lists}


COMPUTE = {"requests.cpu": "1", "limits.memory": "1Gi"}

#: The stored objects the updates patch.
OBJECTS = {
    "resourcequotas": {
        "quotascope-scoped": rq({"pods": "5"}, ["NotTerminating"]),
        "quotascope-plain": rq({"pods": "5"}),
        "quotascope-selector": rq({"pods": "5"}, None, expr("PriorityClass", "In", ["high"])),
    },
    "limitranges": {
        "quotascope-lr": lr(item("Container", max={"cpu": "2"}, min={"cpu": "100m"})),
    },
    "namespaces": {
        "quotascope-ns": {"spec": {"finalizers": ["kubernetes"]}},
    },
}

CREATES = {
    "resourcequotas": {
        "scope BestEffort on pods": rq({"pods": "10"}, ["BestEffort"]),
        "scope bogus": rq({"pods": "10"}, ["Bogus"]),
        "scope lower case": rq({"pods": "10"}, ["besteffort"]),
        "scope empty string": rq({"pods": "10"}, [""]),
        "BestEffort on cpu": rq({"pods": "10", "requests.cpu": "1"}, ["BestEffort"]),
        "BestEffort on memory and cpu": rq({"cpu": "1", "memory": "1Gi"}, ["BestEffort"]),
        "BestEffort and NotBestEffort": rq({"pods": "10"}, ["BestEffort", "NotBestEffort"]),
        "Terminating and NotTerminating": rq({"pods": "10"}, ["Terminating", "NotTerminating"]),
        "both conflicting pairs": rq(
            {"pods": "1"}, ["Terminating", "NotTerminating", "BestEffort", "NotBestEffort"]
        ),
        "NotTerminating on compute": rq(COMPUTE, ["NotTerminating"]),
        "NotBestEffort on compute": rq(COMPUTE, ["NotBestEffort"]),
        "Terminating on services": rq({"services": "2"}, ["Terminating"]),
        "Terminating on two non-pod resources": rq(
            {"services": "2", "secrets": "3"}, ["Terminating"]
        ),
        "NotBestEffort on ephemeral-storage": rq(
            {"requests.ephemeral-storage": "1Gi"}, ["NotBestEffort"]
        ),
        "Terminating on count/pods": rq({"count/pods": "3"}, ["Terminating"]),
        "Terminating on an extended resource": rq(
            {"requests.nvidia.com/gpu": "1"}, ["Terminating"]
        ),
        "PriorityClass scope": rq({"pods": "10"}, ["PriorityClass"]),
        "NotBestEffort on huge pages": rq({"requests.hugepages-2Mi": "1Gi"}, ["NotBestEffort"]),
        "CrossNamespacePodAffinity scope": rq({"pods": "10"}, ["CrossNamespacePodAffinity"]),
        "bogus scope on cpu": rq({"cpu": "1"}, ["Bogus"]),
        "duplicate scope": rq({"pods": "10"}, ["NotTerminating", "NotTerminating"]),
        "selector PriorityClass In": rq(
            {"pods": "10"}, None, expr("PriorityClass", "In", ["high", "low"])
        ),
        "selector PriorityClass NotIn": rq(
            {"pods": "10"}, None, expr("PriorityClass", "NotIn", ["low"])
        ),
        "selector PriorityClass Exists": rq({"pods": "10"}, None, expr("PriorityClass", "Exists")),
        "selector PriorityClass DoesNotExist": rq(
            {"pods": "10"}, None, expr("PriorityClass", "DoesNotExist")
        ),
        "selector In without values": rq({"pods": "10"}, None, expr("PriorityClass", "In")),
        "selector NotIn with empty values": rq(
            {"pods": "10"}, None, expr("PriorityClass", "NotIn", [])
        ),
        "selector Exists with values": rq(
            {"pods": "10"}, None, expr("PriorityClass", "Exists", ["high"])
        ),
        "selector DoesNotExist with values": rq(
            {"pods": "10"}, None, expr("PriorityClass", "DoesNotExist", ["a", "b"])
        ),
        "selector operator bogus": rq(
            {"pods": "10"}, None, expr("PriorityClass", "Equals", ["high"])
        ),
        "selector operator lower case": rq(
            {"pods": "10"}, None, expr("PriorityClass", "in", ["high"])
        ),
        "selector operator missing": rq({"pods": "10"}, None, {"scopeName": "PriorityClass"}),
        "selector scopeName bogus": rq({"pods": "10"}, None, expr("Bogus", "Exists")),
        "selector scopeName missing": rq({"pods": "10"}, None, {"operator": "Exists"}),
        "selector BestEffort Exists": rq({"pods": "10"}, None, expr("BestEffort", "Exists")),
        "selector BestEffort In": rq({"pods": "10"}, None, expr("BestEffort", "In", ["x"])),
        "selector Terminating DoesNotExist": rq(
            {"pods": "10"}, None, expr("Terminating", "DoesNotExist")
        ),
        "selector BestEffort on cpu": rq(
            {"pods": "10", "cpu": "1"}, None, expr("BestEffort", "Exists")
        ),
        "selector PriorityClass on services": rq(
            {"services": "1"}, None, expr("PriorityClass", "In", ["high"])
        ),
        "selector BestEffort and NotBestEffort": rq(
            {"pods": "10"}, None, expr("BestEffort", "Exists"), expr("NotBestEffort", "Exists")
        ),
        "selector CrossNamespacePodAffinity": rq(
            {"pods": "10"}, None, expr("CrossNamespacePodAffinity", "Exists")
        ),
        "selector empty": {"spec": {"hard": {"pods": "1"}, "scopeSelector": {}}},
        "scopes and selector": rq(
            {"pods": "10"}, ["NotTerminating"], expr("PriorityClass", "In", ["high"])
        ),
    },
    "limitranges": {
        "valid Container": lr(
            item(
                "Container",
                max={"cpu": "2", "memory": "1Gi"},
                min={"cpu": "100m", "memory": "64Mi"},
                default={"cpu": "500m", "memory": "256Mi"},
                defaultRequest={"cpu": "200m", "memory": "128Mi"},
                maxLimitRequestRatio={"cpu": "4"},
            )
        ),
        "valid Pod": lr(item("Pod", max={"cpu": "4"}, min={"cpu": "100m"})),
        "valid PVC": lr(item("PersistentVolumeClaim", min={"storage": "1Gi"})),
        "empty limits": {"spec": {"limits": []}},
        "Container with nothing": lr(item("Container")),
        "type bogus": lr(item("Bogus", max={"cpu": "1"})),
        "type lower case": lr(item("container", max={"cpu": "1"})),
        "type missing": lr({"max": {"cpu": "1"}}),
        "type with space": lr(item("my type", max={"cpu": "1"})),
        "type fully qualified": lr(item("example.com/gadget", max={"example.com/x": "1"})),
        "duplicate type": lr(item("Container", max={"cpu": "1"}), item("Container")),
        "min greater than max": lr(item("Pod", max={"cpu": "1"}, min={"cpu": "2"})),
        "min greater than max, memory": lr(
            item("Pod", max={"memory": "512Mi"}, min={"memory": "1Gi"})
        ),
        "default greater than max": lr(item("Container", max={"cpu": "1"}, default={"cpu": "2"})),
        "defaultRequest greater than default": lr(
            item("Container", default={"cpu": "500m"}, defaultRequest={"cpu": "1"})
        ),
        "min greater than defaultRequest": lr(
            item("Container", min={"cpu": "500m"}, defaultRequest={"cpu": "100m"})
        ),
        "min greater than default": lr(
            item("Container", min={"cpu": "500m"}, default={"cpu": "100m"})
        ),
        "defaultRequest greater than max": lr(
            item("Container", max={"cpu": "1"}, default={"cpu": "1"}, defaultRequest={"cpu": "2"})
        ),
        "min greater than max, Container (defaults follow)": lr(
            item("Container", max={"cpu": "1"}, min={"cpu": "2"})
        ),
        "ratio below 1": lr(item("Container", maxLimitRequestRatio={"cpu": "500m"})),
        "ratio above max/min": lr(
            item("Pod", max={"cpu": "2"}, min={"cpu": "1"}, maxLimitRequestRatio={"cpu": "3"})
        ),
        "ratio equal to max/min": lr(
            item("Pod", max={"cpu": "2"}, min={"cpu": "1"}, maxLimitRequestRatio={"cpu": "2"})
        ),
        "ratio with a zero min": lr(
            item("Pod", max={"cpu": "2"}, min={"cpu": "0"}, maxLimitRequestRatio={"cpu": "3"})
        ),
        "ratio with milli bounds": lr(
            item("Pod", max={"cpu": "300m"}, min={"cpu": "200m"}, maxLimitRequestRatio={"cpu": "2"})
        ),
        "ratio above max/min, memory": lr(
            item(
                "Pod",
                max={"memory": "1Gi"},
                min={"memory": "256Mi"},
                maxLimitRequestRatio={"memory": "5"},
            )
        ),
        "Pod with default": lr(item("Pod", default={"cpu": "1"})),
        "Pod with defaultRequest": lr(item("Pod", defaultRequest={"cpu": "1"})),
        "Pod with both defaults": lr(
            item("Pod", default={"cpu": "1"}, defaultRequest={"cpu": "1"})
        ),
        "PVC without storage": lr(item("PersistentVolumeClaim")),
        "PVC with only a cpu max": lr(item("PersistentVolumeClaim", max={"cpu": "1"})),
        "PVC min greater than max": lr(
            item("PersistentVolumeClaim", max={"storage": "1Gi"}, min={"storage": "2Gi"})
        ),
        "Container with storage": lr(item("Container", max={"storage": "1Gi"})),
        "Container with an unknown name": lr(item("Container", max={"bogus": "1"})),
        "Container with requests.cpu": lr(item("Container", max={"requests.cpu": "1"})),
        "Container with a bad name": lr(item("Container", min={"a b": "1"})),
        "Container with an extended resource": lr(
            item("Container", default={"nvidia.com/gpu": "1"})
        ),
        "extended resource default and request differ": lr(
            item(
                "Container", default={"nvidia.com/gpu": "2"}, defaultRequest={"nvidia.com/gpu": "1"}
            )
        ),
        "hugepages default and request differ": lr(
            item(
                "Container",
                default={"hugepages-2Mi": "4Mi"},
                defaultRequest={"hugepages-2Mi": "2Mi"},
            )
        ),
        "Container with a requests. extended name": lr(
            item("Container", max={"requests.example.com/x": "1"})
        ),
        "PVC with an unknown name": lr(
            item("PersistentVolumeClaim", max={"storage": "1Gi", "bogus": "1"})
        ),
        "a negative min": lr(item("Container", min={"cpu": "-1"})),
        "bad names in every list": lr(
            item(
                "Container",
                max={"A_": "1"},
                min={"B_": "1"},
                default={"C_": "1"},
                defaultRequest={"D_": "1"},
                maxLimitRequestRatio={"E_": "1"},
            )
        ),
        "two items, errors in both": lr(
            item("Pod", default={"cpu": "1"}), item("PersistentVolumeClaim")
        ),
    },
    "namespaces": {
        "finalizer kubernetes": {"spec": {"finalizers": ["kubernetes"]}},
        "finalizer bogus": {"spec": {"finalizers": ["foo"]}},
        "finalizer fully qualified": {"spec": {"finalizers": ["example.com/foo"]}},
        "finalizer orphan": {"spec": {"finalizers": ["orphan"]}},
        "finalizer two slashes": {"spec": {"finalizers": ["a/b/c"]}},
        "finalizer with a space": {"spec": {"finalizers": ["a b"]}},
        "finalizer bad prefix": {"spec": {"finalizers": ["Example.com/foo"]}},
        "two bad finalizers": {"spec": {"finalizers": ["foo", "bar"]}},
        "finalizer empty": {"spec": {"finalizers": [""]}},
        "status phase Terminating": {"status": {"phase": "Terminating"}},
        "@name:quotascope_Bad": {},
        "@name:quotascope.dotted": {},
        "@name:quotascope-": {},
        "@name:Quotascope-upper": {},
        "@name:quotascope-" + "x" * 53: {},
        "@name:quotascope-" + "x" * 46: {},
    },
}

UPDATES = {
    "resourcequotas": {
        ("quotascope-scoped", "scopes changed"): {"spec": {"scopes": ["Terminating"]}},
        ("quotascope-scoped", "scope added"): {
            "spec": {"scopes": ["NotTerminating", "NotBestEffort"]}
        },
        ("quotascope-scoped", "scopes removed"): {"spec": {"scopes": None}},
        ("quotascope-scoped", "scopes reordered duplicate"): {
            "spec": {"scopes": ["NotTerminating", "NotTerminating"]}
        },
        ("quotascope-scoped", "hard changed"): {"spec": {"hard": {"pods": "7"}}},
        ("quotascope-scoped", "hard on a service count"): {"spec": {"hard": {"services": "1"}}},
        ("quotascope-plain", "scopes added"): {"spec": {"scopes": ["BestEffort"]}},
        ("quotascope-plain", "selector added"): {
            "spec": {"scopeSelector": {"matchExpressions": [expr("BestEffort", "Exists")]}}
        },
        ("quotascope-selector", "selector changed"): {
            "spec": {"scopeSelector": {"matchExpressions": [expr("PriorityClass", "In", ["low"])]}}
        },
        ("quotascope-selector", "selector made invalid"): {
            "spec": {"scopeSelector": {"matchExpressions": [expr("PriorityClass", "In")]}}
        },
    },
    "limitranges": {
        ("quotascope-lr", "min raised over max"): {
            "spec": {"limits": [item("Container", max={"cpu": "2"}, min={"cpu": "3"})]}
        },
        ("quotascope-lr", "type changed to Pod"): {
            "spec": {"limits": [item("Pod", max={"cpu": "2"})]}
        },
        ("quotascope-lr", "type bogus"): {"spec": {"limits": [item("Bogus")]}},
    },
    "namespaces": {
        ("quotascope-ns", "spec.finalizers bogus"): {"spec": {"finalizers": ["foo"]}},
        ("quotascope-ns", "spec.finalizers emptied"): {"spec": {"finalizers": []}},
        ("quotascope-ns", "status phase"): {"status": {"phase": "Terminating"}},
    },
}


#: ``/finalize`` writes (PUT of the stored Namespace with these ``spec.finalizers``).
FINALIZES = {
    ("quotascope-ns", "finalize: a name with a space"): ["a b"],
    ("quotascope-ns", "finalize: a bogus name after kubernetes"): ["kubernetes", "foo"],
    ("quotascope-ns", "finalize: fully qualified"): ["example.com/x"],
    ("quotascope-ns", "finalize: emptied"): [],
}


def kept(status, answer, kind):
    if status in (200, 201):
        out = {"status": status}
        if kind == "namespaces":
            out["spec"] = answer.get("spec")
            out["status.phase"] = answer.get("status", {}).get("phase")
        elif kind == "limitranges":
            out["spec"] = answer.get("spec")
        else:
            out["spec"] = answer.get("spec")
        return out
    return {"status": status, **{k: answer.get(k) for k in ("reason", "message", "details")}}


def body_of(kind, case, obj):
    name = case.removeprefix("@name:") if case.startswith("@name:") else NEW
    return {"apiVersion": "v1", "kind": KINDS[kind], "metadata": {"name": name}, **obj}


def main():
    call("POST", PATHS["namespaces"], body_of("namespaces", "@name:" + NS, {}))
    objects = {}
    for kind, named in OBJECTS.items():
        for name, obj in named.items():
            body = body_of(kind, "@name:" + name, obj)
            if kind != "namespaces":  # (no namespace controller here: a deleted one stays)
                call("DELETE", f"{PATHS[kind]}/{name}")
            status, answer = call("POST", PATHS[kind], body)
            assert status == 201 or (status == 409 and kind == "namespaces"), answer
            objects.setdefault(kind, {})[name] = body
    exchanges = []
    for kind, cases in CREATES.items():
        for case, obj in cases.items():
            body = body_of(kind, case, obj)
            status, answer = call("POST", PATHS[kind] + "?dryRun=All", body)
            exchanges.append(
                {
                    "kind": kind,
                    "op": "create",
                    "case": case,
                    "body": body,
                    "answer": kept(status, answer, kind),
                }
            )
    for kind, cases in UPDATES.items():
        for (name, case), patch in cases.items():
            status, answer = call(
                "PATCH", f"{PATHS[kind]}/{name}?dryRun=All", patch, "application/merge-patch+json"
            )
            exchanges.append(
                {
                    "kind": kind,
                    "op": "update",
                    "case": case,
                    "name": name,
                    "patch": patch,
                    "answer": kept(status, answer, kind),
                }
            )
    for (name, case), finalizers in FINALIZES.items():
        _, stored = call("GET", f"{PATHS['namespaces']}/{name}")
        stored["spec"] = {"finalizers": finalizers}
        status, answer = call("PUT", f"{PATHS['namespaces']}/{name}/finalize?dryRun=All", stored)
        exchanges.append(
            {
                "kind": "namespaces",
                "op": "finalize",
                "case": case,
                "name": name,
                "finalizers": finalizers,
                "answer": kept(status, answer, "namespaces"),
            }
        )
    json.dump(
        {
            "server": "kube-apiserver v1.20.2",
            "namespace": NS,
            "objects": objects,
            "exchanges": exchanges,
        },
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
