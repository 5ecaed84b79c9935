"""The plugin's fixtures in a user's suite, under each async plugin users run.

Each case is a real pytest run in a fresh directory (the suite in
tests/cli/data/plugin-modes/) with only ownergc's plugin and the async plugin
of that case: pytest-asyncio in strict and in auto mode, and anyio's plugin
with and without pytest-asyncio installed beside it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytest_asyncio")

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SUITE = HERE / "data" / "plugin-modes"


def run_suite(tmp_path: Path, ini: str, test_file: str, *args: str) -> str:
    work = tmp_path / "suite"
    shutil.copytree(SUITE, work)
    (work / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n" + ini)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, test_file],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


#: What a pytest-asyncio user's configuration states (1.x warns otherwise).
LOOP_SCOPE = "asyncio_default_fixture_loop_scope = function\n"


def test_pytest_asyncio_strict_mode(tmp_path: Path) -> None:
    out = run_suite(tmp_path, "asyncio_mode = strict\n" + LOOP_SCOPE, "test_asyncio_strict.py")
    assert "2 passed" in out


def test_pytest_asyncio_auto_mode(tmp_path: Path) -> None:
    out = run_suite(tmp_path, "asyncio_mode = auto\n" + LOOP_SCOPE, "test_asyncio_auto.py")
    assert "2 passed" in out


def test_anyio_plugin_beside_pytest_asyncio(tmp_path: Path) -> None:
    out = run_suite(tmp_path, LOOP_SCOPE, "test_anyio.py")
    assert "4 passed" in out  # asyncio and trio


def test_anyio_plugin_alone(tmp_path: Path) -> None:
    out = run_suite(tmp_path, "", "test_anyio.py", "-p", "no:asyncio")
    assert "4 passed" in out


def test_a_sync_test_asking_for_the_async_store_gets_a_clear_error(tmp_path: Path) -> None:
    work = tmp_path / "sync"
    work.mkdir()
    (work / "test_sync.py").write_text("def test_sync(ownergc_store):\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_sync.py"],
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "ownergc_store runs in the test's event loop" in done.stdout + done.stderr
