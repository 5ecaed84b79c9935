"""Fixtures of the `ownergc why` suite: one `ownergc serve` per module, kubectl at it,
and the in-memory store behind its REST facade without any controller."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # test_layers

from cli_helpers import Kubectl, Served, ownergc, start_serve, stop_serve

DATA = Path(__file__).parent / "data"


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


def why(*args: str, kubeconfig: Path | None = None) -> dict[str, Any]:
    """`ownergc why ARGS -o json` (against ``kubeconfig`` when given), parsed."""
    extra = ["--kubeconfig", str(kubeconfig)] if kubeconfig is not None else []
    result = ownergc("why", *args, *extra, "-o", "json")
    assert result.returncode in (0, 1), result.stderr
    return dict(json.loads(result.stdout))


def nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of an explanation's JSON tree, depth first."""
    out = [tree]
    for child in tree.get("children", ()):
        out.extend(nodes(child))
    return out


def with_code(answer: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [n for n in nodes(answer["explanation"]) if n["code"] == code]
