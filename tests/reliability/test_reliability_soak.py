"""A short seeded soak in CI: every fault profile once, from fixed seeds (reliability_soak.py)."""

from __future__ import annotations

import pytest

from tests.reliability.reliability_soak import soak_run
from tests.reliability.test_reliability_properties import PROFILES


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_soak(profile: str) -> None:
    seed = 7000 + sorted(PROFILES).index(profile)
    record = soak_run(seed, profile, steps=30)
    assert record["ok"], record
