"""Fixtures of the `ownergc why` suite: one `ownergc serve` per module and kubectl at it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.cli.cli_helpers import Kubectl, Served, start_serve, stop_serve


def _kubectl_binary() -> str:
    binary = os.environ.get("OWNERGC_KUBECTL") or shutil.which("kubectl")
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kubectl is required in CI (Debian package kubernetes-client)")
        pytest.skip("no kubectl (install kubernetes-client or set OWNERGC_KUBECTL)")
    return binary


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`ownergc serve --port 0` (garbage collector and namespace controller running)."""
    srv = start_serve(tmp_path_factory.mktemp("serve"))
    try:
        yield srv
    finally:
        code, err = stop_serve(srv)
        assert code == 0, err


@pytest.fixture(scope="module")
def kubectl(served: Served, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    return Kubectl(_kubectl_binary(), served.kubeconfig, tmp_path_factory.mktemp("kubectl"))
