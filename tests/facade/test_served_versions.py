"""The built-in group versions are a default-configured kube-apiserver v1.30.0's.

What 1.25-1.29 stopped serving (tests/served_v130.py, REMOVED) answers as a 1.30 server
answers it: 404 ``the server could not find the requested resource``, the answer of any
group version nothing serves, and it is in no discovery document or OpenAPI index. What
1.30 serves that the recorded 1.24 server did not (ADDED) is in discovery, in the
OpenAPI documents, and works: create, get, list, defaults.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ownergc_backends.memory._protobuf import supported_kinds
from ownergc_backends.memory.http import KubeAPIServer
from tests import served_v130
from tests.facade.facade_helpers import request

NOT_FOUND = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server could not find the requested resource",
    "reason": "NotFound",
    # (empty, but there: kube-apiserver's NewNotFound of no resource; a real 1.20 server
    # answers /apis/batch/v9alpha9 so, tests/data/real-apiserver-1.20/token-review.json too)
    "details": {},
    "code": 404,
}

#: The kinds of REMOVED, by resource (for the bodies sent).
KINDS = {
    "cronjobs": "CronJob",
    "endpointslices": "EndpointSlice",
    "events": "Event",
    "horizontalpodautoscalers": "HorizontalPodAutoscaler",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "podsecuritypolicies": "PodSecurityPolicy",
    "runtimeclasses": "RuntimeClass",
    "flowschemas": "FlowSchema",
    "prioritylevelconfigurations": "PriorityLevelConfiguration",
    "csistoragecapacities": "CSIStorageCapacity",
}
CLUSTER_SCOPED = {"runtimeclasses", "flowschemas", "prioritylevelconfigurations"}
CLUSTER_SCOPED |= {"podsecuritypolicies"}


def _collection(group: str, version: str, resource: str) -> str:
    where = "" if resource in CLUSTER_SCOPED else "/namespaces/default"
    return f"/apis/{group}/{version}{where}/{resource}"


@pytest.mark.parametrize(
    ("group", "version", "resource"),
    sorted(served_v130.REMOVED),
    ids=[f"{g}/{v}/{r}" for g, v, r in sorted(served_v130.REMOVED)],
)
def test_a_removed_version_answers_404_as_1_30_does(
    server: KubeAPIServer, group: str, version: str, resource: str
) -> None:
    collection = _collection(group, version, resource)
    body = {"apiVersion": f"{group}/{version}", "kind": KINDS[resource], "metadata": {"name": "x"}}
    for method, path, sent in (
        ("GET", f"/apis/{group}/{version}", None),
        ("GET", collection, None),
        ("GET", f"{collection}?watch=true", None),
        ("POST", collection, body),
        ("GET", f"{collection}/x", None),
        ("PUT", f"{collection}/x", body),
        ("DELETE", f"{collection}/x", None),
    ):
        reply = request(server, method, path, sent)
        assert (reply.status, reply.json()) == (404, NOT_FOUND), (method, path)
    # the same answer as a group version no release ever served
    assert request(server, "GET", f"/apis/{group}/v9alpha9").json() == NOT_FOUND


def test_discovery_lists_the_1_30_versions(server: KubeAPIServer) -> None:
    groups = {g["name"]: g for g in request(server, "GET", "/apis").json()["groups"]}
    listed = {v["groupVersion"] for g in groups.values() for v in g["versions"]}
    assert not listed & served_v130.REMOVED_GROUP_VERSIONS
    for group, version, resource in served_v130.ADDED:
        assert f"{group}/{version}" in listed
        names = [
            r["name"]
            for r in request(server, "GET", f"/apis/{group}/{version}").json()["resources"]
        ]
        assert resource in names
        if resource not in ("csistoragecapacities", "validatingadmissionpolicybindings"):
            assert f"{resource}/status" in names  # as the other built-ins with a status
    flowcontrol = groups["flowcontrol.apiserver.k8s.io"]
    assert [v["version"] for v in flowcontrol["versions"]] == ["v1", "v1beta3"]
    assert flowcontrol["preferredVersion"]["version"] == "v1"
    storage = groups["storage.k8s.io"]
    assert [v["version"] for v in storage["versions"]] == ["v1"]
    for group, preferred in served_v130.PREFERRED.items():
        assert groups[group]["preferredVersion"]["version"] == preferred
    # Aggregated discovery is not served: a client asking for it gets the plain list.
    aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    plain = request(server, "GET", "/apis", headers={"Accept": f"{aggregated},application/json"})
    assert plain.json()["kind"] == "APIGroupList"


def test_the_openapi_documents_list_the_1_30_versions(server: KubeAPIServer) -> None:
    index = request(server, "GET", "/openapi/v3").json()["paths"]
    for gv in served_v130.REMOVED_GROUP_VERSIONS:
        assert f"apis/{gv}" not in index
    for group, version, resource in served_v130.ADDED:
        url = index[f"apis/{group}/{version}"]["serverRelativeURL"]
        document = request(server, "GET", url).json()
        kind = {
            "csistoragecapacities": "CSIStorageCapacity",
            "flowschemas": "FlowSchema",
            "validatingadmissionpolicies": "ValidatingAdmissionPolicy",
            "validatingadmissionpolicybindings": "ValidatingAdmissionPolicyBinding",
        }.get(resource, "PriorityLevelConfiguration")
        package = group.split(".")[0]
        assert f"io.k8s.api.{package}.{version}.{kind}" in document["components"]["schemas"]
        assert any(f"/{resource}" in path for path in document["paths"])
    v2 = request(server, "GET", "/openapi/v2").json()["paths"]
    assert not [p for p in v2 if any(f"/{gv}/" in p for gv in served_v130.REMOVED_GROUP_VERSIONS)]


def test_the_added_versions_decode_from_protobuf() -> None:
    kinds = set(supported_kinds())
    for kind in ("FlowSchema", "PriorityLevelConfiguration"):
        for version in ("v1", "v1beta3"):
            assert f"flowcontrol.apiserver.k8s.io/{version}/{kind}" in kinds
    assert "storage.k8s.io/v1/CSIStorageCapacity" in kinds


def _create(server: KubeAPIServer, path: str, body: dict[str, Any]) -> Any:
    reply = request(server, "POST", f"{path}?fieldValidation=Strict", body)
    assert reply.status == 201, reply.text
    return reply.json()


def test_the_added_versions_create_get_and_list(server: KubeAPIServer) -> None:
    base = "/apis/flowcontrol.apiserver.k8s.io"
    level = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "pl"},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}},
    }
    created = _create(server, f"{base}/v1beta3/prioritylevelconfigurations", level)
    assert created["spec"]["limited"]["nominalConcurrencyShares"] == 30
    schema = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": "fs"},
        "spec": {"priorityLevelConfiguration": {"name": "pl"}},
    }
    assert _create(server, f"{base}/v1/flowschemas", schema)["spec"]["matchingPrecedence"] == 1000
    for version in ("v1", "v1beta3"):
        got = request(server, "GET", f"{base}/{version}/flowschemas/fs").json()
        assert got["apiVersion"] == f"flowcontrol.apiserver.k8s.io/{version}"
        listed = request(server, "GET", f"{base}/{version}/prioritylevelconfigurations").json()
        assert [i["metadata"]["name"] for i in listed["items"]] == ["pl"]
        assert listed["items"][0]["apiVersion"] == f"flowcontrol.apiserver.k8s.io/{version}"
    capacity = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": "zone-a"},
        "storageClassName": "standard",
        "capacity": "100Gi",
    }
    path = "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities"
    _create(server, path, capacity)
    listed = request(server, "GET", path).json()
    assert [(i["metadata"]["name"], i["capacity"]) for i in listed["items"]] == [
        ("zone-a", "100Gi")
    ]
    # and its status subresource: written alone, kept by an update of the object
    status = {
        **created,
        "status": {"conditions": [{"type": "ConcurrencyShared", "status": "True"}]},
    }
    status["metadata"] = {"name": "pl"}
    reply = request(server, "PUT", f"{base}/v1/prioritylevelconfigurations/pl/status", status)
    assert reply.status == 200, reply.text
    assert json.loads(reply.text)["status"]["conditions"][0]["type"] == "ConcurrencyShared"
