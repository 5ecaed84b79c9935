"""The reliability suite reuses the e2e helpers (and, for HTTP runs, the kube helpers)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
