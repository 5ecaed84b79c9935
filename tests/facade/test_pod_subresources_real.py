"""``pods/binding``, ``bindings``, ``namespaces/status``, ``namespaces/finalize`` and
``pods/ephemeralcontainers`` answered as kube-apiserver answers them.

The requests of tests/data/real-apiserver-1.20/pod-subresources.json (recorded from a
real kube-apiserver 1.20 by scripts/record_pod_subresources.py) are sent to serve in
the same order, and each answer is compared with the real one: the status code, a
Status whole, and of an object what the subresource is about (node, conditions,
labels, annotations, finalizers, phase). Serve follows 1.30 where it differs from 1.20:
those answers are in ``DIFFERENT_IN_1_30``, each with where the 1.30 behaviour comes
from. The recording sent real uids and resourceVersions; its placeholders are filled
with serve's own (``fill``).

Ephemeral containers are alpha and off in 1.20 (the 404s recorded), so what 1.30 does
with them is checked below from its documented rules:

* the EphemeralContainer API reference (1.30): "To add an ephemeral container, use
  the ephemeralcontainers subresource of an existing Pod. Ephemeral containers may
  not be removed or restarted"; EphemeralContainers.ephemeralContainers "New ephemeral
  containers may be appended to this list, but existing ephemeral containers may not
  be removed or modified"; ports, resources, probes and lifecycle "not allowed for
  ephemeral containers";
* the wording of its errors, as kube-apiserver 1.2x+ answers them and users quote
  them (search corpora code/pages: ``spec.ephemeralContainers: Forbidden: existing
  ephemeral containers "debugger" may not be removed`` / ``... may not be changed``,
  ``cannot be set for an Ephemeral Container``, names ``Duplicate value``,
  ``targetContainerName: Not found``); its update keeps everything of the Pod but
  ``spec.ephemeralContainers`` (``dropNonEphemeralContainerUpdates``: spec, status and
  the metadata a status write may not change are the stored ones), and static pods
  take none ("static pods do not support ephemeral containers").
"""

from __future__ import annotations

import copy
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/pod-subresources.json").read_text()
)["exchanges"]
NS, FIN = "podsubres-rec", "podsubres-fin"
PODS = f"/api/v1/namespaces/{NS}/pods"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
#: The wrong uid and resourceVersion the recording script put in two Bindings.
WRONG_UID, STALE_RV = "00000000-0000-0000-0000-000000000000", "1"


def _storage_conflict(name: str, what: str) -> str:
    return (
        f'Operation cannot be fulfilled on pods "{name}": StorageError: invalid object, '
        f"Code: 4, Key: /registry/pods/{NS}/{name}, ResourceVersion: 0, AdditionalErrorMsg: "
        f"Precondition failed: {what}"
    )


#: Where 1.30 answers otherwise than the recorded 1.20: note -> (status, a check of the
#: answer given serve's object). Sources:
#: * the Binding's uid and resourceVersion are preconditions since 1.27 (the pod
#:   registry's BindingREST preserves them, ``rest.SubresourceObjectMetaPreserver``,
#:   and GuaranteedUpdate checks them; read in kubernetes/kubernetes'
#:   pkg/registry/core/pod/storage through the code search corpus); 1.20 ignored both;
#: * ephemeral containers are served since 1.23 (beta, on), GA in 1.25 (the
#:   "Ephemeral Containers" concept page: feature-state stable for v1.25).
DIFFERENT_IN_1_30: dict[str, tuple[int, Any]] = {
    "a Binding with another uid than the pod's": (
        409,
        lambda answer, pod: (
            answer["message"]
            == _storage_conflict(
                "p5",
                f"UID in precondition: {WRONG_UID}, UID in object meta: {pod['metadata']['uid']}",
            )
            and answer["details"] == {"name": "p5", "kind": "pods"}
        ),
    ),
    "bind a pod with a stale resourceVersion": (
        409,
        lambda answer, pod: (
            answer["message"]
            == _storage_conflict(
                "p6",
                f"ResourceVersion in precondition: {STALE_RV}, ResourceVersion in object meta: "
                f"{pod['metadata']['resourceVersion']}",
            )
        ),
    ),
    "GET pods/p6/ephemeralcontainers (feature gate off in 1.20)": (
        200,
        lambda answer, pod: answer["kind"] == "Pod" and answer["metadata"]["name"] == "p6",
    ),
    "PATCH pods/p6/ephemeralcontainers (feature gate off in 1.20)": (
        200,
        lambda answer, pod: (
            answer["spec"]["ephemeralContainers"]
            == [
                {
                    "name": "debugger",
                    "image": "busybox",
                    "imagePullPolicy": "Always",
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            ]
        ),
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    # (terminating namespaces as kube-apiserver's registry has them; no namespace
    # controller runs, as none ran on the recorded server)
    with run_in_thread(InMemoryStore(terminating_namespaces=True)) as running:
        yield running


def ok(server: KubeAPIServer, method: str, path: str, body: Any = None, ctype: str = "") -> Any:
    status, _, answer = send(
        server, method, path, "" if body is None else json.dumps(body), ctype or "application/json"
    )
    assert status < 300, (method, path, answer)
    return answer


def pod(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
    }


def setup_pods(server: KubeAPIServer) -> None:
    ok(server, "POST", "/api/v1/namespaces", {"kind": "Namespace", "metadata": {"name": NS}})
    for name in ("p1", "p2", "p3", "p4", "p5", "p6"):
        ok(server, "POST", PODS, pod(name))
    ok(server, "POST", PODS, pod("held", finalizers=["example.com/hold"]))
    ok(server, "DELETE", f"{PODS}/held")


def setup_namespace(server: KubeAPIServer) -> None:
    ok(server, "POST", "/api/v1/namespaces", {"kind": "Namespace", "metadata": {"name": FIN}})
    ok(server, "POST", f"/api/v1/namespaces/{FIN}/configmaps", {"metadata": {"name": "cm"}})


def fill(value: Any, current: dict[str, Any] | None, note: str) -> Any:
    """The recorded body with serve's values where the recording has placeholders: the
    current object's, but a stale resourceVersion where the request was a stale one,
    and in a Binding the wrong uid and version the script sent."""
    meta = (current or {}).get("metadata") or {}
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "managedFields":
                continue
            if isinstance(item, str) and item == f"<{key}>":
                if current is None:  # (a Binding's)
                    item = WRONG_UID if key == "uid" else STALE_RV
                elif key == "resourceVersion" and "stale" in note:
                    item = STALE_RV
                else:
                    item = meta.get(key)
            out[key] = fill(item, current, note)
        return out
    if isinstance(value, list):
        return [fill(v, current, note) for v in value]
    return value


#: The label a 1.22+ server gives every Namespace (1.20 had none).
NAME_LABEL = "kubernetes.io/metadata.name"


def essentials(obj: dict[str, Any]) -> dict[str, Any]:
    """What the subresources write, of a Pod or a Namespace (a Namespace's name label
    aside)."""
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != NAME_LABEL}
    return {
        "kind": obj["kind"],
        "name": meta["name"],
        "labels": labels or None,
        "annotations": meta.get("annotations"),
        "deleting": "deletionTimestamp" in meta,
        "nodeName": spec.get("nodeName"),
        "finalizers": spec.get("finalizers"),
        "phase": status.get("phase"),
        "conditions": [
            {k: c.get(k) for k in ("type", "status", "reason", "message")}
            for c in status.get("conditions") or []
        ],
    }


def test_every_recorded_request_is_answered_as_the_real_server_answered(
    server: KubeAPIServer,
) -> None:
    setup_pods(server)
    checked = 0
    for exchange in RECORDED:
        note, method, path = exchange["note"], exchange["method"], exchange["path"]
        if note == "GET namespaces/X/status":
            setup_namespace(server)
        current = None
        if method == "PUT":
            target = path.rsplit("/", 1)[0]
            current = send(server, "GET", target, "")[2]
        body = exchange["body"]
        text = "" if body is None else json.dumps(fill(body, current, note))
        ctype = exchange.get("contentType", "application/json")
        status, _, answer = send(server, method, path, text, ctype)
        if note in DIFFERENT_IN_1_30:
            code, check = DIFFERENT_IN_1_30[note]
            name = path.split("/pods/")[1].split("/")[0]
            _, _, stored = send(server, "GET", f"{PODS}/{name}", "")
            assert status == code, (note, answer)
            assert check(answer, stored), (note, answer)
        else:
            expected = exchange["answer"]
            assert status == exchange["status"], (note, answer)
            if expected.get("kind") == "Status":
                assert answer == expected, note
            else:
                assert essentials(answer) == essentials(expected), note
        checked += 1
    assert checked == len(RECORDED) == 38


# ---------------------------------------------------------------- ephemeral containers


@pytest.fixture
def fresh() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        ok(running, "POST", "/api/v1/namespaces", {"kind": "Namespace", "metadata": {"name": NS}})
        target = pod("web", labels={"app": "web"})
        target["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
        target["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
        ok(running, "POST", PODS, target)
        yield running


def debugger(name: str = "debugger", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "terminationMessagePolicy": "File", **fields}


def add(server: KubeAPIServer, *containers: dict[str, Any], query: str = "") -> tuple[int, Any]:
    body = {"spec": {"ephemeralContainers": list(containers)}}
    status, _, answer = send(
        server, "PATCH", f"{PODS}/web/ephemeralcontainers{query}", json.dumps(body), STRATEGIC
    )
    return status, answer


def test_an_ephemeral_container_is_added_and_nothing_else_changes(
    fresh: KubeAPIServer,
) -> None:
    before = ok(fresh, "GET", f"{PODS}/web")
    body = copy.deepcopy(before)
    body["spec"]["ephemeralContainers"] = [debugger(targetContainerName="c", stdin=True)]
    body["spec"]["nodeName"] = "elsewhere"  # not the subresource's to change
    body["metadata"]["labels"] = {"app": "changed"}
    body["status"] = {"phase": "Running"}
    after = ok(fresh, "PUT", f"{PODS}/web/ephemeralcontainers", body)
    assert after["spec"]["ephemeralContainers"] == [
        {
            "name": "debugger",
            "image": "busybox",
            "imagePullPolicy": "Always",
            "resources": {},
            "stdin": True,
            "targetContainerName": "c",
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
    ]
    assert "nodeName" not in after["spec"]
    assert after["metadata"]["labels"] == {"app": "web"}
    assert after["status"] == before["status"]
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    # the write is the subresource's in managedFields, as a real server records it
    entry = after["metadata"]["managedFields"][-1]
    assert (entry["operation"], entry["subresource"]) == ("Update", "ephemeralcontainers")
    assert "f:ephemeralContainers" in entry["fieldsV1"]["f:spec"]
    # GET of the subresource is the Pod
    assert ok(fresh, "GET", f"{PODS}/web/ephemeralcontainers") == ok(fresh, "GET", f"{PODS}/web")
    # a patch of the Pod that does not name them leaves them
    patched = ok(fresh, "PATCH", f"{PODS}/web", {"metadata": {"labels": {"x": "y"}}}, MERGE)
    assert [c["name"] for c in patched["spec"]["ephemeralContainers"]] == ["debugger"]


def test_every_patch_type_adds_one(fresh: KubeAPIServer) -> None:
    status, answer = add(fresh, debugger("one"))
    assert status == 200, answer
    status, _, answer = send(
        fresh,
        "PATCH",
        f"{PODS}/web/ephemeralcontainers",
        json.dumps(
            [{"op": "add", "path": "/spec/ephemeralContainers/-", "value": debugger("two")}]
        ),
        JSON_PATCH,
    )
    assert status == 200, answer
    listed = [c for c in answer["spec"]["ephemeralContainers"]]
    status, _, answer = send(
        fresh,
        "PATCH",
        f"{PODS}/web/ephemeralcontainers",
        json.dumps({"spec": {"ephemeralContainers": [*listed, debugger("three")]}}),
        MERGE,
    )
    assert status == 200, answer
    assert [c["name"] for c in answer["spec"]["ephemeralContainers"]] == ["one", "two", "three"]
    status, _, answer = send(
        fresh,
        "PATCH",
        f"{PODS}/web/ephemeralcontainers?fieldManager=kubectl-debug",
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "web"},
                "spec": {"ephemeralContainers": [*listed, debugger("three"), debugger("four")]},
            }
        ),
        "application/apply-patch+yaml",
    )
    assert status == 200, answer
    assert [c["name"] for c in answer["spec"]["ephemeralContainers"]][-1] == "four"


def test_a_dry_run_adds_nothing(fresh: KubeAPIServer) -> None:
    status, answer = add(fresh, debugger(), query="?dryRun=All")
    assert status == 200, answer
    assert answer["spec"]["ephemeralContainers"][0]["name"] == "debugger"
    assert "ephemeralContainers" not in ok(fresh, "GET", f"{PODS}/web")["spec"]


def test_a_stale_resource_version_is_a_conflict(fresh: KubeAPIServer) -> None:
    body = ok(fresh, "GET", f"{PODS}/web")
    ok(fresh, "PATCH", f"{PODS}/web", {"metadata": {"labels": {"moved": "on"}}}, MERGE)
    body["spec"]["ephemeralContainers"] = [debugger()]
    status, _, answer = send(fresh, "PUT", f"{PODS}/web/ephemeralcontainers", json.dumps(body))
    assert status == 409, answer
    assert answer["message"] == (
        'Operation cannot be fulfilled on pods "web": the object has been modified; please '
        "apply your changes to the latest version and try again"
    )


def invalid(answer: dict[str, Any]) -> list[str]:
    assert answer["reason"] == "Invalid", answer
    assert answer["details"]["kind"] == "Pod"
    return [f"{c['field']}: {c['message']}" for c in answer["details"]["causes"]]


def test_existing_ephemeral_containers_are_neither_removed_nor_changed(
    fresh: KubeAPIServer,
) -> None:
    assert add(fresh, debugger())[0] == 200
    status, _, answer = send(
        fresh,
        "PATCH",
        f"{PODS}/web/ephemeralcontainers",
        json.dumps({"spec": {"ephemeralContainers": None}}),
        MERGE,
    )
    assert status == 422
    assert answer["message"] == (
        'Pod "web" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
        'containers "debugger" may not be removed'
    )
    status, answer = add(fresh, debugger(image="alpine"))
    assert status == 422
    assert invalid(answer) == [
        'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may '
        "not be changed"
    ]


@pytest.mark.parametrize(
    ("container", "causes"),
    [
        (
            {"name": "c", "image": "busybox"},
            ['spec.ephemeralContainers[0].name: Duplicate value: "c"'],
        ),
        (
            {"name": "init", "image": "busybox"},
            ['spec.ephemeralContainers[0].name: Duplicate value: "init"'],
        ),
        (
            {"image": "busybox"},
            ["spec.ephemeralContainers[0].name: Required value"],
        ),
        (
            {"name": "Bad_Name", "image": "busybox"},
            [
                'spec.ephemeralContainers[0].name: Invalid value: "Bad_Name": a lowercase RFC '
                "1123 label must consist of lower case alphanumeric characters or '-', and "
                "must start and end with an alphanumeric character (e.g. 'my-name',  or "
                "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ],
        ),
        ({"name": "d"}, ["spec.ephemeralContainers[0].image: Required value"]),
        (
            {"name": "d", "image": "busybox", "targetContainerName": "nope"},
            ['spec.ephemeralContainers[0].targetContainerName: Not found: "nope"'],
        ),
        (
            {
                "name": "d",
                "image": "busybox",
                "ports": [{"containerPort": 80}],
                "resources": {"limits": {"cpu": "1"}},
                "readinessProbe": {"exec": {"command": ["true"]}},
                "lifecycle": {"preStop": {"exec": {"command": ["true"]}}},
            },
            [
                f"spec.ephemeralContainers[0].{key}: Forbidden: cannot be set for an "
                "Ephemeral Container"
                for key in ("ports", "resources", "readinessProbe", "lifecycle")
            ],
        ),
        (
            {
                "name": "d",
                "image": "busybox",
                "volumeMounts": [
                    {"name": "data", "mountPath": "/d", "subPath": "x"},
                    {"name": "gone", "mountPath": "/g"},
                ],
            },
            [
                "spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set "
                "for an Ephemeral Container",
                'spec.ephemeralContainers[0].volumeMounts[1].name: Not found: "gone"',
            ],
        ),
        (
            {"name": "d", "image": "busybox", "imagePullPolicy": "Sometimes"},
            [
                'spec.ephemeralContainers[0].imagePullPolicy: Unsupported value: "Sometimes": '
                'supported values: "Always", "IfNotPresent", "Never"'
            ],
        ),
    ],
)
def test_a_new_ephemeral_container_is_validated(
    fresh: KubeAPIServer, container: dict[str, Any], causes: list[str]
) -> None:
    status, answer = add(fresh, container)
    assert status == 422, answer
    assert sorted(invalid(answer)) == sorted(causes)
    assert "ephemeralContainers" not in ok(fresh, "GET", f"{PODS}/web")["spec"]


def test_static_pods_take_no_ephemeral_containers(fresh: KubeAPIServer) -> None:
    mirror = pod("mirror", annotations={"kubernetes.io/config.mirror": "hash"})
    ok(fresh, "POST", PODS, mirror)
    status, _, answer = send(
        fresh,
        "PATCH",
        f"{PODS}/mirror/ephemeralcontainers",
        json.dumps({"spec": {"ephemeralContainers": [debugger()]}}),
        STRATEGIC,
    )
    assert status == 422
    assert answer["message"] == (
        'Pod "mirror" is invalid: : Forbidden: static pods do not support ephemeral containers'
    )


def test_the_alpha_ephemeral_containers_kind_is_refused(fresh: KubeAPIServer) -> None:
    """1.22+ take the Pod at the subresource; the alpha API's EphemeralContainers kind
    (what kubectl 1.20 sends) is a 400, and nothing is added."""
    body = {
        "apiVersion": "v1",
        "kind": "EphemeralContainers",
        "metadata": {"name": "web", "namespace": NS},
        "ephemeralContainers": [debugger()],
    }
    status, _, answer = send(fresh, "PUT", f"{PODS}/web/ephemeralcontainers", json.dumps(body))
    assert status == 400, answer
    assert "ephemeralContainers" not in ok(fresh, "GET", f"{PODS}/web")["spec"]


def test_no_such_pod_is_a_404_naming_it(fresh: KubeAPIServer) -> None:
    """kubectl debug tells a missing Pod (its name in the details) from a server without
    the subresource (no name) by the 404's details."""
    status, _, answer = send(
        fresh, "PATCH", f"{PODS}/nothere/ephemeralcontainers", json.dumps({}), STRATEGIC
    )
    assert status == 404
    assert answer["details"] == {"name": "nothere", "kind": "pods"}


# ---------------------------------------------------------------- namespaces


def test_the_object_update_of_a_namespace_still_writes_its_status(
    server: KubeAPIServer,
) -> None:
    """A deliberate difference: kube-apiserver keeps a Namespace's status and
    ``spec.finalizers`` on an update of the Namespace itself (only ``/status`` and
    ``/finalize`` write them); serve's namespace controller writes them through the
    Namespace, so serve lets that update write them too."""
    name = "podsubres-own"
    ok(server, "POST", "/api/v1/namespaces", {"kind": "Namespace", "metadata": {"name": name}})
    patched = ok(
        server,
        "PATCH",
        f"/api/v1/namespaces/{name}",
        {"spec": {"finalizers": ["example.com/x"]}},
        MERGE,
    )
    assert patched["spec"]["finalizers"] == ["example.com/x"]


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (every length here is below 128)."""
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_a_protobuf_binding_binds(fresh: KubeAPIServer) -> None:
    """A scheduler's client-go sends its Binding as protobuf."""
    binding = _field(1, _field(1, b"web")) + _field(2, _field(1, b"Node") + _field(3, b"n1"))
    type_meta = _field(1, b"v1") + _field(2, b"Binding")
    body = b"k8s\x00" + _field(1, type_meta) + _field(2, binding)
    conn = http.client.HTTPConnection(fresh.host, fresh.port)
    try:
        conn.request(
            "POST",
            f"{PODS}/web/binding",
            body=body,
            headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
        )
        response = conn.getresponse()
        assert response.status == 201, response.read()
    finally:
        conn.close()
    assert ok(fresh, "GET", f"{PODS}/web")["spec"]["nodeName"] == "n1"
