"""The architecture's rules, checked mechanically (docs/architecture.md).

The import rules (layers, a pure core, no backend in the controller,
independent backends) are import-linter contracts in pyproject.toml; this
module runs them, and adds what an import graph cannot see: calls that read
the clock or open files inside the pure modules, and what ``import ownergc``
actually loads at run time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def _pure_modules() -> list[Path]:
    """The source files of the pure-core contract's modules, as pyproject.toml names them."""
    (contract,) = [c for c in CONTRACTS["contracts"] if c["name"].startswith("The pure core")]
    files: list[Path] = []
    for module in contract["source_modules"]:
        path = ROOT / module.replace(".", "/")
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")])
    return files


def test_import_contracts_are_kept() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(no_cache=True))",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


@pytest.mark.parametrize("path", _pure_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_module_reads_no_clock_and_opens_nothing(path: Path) -> None:
    source = path.read_text()
    for call in ("datetime.now(", "datetime.utcnow(", "open(", "time.time(", "monotonic("):
        assert call not in source, f"{path} calls {call}"


def test_the_pure_contract_covers_every_core_module() -> None:
    names = {str(p.relative_to(ROOT)) for p in _pure_modules()}
    assert "ownergc/_core/graph_builder.py" in names
    assert "ownergc/nodegc/_image_gc.py" in names
    assert "ownergc/why/_finalizers.py" in names


def test_importing_ownergc_imports_neither_kubernetes_nor_grpc() -> None:
    code = (
        "import sys, ownergc, ownergc.controller, ownergc.protocols, ownergc.nodegc, "
        "ownergc.cli, ownergc.testing, ownergc.why, ownergc_backends.memory; "
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'kubernetes', 'grpc'}); "
        "print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"
