"""ownergc.why builds on the public core only (its purity is an import-linter contract)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MODULES = sorted((ROOT / "ownergc" / "why").glob("*.py"))


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_why_imports_only_public_ownergc_names() -> None:
    assert MODULES
    for path in MODULES:
        for name in _imports(path):
            if name.startswith("ownergc"):
                assert name in {"ownergc", "ownergc.errors", "ownergc.protocols"} or (
                    name.startswith("ownergc.why")
                ), (path.name, name)
