"""Share the end-to-end helpers (tests/e2e/e2e_helpers.py) with the controller tests."""

from __future__ import annotations
