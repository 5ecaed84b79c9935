"""What the pytest plugin's fixtures hand out; usable without pytest too.

* :class:`OwnerGCStore` — an :class:`~ownergc_backends.memory.InMemoryStore`
  with a GarbageCollector and a NamespaceController running on it, in the
  test's own event loop (``async with running_store() as store``).
* :func:`~ownergc.testing._cluster.start_in_thread` — the same served over HTTP from
  a background thread, for sync tests, kubectl and the official client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ownergc.testing._cluster import ClusterThread, EmbeddedCluster, start_in_thread
from ownergc_backends.memory import InMemoryStore

if TYPE_CHECKING:
    from ownergc.controller import GarbageCollector
    from ownergc.controller._namespace import NamespaceController

__all__ = ["ClusterThread", "OwnerGCStore", "running_store", "start_in_thread"]


class OwnerGCStore(InMemoryStore):
    """An InMemoryStore that garbage-collects: a GC and a namespace controller run on it.

    Use it like the store (``create_object``, ``delete``, ``get_object``,
    ``exists``, ...), then ``await store.wait_idle()`` before asserting on
    what the collector did. ``gc`` and ``namespaces`` are the controllers
    (``store.gc.recorded_events`` holds the OwnerRefInvalidNamespace events).
    """

    gc: GarbageCollector
    namespaces: NamespaceController
    _cluster: EmbeddedCluster

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("terminating_namespaces", True)
        super().__init__(**kwargs)

    async def wait_idle(self, timeout: float | None = 30.0) -> None:
        """Return once both controllers have nothing left to do (TimeoutError after
        ``timeout`` seconds, e.g. when an object is stuck on a finalizer you set)."""
        await self._cluster.wait_idle(timeout)

    async def delete_object(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
    ) -> dict[str, Any] | None:
        """DELETE by apiVersion/kind (``propagation_policy``: Background, Foreground,
        Orphan or None for the kind's default); returns the object if it remains."""
        resource = self.resource_for(api_version, kind)
        return await self.delete(
            resource,
            name,
            namespace=namespace if resource.namespaced else None,
            propagation_policy=propagation_policy,
        )


@asynccontextmanager
async def running_store(*, workers: int = 20, **store_options: Any) -> AsyncIterator[OwnerGCStore]:
    """An :class:`OwnerGCStore` whose controllers run (and have synced) inside the block."""
    store = OwnerGCStore(**store_options)
    cluster = EmbeddedCluster(store, serve_http=False, workers=workers, discovery_period=0.2)
    store.gc = cluster.gc
    store.namespaces = cluster.namespaces
    store._cluster = cluster
    async with anyio.create_task_group() as tg:
        await tg.start(cluster.run)
        try:
            yield store
        finally:
            tg.cancel_scope.cancel()
