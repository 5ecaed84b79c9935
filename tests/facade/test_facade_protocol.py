"""The facade over raw HTTP: wire protocol, discovery shapes, Accept negotiation, Status errors."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, negotiate
from tests.facade.facade_helpers import PARTIAL, PARTIAL_LIST, configmap, connect, request


def raw_exchange(server: KubeAPIServer, data: bytes) -> bytes:
    """Send bytes, read until the server closes the connection."""
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------- wire


def test_keep_alive_serves_several_requests_on_one_connection(server: KubeAPIServer) -> None:
    conn = connect(server)
    try:
        for _ in range(3):
            conn.request("GET", "/api/v1/namespaces/default")
            resp = conn.getresponse()
            assert resp.status == 200
            assert resp.getheader("Connection") == "keep-alive"
            resp.read()
    finally:
        conn.close()
    assert [e.path for e in server.requests] == ["/api/v1/namespaces/default"] * 3


def test_chunked_request_body_and_connection_close(server: KubeAPIServer, store) -> None:
    body = b'{"metadata":{"name":"chunky"},"data":{"a":"b"}}'
    half = len(body) // 2
    data = (
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\n"
        + b"%x\r\n%s\r\n" % (half, body[:half])
        + b"%x\r\n%s\r\n" % (len(body) - half, body[half:])
        + b"0\r\n\r\n"
    )
    reply = raw_exchange(server, data)
    assert reply.startswith(b"HTTP/1.1 201 Created\r\n")
    assert b"Connection: close" in reply
    assert store.get_object("v1", "ConfigMap", "chunky", "default")["data"] == {"a": "b"}


def test_expect_100_continue_is_answered(server: KubeAPIServer) -> None:
    body = b'{"metadata":{"name":"cont"}}'
    data = (
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
        b"Expect: 100-continue\r\nConnection: close\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    reply = raw_exchange(server, data)
    assert reply.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created")


def test_malformed_request_line_is_400_and_closes(server: KubeAPIServer) -> None:
    reply = raw_exchange(server, b"this is not http\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b'"kind":"Status"' in reply


def test_health_and_version_endpoints(server: KubeAPIServer) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        reply = request(server, "GET", path)
        assert (reply.status, reply.body) == (200, b"ok")
    version = request(server, "GET", "/version").json()
    assert version["major"] == "1" and version["gitVersion"].startswith("v1.")


def test_health_endpoints_answer_verbose_exclude_and_single_checks(server: KubeAPIServer) -> None:
    # kube-apiserver's health handler: one line per check, excluded ones marked, a
    # warning for an exclusion that matches no check, then "<endpoint> check passed"
    # (format checked against a real 1.20 apiserver; 1.27+ adds etcd-readiness).
    reply = request(server, "GET", "/readyz?verbose&exclude=etcd&exclude=nope")
    assert reply.status == 200
    assert reply.body.decode().splitlines() == [
        "[+]ping ok",
        "[+]log ok",
        "[+]etcd excluded: ok",
        "[+]etcd-readiness ok",
        "[+]informer-sync ok",
        "[+]shutdown ok",
        'warn: some health checks cannot be excluded: no matches for "nope"',
        "readyz check passed",
    ]
    for endpoint in ("livez", "healthz"):
        lines = request(server, "GET", f"/{endpoint}?verbose").body.decode().splitlines()
        assert lines == ["[+]ping ok", "[+]log ok", "[+]etcd ok", f"{endpoint} check passed"]
    for path in ("/readyz/etcd", "/readyz/informer-sync", "/livez/ping", "/healthz/log"):
        reply = request(server, "GET", path)
        assert (reply.status, reply.body) == (200, b"ok"), path
    assert request(server, "GET", "/readyz/no-such-check").status == 404
    assert request(server, "GET", "/livez/informer-sync").status == 404  # a readyz check only


# ---------------------------------------------------------------- discovery


def test_core_discovery_shapes(server: KubeAPIServer) -> None:
    api = request(server, "GET", "/api").json()
    assert api["kind"] == "APIVersions" and api["versions"] == ["v1"]
    assert api["serverAddressByClientCIDRs"][0]["serverAddress"] == server.url[len("http://") :]
    core = request(server, "GET", "/api/v1").json()
    assert core["kind"] == "APIResourceList" and core["groupVersion"] == "v1"
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods == {
        "name": "pods",
        "singularName": "pod",
        "namespaced": True,
        "kind": "Pod",
        "verbs": sorted(
            ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
        ),
        "shortNames": ["po"],
        "categories": ["all"],
    }
    namespaces = next(r for r in core["resources"] if r["name"] == "namespaces")
    assert namespaces["namespaced"] is False


def test_group_discovery_lists_preferred_version_first(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    store.register_resource(
        group="example.com",
        versions=["v1beta1", "v1"],
        preferred_version="v1",
        resource="widgets",
        kind="Widget",
    )
    groups = request(server, "GET", "/apis").json()
    assert groups["kind"] == "APIGroupList"
    example = next(g for g in groups["groups"] if g["name"] == "example.com")
    assert example["preferredVersion"] == {"groupVersion": "example.com/v1", "version": "v1"}
    assert [v["version"] for v in example["versions"]] == ["v1", "v1beta1"]
    assert "" not in [g["name"] for g in groups["groups"]]
    assert request(server, "GET", "/apis/example.com").json()["name"] == "example.com"
    beta = request(server, "GET", "/apis/example.com/v1beta1").json()
    assert beta["groupVersion"] == "example.com/v1beta1"
    assert [r["kind"] for r in beta["resources"]] == ["Widget"]
    assert request(server, "GET", "/apis/example.com/v2").status == 404
    assert request(server, "GET", "/apis/nope.io").status == 404


def test_failed_group_version_answers_503(server: KubeAPIServer, store: InMemoryStore) -> None:
    store.set_discovery_failure("batch/v1", "aggregated API down")
    reply = request(server, "GET", "/apis/batch/v1")
    assert reply.status == 503
    assert "aggregated API down" in reply.json()["message"]
    # The group is still listed, as kube-apiserver lists an unavailable APIService.
    assert "batch" in [g["name"] for g in request(server, "GET", "/apis").json()["groups"]]


def test_aggregated_discovery_falls_back_to_plain_json(server: KubeAPIServer) -> None:
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    reply = request(server, "GET", "/apis", headers={"Accept": f"{aggregated},application/json"})
    assert reply.status == 200 and reply.json()["kind"] == "APIGroupList"
    only = request(server, "GET", "/apis", headers={"Accept": aggregated})
    assert only.status == 406 and only.json()["reason"] == "NotAcceptable"


def test_negotiate_orders_by_q_and_skips_foreign_types() -> None:
    assert negotiate(f"{PARTIAL};q=0.5,application/json", conversions=True).kind is None
    assert negotiate(f"application/json;q=0.5,{PARTIAL}", conversions=True).kind == (
        "PartialObjectMetadata"
    )
    assert negotiate("application/vnd.kubernetes.protobuf,*/*", conversions=True).kind is None
    assert negotiate(f"{PARTIAL},application/json", conversions=False).kind is None


# ---------------------------------------------------------------- metadata-only and tables


def test_metadata_only_get_list_and_mismatches(server: KubeAPIServer) -> None:
    assert request(server, "POST", "/api/v1/namespaces/default/configmaps", configmap("a")).status
    one = request(
        server, "GET", "/api/v1/namespaces/default/configmaps/a", headers={"Accept": PARTIAL}
    ).json()
    assert one["kind"] == "PartialObjectMetadata" and one["apiVersion"] == "meta.k8s.io/v1"
    assert one["metadata"]["name"] == "a" and "data" not in one
    listed = request(
        server,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        headers={"Accept": f"{PARTIAL_LIST},application/json"},
    ).json()
    assert listed["kind"] == "PartialObjectMetadataList"
    assert [i["kind"] for i in listed["items"]] == ["PartialObjectMetadata"]
    assert int(listed["metadata"]["resourceVersion"]) >= int(one["metadata"]["resourceVersion"])
    # kube-apiserver picks the first acceptable type and then refuses a list/object mismatch.
    wrong = request(
        server,
        "GET",
        "/api/v1/namespaces/default/configmaps/a",
        headers={"Accept": f"{PARTIAL_LIST},application/json"},
    )
    assert wrong.status == 406
    wrong_list = request(
        server, "GET", "/api/v1/namespaces/default/configmaps", headers={"Accept": PARTIAL}
    )
    assert wrong_list.status == 406


def test_table_for_kubectl_get(server: KubeAPIServer) -> None:
    request(server, "POST", "/api/v1/namespaces/default/configmaps", configmap("t"))
    accept = (
        "application/json;as=Table;v=v1;g=meta.k8s.io,"
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
    )
    table = request(
        server, "GET", "/api/v1/namespaces/default/configmaps", headers={"Accept": accept}
    ).json()
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    (row,) = table["rows"]
    assert row["cells"][:2] == ["t", 1] and row["cells"][2].endswith("s")
    assert row["object"]["kind"] == "PartialObjectMetadata"
    beta = request(
        server,
        "GET",
        "/api/v1/namespaces/default/configmaps/t?includeObject=Object",
        headers={"Accept": "application/json;as=Table;v=v1beta1;g=meta.k8s.io"},
    ).json()
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1"
    assert beta["rows"][0]["object"]["data"] == {"k": "v"}


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "path",
    [
        "/nope",
        "/api/v2",
        "/api/v1/widgets",
        "/apis/apps/v1/namespaces/default/pods",
        "/api/v1/configmaps/a",  # namespaced resource without a namespace
        "/api/v1/namespaces/default/nodes",  # cluster-scoped resource with one
        "/api/v1/namespaces/default/pods/p/exec",  # subresources are not served
    ],
)
def test_unknown_paths_are_404_status(server: KubeAPIServer, path: str) -> None:
    reply = request(server, "GET", path)
    assert reply.status == 404
    status = reply.json()
    assert (status["kind"], status["status"], status["code"]) == ("Status", "Failure", 404)


def test_status_bodies_for_store_errors(server: KubeAPIServer) -> None:
    base = "/api/v1/namespaces/default/configmaps"
    missing = request(server, "GET", f"{base}/ghost")
    assert missing.status == 404
    # StatusDetails' fields are omitempty: no "group" for the core group (as recorded
    # from a real kube-apiserver in tests/data/real-apiserver-1.20/).
    assert missing.json()["details"] == {"name": "ghost", "kind": "configmaps"}
    assert request(server, "POST", base, configmap("dup")).status == 201
    dup = request(server, "POST", base, configmap("dup"))
    assert (dup.status, dup.json()["reason"]) == (409, "AlreadyExists")
    invalid = request(server, "POST", base, configmap("Not_A_Name"))
    assert (invalid.status, invalid.json()["reason"]) == (422, "Invalid")
    assert invalid.json()["details"]["causes"][0]["field"] == "metadata.name"
    stale = configmap("dup")
    stale["metadata"]["resourceVersion"] = "1"
    conflict = request(server, "PUT", f"{base}/dup", stale)
    assert (conflict.status, conflict.json()["reason"]) == (409, "Conflict")
    renamed = request(server, "PUT", f"{base}/dup", configmap("other"))
    assert renamed.status == 400 and "does not match the name on the URL" in renamed.text


def test_malformed_json_is_400(server: KubeAPIServer) -> None:
    reply = request(
        server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        raw=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    assert reply.status == 400 and reply.json()["reason"] == "BadRequest"
    yaml = request(
        server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        raw=b"metadata: {name: y}",
        headers={"Content-Type": "application/yaml"},
    )
    assert yaml.status == 415


def test_method_not_allowed(server: KubeAPIServer) -> None:
    assert request(server, "POST", "/api/v1/namespaces/default/configmaps/x", {}).status == 405
    assert request(server, "DELETE", "/version").status == 405


def test_selectors_on_list(server: KubeAPIServer) -> None:
    base = "/api/v1/namespaces/default/configmaps"
    for name, labels in [("a", {"app": "x", "tier": "web"}), ("b", {"app": "y"}), ("c", {})]:
        request(server, "POST", base, configmap(name, labels=labels))

    def names(query: str) -> list[str]:
        reply = request(server, "GET", f"{base}?{query}")
        assert reply.status == 200, reply.body
        return [i["metadata"]["name"] for i in reply.json()["items"]]

    assert names("labelSelector=app%3Dx") == ["a"]
    assert names("labelSelector=app%21%3Dx") == ["b", "c"]
    assert names("labelSelector=app") == ["a", "b"]
    assert names("labelSelector=%21app") == ["c"]
    assert names("labelSelector=app+in+%28x%2Cy%29%2C%21tier") == ["b"]
    assert names("fieldSelector=metadata.name%3Db") == ["b"]
    assert names("fieldSelector=metadata.name%21%3Db") == ["a", "c"]
    assert names("fieldSelector=metadata.namespace%3Dother") == []
    bad = request(server, "GET", f"{base}?fieldSelector=spec.x%3D1")
    assert bad.status == 400 and "is not a known field selector" in bad.json()["message"]
    # a>1 compares integers (as a real server does); a label that is not one is not selected
    assert names("labelSelector=app%3E1") == []
    assert request(server, "GET", f"{base}?labelSelector=a%3Cx").status == 400


def test_list_across_namespaces_and_cluster_scoped(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    request(server, "POST", "/api/v1/namespaces", {"metadata": {"name": "other"}})
    request(server, "POST", "/api/v1/namespaces/default/configmaps", configmap("a"))
    request(server, "POST", "/api/v1/namespaces/other/configmaps", configmap("b", "other"))
    everything = request(server, "GET", "/api/v1/configmaps").json()
    assert everything["kind"] == "ConfigMapList" and everything["apiVersion"] == "v1"
    assert {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everything["items"]} == {
        ("default", "a"),
        ("other", "b"),
    }
    namespaces = request(server, "GET", "/api/v1/namespaces").json()
    assert "other" in [i["metadata"]["name"] for i in namespaces["items"]]
    assert store.object_count() >= 6


def test_delete_collection_with_selector_and_options(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    base = "/api/v1/namespaces/default/configmaps"
    for name, labels in [("a", {"gc": "yes"}), ("b", {"gc": "yes"}), ("c", {})]:
        request(server, "POST", base, configmap(name, labels=labels))
    reply = request(
        server, "DELETE", f"{base}?labelSelector=gc%3Dyes", {"propagationPolicy": "Orphan"}
    )
    assert reply.status == 200 and reply.json()["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in reply.json()["items"]] == ["a", "b"]
    for name in ("a", "b"):
        assert store.get_object("v1", "ConfigMap", name, "default")["metadata"]["finalizers"] == [
            "orphan"
        ]
    assert store.get_object("v1", "ConfigMap", "c", "default")["metadata"].get("finalizers") is None
    assert server.verb_counts["deletecollection"] == 1


def test_crd_created_over_http_serves_its_kind_and_hooks_see_writes(
    server: KubeAPIServer,
) -> None:
    """The store serves a CRD's kind once created; write hooks see every API write."""
    seen: list[tuple[str, str]] = []

    async def on_write(verb: str, resource, obj) -> None:
        seen.append((verb, resource.resource))

    server.write_hooks.append(on_write)
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    created = request(
        server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
    )
    assert created.status == 201
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    assert request(server, "POST", "/apis/example.com/v1/gadgets", gadget).status == 201
    resources = request(server, "GET", "/apis/example.com/v1").json()["resources"]
    assert [(r["name"], r["namespaced"]) for r in resources] == [("gadgets", False)]
    assert seen == [("create", "customresourcedefinitions"), ("create", "gadgets")]
