"""``ownergc --version`` names the version and which graph core runs (pure or compiled)."""

from __future__ import annotations

import subprocess
import sys

from ownergc import __version__
from ownergc._core.graph import COMPILED


def test_version_names_the_graph_core() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ownergc", "--version"], capture_output=True, text=True, check=True
    )
    core = "compiled" if COMPILED else "pure Python"
    assert out.stdout.strip() == f"ownergc {__version__} ({core} graph core)"
