"""The reliability suite reuses the e2e helpers (and, for HTTP runs, the kube helpers)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "e2e"))
sys.path.insert(0, str(HERE.parent / "kube"))
sys.path.insert(0, str(HERE))
