"""Contract suites a backend runs to prove it keeps the Protocols' promises (fsspec style).

Shipped in the wheel, so a third-party backend subclasses them in its own
tests::

    from ownergc.testing.contract import ObjectStoreContract

    class TestMyStore(ObjectStoreContract):
        watch_history = 100          # capabilities: see the class attributes

        @pytest.fixture
        async def store(self):
            ...

ownergc runs them against ``InMemoryStore``, ``KubeStore`` over the REST
facade, a healed ``FaultyStore``, ``InMemoryRuntime`` and ``CRIRuntime`` on a
real containerd (tests/contract/). docs/testing.md shows the whole recipe.
"""

from __future__ import annotations

from ownergc.testing.contract._runtime import ContainerRuntimeContract, RuntimeSeed
from ownergc.testing.contract._store import ObjectStoreContract

__all__ = ["ContainerRuntimeContract", "ObjectStoreContract", "RuntimeSeed"]
