"""A CRD's status subresource, as kube-apiserver serves it (kopf writes status through it).

Discovery lists ``widgets/status``; an update of the object ignores
``.status``; an update of ``/status`` changes ``.status`` alone.
"""

from __future__ import annotations

import json
from typing import Any

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import request

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [
            {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}
        ],
    },
}
W = "/apis/example.com/v1/namespaces/default/widgets"
MERGE = {"Content-Type": "application/merge-patch+json"}


def test_status_is_a_subresource(server: KubeAPIServer, store: InMemoryStore) -> None:
    assert (
        request(
            server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD
        ).status
        == 201
    )
    names = [r["name"] for r in request(server, "GET", "/apis/example.com/v1").json()["resources"]]
    assert names == ["widgets", "widgets/status"]

    created = request(
        server,
        "POST",
        W,
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 1},
            "status": {"phase": "ignored on create"},
        },
    ).json()
    assert "status" not in created

    reply = request(
        server,
        "PATCH",
        f"{W}/w/status",
        raw=b'{"status": {"phase": "Ready"}, "spec": {"size": 9}}',
        headers=MERGE,
    )
    assert reply.status == 200, reply.text
    assert reply.json()["status"] == {"phase": "Ready"}
    assert reply.json()["spec"] == {"size": 1}  # /status changes the status alone

    main = request(
        server,
        "PATCH",
        f"{W}/w",
        raw=b'{"status": {"phase": "Lost"}, "spec": {"size": 2}}',
        headers=MERGE,
    )
    assert main.json()["status"] == {"phase": "Ready"}  # the object's update keeps the status
    assert main.json()["spec"] == {"size": 2}

    current = request(server, "GET", f"{W}/w/status").json()
    current["status"] = {"phase": "Done"}
    put = request(server, "PUT", f"{W}/w/status", current)
    assert put.status == 200 and put.json()["status"] == {"phase": "Done"}
    assert request(server, "DELETE", f"{W}/w/status").status == 405
    assert request(server, "GET", f"{W}/w/scale").status == 404  # not declared


def test_scale_is_a_subresource(server: KubeAPIServer) -> None:
    crd = json.loads(json.dumps(CRD))
    crd["spec"]["versions"][0]["subresources"] = {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    request(server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    names = [r["name"] for r in request(server, "GET", "/apis/example.com/v1").json()["resources"]]
    assert names == ["widgets", "widgets/scale", "widgets/status"]
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "s"}}
    request(server, "POST", W, {**widget, "spec": {"replicas": 1}})
    status = {"status": {"replicas": 1, "selector": "app=s"}}
    request(server, "PATCH", f"{W}/s/status", raw=json.dumps(status).encode(), headers=MERGE)

    scale = request(server, "GET", f"{W}/s/scale").json()
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"] == {"replicas": 1}
    assert scale["status"] == {"replicas": 1, "selector": "app=s"}

    patched = request(
        server, "PATCH", f"{W}/s/scale", raw=b'{"spec": {"replicas": 3}}', headers=MERGE
    )
    assert patched.status == 200 and patched.json()["spec"] == {"replicas": 3}
    assert request(server, "GET", f"{W}/s").json()["spec"] == {"replicas": 3}

    scale = request(server, "GET", f"{W}/s/scale").json()
    scale["spec"]["replicas"] = 5
    assert request(server, "PUT", f"{W}/s/scale", scale).json()["spec"] == {"replicas": 5}
    scale["spec"]["replicas"] = 6  # the resourceVersion is stale now
    assert request(server, "PUT", f"{W}/s/scale", scale).status == 409
    bad = request(server, "PATCH", f"{W}/s/scale", raw=b'{"spec": {"replicas": -1}}', headers=MERGE)
    assert bad.status == 422
