"""The benchmarks measure the installed ownergc (compiled by ``pip install .``), not the
checkout's pure modules, unless nothing is installed (benchmarks/_which_ownergc.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import ownergc
from ownergc._core.graph import COMPILED

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

PROBE = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from _which_ownergc import checkout_unless_installed; "
    "print(checkout_unless_installed())"
)


def _probe(tmp_path: Path, *, isolated: bool) -> subprocess.CompletedProcess[str]:
    """Run the chooser as a copy in ``tmp_path/benchmarks`` (a checkout of its own)."""
    copy = tmp_path / "benchmarks"
    copy.mkdir()
    shutil.copy(BENCHMARKS / "_which_ownergc.py", copy)
    # -I: no site-packages, no PYTHONPATH, so that nothing provides ownergc
    flags = ["-I", "-S"] if isolated else []
    return subprocess.run(
        [sys.executable, *flags, "-c", PROBE, str(copy)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )


def test_an_installed_ownergc_is_measured_and_named(tmp_path: Path) -> None:
    done = _probe(tmp_path, isolated=False)
    assert done.stdout.strip() == "[]"
    installed = Path(ownergc.__file__).resolve().parent
    assert f"measuring the installed ownergc in {installed}" in done.stderr
    assert f"PYTHONPATH={tmp_path.resolve()} measures the checkout" in done.stderr


def test_a_checkout_nothing_installed_is_measured_as_it_is(tmp_path: Path) -> None:
    done = _probe(tmp_path, isolated=True)
    assert done.stdout.strip() == repr([str(tmp_path.resolve())])
    assert done.stderr == ""


def test_graph_benchmark_reports_the_core_this_interpreter_imports() -> None:
    command = [sys.executable, str(BENCHMARKS / "graph.py"), "--builder-only"]
    done = subprocess.run(
        [*command, "--shapes", "20x2", "--repeat", "1"],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["core"] == ("compiled" if COMPILED else "pure")
    assert report["builder_add_events_per_s"] > 0
