"""deploy/webhook/: the manifests parse, point at each other, and grant only reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML comes with the cli extra")

WEBHOOK = Path(__file__).resolve().parents[2] / "deploy" / "webhook"


def docs(*names: str) -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((WEBHOOK / "kustomization.yaml").read_text())
    out = []
    for name in names or kustomization["resources"]:
        out.extend(d for d in yaml.safe_load_all((WEBHOOK / name).read_text()) if d)
    return out


def find(kind: str, name: str, *names: str) -> dict[str, Any]:
    for d in docs(*names):
        if d["kind"] == kind and d["metadata"]["name"] == name:
            return d
    raise AssertionError(f"no {kind} {name}")


def test_every_file_is_listed_or_documented() -> None:
    kustomization = yaml.safe_load((WEBHOOK / "kustomization.yaml").read_text())
    files = {p.name for p in WEBHOOK.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files - {"cert-manager.yaml"}
    for d in docs(*files):
        assert d["apiVersion"] and d["kind"] and d["metadata"]["name"]


def test_webhook_configuration_fails_open_and_skips_system_namespaces() -> None:
    vwc = find("ValidatingWebhookConfiguration", "ownergc-ownerreferences")
    (hook,) = vwc["webhooks"]
    assert hook["failurePolicy"] == "Ignore"
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["sideEffects"] == "None"
    (expr,) = hook["namespaceSelector"]["matchExpressions"]
    assert expr["key"] == "kubernetes.io/metadata.name" and expr["operator"] == "NotIn"
    dep = find("Deployment", "ownergc-webhook")
    assert {"kube-system", dep["metadata"]["namespace"]} <= set(expr["values"])
    (rule,) = hook["rules"]
    assert set(rule["operations"]) == {"CREATE", "UPDATE"}
    service = hook["clientConfig"]["service"]
    svc = find("Service", service["name"])
    assert svc["metadata"]["namespace"] == service["namespace"]
    assert service["path"] == "/validate"
    assert service["port"] in [p["port"] for p in svc["spec"]["ports"]]
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    # cert-manager injects the CA of the Certificate the annotation names.
    cert = find("Certificate", "ownergc-webhook", "cert-manager.yaml")
    ns, name = vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].split("/")
    assert (ns, name) == (cert["metadata"]["namespace"], cert["metadata"]["name"])
    assert f"{service['name']}.{service['namespace']}.svc" in cert["spec"]["dnsNames"]
    volumes = dep["spec"]["template"]["spec"]["volumes"]
    assert {"secretName": cert["spec"]["secretName"]} in [v.get("secret") for v in volumes]


def test_cluster_role_only_reads() -> None:
    (rule,) = find("ClusterRole", "ownergc-webhook")["rules"]
    assert sorted(rule["verbs"]) == ["get", "list"]
    binding = find("ClusterRoleBinding", "ownergc-webhook")
    dep = find("Deployment", "ownergc-webhook")
    assert binding["subjects"][0]["name"] == dep["spec"]["template"]["spec"]["serviceAccountName"]


def test_deployment_args_are_valid_and_probes_answer() -> None:
    from ownergc.cli import build_parser
    from ownergc.controller._webhook import AdmissionChecker, OwnerCache
    from ownergc.controller._webhook_server import WebhookApp
    from ownergc_backends.memory import InMemoryStore

    dep = find("Deployment", "ownergc-webhook")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    args = build_parser().parse_args(container["args"])
    assert args.command == "webhook" and args.cluster
    vwc = find("ValidatingWebhookConfiguration", "ownergc-ownerreferences")
    assert args.check_timeout < vwc["webhooks"][0]["timeoutSeconds"]
    mount = container["volumeMounts"][0]["mountPath"]
    assert args.tls_cert.startswith(mount + "/") and args.tls_key.startswith(mount + "/")
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["https"] == args.port and ports["http-metrics"] == args.metrics_port
    cache = OwnerCache(InMemoryStore())
    app = WebhookApp(AdmissionChecker(cache), ready=lambda: cache.discovered)

    async def probe(path: str) -> int:
        status, _, _ = await app("GET", path, b"")
        return status

    readiness = container["readinessProbe"]["httpGet"]["path"]
    assert anyio.run(probe, readiness) == 503  # not ready before discovery
    anyio.run(cache.kinds)
    assert anyio.run(probe, readiness) == 200
    assert anyio.run(probe, container["livenessProbe"]["httpGet"]["path"]) == 200
