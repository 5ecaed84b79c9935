"""The everyday surface over HTTP: the review kinds, built-in workloads' ``/scale``,
``serviceaccounts/token``, the published OpenAPI documents, and discovery's short names
and categories; replayed from, or compared with, what a real kube-apiserver 1.24 answered
(tests/data/real-apiserver-1.24)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._openapi_proto import encode_openapi_v2
from ownergc_backends.memory._reviews import ALLOW_ALL_REASON
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import request

DATA = Path(__file__).resolve().parents[1] / "data/real-apiserver-1.24"
EXCHANGES: list[dict[str, Any]] = json.loads((DATA / "ssa-dryrun-exchanges.json").read_text())
DISCOVERY: dict[str, Any] = json.loads((DATA / "discovery.json").read_text())
VOLATILE = ("uid", "resourceVersion", "creationTimestamp", "time")


def shape(value: Any) -> Any:
    """Run-dependent values replaced by their presence; managedFields aside (serve keeps
    none yet)."""
    if isinstance(value, dict):
        return {
            k: ("<set>" if k in VOLATILE and v is not None else shape(v))
            for k, v in value.items()
            if k != "managedFields"
        }
    if isinstance(value, list):
        return [shape(v) for v in value]
    return value


def recorded(note_part: str) -> dict[str, Any]:
    (exchange,) = [e for e in EXCHANGES if note_part in e["note"]]
    return exchange


def test_an_access_review_is_answered_as_the_real_server_answers_it(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    exchange = recorded("auth can-i")
    req, want = exchange["request"], exchange["response"]
    got = request(server, req["method"], req["path"], req["body"])
    assert got.status == want["status"] == 201
    body = got.json()
    # The recorded answer, plus the reason saying no authorizer decided.
    expected = shape(want["body"])
    expected["status"]["reason"] = ALLOW_ALL_REASON
    assert shape(body) == expected
    # Nothing is stored: reviews are not objects.
    assert store.object_count() == 0 or all(
        "Review" not in o.get("kind", "") for o in store.snapshot()
    )
    assert request(server, "GET", req["path"]).status == 405


def test_a_deployments_scale_is_the_recorded_scale(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    exchange = recorded("scale subresource")
    req, want = exchange["request"], exchange["response"]
    store.load_objects(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ssa-rec2"}},
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "ssa-rec2"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "d"}},
                    "template": {
                        "metadata": {"labels": {"app": "d"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    },
                },
            },
        ]
    )
    got = request(server, req["method"], req["path"])
    assert got.status == want["status"]
    assert shape(got.json()) == shape(want["body"])
    # Writing the Scale sets spec.replicas of the Deployment.
    patched = request(
        server,
        "PATCH",
        req["path"],
        {"spec": {"replicas": 4}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status == 200 and patched.json()["spec"]["replicas"] == 4
    deployment = request(server, "GET", req["path"].removesuffix("/scale")).json()
    assert deployment["spec"]["replicas"] == 4


def test_discovery_lists_scale_token_and_the_real_short_names_and_categories(
    server: KubeAPIServer,
) -> None:
    real = {
        (doc["groupVersion"], r["name"]): r
        for doc in DISCOVERY.values()
        if doc.get("kind") == "APIResourceList"
        for r in doc["resources"]
    }
    ours = {}
    for gv in {gv for gv, _ in real}:
        path = f"/api/{gv}" if "/" not in gv else f"/apis/{gv}"
        reply = request(server, "GET", path)
        if reply.status != 200:
            continue
        for r in reply.json()["resources"]:
            ours[(gv, r["name"])] = r
    for key in ("apps/v1", "deployments/scale"), ("v1", "serviceaccounts/token"):
        assert {k: ours[key][k] for k in ("kind", "group", "version", "verbs")} == {
            k: real[key][k] for k in ("kind", "group", "version", "verbs")
        }, key
    for key, theirs in real.items():
        if key in ours and "/" not in key[1]:
            assert ours[key].get("shortNames") == theirs.get("shortNames"), key
            assert ours[key].get("categories") == theirs.get("categories"), key


def test_a_token_request_over_http(server: KubeAPIServer, store: InMemoryStore) -> None:
    store.load_objects(
        [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "robot", "namespace": "default"},
            }
        ]
    )
    path = "/api/v1/namespaces/default/serviceaccounts/robot/token"
    got = request(
        server, "POST", path, {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1"}
    )
    assert got.status == 201 and got.json()["status"]["token"].count(".") == 2
    assert request(server, "GET", path).status == 405
    assert request(server, "POST", path.replace("robot", "nobody"), {}).status == 404


def test_the_openapi_documents_are_published(server: KubeAPIServer, store: InMemoryStore) -> None:
    v2 = request(server, "GET", "/openapi/v2")
    assert v2.status == 200
    document = v2.json()
    assert "io.k8s.api.apps.v1.Deployment" in document["definitions"]
    proto = request(
        server,
        "GET",
        "/openapi/v2",
        headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
    )
    assert proto.status == 200 and proto.body == encode_openapi_v2(document)
    index = request(server, "GET", "/openapi/v3").json()
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    v3 = request(server, "GET", url)
    assert v3.status == 200 and v3.json()["openapi"].startswith("3.")
    assert "io.k8s.api.apps.v1.Deployment" in v3.json()["components"]["schemas"]
    assert request(server, "GET", "/openapi/v3/apis/nothing.example.com/v1").status == 404


def test_a_selector_is_written_as_kube_apiserver_writes_it() -> None:
    """One function writes a workload's selector for its Scale and for the SELECTOR column
    of ``kubectl get -o wide``: requirements sorted by key, value sets sorted."""
    from ownergc_backends.memory._selectors import selector_string

    selector = {
        "matchLabels": {"app": "d", "a": "b"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["y", "x"]},
            {"key": "z", "operator": "DoesNotExist"},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "has", "operator": "Exists"},
        ],
    }
    assert selector_string(selector) == "a=b,app=d,env notin (prod),has,tier in (x,y),!z"
    assert selector_string({"app": "rc"}) == "app=rc"  # a ReplicationController's map
    assert selector_string(None) == ""


def test_the_selector_column_shows_match_expressions(store: InMemoryStore) -> None:
    from ownergc_backends.memory._tables import printer_for

    deployments = store.resource_for("apps/v1", "Deployment")
    printer = printer_for(deployments, None)
    names = [c["name"] for c in printer.columns]
    obj = {
        "metadata": {"name": "d"},
        "spec": {
            "selector": {
                "matchLabels": {"app": "d"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
            }
        },
    }
    cells = printer.cells(obj, lambda meta: "1m")
    assert cells[names.index("Selector")] == "app=d,tier in (a,b)"
