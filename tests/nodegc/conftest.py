"""Fixtures of the node-GC suite (anyio backend; the containerd session lives in _cri_env)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
