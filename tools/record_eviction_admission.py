"""Record the AdmissionReviews a real kube-apiserver sends for a Pod's eviction.

Runs an HTTPS admission webhook on 127.0.0.1 (a trustme CA, given as the
configurations' ``caBundle``), registers Mutating and Validating webhook
configurations whose webhooks only select the namespace this script creates
(by a label, with ``failurePolicy: Ignore``), evicts and deletes Pods there,
and writes every review the webhook received, with the answers the client got,
to tests/data/real-apiserver-1.20/eviction-admission.json. Everything it
created is deleted at the end.

    python tools/record_eviction_admission.py --server https://127.0.0.1:16443 \
        --token kcm-bench-token
"""

from __future__ import annotations

import argparse
import base64
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trustme

NS = "evictadm-rec3"
LABEL = {"evictadm-rec": "yes"}
OUT = Path(__file__).resolve().parent.parent / "tests/data/real-apiserver-1.20"


class Recorder:
    def __init__(self) -> None:
        self.ca = trustme.CA()
        self.reviews: list[dict[str, Any]] = []
        cert = self.ca.issue_cert("127.0.0.1")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                recorder.reviews.append({"path": self.path, "review": review})
                response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
                if self.path.startswith("/evict?") and request["name"].endswith("-deny"):
                    response = {
                        "uid": request["uid"],
                        "allowed": False,
                        "status": {
                            "code": 403,
                            "reason": "Forbidden",
                            "message": "this pod stays",
                        },
                    }
                body = json.dumps(
                    {
                        "apiVersion": "admission.k8s.io/v1",
                        "kind": "AdmissionReview",
                        "response": response,
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.cert_pem.bytes()).decode()


class Client:
    def __init__(self, server: str, token: str) -> None:
        self.server = server
        self.token = token
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE

    def __call__(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(request, context=self.context) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")


def webhook(name: str, url: str, ca: str, operations: list[str], resources: list[str]) -> Any:
    # Namespaced only: a namespaceSelector does not keep cluster-scoped writes away.
    return {
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [
            {
                "operations": operations,
                "apiGroups": ["*"],
                "apiVersions": ["*"],
                "resources": resources,
                "scope": "Namespaced",
            }
        ],
        "namespaceSelector": {"matchLabels": LABEL},
        "failurePolicy": "Ignore",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    }


def pod(name: str) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "evictadm"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="https://127.0.0.1:16443")
    parser.add_argument("--token", default="kcm-bench-token")
    args = parser.parse_args()
    call = Client(args.server, args.token)
    hook = Recorder()
    reg = "/apis/admissionregistration.k8s.io/v1"
    pods = f"/api/v1/namespaces/{NS}/pods"
    steps: list[dict[str, Any]] = []

    def step(what: str, method: str, path: str, body: Any = None) -> None:
        before = len(hook.reviews)
        status, answer = call(method, path, body)
        time.sleep(0.3)
        steps.append(
            {
                "what": what,
                "request": {"method": method, "path": path, "body": body},
                "status": status,
                "answer": answer,
                "reviews": hook.reviews[before:],
            }
        )

    call("POST", "/api/v1/namespaces", {"metadata": {"name": NS, "labels": LABEL}})
    call(
        "POST",
        f"/api/v1/namespaces/{NS}/serviceaccounts",
        {"metadata": {"name": "default"}, "automountServiceAccountToken": False},
    )
    for name in ("evict-dry", "evict-me", "evict-deny", "delete-me", "evict-grace", "running"):
        status, _ = call("POST", pods, pod(name))
        assert status == 201, status
    # "running": Running and Ready, under a budget that allows one disruption
    status, running = call("GET", f"{pods}/running")
    running["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    assert call("PUT", f"{pods}/running/status", running)[0] == 200
    budgets = f"/apis/policy/v1beta1/namespaces/{NS}/poddisruptionbudgets"
    status, budget = call(
        "POST",
        budgets,
        {
            "apiVersion": "policy/v1beta1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "evictadm-budget"},
            "spec": {"minAvailable": 0, "selector": {"matchLabels": {"run": "yes"}}},
        },
    )
    assert status == 201, budget
    budget["status"] = {
        "observedGeneration": budget["metadata"].get("generation", 1),
        "disruptionsAllowed": 1,
        "currentHealthy": 1,
        "desiredHealthy": 0,
        "expectedPods": 1,
    }
    assert call("PUT", f"{budgets}/evictadm-budget/status", budget)[0] == 200
    running = call("GET", f"{pods}/running")[1]
    running["metadata"]["labels"]["run"] = "yes"
    assert call("PUT", f"{pods}/running", running)[0] == 200
    ca = hook.ca_bundle
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "evictadm-validating"},
        "webhooks": [
            webhook(
                "evict.evictadm.example.com", hook.url + "/evict", ca, ["CREATE"], ["pods/eviction"]
            ),
            webhook("delete.evictadm.example.com", hook.url + "/delete", ca, ["DELETE"], ["pods"]),
            webhook("all.evictadm.example.com", hook.url + "/all", ca, ["*"], ["*/*"]),
        ],
    }
    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "evictadm-mutating"},
        "webhooks": [
            webhook(
                "mutate.evictadm.example.com", hook.url + "/mutate", ca, ["CREATE"], ["pods/*"]
            ),
        ],
    }
    try:
        assert call("POST", reg + "/validatingwebhookconfigurations", validating)[0] == 201
        assert call("POST", reg + "/mutatingwebhookconfigurations", mutating)[0] == 201
        time.sleep(3)  # the configurations reach the plugins' informers
        step(
            "a dry-run eviction (dryRun=All in the query) of a Pending Pod",
            "POST",
            f"{pods}/evict-dry/eviction?dryRun=All",
            {
                "apiVersion": "policy/v1beta1",
                "kind": "Eviction",
                "metadata": {"name": "evict-dry", "namespace": NS},
            },
        )
        step(
            "a dry run asked in the Eviction's deleteOptions only",
            "POST",
            f"{pods}/evict-dry/eviction",
            {
                "apiVersion": "policy/v1beta1",
                "kind": "Eviction",
                "metadata": {"name": "evict-dry", "namespace": NS},
                "deleteOptions": {"dryRun": ["All"]},
            },
        )
        step(
            "a dry run asked in the query, with deleteOptions that do not say",
            "POST",
            f"{pods}/evict-dry/eviction?dryRun=All",
            {
                "apiVersion": "policy/v1beta1",
                "kind": "Eviction",
                "metadata": {"name": "evict-dry", "namespace": NS},
                "deleteOptions": {"gracePeriodSeconds": 5},
            },
        )
        step(
            "an eviction of a Pending Pod (no namespace in the Eviction's metadata)",
            "POST",
            f"{pods}/evict-me/eviction",
            {"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "evict-me"}},
        )
        step(
            "an eviction the validating webhook denies (403, reason Forbidden)",
            "POST",
            f"{pods}/evict-deny/eviction",
            {
                "apiVersion": "policy/v1beta1",
                "kind": "Eviction",
                "metadata": {"name": "evict-deny", "namespace": NS},
            },
        )
        step(
            "an eviction with deleteOptions",
            "POST",
            f"{pods}/evict-grace/eviction",
            {
                "apiVersion": "policy/v1beta1",
                "kind": "Eviction",
                "metadata": {"name": "evict-grace", "namespace": NS},
                "deleteOptions": {"gracePeriodSeconds": 0, "propagationPolicy": "Background"},
            },
        )
        step(
            "an eviction of a Running, Ready Pod under a budget allowing one disruption",
            "POST",
            f"{pods}/running/eviction",
            {
                "apiVersion": "policy/v1beta1",
                "kind": "Eviction",
                "metadata": {"name": "running", "namespace": NS},
            },
        )
        step("a plain delete of a Pod", "DELETE", f"{pods}/delete-me")
        step("the denied Pod read back", "GET", f"{pods}/evict-deny")
        step("the dry-run Pod read back", "GET", f"{pods}/evict-dry")
    finally:
        call("DELETE", reg + "/validatingwebhookconfigurations/evictadm-validating")
        call("DELETE", reg + "/mutatingwebhookconfigurations/evictadm-mutating")
        # no namespace controller runs there: the namespace is emptied and finalized here
        for name in ("evict-dry", "evict-deny", "running"):
            call("DELETE", f"{pods}/{name}", {"gracePeriodSeconds": 0})
        call("DELETE", f"/apis/policy/v1beta1/namespaces/{NS}/poddisruptionbudgets/evictadm-budget")
        call("DELETE", f"/api/v1/namespaces/{NS}/serviceaccounts/default")
        call("DELETE", f"/api/v1/namespaces/{NS}")
        namespace = call("GET", f"/api/v1/namespaces/{NS}")[1]
        namespace["spec"]["finalizers"] = []
        call("PUT", f"/api/v1/namespaces/{NS}/finalize", namespace)
        hook.server.shutdown()
    record = {
        "server": call("GET", "/version")[1]["gitVersion"],
        "namespace": NS,
        "webhooks": {
            "validating": [{k: w[k] for k in ("name", "rules")} for w in validating["webhooks"]],
            "mutating": [{k: w[k] for k in ("name", "rules")} for w in mutating["webhooks"]],
        },
        "steps": steps,
    }
    (OUT / "eviction-admission.json").write_text(json.dumps(record, indent=1) + "\n")
    print(
        json.dumps(
            [(s["what"], s["status"], [r["path"] for r in s["reviews"]]) for s in steps], indent=1
        )
    )


if __name__ == "__main__":
    main()
