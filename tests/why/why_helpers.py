"""Helpers of the `ownergc why` suite: run it, walk its JSON tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.cli_helpers import ownergc

DATA = Path(__file__).parent / "data"


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
