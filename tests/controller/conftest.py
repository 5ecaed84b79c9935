"""Share the end-to-end helpers (tests/e2e/e2e_helpers.py) with the controller tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))
