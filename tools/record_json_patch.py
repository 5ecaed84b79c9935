"""Record JSON-patch answers from the real kube-apiserver 1.20 (dryRun=All on one Deployment)."""

import json
import sys

from _real_apiserver import call  # tools/

NS = "lead-jp"

DEPLOY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "jp", "labels": {"a": "1", "b": "2"}, "annotations": {"x": "y"}},
    "spec": {
        "replicas": 3,
        "minReadySeconds": 5,
        "selector": {"matchLabels": {"app": "jp"}},
        "template": {
            "metadata": {"labels": {"app": "jp"}},
            "spec": {
                "containers": [
                    {"name": "c", "image": "nginx", "args": ["a", "b", "c"]},
                    {"name": "d", "image": "busybox"},
                ]
            },
        },
    },
}
L = "/metadata/labels"
A = "/spec/template/spec/containers/0/args"
C = "/spec/template/spec/containers"
PATCHES = [
    ("add a label", [{"op": "add", "path": L + "/z", "value": "9"}]),
    ("add over an existing label", [{"op": "add", "path": L + "/a", "value": "9"}]),
    ("add without value", [{"op": "add", "path": L + "/z"}]),
    ("add a null label", [{"op": "add", "path": L + "/z", "value": None}]),
    ("path without a leading slash", [{"op": "add", "path": "metadata/labels/z", "value": "9"}]),
    ("path one segment without slash", [{"op": "add", "path": "minReadySeconds", "value": 7}]),
    ("add into a missing parent", [{"op": "add", "path": "/metadata/nope/z", "value": "9"}]),
    ("add under a scalar", [{"op": "add", "path": "/spec/replicas/x", "value": 1}]),
    ("add the empty label key", [{"op": "add", "path": L + "/", "value": "9"}]),
    ("remove a label", [{"op": "remove", "path": L + "/a"}]),
    ("remove a missing label", [{"op": "remove", "path": L + "/zz"}]),
    ("remove the labels map", [{"op": "remove", "path": L}]),
    ("remove from a missing parent", [{"op": "remove", "path": "/metadata/nope/z"}]),
    ("replace a label", [{"op": "replace", "path": L + "/a", "value": "9"}]),
    ("replace a missing label", [{"op": "replace", "path": L + "/zz", "value": "9"}]),
    ("replace without value", [{"op": "replace", "path": "/spec/minReadySeconds"}]),
    (
        "test equal then replace",
        [
            {"op": "test", "path": "/spec/replicas", "value": 3},
            {"op": "replace", "path": "/spec/replicas", "value": 4},
        ],
    ),
    ("test unequal", [{"op": "test", "path": "/spec/replicas", "value": 5}]),
    (
        "test 3.0 against 3",
        [
            {"op": "test", "path": "/spec/replicas", "value": 3.0},
            {"op": "replace", "path": "/spec/replicas", "value": 4},
        ],
    ),
    ("test string against number", [{"op": "test", "path": "/spec/replicas", "value": "3"}]),
    (
        "test missing path with null",
        [
            {"op": "test", "path": L + "/zz", "value": None},
            {"op": "replace", "path": "/spec/replicas", "value": 4},
        ],
    ),
    ("test missing path with a value", [{"op": "test", "path": L + "/zz", "value": "1"}]),
    (
        "test an object",
        [
            {"op": "test", "path": L, "value": {"b": "2", "a": "1"}},
            {"op": "replace", "path": "/spec/replicas", "value": 4},
        ],
    ),
    ("move a label", [{"op": "move", "from": L + "/a", "path": L + "/z"}]),
    ("move a missing label", [{"op": "move", "from": L + "/zz", "path": L + "/z"}]),
    (
        "move into its own child",
        [{"op": "move", "from": "/metadata/labels", "path": "/metadata/labels/x"}],
    ),
    ("move without from", [{"op": "move", "path": L + "/z"}]),
    ("move onto itself", [{"op": "move", "from": L + "/a", "path": L + "/a"}]),
    ("copy a label", [{"op": "copy", "from": L + "/a", "path": L + "/z"}]),
    ("copy a missing label", [{"op": "copy", "from": L + "/zz", "path": L + "/z"}]),
    ("copy from a missing parent", [{"op": "copy", "from": "/metadata/nope/z", "path": L + "/z"}]),
    ("array add at 0", [{"op": "add", "path": A + "/0", "value": "n"}]),
    ("array add at the length", [{"op": "add", "path": A + "/3", "value": "n"}]),
    ("array add past the length", [{"op": "add", "path": A + "/4", "value": "n"}]),
    ("array add at -", [{"op": "add", "path": A + "/-", "value": "n"}]),
    ("array add at -1", [{"op": "add", "path": A + "/-1", "value": "n"}]),
    ("array add at -3", [{"op": "add", "path": A + "/-3", "value": "n"}]),
    ("array add at -4", [{"op": "add", "path": A + "/-4", "value": "n"}]),
    ("array add at 01", [{"op": "add", "path": A + "/01", "value": "n"}]),
    ("array add at +1", [{"op": "add", "path": A + "/+1", "value": "n"}]),
    ("array add at x", [{"op": "add", "path": A + "/x", "value": "n"}]),
    ("array remove 1", [{"op": "remove", "path": A + "/1"}]),
    ("array remove -1", [{"op": "remove", "path": A + "/-1"}]),
    ("array remove -", [{"op": "remove", "path": A + "/-"}]),
    ("array remove 3", [{"op": "remove", "path": A + "/3"}]),
    ("array replace 0", [{"op": "replace", "path": A + "/0", "value": "n"}]),
    ("array replace -1", [{"op": "replace", "path": A + "/-1", "value": "n"}]),
    ("array replace -", [{"op": "replace", "path": A + "/-", "value": "n"}]),
    ("array replace 3", [{"op": "replace", "path": A + "/3", "value": "n"}]),
    (
        "array test 1",
        [
            {"op": "test", "path": A + "/1", "value": "b"},
            {"op": "replace", "path": "/spec/replicas", "value": 4},
        ],
    ),
    (
        "array test -1",
        [
            {"op": "test", "path": A + "/-1", "value": "c"},
            {"op": "replace", "path": "/spec/replicas", "value": 4},
        ],
    ),
    ("array move 0 to -", [{"op": "move", "from": A + "/0", "path": A + "/-"}]),
    ("array move 2 to 0", [{"op": "move", "from": A + "/2", "path": A + "/0"}]),
    ("array copy 0 to 1", [{"op": "copy", "from": A + "/0", "path": A + "/1"}]),
    ("array add into a missing list", [{"op": "add", "path": C + "/1/args/0", "value": "n"}]),
    (
        "array add a container at -",
        [{"op": "add", "path": C + "/-", "value": {"name": "e", "image": "x"}}],
    ),
    ("array index on a map", [{"op": "add", "path": L + "/0", "value": "n"}]),
    ("key on an array", [{"op": "add", "path": A + "/name", "value": "n"}]),
    ("escape ~1", [{"op": "add", "path": "/metadata/annotations/a~1b", "value": "v"}]),
    ("escape ~0", [{"op": "add", "path": "/metadata/annotations/a~0b", "value": "v"}]),
    ("escape ~01", [{"op": "add", "path": "/metadata/annotations/a~01b", "value": "v"}]),
    ("bad escape ~2", [{"op": "add", "path": "/metadata/annotations/a~2b", "value": "v"}]),
    ("trailing ~", [{"op": "add", "path": "/metadata/annotations/a~", "value": "v"}]),
    ("unknown op", [{"op": "bogus", "path": L + "/z", "value": "9"}]),
    ("op missing", [{"path": L + "/z", "value": "9"}]),
    ("op not a string", [{"op": 1, "path": L + "/z", "value": "9"}]),
    ("op upper case", [{"op": "ADD", "path": L + "/z", "value": "9"}]),
    ("path missing", [{"op": "add", "value": "9"}]),
    ("path not a string", [{"op": "add", "path": 5, "value": "9"}]),
    ("from not a string", [{"op": "copy", "from": 5, "path": L + "/z"}]),
    ("empty patch", []),
    ("an operation that is not an object", [1]),
    ("a null operation", [None]),
    ("not a list", {"op": "add", "path": L + "/z", "value": "9"}),
    ("a string", "x"),
    ("add the root", [{"op": "add", "path": "", "value": {"x": 1}}]),
    ("replace the root", [{"op": "replace", "path": "", "value": {"x": 1}}]),
    ("remove the root", [{"op": "remove", "path": ""}]),
    ("path /", [{"op": "add", "path": "/", "value": 1}]),
    ("test the root", [{"op": "test", "path": "", "value": {}}]),
    (
        "second op fails",
        [{"op": "add", "path": L + "/z", "value": "9"}, {"op": "remove", "path": L + "/zz"}],
    ),
    ("extra member ignored", [{"op": "add", "path": L + "/z", "value": "9", "extra": 1}]),
    (
        "duplicate member",
        '[{"op": "add", "path": "/metadata/labels/z", "value": "1", "value": "2"}]',
    ),
    ("not JSON", "[{"),
    ("add label value number", [{"op": "add", "path": L + "/z", "value": 9}]),
]


def project(obj):
    meta, spec = obj.get("metadata", {}), obj.get("spec", {})
    ann = {k: v for k, v in (meta.get("annotations") or {}).items()}
    return {
        "labels": meta.get("labels"),
        "annotations": ann,
        "replicas": spec.get("replicas"),
        "minReadySeconds": spec.get("minReadySeconds"),
        "containers": [
            {k: c.get(k) for k in ("name", "image", "args")}
            for c in spec.get("template", {}).get("spec", {}).get("containers", [])
        ],
    }


def essentials(status, body):
    if status is None:
        return {"status": None, "note": "the 1.20 server panicked (connection closed)"}
    if status == 200:
        return {"status": 200, "object": project(body)}
    return {
        "status": status,
        "kind": body.get("kind"),
        "reason": body.get("reason"),
        "message": body.get("message"),
        "details": body.get("details"),
    }


if __name__ == "__main__":
    call(
        "POST",
        "/api/v1/namespaces",
        json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    )
    call("DELETE", f"/apis/apps/v1/namespaces/{NS}/deployments/jp")
    s, b = call("POST", f"/apis/apps/v1/namespaces/{NS}/deployments", json.dumps(DEPLOY))
    assert s == 201, b
    out = []
    for name, patch in PATCHES:
        print(name, file=sys.stderr)
        raw = (
            patch
            if isinstance(patch, str) and name in ("duplicate member", "not JSON")
            else json.dumps(patch)
        )
        s, b = call(
            "PATCH",
            f"/apis/apps/v1/namespaces/{NS}/deployments/jp?dryRun=All",
            raw,
            "application/json-patch+json",
        )
        out.append({"name": name, "patch": raw, "answer": essentials(s, b)})
    s, b = call("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/jp")
    json.dump(
        {
            "server": "kube-apiserver v1.20.2",
            "namespace": NS,
            "object": DEPLOY,
            "stored": project(b),
            "exchanges": out,
        },
        sys.stdout,
        indent=1,
    )
