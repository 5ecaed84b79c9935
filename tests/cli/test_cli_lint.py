"""`ownergc lint` through its CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.cli_helpers import Kubectl, Served, ownergc

DATA = Path(__file__).parent / "data"


def test_every_rule_fires_once_with_a_fix() -> None:
    result = ownergc("lint", "-f", str(DATA / "bad-refs.yaml"))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    rules = [line.split("[")[1].split("]")[0] for line in lines if "[" in line]
    assert sorted(set(rules)) == [
        "block-owner-deletion-rbac",
        "cross-namespace-owner",
        "dangling-owner",
        "multiple-controllers",
        "namespaced-owner-of-cluster-scoped",
        "owner-uid-mismatch",
        "ownership-cycle",
        "unknown-owner-kind",
    ]
    assert all(". Fix: " in line for line in lines[:-1])
    assert lines[-1] == "10 objects checked: 5 errors, 4 warnings, 0 info"
    cross = next(line for line in lines if "[cross-namespace-owner]" in line)
    assert cross.startswith("ERROR   ConfigMap shop/child (")
    assert 'the GC looks for it in "shop", finds nothing and deletes this object' in cross


def test_clean_manifests_exit_zero() -> None:
    result = ownergc("lint", "-f", str(DATA / "good.yaml"))
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "2 objects checked: 0 errors, 0 warnings, 0 info"


def test_rbac_that_grants_finalizers_satisfies_block_owner_deletion(tmp_path: Path) -> None:
    text = (
        (DATA / "bad-refs.yaml")
        .read_text()
        .replace(
            "resources: [configmaps], verbs: [create, update]}",
            "resources: [configmaps], verbs: [create, update]}\n"
            '- {apiGroups: ["example.com"], resources: [widgets/finalizers], verbs: [update]}',
        )
    )
    path = tmp_path / "fixed.yaml"
    path.write_text(text)
    result = ownergc("lint", "-f", str(path))
    assert "block-owner-deletion-rbac" not in result.stdout


def test_info_without_rbac_and_json(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        (DATA / "good.yaml")
        .read_text()
        .replace("controller: true", "controller: true, blockOwnerDeletion: true")
    )
    doc = json.loads(ownergc("lint", "-f", str(path), "-o", "json").stdout)
    assert doc["errors"] == 0
    [finding] = doc["findings"]
    assert finding["rule"] == "block-owner-deletion-permission" and finding["severity"] == "info"
    assert "deployments/finalizers" in finding["fix"]
    quiet = ownergc("lint", "-f", str(path), "--min-severity", "warning")
    assert quiet.returncode == 0 and "block-owner" not in quiet.stdout


def test_live_cluster(served: Served, kubectl: Kubectl) -> None:
    kubectl.apply("ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n")
    kubectl.apply(
        "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p, namespace: other}\n"
    )
    uid = kubectl.uid("configmap", "p", "-n", "other")
    # The real GC would delete this dependent at once: give it a finalizer to keep it for lint.
    kubectl.apply(
        "dep.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: dep\n  finalizers: [example.com/keep]\n"
        f"  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: p, uid: {uid}}}\n",
    )
    result = ownergc("lint", "--kubeconfig", str(served.kubeconfig))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "ERROR   Secret default/dep: [cross-namespace-owner]" in result.stdout


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{not json")
    result = ownergc("lint", "-f", str(path))
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr
