"""Record what the real kube-apiserver 1.20 answers to invalid Roles, ClusterRoles,
RoleBindings and ClusterRoleBindings (rbac.authorization.k8s.io/v1): creates with
``dryRun=All``, and merge-patch updates with ``dryRun=All`` of stored objects, for
tests/facade/test_rbac_validation_real.py.

Run: python tools/record_rbac_validation.py > tests/data/real-apiserver-1.20/rbac-validation.json
(from the repository's root; the namespace and every object are named ``rbacval...``).
"""

import json
import sys

from _real_apiserver import call  # tools/

NS = "rbacval"
GROUP = "rbac.authorization.k8s.io"
_BASE = f"/apis/{GROUP}/v1"
PATHS = {
    "roles": f"{_BASE}/namespaces/{NS}/roles",
    "clusterroles": f"{_BASE}/clusterroles",
    "rolebindings": f"{_BASE}/namespaces/{NS}/rolebindings",
    "clusterrolebindings": f"{_BASE}/clusterrolebindings",
}
KINDS = {
    "roles": "Role",
    "clusterroles": "ClusterRole",
    "rolebindings": "RoleBinding",
    "clusterrolebindings": "ClusterRoleBinding",
}
#: The name a create's object gets unless its case names one.
NEW = "rbacval-new"

READ_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}


def rules(*entries):
    return {"rules": list(entries)}


def ref(kind="Role", name="rbacval-role", **more):
    return {"apiGroup": GROUP, "kind": kind, "name": name, **more}


def binding(role_ref, *subjects):
    body = {"roleRef": role_ref}
    if subjects:
        body["subjects"] = list(subjects)
    return body


def user(name="alice", **more):
    return {"kind": "User", "name": name, "apiGroup": GROUP, **more}


def sa(name="default", **more):
    return {"kind": "ServiceAccount", "name": name, **more}


def aggregation(*selectors):
    return {"aggregationRule": {"clusterRoleSelectors": list(selectors)}}


def named(name, obj):
    """An object to create under another name than ``NEW``."""
    return {"metadata": {"name": name}, **obj}


#: The stored objects the updates patch.
OBJECTS = {
    "roles": {"rbacval-role": rules(READ_PODS)},
    "clusterroles": {
        "rbacval-cr": rules(READ_PODS, {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}),
        "rbacval-agg": aggregation({"matchLabels": {"rbacval/aggregate": "true"}}),
    },
    "rolebindings": {"rbacval-rb": binding(ref(), user())},
    "clusterrolebindings": {
        "rbacval-crb": binding(ref("ClusterRole", "rbacval-cr"), sa(namespace=NS)),
    },
}

CREATES = {
    "roles": {
        "valid": rules(READ_PODS),
        "no rules": {},
        "rules null": {"rules": None},
        "wildcards": rules({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}),
        "core group only": rules(
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
        ),
        "rule without verbs": rules({"apiGroups": [""], "resources": ["pods"]}),
        "rule with empty verbs": rules({"apiGroups": [""], "resources": ["pods"], "verbs": []}),
        "rule without apiGroups": rules({"resources": ["pods"], "verbs": ["get"]}),
        "rule without resources": rules({"apiGroups": [""], "verbs": ["get"]}),
        "empty rule": rules({}),
        "resourceNames only": rules({"resourceNames": ["x"], "verbs": ["get"]}),
        "second rule bad": rules(READ_PODS, {"apiGroups": ["apps"], "verbs": ["get"]}),
        "nonResourceURLs": rules({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}),
        "nonResourceURLs and resources": rules({**READ_PODS, "nonResourceURLs": ["/metrics"]}),
        "nonResourceURLs without verbs": rules({"nonResourceURLs": ["/a", "/b"]}),
        "name with colon": named("rbacval:reader", rules(READ_PODS)),
        "name uppercase and underscore": named("Rbacval_Reader", rules(READ_PODS)),
        "name with slash": named("rbacval/reader", rules(READ_PODS)),
        "name with percent": named("rbacval%reader", rules(READ_PODS)),
        "name with slash and percent": named("rbacval/%reader", rules(READ_PODS)),
        "name dot": named(".", rules(READ_PODS)),
        "name dot dot": named("..", rules(READ_PODS)),
    },
    "clusterroles": {
        "valid": rules(READ_PODS),
        "nonResourceURLs": rules({"nonResourceURLs": ["/healthz", "/api/*"], "verbs": ["get"]}),
        "nonResourceURLs and resources": rules(
            {"nonResourceURLs": ["/healthz"], "resources": ["pods"], "verbs": ["get"]}
        ),
        "nonResourceURLs and apiGroups": rules(
            {"nonResourceURLs": ["/healthz"], "apiGroups": [""], "verbs": ["get"]}
        ),
        "nonResourceURLs and resourceNames": rules(
            {"nonResourceURLs": ["/healthz"], "resourceNames": ["x"], "verbs": ["get"]}
        ),
        "nonResourceURLs with empty verbs": rules({"nonResourceURLs": ["/healthz"], "verbs": []}),
        "rule without verbs": rules({"apiGroups": ["apps"], "resources": ["deployments"]}),
        "rule without apiGroups and resources": rules({"verbs": ["get"]}),
        "name with colon": named("system:rbacval-reader", rules(READ_PODS)),
        "name with slash": named("rbacval/reader", rules(READ_PODS)),
        "aggregationRule valid": aggregation({"matchLabels": {"rbacval/agg": "true"}}),
        "aggregationRule with rules": {
            **aggregation({"matchLabels": {"rbacval/agg": "true"}}),
            **rules(READ_PODS),
        },
        "aggregationRule empty selector": aggregation({}),
        "aggregationRule empty": {"aggregationRule": {}},
        "aggregationRule no selectors": aggregation(),
        "aggregationRule matchLabels key invalid": aggregation({"matchLabels": {"a b": "x"}}),
        "aggregationRule matchLabels value invalid": aggregation({"matchLabels": {"a": "x y"}}),
        "aggregationRule operator bogus": aggregation(
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}
        ),
        "aggregationRule In without values": aggregation(
            {"matchExpressions": [{"key": "a", "operator": "In"}]}
        ),
        "aggregationRule Exists with values": aggregation(
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}
        ),
        "aggregationRule expression key invalid": aggregation(
            {"matchExpressions": [{"key": "-a", "operator": "Exists"}]}
        ),
        "aggregationRule expression value invalid": aggregation(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x y"]}]}
        ),
        "aggregationRule second selector bad": aggregation(
            {"matchLabels": {"a": "b"}}, {"matchExpressions": [{"key": "a", "operator": "In"}]}
        ),
    },
    "rolebindings": {
        "valid": binding(ref(), user()),
        "valid to ClusterRole": binding(ref("ClusterRole", "view"), user()),
        "no subjects": binding(ref()),
        "empty subjects": {"roleRef": ref(), "subjects": []},
        "no roleRef": {"subjects": [user()]},
        "roleRef without apiGroup": binding({"kind": "Role", "name": "rbacval-role"}, user()),
        "roleRef without name": binding({"apiGroup": GROUP, "kind": "Role"}, user()),
        "roleRef without kind": binding({"apiGroup": GROUP, "name": "rbacval-role"}, user()),
        "roleRef kind lowercase": binding(ref("role"), user()),
        "roleRef kind ClusterRoleBinding": binding(ref("ClusterRoleBinding"), user()),
        "roleRef apiGroup with version": binding(ref(apiGroup=f"{GROUP}/v1"), user()),
        "roleRef apiGroup core": binding(ref(apiGroup="v1"), user()),
        "roleRef name with slash": binding(ref(name="a/b"), user()),
        "roleRef name dot dot": binding(ref(name=".."), user()),
        "roleRef name with colon": binding(ref("ClusterRole", "system:rbacval"), user()),
        "subject without kind": binding(ref(), {"name": "alice"}),
        "subject kind lowercase": binding(ref(), {"kind": "user", "name": "alice"}),
        "subject kind Role": binding(ref(), {"kind": "Role", "name": "alice"}),
        "subject without name": binding(ref(), {"kind": "User", "apiGroup": GROUP}),
        "subject User without apiGroup": binding(ref(), {"kind": "User", "name": "alice"}),
        "subject User apiGroup core": binding(ref(), user(apiGroup="v1")),
        "subject Group apiGroup with version": binding(
            ref(), {"kind": "Group", "name": "devs", "apiGroup": f"{GROUP}/v1"}
        ),
        "subject Group without name": binding(ref(), {"kind": "Group"}),
        "subject ServiceAccount without namespace": binding(ref(), sa()),
        "subject ServiceAccount with namespace": binding(ref(), sa(namespace="kube-system")),
        "subject ServiceAccount rbac apiGroup": binding(ref(), sa(apiGroup=GROUP)),
        "subject ServiceAccount name invalid": binding(ref(), sa("My_SA")),
        "subject ServiceAccount without name": binding(ref(), {"kind": "ServiceAccount"}),
        "subject User name any": binding(ref(), user("system:serviceaccount:x:y")),
        "second subject bad": binding(ref(), user(), {"kind": "Team", "name": "x"}),
        "everything wrong": binding({"apiGroup": "rbac", "kind": "Rol"}, {"kind": "x"}),
        "name with slash": named("rbacval/rb", binding(ref(), user())),
        "name with colon": named("rbacval:rb", binding(ref(), user())),
    },
    "clusterrolebindings": {
        "valid": binding(ref("ClusterRole", "view"), user()),
        "roleRef kind Role": binding(ref("Role", "rbacval-role"), user()),
        "roleRef kind bogus": binding(ref("Clusterrole", "view"), user()),
        "no roleRef": {"subjects": [user()]},
        "roleRef without name": binding({"apiGroup": GROUP, "kind": "ClusterRole"}, user()),
        "roleRef apiGroup bogus": binding(ref("ClusterRole", "view", apiGroup="rbac"), user()),
        "roleRef name with slash": binding(ref("ClusterRole", "a/b"), user()),
        "subject ServiceAccount without namespace": binding(ref("ClusterRole", "view"), sa()),
        "subject ServiceAccount with namespace": binding(
            ref("ClusterRole", "view"), sa(namespace=NS)
        ),
        "subject ServiceAccount everything wrong": binding(
            ref("ClusterRole", "view"), {"kind": "ServiceAccount", "apiGroup": "v1"}
        ),
        "subject without name": binding(ref("ClusterRole", "view"), {"kind": "Group"}),
        "subject kind bogus": binding(ref("ClusterRole", "view"), {"kind": "Users", "name": "a"}),
        "name with colon": named("system:rbacval-crb", binding(ref("ClusterRole", "view"), user())),
        "name with percent": named("rbacval%crb", binding(ref("ClusterRole", "view"), user())),
    },
}

UPDATES = {
    "roles": {
        ("rbacval-role", "rule without verbs"): rules({"apiGroups": [""], "resources": ["pods"]}),
        ("rbacval-role", "rules emptied"): {"rules": []},
        ("rbacval-role", "nonResourceURLs"): rules(
            {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}
        ),
        ("rbacval-role", "labels only"): {"metadata": {"labels": {"a": "b"}}},
        ("rbacval-role", "label invalid"): {"metadata": {"labels": {"a b": "c"}}},
        ("rbacval-role", "label invalid and rule without verbs"): {
            "metadata": {"annotations": {"-x": "y"}},
            **rules({"apiGroups": [""], "resources": ["pods"]}),
        },
    },
    "clusterroles": {
        ("rbacval-cr", "rule without apiGroups"): rules({"resources": ["pods"], "verbs": ["get"]}),
        ("rbacval-cr", "aggregationRule empty"): {"aggregationRule": {}},
        ("rbacval-cr", "aggregationRule added"): aggregation({"matchLabels": {"a": "b"}}),
        ("rbacval-agg", "selector bad operator"): aggregation(
            {"matchExpressions": [{"key": "a", "operator": "in", "values": ["b"]}]}
        ),
        ("rbacval-agg", "selectors emptied"): aggregation(),
        ("rbacval-agg", "aggregationRule removed"): {"aggregationRule": None},
    },
    "rolebindings": {
        ("rbacval-rb", "roleRef name changed"): {"roleRef": {"name": "other"}},
        ("rbacval-rb", "roleRef kind changed"): {"roleRef": {"kind": "ClusterRole"}},
        ("rbacval-rb", "roleRef apiGroup emptied"): {"roleRef": {"apiGroup": ""}},
        ("rbacval-rb", "roleRef apiGroup bogus"): {"roleRef": {"apiGroup": "rbac"}},
        ("rbacval-rb", "roleRef name emptied"): {"roleRef": {"name": ""}},
        ("rbacval-rb", "roleRef removed"): {"roleRef": None},
        ("rbacval-rb", "subjects changed"): {"subjects": [user("bob"), sa()]},
        ("rbacval-rb", "subject bad"): {"subjects": [{"kind": "User"}]},
        ("rbacval-rb", "subjects removed"): {"subjects": None},
        ("rbacval-rb", "label value invalid"): {"metadata": {"labels": {"a": "b c"}}},
    },
    "clusterrolebindings": {
        ("rbacval-crb", "roleRef name changed"): {"roleRef": {"name": "view"}},
        ("rbacval-crb", "roleRef kind Role"): {"roleRef": {"kind": "Role"}},
        ("rbacval-crb", "subject ServiceAccount without namespace"): {"subjects": [sa()]},
        ("rbacval-crb", "subjects changed"): {"subjects": [user("bob")]},
    },
}


def kept(status, answer):
    if status in (200, 201):
        return {"status": status}
    return {"status": status, **{k: answer.get(k) for k in ("reason", "message", "details")}}


def main():
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    objects = {}
    for kind, objs in OBJECTS.items():
        for name, obj in objs.items():
            body = {
                "apiVersion": f"{GROUP}/v1",
                "kind": KINDS[kind],
                "metadata": {"name": name},
                **obj,
            }
            call("DELETE", f"{PATHS[kind]}/{name}")
            status, answer = call("POST", PATHS[kind], body)
            assert status == 201, answer
            objects.setdefault(kind, {})[name] = body
    exchanges = []
    for kind, cases in CREATES.items():
        for case, obj in cases.items():
            body = {
                "apiVersion": f"{GROUP}/v1",
                "kind": KINDS[kind],
                "metadata": {"name": NEW},
                **obj,
            }
            status, answer = call("POST", PATHS[kind] + "?dryRun=All", body)
            exchanges.append(
                {
                    "kind": kind,
                    "op": "create",
                    "case": case,
                    "body": body,
                    "answer": kept(status, answer),
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
                    "answer": kept(status, answer),
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
