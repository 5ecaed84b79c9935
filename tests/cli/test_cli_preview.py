"""`ownergc preview` through its CLI: the real GC's outcome on an in-memory copy."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.cli_helpers import Kubectl, Served, ownergc

DATA = Path(__file__).parent / "data"
DUMP = str(DATA / "shop-dump.yaml")


def preview(*args: str) -> str:
    result = ownergc("preview", "-f", DUMP, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_background_tree_order_and_blocked_finalizer() -> None:
    out = preview("--delete", "deploy/web", "-n", "shop", "--cascade", "background")
    assert "Deployment shop/web  →  deleted (#1)" in out
    assert "├── ReplicaSet shop/web-5d8f7  →  deleted (#2)" in out
    assert "Pod shop/web-5d8f7-a  →  deleted (#3)" in out
    assert "Pod shop/web-5d8f7-b  →  blocked (finalizer example.com/drain)" in out
    assert (
        "kept (ownerReference to Deployment shop/web removed; still owned by ConfigMap shop/shared)"
        in out
    )
    assert "Summary: 3 deleted, 1 blocked, 1 kept" in out


def test_foreground_owners_wait_on_blocking_dependents() -> None:
    out = preview("--delete", "deployment/web", "-n", "shop", "--cascade", "foreground")
    waiting = "blocked (foregroundDeletion: waiting for"
    assert f"Deployment shop/web  →  {waiting} ReplicaSet shop/web-5d8f7)" in out
    assert f"ReplicaSet shop/web-5d8f7  →  {waiting} Pod shop/web-5d8f7-b)" in out
    assert "1. Pod shop/web-5d8f7-a" in out


def test_orphan_removes_references_only() -> None:
    out = preview("--delete", "deployments.apps/web", "-n", "shop", "--cascade", "orphan")
    assert (
        "ReplicaSet shop/web-5d8f7  →  orphaned (ownerReference to Deployment shop/web removed)"
        in out
    )
    assert "Pod shop/web-5d8f7-a  →  not affected" in out


def test_namespace_delete_through_the_namespace_controller() -> None:
    out = preview("--delete", "ns/shop")
    assert (
        "Namespace shop  →  blocked (namespace controller waiting for Pod shop/web-5d8f7-b)" in out
    )
    assert "ConfigMap shop/shared  →  deleted" in out


def test_json_output() -> None:
    doc = json.loads(preview("--delete", "deploy/web", "-n", "shop", "-o", "json"))
    assert doc["target"]["outcome"] == "deleted" and doc["cascade"] == "background"
    states = {o["name"]: o["outcome"] for o in doc["objects"]}
    assert states == {
        "web": "deleted",
        "web-5d8f7": "deleted",
        "web-5d8f7-a": "deleted",
        "web-5d8f7-b": "blocked",
        "web-config": "kept",
    }
    assert [o["name"] for o in doc["removalOrder"]] == ["web", "web-5d8f7", "web-5d8f7-a"]
    assert {a["action"] for a in doc["actions"]} >= {"delete", "patch"}


def test_pre_existing_garbage_is_listed_apart(tmp_path: Path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\n"
        "metadata: {name: a, namespace: default, uid: a}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        "  name: orphaned-already\n  namespace: default\n"
        "  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: gone, uid: gone}]\n"
    )
    result = ownergc("preview", "-f", str(manifest), "--delete", "cm/a")
    assert result.returncode == 0, result.stderr
    header = "Collected anyway (their owners are already absent):\n"
    assert header + "  ConfigMap default/orphaned-already" in result.stdout


def test_errors_are_one_line() -> None:
    for args, message in [
        (
            ["-f", DUMP, "--delete", "deploy/nope", "-n", "shop"],
            'deployments.apps "nope" not found',
        ),
        (["-f", DUMP, "--delete", "gizmo/x"], 'doesn\'t have a resource type "gizmo"'),
        (["-f", DUMP, "--delete", "web"], "--delete wants KIND/NAME"),
        (["--delete", "deploy/web"], "nothing to read"),
        (["-f", "/nonexistent", "--delete", "deploy/web"], "no such file"),
    ]:
        result = ownergc("preview", *args)
        assert result.returncode == 2, (args, result.stdout)
        assert message in result.stderr and "Traceback" not in result.stderr


def test_live_cluster_is_read_only(served: Served, kubectl: Kubectl) -> None:
    kubectl.apply("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owner}\n")
    uid = kubectl.uid("configmap", "owner")
    kubectl.apply(
        "dep.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: dep\n  ownerReferences:\n"
        f"  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}}}\n",
    )
    result = ownergc(
        "preview", "--kubeconfig", str(served.kubeconfig), "--delete", "configmap/owner"
    )
    assert result.returncode == 0, result.stderr
    assert "Secret default/dep  →  deleted (#2)" in result.stdout
    assert kubectl.exists("configmap", "owner") and kubectl.exists("secret", "dep")
