"""Admission webhooks through the facade: stored configurations honoured on every write,
as kube-apiserver honours them, and seen by kubectl (denials, warnings, patches).

The webhook is a real HTTPS server in a thread (certificates from trustme, its
CA given as the configuration's ``caBundle``).
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
import trustme

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._apiserver.admission import AdmissionChain
from ownergc_backends.memory._apiserver.responses import warning_headers
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import Kubectl, find_kubectl
from tests.facade.test_facade_dry_run import _RecordedOpenAPI

JSONDict = dict[str, Any]


@dataclass
class Hook:
    """An HTTPS admission webhook; ``answer`` maps a review to its response (None: hang)."""

    url: str
    ca_bundle: str
    answer: Callable[[JSONDict], JSONDict | None]
    reviews: list[JSONDict] = field(default_factory=list)


def _serve_hook(ca: trustme.CA) -> tuple[Hook, ThreadingHTTPServer]:
    cert = ca.issue_cert("127.0.0.1", "localhost")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    state = Hook("", base64.b64encode(ca.cert_pem.bytes()).decode(), lambda r: {"allowed": True})

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            review["path"] = self.path  # which of a hook's URLs was called
            state.reviews.append(review)
            response = state.answer(review)
            if response is None:  # longer than the 1 s timeout the tests set
                time.sleep(2.5)
                response = {"allowed": True}
            body = json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": review["request"]["uid"], **response},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    state.url = f"https://127.0.0.1:{server.server_port}/admit"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return state, server


@pytest.fixture
def hook() -> Iterator[Hook]:
    state, server = _serve_hook(trustme.CA())
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def webhook(name: str, hook: Hook, **extra: Any) -> JSONDict:
    """One webhook entry for ConfigMaps on CREATE and UPDATE, at ``hook`` with its CA."""
    entry: JSONDict = {
        "name": name,
        "clientConfig": {"url": hook.url, "caBundle": hook.ca_bundle},
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 1,
    }
    entry.update(extra)
    return entry


def register(store: InMemoryStore, kind: str, name: str, *hooks: JSONDict) -> None:
    store.load_objects(
        [
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": f"{kind}WebhookConfiguration",
                "metadata": {"name": name},
                "webhooks": list(hooks),
            }
        ]
    )


def request(
    server: KubeAPIServer, method: str, path: str, body: Any = None, content_type: str = ""
) -> tuple[int, list[tuple[str, str]], JSONDict]:
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type or "application/json"}
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        return response.status, response.getheaders(), json.loads(response.read() or b"{}")
    finally:
        conn.close()


def configmap(name: str, namespace: str = "default", **labels: str) -> JSONDict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"k": "v"},
    }


CM = "/api/v1/namespaces/default/configmaps"


# -- validating ----------------------------------------------------------------------------


def test_a_validating_denial_and_a_warning_reach_kubectl(
    store: InMemoryStore, server: KubeAPIServer, kubectl: Kubectl, hook: Hook
) -> None:
    def answer(review: JSONDict) -> JSONDict:
        name = review["request"]["object"]["metadata"]["name"]
        if name.startswith("bad"):
            return {"allowed": False, "status": {"message": f"{name} is not allowed here"}}
        return {"allowed": True, "warnings": [f"{name} is deprecated"]}

    hook.answer = answer
    register(store, "Validating", "guard", webhook("guard.example.com", hook))

    denied = kubectl.run("create", "configmap", "bad-one", "--from-literal=a=b", check=False)
    assert denied.returncode != 0
    assert (
        'admission webhook "guard.example.com" denied the request: bad-one is not allowed here'
        in denied.stderr
    )
    assert store.get_object("v1", "ConfigMap", "bad-one", "default") is None

    allowed = kubectl.run("create", "configmap", "good", "--from-literal=a=b")
    assert "Warning: good is deprecated" in allowed.stderr
    assert store.get_object("v1", "ConfigMap", "good", "default") is not None
    review = hook.reviews[-1]["request"]
    assert review["operation"] == "CREATE"
    assert review["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert review["namespace"] == "default"
    assert review["options"]["kind"] == "CreateOptions"


def test_the_denial_status_and_the_warning_headers_on_the_wire(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    hook.answer = lambda review: {
        "allowed": False,
        "warnings": ['say "why"'],
        "status": {"code": 403, "reason": "Forbidden", "message": "nope"},
    }
    register(store, "Validating", "guard", webhook("guard.example.com", hook))
    status, headers, body = request(server, "POST", CM, configmap("x"))
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == 'admission webhook "guard.example.com" denied the request: nope'
    assert ("Warning", '299 - "say \\"why\\""') in headers

    hook.answer = lambda review: {"allowed": False}
    status, _, body = request(server, "POST", CM, configmap("y"))
    assert status == 400
    assert body["message"] == (
        'admission webhook "guard.example.com" denied the request without explanation'
    )


def test_warning_headers_are_escaped_deduplicated_and_single_line() -> None:
    headers = warning_headers(["a", "a", 'b "q" \\', "line\nbreak", ""])
    assert headers == [
        ("Warning", '299 - "a"'),
        ("Warning", '299 - "b \\"q\\" \\\\"'),
        ("Warning", '299 - "line break"'),
    ]


# -- mutating ------------------------------------------------------------------------------


def _patch(*ops: JSONDict) -> JSONDict:
    return {
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": base64.b64encode(json.dumps(list(ops)).encode()).decode(),
    }


def test_a_mutating_jsonpatch_is_stored_and_validating_hooks_see_it(
    store: InMemoryStore, server: KubeAPIServer, kubectl: Kubectl, hook: Hook
) -> None:
    validated: list[JSONDict] = []

    def answer(review: JSONDict) -> JSONDict:
        if review["path"].endswith("/mutate"):
            return _patch({"op": "add", "path": "/metadata/labels", "value": {"team": "a"}})
        validated.append(review["request"]["object"])
        return {"allowed": True}

    hook.answer = answer
    mutate = webhook("label.example.com", hook)
    mutate["clientConfig"]["url"] = hook.url + "/mutate"
    register(store, "Mutating", "labeller", mutate)
    register(store, "Validating", "checker", webhook("check.example.com", hook))

    kubectl.run("create", "configmap", "m", "--from-literal=a=b")
    stored = store.get_object("v1", "ConfigMap", "m", "default")
    assert stored is not None
    assert stored["metadata"]["labels"] == {"team": "a"}
    assert [o["metadata"]["labels"] for o in validated] == [{"team": "a"}]


def test_a_mutating_hook_patches_a_create_and_sees_a_patch_as_the_patched_object(
    store: InMemoryStore, server: KubeAPIServer, kubectl: Kubectl, hook: Hook
) -> None:
    def answer(review: JSONDict) -> JSONDict:
        obj = review["request"]["object"]
        annotations = obj["metadata"].get("annotations") or {}
        count = int(annotations.get("writes", "0")) + 1
        op = "replace" if annotations else "add"
        path = "/metadata/annotations/writes" if annotations else "/metadata/annotations"
        value: Any = str(count) if annotations else {"writes": "1"}
        return _patch({"op": op, "path": path, "value": value})

    hook.answer = answer
    register(store, "Mutating", "counter", webhook("count.example.com", hook))

    kubectl.run("create", "configmap", "m", "--from-literal=a=b")
    stored = store.get_object("v1", "ConfigMap", "m", "default")
    assert stored is not None and stored["metadata"]["annotations"] == {"writes": "1"}

    kubectl.run("label", "configmap", "m", "color=blue")
    update = hook.reviews[-1]["request"]
    assert update["operation"] == "UPDATE"
    assert update["object"]["metadata"]["labels"] == {"color": "blue"}
    assert "labels" not in (update["oldObject"]["metadata"])
    assert update["options"]["kind"] == "UpdateOptions"
    stored = store.get_object("v1", "ConfigMap", "m", "default")
    assert stored is not None
    assert stored["metadata"]["labels"] == {"color": "blue"}
    assert stored["metadata"]["annotations"] == {"writes": "2"}


def test_a_validating_hook_can_refuse_a_patch(
    store: InMemoryStore, server: KubeAPIServer, kubectl: Kubectl, hook: Hook
) -> None:
    def answer(review: JSONDict) -> JSONDict:
        labels = review["request"]["object"]["metadata"].get("labels") or {}
        if labels.get("color") == "red":
            return {"allowed": False, "status": {"message": "no red"}}
        return {"allowed": True}

    hook.answer = answer
    register(store, "Validating", "guard", webhook("guard.example.com", hook))
    kubectl.run("create", "configmap", "p", "--from-literal=a=b")
    refused = kubectl.run("label", "configmap", "p", "color=red", check=False)
    assert refused.returncode != 0
    assert 'admission webhook "guard.example.com" denied the request: no red' in refused.stderr
    stored = store.get_object("v1", "ConfigMap", "p", "default")
    assert stored is not None and not stored["metadata"].get("labels")


def test_server_side_apply_is_admitted_like_any_write(
    store: InMemoryStore, server: KubeAPIServer, kubectl: Kubectl, hook: Hook, tmp_path: Path
) -> None:
    """``kubectl apply --server-side`` goes through the webhooks: a mutating hook's label is
    stored (and the apply's managedFields kept), a validating hook can refuse it."""

    def answer(review: JSONDict) -> JSONDict:
        if review["path"].endswith("/mutate"):
            return _patch({"op": "add", "path": "/metadata/labels", "value": {"team": "a"}})
        data = review["request"]["object"].get("data") or {}
        if data.get("color") == "red":
            return {"allowed": False, "status": {"message": "no red"}}
        return {"allowed": True}

    hook.answer = answer
    mutate = webhook("label.example.com", hook)
    mutate["clientConfig"]["url"] = hook.url + "/mutate"
    register(store, "Mutating", "labeller", mutate)
    register(store, "Validating", "guard", webhook("guard.example.com", hook))
    manifest = tmp_path / "cm.yaml"
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: default}\n"
    manifest.write_text(text + "data: {color: blue}\n")
    kubectl.run("apply", "--server-side", "-f", str(manifest))
    stored = store.get_object("v1", "ConfigMap", "ssa", "default")
    assert stored is not None and stored["metadata"]["labels"] == {"team": "a"}
    assert {e["operation"] for e in stored["metadata"]["managedFields"]} == {"Apply"}
    assert [r["request"]["operation"] for r in hook.reviews] == ["CREATE", "CREATE"]

    manifest.write_text(text + "data: {color: red}\n")
    refused = kubectl.run("apply", "--server-side", "-f", str(manifest), check=False)
    assert refused.returncode != 0
    assert 'admission webhook "guard.example.com" denied the request: no red' in refused.stderr
    assert hook.reviews[-1]["request"]["operation"] == "UPDATE"
    stored = store.get_object("v1", "ConfigMap", "ssa", "default")
    assert stored is not None and stored["data"] == {"color": "blue"}


def test_a_validating_hook_on_delete_sees_the_old_object_and_can_refuse(
    store: InMemoryStore, server: KubeAPIServer, kubectl: Kubectl, hook: Hook
) -> None:
    def answer(review: JSONDict) -> JSONDict:
        if review["request"]["operation"] == "DELETE":
            return {"allowed": False, "status": {"message": "keep it"}}
        return {"allowed": True}

    hook.answer = answer
    entry = webhook("keeper.example.com", hook)
    entry["rules"][0]["operations"] = ["CREATE", "DELETE"]
    register(store, "Validating", "keeper", entry)
    kubectl.run("create", "configmap", "kept", "--from-literal=a=b")
    refused = kubectl.run("delete", "configmap", "kept", check=False)
    assert refused.returncode != 0
    assert 'admission webhook "keeper.example.com" denied the request: keep it' in refused.stderr
    assert store.get_object("v1", "ConfigMap", "kept", "default") is not None
    create, delete = (r["request"] for r in hook.reviews)
    assert create["object"]["metadata"]["namespace"] == "default"
    assert delete["object"] is None
    assert delete["oldObject"]["metadata"]["name"] == "kept"
    assert delete["options"]["kind"] == "DeleteOptions"


# -- failures ------------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("policy", ["Ignore", "Fail"])
def test_failure_policy_on_an_unreachable_hook(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook, policy: str
) -> None:
    down = webhook("down.example.com", hook, failurePolicy=policy)
    down["clientConfig"]["url"] = f"https://127.0.0.1:{_closed_port()}/admit"
    register(store, "Validating", "down", down)
    status, _, body = request(server, "POST", CM, configmap("x"))
    if policy == "Ignore":
        assert status == 201
        assert store.get_object("v1", "ConfigMap", "x", "default") is not None
    else:
        assert status == 500
        assert body["reason"] == "InternalError"
        assert body["message"].startswith(
            'Internal error occurred: failed calling webhook "down.example.com": '
        )
        assert store.get_object("v1", "ConfigMap", "x", "default") is None


@pytest.mark.parametrize("policy", ["Ignore", "Fail"])
def test_a_hook_slower_than_its_timeout(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook, policy: str
) -> None:
    hook.answer = lambda review: None  # hangs 2.5 s; timeoutSeconds is 1
    register(store, "Validating", "slow", webhook("slow.example.com", hook, failurePolicy=policy))
    status, _, body = request(server, "POST", CM, configmap("x"))
    if policy == "Ignore":
        assert status == 201
    else:
        assert status == 500
        assert "context deadline exceeded" in body["message"]


def test_a_hook_whose_certificate_the_ca_bundle_does_not_sign_is_a_failed_call(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    other = base64.b64encode(trustme.CA().cert_pem.bytes()).decode()
    entry = webhook("tls.example.com", hook)
    entry["clientConfig"]["caBundle"] = other
    register(store, "Validating", "tls", entry)
    status, _, body = request(server, "POST", CM, configmap("x"))
    assert status == 500
    assert "failed calling webhook" in body["message"]
    assert hook.reviews == []  # the handshake failed: nothing was sent

    entry["clientConfig"]["caBundle"] = hook.ca_bundle
    store.load_objects([])  # nothing: the configuration is replaced through the API
    status, _, _ = request(
        server,
        "PUT",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/tls",
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "tls"},
            "webhooks": [entry],
        },
    )
    assert status == 200  # configurations themselves are never sent to webhooks
    status, _, _ = request(server, "POST", CM, configmap("x"))
    assert status == 201
    assert len(hook.reviews) == 1


# -- selectors -----------------------------------------------------------------------------


def test_namespace_and_object_selectors(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    hook.answer = lambda review: {"allowed": False, "status": {"message": "selected"}}
    store.load_objects(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": labels}}
            for n, labels in (("prod", {"env": "prod"}), ("dev", {"env": "dev"}))
        ]
    )
    register(
        store,
        "Validating",
        "selective",
        webhook(
            "selective.example.com",
            hook,
            namespaceSelector={"matchLabels": {"env": "prod"}},
            objectSelector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
        ),
    )
    status, _, _ = request(
        server, "POST", "/api/v1/namespaces/dev/configmaps", configmap("a", "dev")
    )
    assert status == 201
    status, _, _ = request(
        server, "POST", "/api/v1/namespaces/prod/configmaps", configmap("b", "prod", skip="1")
    )
    assert status == 201
    status, _, body = request(
        server, "POST", "/api/v1/namespaces/prod/configmaps", configmap("c", "prod")
    )
    assert status == 400
    assert body["message"].endswith("denied the request: selected")
    assert len(hook.reviews) == 1


def test_a_namespace_is_selected_by_its_name_label_as_on_a_real_server(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    hook.answer = lambda review: {"allowed": False, "status": {"message": "kube-system"}}
    by_name = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["kube-system"]}
        ]
    }
    register(
        store,
        "Validating",
        "by-name",
        webhook("by-name.example.com", hook, namespaceSelector=by_name),
    )
    status, _, _ = request(server, "POST", CM, configmap("a"))
    assert status == 201
    status, _, body = request(
        server, "POST", "/api/v1/namespaces/kube-system/configmaps", configmap("b", "kube-system")
    )
    assert status == 400, body


# -- dry run -------------------------------------------------------------------------------


def _serving(server: KubeAPIServer, call: Callable[[], Any]) -> Any:
    """Run ``call`` (blocking HTTP) in a thread while ``server`` serves."""

    async def scenario() -> Any:
        async with anyio.create_task_group() as tg:
            await tg.start(server.serve)
            try:
                return await anyio.to_thread.run_sync(call)
            finally:
                tg.cancel_scope.cancel()

    return anyio.run(scenario)


@pytest.fixture
def dry_server(store: InMemoryStore) -> Iterator[KubeAPIServer]:
    """The facade serving the recorded OpenAPI document, which kubectl 1.20 reads to
    learn that a kind supports dry run (the default serves an empty one)."""
    server = KubeAPIServer(store, openapi=_RecordedOpenAPI())
    with anyio.from_thread.start_blocking_portal() as portal:
        future, _ = portal.start_task(server.serve)
        try:
            yield server
        finally:
            future.cancel()


@pytest.fixture
def dry_kubectl(dry_server: KubeAPIServer, tmp_path: Path) -> Kubectl:
    binary = find_kubectl()
    if binary is None:
        pytest.skip("no kubectl (set OWNERGC_KUBECTL)")
    config = tmp_path / "dry-kubeconfig"
    dry_server.write_kubeconfig(config)
    return Kubectl(binary, config, tmp_path / "dry-cache", tmp_path)


@pytest.mark.parametrize("side_effects", ["Some", "Unknown"])
def test_a_hook_with_side_effects_fails_a_dry_run(
    store: InMemoryStore,
    dry_server: KubeAPIServer,
    dry_kubectl: Kubectl,
    hook: Hook,
    side_effects: str,
) -> None:
    server, kubectl = dry_server, dry_kubectl
    register(
        store,
        "Validating",
        "effects",
        webhook("effects.example.com", hook, sideEffects=side_effects),
    )
    status, _, body = request(server, "POST", CM + "?dryRun=All", configmap("x"))
    assert status == 400
    assert body["reason"] == "BadRequest"
    assert body["message"] == 'admission webhook "effects.example.com" does not support dry run'
    refused = kubectl.run(
        "create", "configmap", "y", "--from-literal=a=b", "--dry-run=server", check=False
    )
    assert refused.returncode != 0
    assert 'admission webhook "effects.example.com" does not support dry run' in refused.stderr
    assert hook.reviews == []
    # A real write is still sent to the hook.
    status, _, _ = request(server, "POST", CM, configmap("z"))
    assert status == 201
    assert len(hook.reviews) == 1


@pytest.mark.parametrize("side_effects", ["None", "NoneOnDryRun"])
def test_a_dry_run_is_reviewed_as_one_and_stores_nothing(
    store: InMemoryStore,
    dry_server: KubeAPIServer,
    dry_kubectl: Kubectl,
    hook: Hook,
    side_effects: str,
) -> None:
    kubectl = dry_kubectl

    def answer(review: JSONDict) -> JSONDict:
        if review["request"]["object"]["metadata"]["name"] == "bad":
            return {"allowed": False, "status": {"message": "refused in a dry run too"}}
        return {"allowed": True, "warnings": ["dry warning"]}

    hook.answer = answer
    register(store, "Validating", "dry", webhook("dry.example.com", hook, sideEffects=side_effects))
    rv = store.resource_version
    ok = kubectl.run("create", "configmap", "good", "--from-literal=a=b", "--dry-run=server")
    assert "Warning: dry warning" in ok.stderr
    refused = kubectl.run(
        "create", "configmap", "bad", "--from-literal=a=b", "--dry-run=server", check=False
    )
    assert refused.returncode != 0
    assert "refused in a dry run too" in refused.stderr
    assert [r["request"]["dryRun"] for r in hook.reviews] == [True, True]
    assert store.get_object("v1", "ConfigMap", "good", "default") is None
    assert store.resource_version == rv


# -- cost ----------------------------------------------------------------------------------


def test_without_configurations_a_write_reads_nothing_more(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    request(server, "POST", CM, configmap("x"))
    store.clear_requests()
    status, _, _ = request(server, "PUT", CM + "/x", configmap("x", a="1"))
    assert status == 200
    # The field manager reads the object before an update (managedFields); admission
    # without configurations adds no read of its own.
    assert store.request_count("get") == 1
    assert [r.verb for r in store.requests] == ["get", "update"]

    register(store, "Validating", "guard", webhook("guard.example.com", hook))
    store.clear_requests()
    status, _, _ = request(server, "PUT", CM + "/x", configmap("x", a="2"))
    assert status == 200
    assert store.request_count("get") == 1  # the same one read serves the review's oldObject
    assert hook.reviews[-1]["request"]["oldObject"]["metadata"]["labels"] == {"a": "1"}


def test_admission_can_be_turned_off(store: InMemoryStore, hook: Hook) -> None:
    hook.answer = lambda review: {"allowed": False}
    register(store, "Validating", "guard", webhook("guard.example.com", hook))
    server = KubeAPIServer(store, admission=AdmissionChain())
    status, _, _ = _serving(server, lambda: request(server, "POST", CM, configmap("x")))
    assert status == 201
    assert hook.reviews == []
