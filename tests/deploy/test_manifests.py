"""deploy/: the manifests parse, the RBAC covers what the controller does, the args are valid."""

from __future__ import annotations

from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML comes with the kube extra")

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def docs() -> list[dict]:
    out = []
    for name in ("namespace.yaml", "rbac.yaml", "deployment.yaml"):
        out.extend(d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d)
    return out


def find(kind: str, name: str) -> dict:
    for d in docs():
        if d["kind"] == kind and d["metadata"]["name"] == name:
            return d
    raise AssertionError(f"no {kind} {name}")


def test_every_document_is_well_formed_and_kustomization_lists_all() -> None:
    for d in docs():
        assert d["apiVersion"] and d["kind"] and d["metadata"]["name"]
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == ["deployment.yaml", "namespace.yaml", "rbac.yaml"]


def allowed(rules: list[dict], group: str, resource: str, verb: str) -> bool:
    return any(
        (group in r["apiGroups"] or "*" in r["apiGroups"])
        and (resource in r["resources"] or "*" in r["resources"])
        and (verb in r["verbs"] or "*" in r["verbs"])
        for r in rules
    )


def test_cluster_role_is_least_privilege_for_a_garbage_collector() -> None:
    rules = find("ClusterRole", "ownergc")["rules"]
    for verb in ("get", "list", "watch", "patch", "delete"):
        assert allowed(rules, "apps", "deployments", verb)
        assert allowed(rules, "example.com", "widgets", verb)
    assert allowed(rules, "", "events", "create")
    for verb in ("create", "update", "deletecollection", "escalate", "bind", "impersonate"):
        assert not allowed(rules, "", "secrets", verb), verb
    lease_rules = find("Role", "ownergc-leader-election")["rules"]
    for verb in ("get", "create", "patch"):  # what LeaderElector sends
        assert allowed(lease_rules, "coordination.k8s.io", "leases", verb)
    binding = find("ClusterRoleBinding", "ownergc")
    assert binding["subjects"][0]["name"] == "ownergc"


def test_deployment_runs_two_leader_elected_replicas_with_valid_flags_and_probes() -> None:
    from ownergc.cli import build_parser
    from ownergc.controller import GarbageCollector
    from ownergc.controller._http import ControllerEndpoints
    from ownergc_backends.memory import InMemoryStore

    dep = find("Deployment", "ownergc")
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "ownergc"
    container = pod["containers"][0]
    args = container["args"]
    parsed = build_parser().parse_args(args)
    assert parsed.command == "controller" and parsed.leader_elect
    assert parsed.log_format == "json"
    port = container["ports"][0]["containerPort"]
    assert parsed.port == port
    endpoints = ControllerEndpoints(GarbageCollector(InMemoryStore()))
    for probe in ("livenessProbe", "readinessProbe"):
        path = container[probe]["httpGet"]["path"]
        assert endpoints("GET", path, {}).status in (200, 503), path
    assert container["resources"]["limits"]["memory"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
