"""A CRD's status subresource, as kube-apiserver serves it (kopf writes status through it).

Discovery lists ``widgets/status``; an update of the object ignores
``.status``; an update of ``/status`` changes ``.status`` alone.
"""

from __future__ import annotations

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
    assert request(server, "GET", f"{W}/w/scale").status == 404
