"""Admission webhooks as kube-apiserver calls them: which hooks match, and what their answers do.

The calls go to a real HTTPS server (a thread, certificates from trustme, the
caBundle checked); matching is tested on its own.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest
import trustme

from ownergc.errors import APIError, BadRequest, Forbidden, ServerError
from ownergc_backends.memory._webhooks import (
    AdmissionAttributes,
    WebhookAdmission,
    label_selector_matches,
    matching_webhooks,
)

JSONDict = dict[str, Any]


@dataclass
class Source:
    """A WebhookSource from plain data."""

    mutating: list[JSONDict] = field(default_factory=list)
    validating: list[JSONDict] = field(default_factory=list)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    versions: dict[tuple[str, str], list[tuple[str, str, str, str]]] = field(default_factory=dict)
    endpoints: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)

    def webhook_configurations(self, kind: str) -> Sequence[JSONDict]:
        return self.mutating if kind == "Mutating" else self.validating

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        return self.namespaces.get(name)

    def equivalents(self, group: str, resource: str) -> Sequence[tuple[str, str, str, str]]:
        return self.versions.get((group, resource), [])

    def service_address(self, namespace: str, name: str, port: int) -> tuple[str, int] | None:
        return self.endpoints.get((namespace, name))


def configuration(name: str, *hooks: JSONDict, kind: str = "Validating") -> JSONDict:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": f"{kind}WebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": list(hooks),
    }


def hook(name: str, url: str = "https://127.0.0.1:1/", **extra: Any) -> JSONDict:
    base: JSONDict = {
        "name": name,
        "clientConfig": {"url": url},
        "rules": [
            {
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    base.update(extra)
    return base


def configmap_create(
    namespace: str = "shop", labels: dict[str, str] | None = None, **extra: Any
) -> AdmissionAttributes:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": namespace, "labels": labels or {}},
    }
    return AdmissionAttributes(
        operation="CREATE",
        group="",
        version="v1",
        resource="configmaps",
        kind="ConfigMap",
        namespace=namespace,
        name="c",
        object=obj,
        **extra,
    )


# -- matching ------------------------------------------------------------------------------


def _names(source: Source, attrs: AdmissionAttributes, kind: str = "Validating") -> list[str]:
    return [m.name for m in matching_webhooks(kind, attrs, source)]


@pytest.mark.parametrize(
    ("resources", "subresource", "matches"),
    [
        (["configmaps"], "", True),
        (["*"], "", True),
        (["*"], "status", False),  # "*" is every resource, no subresource
        (["*/*"], "status", True),
        (["configmaps/*"], "", True),
        (["configmaps/*"], "status", True),
        (["configmaps/status"], "", False),
        (["secrets"], "", False),
    ],
)
def test_rule_resources_and_subresources(
    resources: list[str], subresource: str, matches: bool
) -> None:
    rule = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": resources}
    source = Source(validating=[configuration("c", hook("h", rules=[rule]))])
    attrs = configmap_create(subresource=subresource)
    assert (_names(source, attrs) == ["h"]) is matches


def test_rule_operations_groups_versions_and_scope() -> None:
    def rule(**over: Any) -> JSONDict:
        return {
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["configmaps"],
            **over,
        }

    source = Source(
        validating=[
            configuration(
                "c",
                hook("op", rules=[rule(operations=["UPDATE"])]),
                hook("group", rules=[rule(apiGroups=["apps"])]),
                hook("version", rules=[rule(apiVersions=["v2"])]),
                hook("cluster", rules=[rule(scope="Cluster")]),
                hook("namespaced", rules=[rule(scope="Namespaced")]),
                hook("any", rules=[rule(scope="*")]),
            )
        ]
    )
    assert _names(source, configmap_create()) == ["namespaced", "any"]


def test_namespace_selector_reads_the_namespaces_labels_and_a_namespace_its_own() -> None:
    selector = {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}
    ns_rule = {
        "operations": ["CREATE"],
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["namespaces", "configmaps"],
    }
    source = Source(
        validating=[configuration("c", hook("h", rules=[ns_rule], namespaceSelector=selector))],
        namespaces={"shop": {"env": "prod"}, "dev": {"env": "dev"}},
    )
    assert _names(source, configmap_create("shop")) == ["h"]
    assert _names(source, configmap_create("dev")) == []
    namespace = AdmissionAttributes(
        operation="CREATE",
        group="",
        version="v1",
        resource="namespaces",
        kind="Namespace",
        namespace="",
        name="new",
        object={"metadata": {"name": "new", "labels": {"env": "prod"}}},
    )
    assert _names(source, namespace) == ["h"]


def test_object_selector_matches_the_object_or_the_old_object() -> None:
    rule = {
        "operations": ["*"],
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": ["configmaps"],
    }
    source = Source(
        validating=[
            configuration(
                "c", hook("h", rules=[rule], objectSelector={"matchLabels": {"watched": "yes"}})
            )
        ]
    )
    assert _names(source, configmap_create(labels={"watched": "yes"})) == ["h"]
    assert _names(source, configmap_create(labels={"watched": "no"})) == []
    delete = AdmissionAttributes(
        operation="DELETE",
        group="",
        version="v1",
        resource="configmaps",
        kind="ConfigMap",
        namespace="shop",
        name="c",
        object=None,
        old_object={"metadata": {"labels": {"watched": "yes"}}},
    )
    assert _names(source, delete) == ["h"]


def test_match_policy_equivalent_finds_another_version_exact_does_not() -> None:
    rule = {
        "operations": ["CREATE"],
        "apiGroups": ["example.com"],
        "apiVersions": ["v1"],
        "resources": ["widgets"],
    }
    source = Source(
        validating=[
            configuration(
                "c",
                hook("equivalent", rules=[rule]),
                hook("exact", rules=[rule], matchPolicy="Exact"),
            )
        ],
        versions={
            ("example.com", "widgets"): [
                ("example.com", "v1", "widgets", "Widget"),
                ("example.com", "v2", "widgets", "Widget"),
            ]
        },
    )
    attrs = AdmissionAttributes(
        operation="CREATE",
        group="example.com",
        version="v2",
        resource="widgets",
        kind="Widget",
        namespace="shop",
        name="w",
        object={"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"}},
    )
    (matched,) = matching_webhooks("Validating", attrs, source)
    assert (matched.name, matched.version) == ("equivalent", "v1")


def test_configurations_are_called_by_name_and_never_for_webhook_configurations() -> None:
    source = Source(
        validating=[configuration("b", hook("b1")), configuration("a", hook("a1"), hook("a2"))]
    )
    assert _names(source, configmap_create()) == ["a1", "a2", "b1"]
    rule = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}
    everything = Source(validating=[configuration("all", hook("all", rules=[rule]))])
    own = AdmissionAttributes(
        operation="CREATE",
        group="admissionregistration.k8s.io",
        version="v1",
        resource="validatingwebhookconfigurations",
        kind="ValidatingWebhookConfiguration",
        namespace="",
        name="x",
        object={"metadata": {"name": "x"}},
    )
    assert _names(everything, own) == []


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        (None, {}, True),
        ({}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}, {"a": "1"}, False),
    ],
)
def test_label_selector_objects(
    selector: JSONDict | None, labels: dict[str, str], matches: bool
) -> None:
    assert label_selector_matches(selector, labels) is matches


# -- calls to a real HTTPS webhook -----------------------------------------------------------


@dataclass
class Webhook:
    url: str
    ca_bundle: str
    reviews: list[JSONDict]
    answer: Callable[[JSONDict], JSONDict | None]


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    state = Webhook("", base64.b64encode(ca.cert_pem.bytes()).decode(), [], lambda r: None)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.reviews.append(review)
            response = state.answer(review)
            if response is None:  # hang: longer than any timeout a test sets
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
    state.url = f"https://127.0.0.1:{server.server_port}/validate"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _with_ca(webhook: Webhook, name: str, **extra: Any) -> JSONDict:
    h = hook(name, **extra)
    h["clientConfig"] = {"url": webhook.url, "caBundle": webhook.ca_bundle}
    return h


def test_an_allowed_request_passes_warnings_on_and_the_review_is_complete(
    webhook: Webhook,
) -> None:
    webhook.answer = lambda review: {"allowed": True, "warnings": ["mind the gap"]}
    admission = WebhookAdmission(Source(validating=[configuration("c", _with_ca(webhook, "h"))]))
    warnings = anyio.run(admission.validate, configmap_create())
    assert warnings == ["mind the gap"]
    (review,) = webhook.reviews
    request = review["request"]
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    assert request["operation"] == "CREATE" and request["namespace"] == "shop"
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["object"]["metadata"]["name"] == "c" and request["dryRun"] is False


def test_a_denial_is_the_error_the_client_sees(webhook: Webhook) -> None:
    webhook.answer = lambda review: {
        "allowed": False,
        "status": {"code": 403, "message": "no cross-namespace owners"},
    }
    admission = WebhookAdmission(Source(validating=[configuration("c", _with_ca(webhook, "h"))]))
    with pytest.raises(Forbidden) as caught:
        anyio.run(admission.validate, configmap_create())
    assert caught.value.code == 403
    assert str(caught.value) == (
        'admission webhook "h" denied the request: no cross-namespace owners'
    )
    webhook.answer = lambda review: {"allowed": False}
    with pytest.raises(BadRequest, match='"h" denied the request without explanation'):
        anyio.run(admission.validate, configmap_create())


def test_mutating_hooks_patch_in_order(webhook: Webhook) -> None:
    def answer(review: JSONDict) -> JSONDict:
        labels = review["request"]["object"]["metadata"]["labels"]
        step = str(len(labels))
        patch = [{"op": "add", "path": f"/metadata/labels/step{step}", "value": step}]
        return {
            "allowed": True,
            "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
        }

    webhook.answer = answer
    admission = WebhookAdmission(
        Source(
            mutating=[
                configuration("b", _with_ca(webhook, "second"), kind="Mutating"),
                configuration("a", _with_ca(webhook, "first"), kind="Mutating"),
            ]
        )
    )
    outcome = anyio.run(admission.mutate, configmap_create())
    assert outcome.object is not None
    assert outcome.object["metadata"]["labels"] == {"step0": "0", "step1": "1"}


def test_failure_policy_when_the_webhook_is_down_or_slow(webhook: Webhook) -> None:
    down = hook("down", url="https://127.0.0.1:9/")  # nothing listens on the discard port
    ignore = Source(validating=[configuration("c", {**down, "failurePolicy": "Ignore"})])
    assert anyio.run(WebhookAdmission(ignore).validate, configmap_create()) == []
    fail = Source(validating=[configuration("c", down)])
    with pytest.raises(ServerError, match='failed calling webhook "down"'):
        anyio.run(WebhookAdmission(fail).validate, configmap_create())
    webhook.answer = lambda review: None  # hangs past the timeout
    slow = Source(validating=[configuration("c", _with_ca(webhook, "slow", timeoutSeconds=1))])
    with pytest.raises(ServerError, match="context deadline exceeded"):
        anyio.run(WebhookAdmission(slow).validate, configmap_create())


def test_an_untrusted_certificate_is_a_failed_call(webhook: Webhook) -> None:
    webhook.answer = lambda review: {"allowed": True}
    other_ca = base64.b64encode(trustme.CA().cert_pem.bytes()).decode()
    h = _with_ca(webhook, "h")
    h["clientConfig"]["caBundle"] = other_ca
    with pytest.raises(ServerError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify"):
        anyio.run(
            WebhookAdmission(Source(validating=[configuration("c", h)])).validate,
            configmap_create(),
        )
    assert webhook.reviews == []


def test_dry_run_needs_a_hook_without_side_effects(webhook: Webhook) -> None:
    webhook.answer = lambda review: {"allowed": True}
    unknown = Source(validating=[configuration("c", _with_ca(webhook, "h", sideEffects="Unknown"))])
    with pytest.raises(BadRequest, match='admission webhook "h" does not support dry run'):
        anyio.run(WebhookAdmission(unknown).validate, configmap_create(dry_run=True))
    safe = Source(
        validating=[configuration("c", _with_ca(webhook, "h", sideEffects="NoneOnDryRun"))]
    )
    assert anyio.run(WebhookAdmission(safe).validate, configmap_create(dry_run=True)) == []
    assert webhook.reviews[-1]["request"]["dryRun"] is True


def test_a_wrong_uid_or_a_non_review_answer_is_a_failed_call(webhook: Webhook) -> None:
    admission = WebhookAdmission(Source(validating=[configuration("c", _with_ca(webhook, "h"))]))
    webhook.answer = lambda review: {"uid": "not-the-one", "allowed": True}
    with pytest.raises(APIError, match=r"expected response\.uid"):
        anyio.run(admission.validate, configmap_create())


def test_a_service_reference_goes_to_its_endpoints(webhook: Webhook) -> None:
    webhook.answer = lambda review: {"allowed": True, "warnings": ["via service"]}
    port = int(webhook.url.rsplit(":", 1)[1].split("/")[0])
    h = hook("svc")
    h["clientConfig"] = {
        "service": {"namespace": "hooks", "name": "guard", "path": "/validate"},
        "caBundle": webhook.ca_bundle,
    }
    source = Source(
        validating=[configuration("c", h)], endpoints={("hooks", "guard"): ("127.0.0.1", port)}
    )
    # The certificate names 127.0.0.1, not guard.hooks.svc: TLS refuses, as a real apiserver would.
    with pytest.raises(ServerError, match="certificate"):
        anyio.run(WebhookAdmission(source).validate, configmap_create())
    no_endpoints = Source(validating=[configuration("c", h)])
    with pytest.raises(ServerError, match="has no endpoints"):
        anyio.run(WebhookAdmission(no_endpoints).validate, configmap_create())


# -- a v1beta3 PriorityLevelConfiguration: the one kind whose versions differ (_conversion)

PRESERVE = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"
FLOWCONTROL = "flowcontrol.apiserver.k8s.io"


def _level_create(version: str, shares: int, annotations: dict[str, str]) -> AdmissionAttributes:
    meta: JSONDict = {"name": "lvl"}
    if annotations:
        meta["annotations"] = annotations
    obj = {
        "apiVersion": f"{FLOWCONTROL}/{version}",
        "kind": "PriorityLevelConfiguration",
        "metadata": meta,
        "spec": {
            "type": "Limited",
            "limited": {"nominalConcurrencyShares": shares, "limitResponse": {"type": "Reject"}},
        },
    }
    return AdmissionAttributes(
        operation="CREATE",
        group=FLOWCONTROL,
        version=version,
        resource="prioritylevelconfigurations",
        kind="PriorityLevelConfiguration",
        namespace="",
        name="lvl",
        object=obj,
    )


def _level_source(webhook: Webhook, version: str, kind: str = "Validating") -> Source:
    rule = {
        "operations": ["CREATE"],
        "apiGroups": [FLOWCONTROL],
        "apiVersions": [version],
        "resources": ["prioritylevelconfigurations"],
    }
    configs = [configuration("c", _with_ca(webhook, "h", rules=[rule]), kind=kind)]
    versions = {
        (FLOWCONTROL, "prioritylevelconfigurations"): [
            (FLOWCONTROL, v, "prioritylevelconfigurations", "PriorityLevelConfiguration")
            for v in ("v1", "v1beta3")
        ]
    }
    if kind == "Mutating":
        return Source(mutating=configs, versions=versions)
    return Source(validating=configs, versions=versions)


@pytest.mark.parametrize(
    ("request_version", "hook_version", "shares", "sent", "seen"),
    [
        # kube-apiserver 1.30 converts the object to the hook's version through its
        # internal form (pkg/apis/flowcontrol/v1beta3/conversion.go): v1beta3 -> internal
        # drops the annotation, internal -> v1beta3 adds it (empty) where the shares are 0.
        ("v1", "v1beta3", 0, {}, {PRESERVE: ""}),
        ("v1", "v1beta3", 5, {}, None),
        ("v1beta3", "v1", 0, {PRESERVE: "true"}, None),
        ("v1beta3", "v1beta3", 0, {PRESERVE: "true"}, {PRESERVE: ""}),
        ("v1beta3", "v1beta3", 5, {PRESERVE: "", "a": "b"}, {"a": "b"}),
        ("v1", "v1", 0, {"a": "b"}, {"a": "b"}),
    ],
)
def test_a_priority_level_is_sent_as_its_hooks_version_shows_it(
    webhook: Webhook,
    request_version: str,
    hook_version: str,
    shares: int,
    sent: dict[str, str],
    seen: dict[str, str] | None,
) -> None:
    webhook.answer = lambda review: {"allowed": True}
    admission = WebhookAdmission(_level_source(webhook, hook_version))
    anyio.run(admission.validate, _level_create(request_version, shares, sent))
    (review,) = webhook.reviews
    obj = review["request"]["object"]
    assert obj["apiVersion"] == f"{FLOWCONTROL}/{hook_version}"
    assert obj["metadata"].get("annotations") == seen
    assert obj["spec"]["limited"]["nominalConcurrencyShares"] == shares


def test_a_mutating_hook_patches_the_priority_level_it_saw(webhook: Webhook) -> None:
    """The patch applies to the v1beta3 object the hook received (its annotations map
    there), the result is defaulted in v1beta3 and comes back in the request's version."""
    patch = [{"op": "add", "path": "/metadata/annotations/team", "value": "a"}]

    def answer(review: JSONDict) -> JSONDict:
        return {
            "allowed": True,
            "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
        }

    webhook.answer = answer
    admission = WebhookAdmission(_level_source(webhook, "v1beta3", kind="Mutating"))
    outcome = anyio.run(admission.mutate, _level_create("v1", 0, {}))
    assert outcome.object is not None
    assert outcome.object["apiVersion"] == f"{FLOWCONTROL}/v1"
    assert outcome.object["metadata"]["annotations"] == {"team": "a"}
    assert outcome.object["spec"]["limited"]["nominalConcurrencyShares"] == 0
    # A hook that drops the annotation of a 0 leaves shares v1beta3 defaults to 30.
    patch[:] = [{"op": "remove", "path": f"/metadata/annotations/{PRESERVE.replace('/', '~1')}"}]
    outcome = anyio.run(admission.mutate, _level_create("v1", 0, {}))
    assert outcome.object is not None
    assert outcome.object["spec"]["limited"]["nominalConcurrencyShares"] == 30
    assert not outcome.object["metadata"].get("annotations")
