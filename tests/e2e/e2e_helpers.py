"""Shared helpers for end-to-end cascade tests: build objects, run a collector."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from ownergc.controller import GarbageCollector
from ownergc.protocols import ObjectStore


def ref(
    obj: dict[str, Any], *, block: bool | None = None, controller: bool | None = None
) -> dict[str, Any]:
    """An ownerReference pointing at ``obj``."""
    out: dict[str, Any] = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
    }
    if controller is not None:
        out["controller"] = controller
    if block is not None:
        out["blockOwnerDeletion"] = block
    return out


def fake_ref(api_version: str, kind: str, name: str, uid: str, **flags: Any) -> dict[str, Any]:
    out = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    out.update(flags)
    return out


async def make(
    store: Any,
    kind: str,
    name: str,
    *,
    api_version: str | None = None,
    namespace: str | None = "default",
    owners: list[dict[str, Any]] | None = None,
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    """Create an object through the store and return it as stored."""
    api_version = (
        api_version
        or {
            "ConfigMap": "v1",
            "Secret": "v1",
            "Pod": "v1",
            "Namespace": "v1",
            "Node": "v1",
            "ReplicationController": "v1",
            "Deployment": "apps/v1",
            "ReplicaSet": "apps/v1",
            "ClusterRole": "rbac.authorization.k8s.io/v1",
        }[kind]
    )
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if owners:
        meta["ownerReferences"] = owners
    if finalizers:
        meta["finalizers"] = finalizers
    created: dict[str, Any] = await store.create_object(
        {"apiVersion": api_version, "kind": kind, "metadata": meta}
    )
    return created


def exists(store: Any, obj: dict[str, Any]) -> bool:
    return bool(
        store.exists(
            obj["apiVersion"],
            obj["kind"],
            obj["metadata"]["name"],
            obj["metadata"].get("namespace"),
        )
    )


def live(store: Any, obj: dict[str, Any]) -> dict[str, Any] | None:
    got: dict[str, Any] | None = store.get_object(
        obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace")
    )
    return got


def owner_uids(store: Any, obj: dict[str, Any]) -> list[str]:
    cur = live(store, obj)
    assert cur is not None, f"{obj['metadata']['name']} is gone"
    return [r["uid"] for r in cur["metadata"].get("ownerReferences") or []]


async def delete(
    store: Any, obj: dict[str, Any], policy: str | None = None
) -> dict[str, Any] | None:
    resource = store.resource_for(obj["apiVersion"], obj["kind"])
    result: dict[str, Any] | None = await store.delete(
        resource,
        obj["metadata"]["name"],
        namespace=obj["metadata"].get("namespace"),
        propagation_policy=policy,
    )
    return result


async def patch_merge(store: Any, obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    from ownergc.protocols import PatchType

    resource = store.resource_for(obj["apiVersion"], obj["kind"])
    result: dict[str, Any] = await store.patch(
        resource,
        obj["metadata"]["name"],
        patch,
        patch_type=PatchType.MERGE,
        namespace=obj["metadata"].get("namespace"),
    )
    return result


@asynccontextmanager
async def running_gc(store: ObjectStore, **kwargs: Any) -> AsyncIterator[GarbageCollector]:
    """A GarbageCollector running in the background, synced; cancelled on exit."""
    kwargs.setdefault("workers", 5)
    kwargs.setdefault("discovery_period", 0.2)
    gc = GarbageCollector(store, **kwargs)
    async with anyio.create_task_group() as tg:
        tg.start_soon(gc.run)
        with anyio.fail_after(10):
            await gc.wait_synced()
        yield gc
        tg.cancel_scope.cancel()


def graph_caught_up(gc: GarbageCollector, store: Any) -> bool:
    """The collector's graph holds what ``store`` (an InMemoryStore) holds now.

    Every object of a watched kind is in the graph, observed at its current
    resourceVersion, and every observed node's object still exists. A quiet
    window alone cannot tell a collector that is done from one whose watch
    events are still on their way (over HTTP, under load).
    """
    watched = {(r.api_version, r.kind) for r in gc.monitored_resources()}
    graph = gc.uid_to_node
    present: set[str] = set()
    for obj in store.snapshot():
        meta = obj["metadata"]
        uid = meta.get("uid")
        if not uid or (obj["apiVersion"], obj["kind"]) not in watched:
            continue
        node = graph.get(uid)
        if node is None or node.virtual or node.resource_version != meta["resourceVersion"]:
            return False
        present.add(uid)
    return all(node.virtual or uid in present for uid, node in graph.items())


async def settle(
    gc: GarbageCollector, timeout: float = 15.0, *, store: Any = None, quiet: float = 0.05
) -> None:
    """Wait until the collector is idle with every change of ``store`` (by default the
    collector's own store, when it is in memory) observed; with no such store, until
    it has been idle for ``quiet`` seconds."""
    store = store if store is not None else gc.store
    check = hasattr(store, "snapshot")
    with anyio.fail_after(timeout):
        while True:
            await gc.wait_idle(settle=quiet)
            if not check or graph_caught_up(gc, store):
                return
            await anyio.sleep(0.01)
