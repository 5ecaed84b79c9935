"""`ownergc why -f`: manifests and a real cluster's objects, read-only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.cli_helpers import ownergc
from tests.why.why_helpers import DATA, with_code

REAL = Path(__file__).resolve().parent.parent / "data" / "real-apiserver-1.24" / "cluster.json"


def _real_objects() -> list[dict[str, object]]:
    return list(json.loads(REAL.read_text())["items"])


def test_every_object_of_a_real_cluster_is_explained() -> None:
    """One run per kind (the subprocess is the cost) over the whole recorded cluster."""
    seen: set[str] = set()
    for obj in _real_objects():
        meta = obj["metadata"]
        assert isinstance(meta, dict)
        kind = str(obj["kind"])
        if kind in seen:
            continue
        seen.add(kind)
        target = f"{kind}/{meta['name']}"
        ns = ["-n", str(meta["namespace"])] if meta.get("namespace") else []
        result = ownergc("why", target, *ns, "-f", str(REAL), "-o", "json")
        assert result.returncode == 0, (target, result.stderr)
        answer = json.loads(result.stdout)
        assert answer["verdict"] == "kept", target
        assert answer["target"]["name"] == meta["name"]
    assert {"APIService", "ComponentStatus", "Namespace", "FlowSchema"} <= seen


def test_the_real_cluster_through_the_library() -> None:
    """Every object, in process: no error, and nothing there is being deleted."""
    from ownergc.why import explain

    objects = _real_objects()
    for obj in objects:
        meta = obj["metadata"]
        assert isinstance(meta, dict)
        answer = explain(
            objects,
            None,
            kind=str(obj["kind"]),
            name=str(meta["name"]),
            namespace=meta.get("namespace"),  # type: ignore[arg-type]
        )
        assert answer.verdict == "kept"
        assert answer.root.code == "object.noOwners"


def test_aggregated_api_from_manifests() -> None:
    result = ownergc("why", "ns/monitoring", "-f", str(DATA / "aggregated-api.yaml"), "-o", "json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    [cause] = with_code(answer, "namespace.apiServiceUnavailable")
    assert "metrics.k8s.io/v1beta1" in cause["summary"]
    # The local v1.apps APIService (no spec.service) is never blamed.
    assert "v1.apps" not in json.dumps(answer)
    # Only the condition that is True is explained.
    [cond] = with_code(answer, "namespace.condition")
    assert "NamespaceDeletionDiscoveryFailure" in cond["summary"]


def test_usage_errors() -> None:
    result = ownergc("why", "namespace", "-f", str(DATA / "aggregated-api.yaml"))
    assert result.returncode == 2
    assert "give KIND/NAME or KIND NAME" in result.stderr
    result = ownergc("why", "ns/x")
    assert result.returncode == 2
    assert "nothing to read" in result.stderr


@pytest.mark.parametrize("args", [("ns", "monitoring"), ("namespaces/monitoring",)])
def test_kubectl_spellings(args: tuple[str, ...]) -> None:
    result = ownergc("why", *args, "-f", str(DATA / "aggregated-api.yaml"))
    assert result.returncode == 0, result.stderr
    first, tree = result.stdout.splitlines()[:2]
    assert first.startswith("root cause: aggregated API metrics.k8s.io/v1beta1 is unavailable")
    assert tree.startswith("Namespace monitoring: being deleted since ")


def test_as_a_kubectl_plugin(tmp_path: Path) -> None:
    """`kubectl ownergc why ...`: kubectl runs kubectl-ownergc from PATH with the arguments.

    The shim stands for the installed console script (which points at the
    installed package) so that this checkout's code is the one run.
    """
    kubectl = os.environ.get("OWNERGC_KUBECTL") or shutil.which("kubectl")
    if kubectl is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kubectl is required in CI (Debian package kubernetes-client)")
        pytest.skip("no kubectl")
    shim = tmp_path / "kubectl-ownergc"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ownergc "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PATH"] = f"{tmp_path}:{env.get('PATH', '')}"
    proc = subprocess.run(
        [kubectl, "ownergc", "why", "ns/monitoring", "-f", str(DATA / "aggregated-api.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    assert "cause: aggregated API metrics.k8s.io/v1beta1 is unavailable" in proc.stdout
