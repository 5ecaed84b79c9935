"""The ObjectStore contract, run against every store ownergc ships.

InMemoryStore directly; KubeStore over real HTTP against the REST facade of an
InMemoryStore; FaultyStore once healed (faults off), which must then be
indistinguishable from the store it wraps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import ClassVar

import pytest

from ownergc.testing.contract import ObjectStoreContract
from ownergc.testing.faults import FaultRates, FaultyStore
from ownergc_backends.memory import InMemoryStore

#: A short watch history, so the compaction check needs few writes.
HISTORY = 16


class TestInMemoryStore(ObjectStoreContract):
    watch_history: ClassVar[int | None] = HISTORY

    @pytest.fixture
    def store(self) -> InMemoryStore:
        return InMemoryStore(event_window=HISTORY)


class TestKubeStoreOverTheFacade(ObjectStoreContract):
    watch_history: ClassVar[int | None] = HISTORY

    @pytest.fixture
    async def store(self) -> AsyncIterator[object]:
        pytest.importorskip("kubernetes")
        from tests.kube.kube_helpers import kube_store_for, served

        async with (
            served(InMemoryStore(event_window=HISTORY)) as server,
            kube_store_for(server) as kube,
        ):
            yield kube


class TestHealedFaultyStore(ObjectStoreContract):
    watch_history: ClassVar[int | None] = HISTORY

    @pytest.fixture
    def store(self) -> FaultyStore:
        faulty = FaultyStore(
            InMemoryStore(event_window=HISTORY), seed=7, rates=FaultRates.uniform(0.5)
        )
        faulty.enabled = False
        return faulty
