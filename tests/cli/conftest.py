"""Fixtures of the CLI suite: `ownergc serve` as a subprocess, kubectl pointed at it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.cli_helpers import Kubectl, Served, start_serve, stop_serve


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """`ownergc serve --port 0` in a subprocess; stopped with SIGTERM (must exit 0)."""
    srv = start_serve(tmp_path)
    try:
        yield srv
    finally:
        code, err = stop_serve(srv)
        assert code == 0, err


@pytest.fixture
def kubectl(served: Served, tmp_path: Path) -> Kubectl:
    binary = os.environ.get("OWNERGC_KUBECTL") or shutil.which("kubectl")
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kubectl is required in CI (Debian package kubernetes-client)")
        pytest.skip("no kubectl (install kubernetes-client or set OWNERGC_KUBECTL)")
    return Kubectl(binary, served.kubeconfig, tmp_path)
