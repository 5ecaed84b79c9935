"""ownergc.why is a pure analysis: the rules of tests/test_layers.py for the core apply."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_layers import IMPURE, forbidden, imports_of

ROOT = Path(__file__).resolve().parents[2]

MODULES = sorted((ROOT / "ownergc" / "why").glob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_why_module_is_pure(path: Path) -> None:
    assert not forbidden(imports_of(path), IMPURE)
    source = path.read_text()
    for call in ("datetime.now(", "datetime.utcnow(", "open(", "time.time(", "monotonic("):
        assert call not in source, f"{path.name} calls {call}"


def test_why_imports_only_public_ownergc_names() -> None:
    """The core is being moved around: only its public surface is relied on."""
    for path in MODULES:
        for name in imports_of(path):
            if name.startswith("ownergc"):
                assert name in {"ownergc", "ownergc.errors", "ownergc.protocols"} or (
                    name.startswith("ownergc.why")
                ), (path.name, name)
