"""Request economy: the steady state costs one request per collected object (issue 3).

Upstream reads every item live before deleting it (GET + DELETE). ownergc
decides from the watch cache and guards the write with uid + resourceVersion
preconditions, falling back to live reads only when a precondition fails.
"""

from __future__ import annotations

import pytest

from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import (
    delete,
    exists,
    make,
    owner_uids,
    patch_merge,
    ref,
    running_gc,
    settle,
)

pytestmark = [pytest.mark.anyio, pytest.mark.event_loops("asyncio", "trio")]


async def test_background_fan_out_costs_one_delete_per_dependent() -> None:
    store = InMemoryStore()
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        deps = [await make(store, "Secret", f"d-{i}", owners=[ref(owner)]) for i in range(100)]
        await settle(gc)
        store.clear_requests()
        await delete(store, owner, "Background")
        await settle(gc)
        assert not any(exists(store, d) for d in deps)
        gc_requests = store.request_count() - 1  # minus the user's DELETE
        assert store.request_count("delete") == 1 + len(deps)
        assert gc_requests / len(deps) <= 1.1, store.requests[-5:]
        assert gc.metrics.cache_decisions >= len(deps)


async def test_upstream_mode_reads_live_before_deleting() -> None:
    store = InMemoryStore()
    async with running_gc(store, use_cache=False) as gc:
        owner = await make(store, "ConfigMap", "owner")
        deps = [await make(store, "Secret", f"d-{i}", owners=[ref(owner)]) for i in range(10)]
        await settle(gc)
        store.clear_requests()
        await delete(store, owner, "Background")
        await settle(gc)
        assert not any(exists(store, d) for d in deps)
        # GET item + DELETE, as kube-controller-manager does (owner is in the absent cache).
        assert store.request_count("get") == len(deps)
        assert store.request_count("delete") == 1 + len(deps)
        assert gc.metrics.cache_decisions == 0


async def test_stale_cache_falls_back_to_live_reads_and_keeps_new_owner() -> None:
    """A dependent that gained a solid owner after the cache saw it is never deleted."""
    store = InMemoryStore()
    async with running_gc(store) as gc:
        owner = await make(store, "ConfigMap", "owner")
        rescuer = await make(store, "ConfigMap", "rescuer")
        dep = await make(store, "Secret", "dep", owners=[ref(owner)])
        await settle(gc)
        # Stop the graph from seeing the rescue: change the object, then make the
        # node look as it was (stale cache) before the delete cascades.
        node = gc.uid_to_node[dep["metadata"]["uid"]]
        stale_rv = node.resource_version
        await patch_merge(store, dep, {"metadata": {"ownerReferences": [ref(owner), ref(rescuer)]}})
        await settle(gc)
        node.owners = node.owners[:1]
        node.resource_version = stale_rv
        await delete(store, owner, "Background")
        await settle(gc)
        assert exists(store, dep)
        assert owner_uids(store, dep) == [rescuer["metadata"]["uid"]]
        assert gc.metrics.cache_fallbacks >= 1
