"""The connect subresources answered as kube-apiserver answers them without kubelets
(``_apiserver/connect.py``): ``pods/log``, ``exec``, ``attach``, ``portforward``,
``proxy``, ``nodes/proxy``, ``services/proxy``.

tests/data/real-apiserver-1.20/pod-connect.json holds what a real kube-apiserver 1.20
answered (``tools/record_pod_connect.py``): no scheduler, no kubelet, its Nodes'
kubelet address a closed local port. The same objects are made in serve (same names,
addresses and ports: serve never dials them, so nothing needs masking) and every
recorded request is sent in order; each answer must be the real one: the status code
and the whole Status (or the empty body of a 204). And kubectl, the one on PATH
(1.37, as recorded), must print what it printed against the real server.

Where 1.30 differs from the recorded 1.20 (``DIFFERENCES_FROM_1_20``; none of the
recorded requests meets them):

- the container names a 400 lists, and those a request may name, include the Pod's
  ephemeral containers (GA in 1.25; 1.20's feature gate was off): kubernetes
  pkg/registry/core/pod/strategy.go, validateContainer and podHasContainerWithName
  visit ``podutil.AllFeatureEnabledContainers()``;
- a WebSocket exec or attach (``v5.channel.k8s.io``, what kubectl 1.30+ tries first;
  the TranslateStreamCloseWebsocketRequests gate, beta and on in 1.30) is upgraded
  before the kubelet is dialled, and a kubelet that cannot be reached is reported
  in the stream's error channel as an InternalError; serve answers it before the
  upgrade, as 1.20 (and 1.30 for SPDY) does: kubectl falls back to SPDY and prints
  the 1.20 message. Not followed: serve has no WebSocket server, and 1.30's exact
  error-channel message was not recorded (kubernetes staging/src/k8s.io/apiserver/
  pkg/util/proxy/streamtranslator.go; the gate's 1.30 default in the feature
  table, both read from kubernetes/kubernetes through the search tools).
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import connect

RECORDING = json.loads(
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/pod-connect.json").read_text()
)
NS = RECORDING["namespace"]
DIFFERENCES_FROM_1_20 = (
    "ephemeral containers listed and accepted as container names",
    "WebSocket exec/attach: a kubelet not reached is reported after the upgrade",
)


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    store = InMemoryStore()
    with run_in_thread(store) as running:
        for step in RECORDING["setup"]:
            status, made = request(running, "POST", step["path"], body=step["body"])
            assert status == 201, (step["path"], made)
            if "status" in step:
                made["status"] = step["status"]
                name = made["metadata"]["name"]
                status, written = request(
                    running, "PUT", f"{step['path']}/{name}/status", body=made
                )
                assert status == 200, written
        yield running


def request(
    server: KubeAPIServer,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: Any = None,
) -> tuple[int, Any]:
    status, content_type, payload = raw(server, method, path, headers, body)
    if content_type == "application/json" and payload:
        return status, json.loads(payload)
    return status, payload.decode()


def raw(
    server: KubeAPIServer,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: Any = None,
) -> tuple[int, str | None, bytes]:
    conn = connect(server)
    try:
        sent = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=sent)
        response: http.client.HTTPResponse = conn.getresponse()
        payload = response.read()
        return response.status, response.getheader("Content-Type"), payload
    finally:
        conn.close()


def test_every_recorded_request_is_answered_as_the_real_server_answered(
    server: KubeAPIServer,
) -> None:
    checked = 0
    for exchange in RECORDING["exchanges"]:
        note = exchange["note"]
        status, answer = request(server, exchange["method"], exchange["path"], exchange["headers"])
        assert status == exchange["status"], (note, answer)
        expected = exchange["answer"]
        if note == "discovery":
            ours = {r["name"]: r for r in answer["resources"]}
            for entry in expected["resources"]:
                assert ours[entry["name"]] == entry, note
        else:
            assert answer == expected, note
        checked += 1
    assert checked == len(RECORDING["exchanges"]) == 115


def test_an_unscheduled_pods_log_is_a_204_without_a_body_or_a_content_type(
    server: KubeAPIServer,
) -> None:
    status, content_type, payload = raw(server, "GET", f"/api/v1/namespaces/{NS}/pods/one/log")
    assert (status, content_type, payload) == (204, None, b"")


def test_an_ephemeral_container_is_listed_and_may_be_named(server: KubeAPIServer) -> None:
    """1.30 (see the module's docstring): ephemeral containers count."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "debugged"},
        "spec": {
            "containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "nginx"}],
        },
    }
    status, made = request(server, "POST", f"/api/v1/namespaces/{NS}/pods", body=pod)
    assert status == 201, made
    # (a Pod gets ephemeral containers through the subresource: not on create)
    made["spec"]["ephemeralContainers"] = [{"name": "dbg", "image": "busybox"}]
    status, made = request(
        server, "PUT", f"/api/v1/namespaces/{NS}/pods/debugged/ephemeralcontainers", body=made
    )
    assert status == 200, made
    status, answer = request(server, "GET", f"/api/v1/namespaces/{NS}/pods/debugged/log")
    assert (status, answer["message"]) == (
        400,
        "a container name must be specified for pod debugged, choose one of: [a b dbg]",
    )
    status, answer = request(
        server, "GET", f"/api/v1/namespaces/{NS}/pods/debugged/log?container=dbg"
    )
    assert status == 204, answer


KUBECTL = shutil.which(os.environ.get("OWNERGC_KUBECTL_LATEST", "kubectl"))


def kubeconfig(server: KubeAPIServer, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "serve", "cluster": {"server": server.url}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "serve", "context": {"cluster": "serve", "user": "u"}}],
                "current-context": "serve",
            }
        )
    )
    return path


@functools.cache
def kubectl_version() -> str:
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "version", "--client", "-o", "json"], capture_output=True, text=True
    )
    return str(json.loads(done.stdout)["clientVersion"]["gitVersion"])


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl on PATH")
@pytest.mark.parametrize("run", RECORDING["kubectl"], ids=lambda run: run["note"])
def test_kubectl_prints_what_it_printed_against_the_real_server(
    server: KubeAPIServer, tmp_path: Path, run: dict[str, Any]
) -> None:
    assert KUBECTL is not None
    if kubectl_version() not in RECORDING["recorded"]:
        pytest.skip("another kubectl than the recorded one")
    args = [a.replace("/tmp/streamsubres-cp-out", str(tmp_path / "out")) for a in run["args"]]
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig(server, tmp_path)), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (run["rc"], run["stdout"], run["stderr"])
