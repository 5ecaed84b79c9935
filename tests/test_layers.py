"""The architecture's rules, checked mechanically (ARCHITECTURE.md "Layers").

* The core is pure: no I/O, no clock, no tasks — so its modules import no
  event loop, socket, file, process or clock module, and no backend.
* The controller depends on the Protocols only, never on a backend.
* Backends never import each other.
* ``import ownergc`` (and the controller, the CLI entry) imports neither
  ``kubernetes`` nor ``grpc``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CORE = [
    "ownergc/__init__.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ownergc/_core").glob("*.py")),
    "ownergc/lint.py",
    "ownergc/errors.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "ownergc/nodegc").glob("*.py")),
]

#: Modules that do I/O, read clocks or start tasks.
IMPURE = {
    "anyio",
    "asyncio",
    "trio",
    "threading",
    "multiprocessing",
    "concurrent",
    "socket",
    "ssl",
    "select",
    "selectors",
    "subprocess",
    "os",
    "io",
    "pathlib",
    "shutil",
    "tempfile",
    "time",
    "random",
    "uuid",
    "urllib",
    "http",
    "logging",
    "kubernetes",
    "grpc",
    "ownergc_backends",
    "ownergc.controller",
    "ownergc.cli",
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def forbidden(names: set[str], banned: set[str]) -> set[str]:
    return {n for n in names for b in banned if n == b or n.startswith(b + ".")}


@pytest.mark.parametrize("module", CORE)
def test_core_module_is_pure(module: str) -> None:
    path = ROOT / module
    assert not forbidden(imports_of(path), IMPURE), module
    source = path.read_text()
    for call in ("datetime.now(", "datetime.utcnow(", "open(", "time.time(", "monotonic("):
        assert call not in source, f"{module} calls {call}"


def test_controller_never_imports_a_backend() -> None:
    for path in (ROOT / "ownergc/controller").glob("*.py"):
        assert not forbidden(imports_of(path), {"ownergc_backends", "kubernetes", "grpc"}), path


@pytest.mark.parametrize("backend", ["memory", "kube", "cri"])
def test_backends_do_not_import_each_other(backend: str) -> None:
    others = {f"ownergc_backends.{b}" for b in ("memory", "kube", "cri") if b != backend}
    for path in (ROOT / "ownergc_backends" / backend).rglob("*.py"):
        assert not forbidden(imports_of(path), others), path


def test_importing_ownergc_imports_neither_kubernetes_nor_grpc() -> None:
    code = (
        "import sys, ownergc, ownergc.controller, ownergc.protocols, ownergc.nodegc, "
        "ownergc.cli, ownergc.testing, ownergc_backends.memory; "
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'kubernetes', 'grpc'}); "
        "print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"
