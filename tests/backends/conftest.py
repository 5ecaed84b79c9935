"""Fixtures for the backend tests: an InMemoryStore with a controllable clock."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

import pytest

from ownergc_backends.memory import InMemoryStore


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))


@pytest.fixture
def store(clock: FakeClock) -> InMemoryStore:
    counter = itertools.count(1)
    return InMemoryStore(clock=clock, uid_factory=lambda: f"uid-{next(counter)}")
