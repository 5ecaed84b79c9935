"""The read-only commands read what a question needs: one namespace's preview does not
list the rest of the cluster. And a person waiting at a terminal sees what is being read."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc.cli._progress import Progress
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.cli.cli_helpers import ROOT


def _cm(name: str, namespace: str, uid: str, owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": f"{namespace}-{owner}"}
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[KubeAPIServer, Path]]:
    store = InMemoryStore()
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        for ns in ("small", "big")
    ]
    objects.append(_cm("root", "small", "small-root"))
    objects.append(_cm("leaf", "small", "small-leaf", owner="root"))
    for i in range(50):
        objects.append(_cm(f"o{i}", "big", f"big-o{i}"))
        objects.append(_cm(f"d{i}", "big", f"big-d{i}", owner=f"o{i}"))
    store.load_objects(objects)
    with run_in_thread(store) as server:
        kubeconfig = tmp_path / "kubeconfig"
        server.write_kubeconfig(kubeconfig)
        server.clear_requests()
        yield server, kubeconfig


def _ownergc(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "ownergc", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )


def _listed(server: KubeAPIServer) -> list[str]:
    return [r.path for r in server.requests if r.method == "GET"]


@pytest.mark.parametrize("target", ["namespace/small", "configmap/root"])
def test_preview_in_one_namespace_lists_only_that_namespace(
    served: tuple[KubeAPIServer, Path], target: str
) -> None:
    server, kubeconfig = served
    out = _ownergc(
        "preview", "--kubeconfig", str(kubeconfig), "--delete", target, "-n", "small", "-o", "json"
    )
    assert out.returncode == 0, out.stderr
    assert "leaf" in out.stdout and "big" not in out.stdout
    paths = _listed(server)
    assert "/api/v1/namespaces/small/configmaps" in paths
    assert not [p for p in paths if "/namespaces/big/" in p or p == "/api/v1/configmaps"]
    assert out.stderr == ""  # piped: no progress line


def test_a_cluster_scoped_target_reads_the_whole_cluster(
    served: tuple[KubeAPIServer, Path],
) -> None:
    server, kubeconfig = served
    out = _ownergc("preview", "--kubeconfig", str(kubeconfig), "--delete", "namespace/nothere")
    assert out.returncode != 0 and "not found" in out.stderr
    lint = _ownergc("lint", "--kubeconfig", str(kubeconfig))
    assert lint.returncode in (0, 1), lint.stderr
    assert "/api/v1/configmaps" in _listed(server)  # lint asks about everything


def test_progress_is_one_rewritten_line_on_a_terminal_and_nothing_elsewhere() -> None:
    stream = io.StringIO()
    with Progress("reading", 3, stream=stream, delay=0, enabled=True) as progress:
        progress.reading("configmaps")
        progress.read("configmaps", 90_000)
        assert progress.line() == "reading configmaps — 1/3 resources, 90,000 objects"
    written = stream.getvalue()
    assert "reading configmaps — 0/3 resources, 0 objects" in written
    assert written.endswith("\r\x1b[2K")  # erased when done
    quiet = io.StringIO()
    with Progress("reading", 3, stream=quiet) as progress:  # StringIO is not a terminal
        progress.read("configmaps", 1)
    assert quiet.getvalue() == ""
    slow = io.StringIO()
    with Progress("reading", 3, stream=slow, enabled=True, delay=3600) as progress:
        progress.read("configmaps", 1)  # before the delay: a fast command shows nothing
    assert slow.getvalue() == ""
