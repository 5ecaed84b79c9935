"""Record how a real kube-apiserver 1.20 reads labelSelector query strings (lists of ConfigMaps)."""

import json
import sys
import urllib.parse

from _real_apiserver import call  # tools/

NS = "lead-labelquery"

OBJECTS = {
    "a1": {"a": "1"},
    "a5": {"a": "5", "b": "x"},
    "aneg": {"a": "-3"},
    "ax": {"a": "x"},
    "aempty": {"a": ""},
    "b": {"b": "y"},
    "none": {},
    "pfx": {"example.com/k": "v"},
}
SELECTORS = [
    "",
    "a",
    "!a",
    "a=1",
    "a==1",
    "a!=1",
    "a in (1,5)",
    "a notin (1,5)",
    "a in ()",
    "a in (,1)",
    "a in (1,)",
    "a in (,,)",
    "a>2",
    "a<2",
    "a>-5",
    "a<x",
    "a>",
    "a>1,b",
    "a=",
    "a!=",
    "a=,b",
    "!a,!b",
    "a,b",
    "a , b",
    " a = 1 ",
    "a=1=2",
    "a=b c",
    "bad key=v",
    "a b",
    "!",
    "!!a",
    "!a=1",
    "a!",
    ",a",
    "a,",
    "a,,b",
    "(",
    ")",
    "a in 1",
    "a in (1",
    "a in (1 2)",
    "a notin",
    "a in",
    "a=(",
    "a==",
    "a===1",
    "a=!=1",
    "a!==1",
    "a<<1",
    "a=>1",
    "example.com/k=v",
    "example.com/k",
    "a/b/c=1",
    "Example.com/k=v",
    "-a=1",
    "a=-1",
    "a=" + "v" * 64,
    "k" * 64 + "=1",
    "in=1",
    "notin",
    "a in (in, notin)",
    "a=in",
    "x in (a) , y",
    "a\t=\t1",
    "a\n=1",
]
if __name__ == "__main__":
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    for name, labels in OBJECTS.items():
        call(
            "POST",
            f"/api/v1/namespaces/{NS}/configmaps",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}},
        )
    out = []
    for sel in SELECTORS:
        s, b = call(
            "GET", f"/api/v1/namespaces/{NS}/configmaps?labelSelector=" + urllib.parse.quote(sel)
        )
        ans = {"status": s}
        if s == 200:
            ans["names"] = sorted(i["metadata"]["name"] for i in b["items"])
        else:
            ans.update(reason=b.get("reason"), message=b.get("message"))
        out.append({"selector": sel, "answer": ans})
    json.dump(
        {"server": "kube-apiserver v1.20.2", "namespace": NS, "objects": OBJECTS, "lists": out},
        sys.stdout,
        indent=1,
    )
