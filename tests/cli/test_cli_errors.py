"""A refusal by the store or the server is one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ownergc.cli._output import refusals
from ownergc.errors import Forbidden, NotFound
from tests.cli.cli_helpers import ROOT, start_serve, stop_serve

if sys.version_info >= (3, 11):
    from builtins import ExceptionGroup
else:  # anyio's own dependency on 3.10
    from exceptiongroup import ExceptionGroup


def _ownergc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ownergc", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_refusals_unwraps_task_groups_and_ignores_bugs() -> None:
    forbidden = Forbidden('namespaces "kube-public" is forbidden')
    group = ExceptionGroup("tg", [ExceptionGroup("inner", [forbidden]), NotFound("gone")])
    assert [str(e) for e in refusals(group)] == [str(forbidden), "gone"]
    assert refusals(ExceptionGroup("tg", [forbidden, ValueError("a bug")])) == []
    assert refusals(KeyError("a bug")) == []


@pytest.mark.parametrize("namespace", ["kube-public", "default"])
def test_preview_of_a_namespace_the_server_refuses_to_delete(
    tmp_path: Path, namespace: str
) -> None:
    served = start_serve(tmp_path)
    try:
        out = _ownergc(
            "preview", "--kubeconfig", str(served.kubeconfig), "--delete", f"namespace/{namespace}"
        )
    finally:
        code, err = stop_serve(served)
        assert code == 0, err
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line == (
        f'ownergc preview: namespaces "{namespace}" is forbidden: this namespace may not be deleted'
    )


def test_an_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    for command in (["lint"], ["graph", "-o", "json"], ["why", "namespace/default"]):
        out = _ownergc(*command, "--kubeconfig", str(kubeconfig))
        assert out.returncode != 0, (command, out.stdout)
        assert "Traceback" not in out.stderr, (command, out.stderr)
        assert out.stderr.strip() and len(out.stderr.strip().splitlines()) <= 2, out.stderr
