"""The restart incident (kubernetes/kubernetes#65200 class; items 16, 22, 33-35, 80; §10.2-10.5).

An owner P lives in namespace ``b``; its valid dependents V live in ``b``
too. A bad dependent D in namespace ``a`` names P (an invalid cross-namespace
reference), and a cluster-scoped ClusterRole C names P (a namespaced kind,
which a cluster-scoped object can never own-resolve). After an apiserver or
controller restart the monitors of the owner's and the dependents' resources
sync in either order; D's lookup of P in namespace ``a`` fills the absent-owner
cache with "P is absent" *for namespace a*. Kubernetes once keyed that cache
by uid alone and then deleted P's valid dependents (and, through virtual
nodes, could act on P itself).

Whatever the order, and whatever policy P is later deleted with, ownergc must:
never delete P or a valid dependent while P is not being deleted (audited at
every DELETE), collect D (Kubernetes 1.20+), keep C, and report
``OwnerRefInvalidNamespace`` for D (and C) — never for a valid dependent —
both in ``gc.recorded_events`` and as an Event object in the store.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ownergc.controller import GarbageCollector
from ownergc.protocols import APIResource, ObjectList
from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import make, ref
from tests.reliability.reliability_harness import Audit, AuditedStore

pytestmark = pytest.mark.anyio

MONITORED = {("", "configmaps"), ("", "secrets"), ("rbac.authorization.k8s.io", "clusterroles")}


class OrderedSync:
    """The GC's view of the store, with ``second``'s list held back until every object
    of ``first``'s list has been observed by the collector's graph."""

    def __init__(self, inner: Any, first: str, second: str) -> None:
        self.inner = inner
        self.first, self.second = first, second
        self.gc: GarbageCollector | None = None
        self.first_uids: set[str] | None = None
        self.order: list[str] = []

    async def list(self, resource: APIResource, **kw: Any) -> ObjectList:
        if resource.resource == self.second:
            with anyio.fail_after(10):
                while self.first_uids is None or not self._observed(self.first_uids):
                    await anyio.sleep(0.002)
        listed: ObjectList = await self.inner.list(resource, **kw)
        if resource.resource == self.first and self.first_uids is None:
            self.first_uids = {o["metadata"]["uid"] for o in listed.items}
        if resource.resource in (self.first, self.second):
            self.order.append(resource.resource)
        return listed

    def _observed(self, uids: set[str]) -> bool:
        assert self.gc is not None
        graph = self.gc.uid_to_node
        return all(uid in graph and not graph[uid].virtual for uid in uids)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Scene:
    async def build(self, store: InMemoryStore) -> Scene:
        for ns in ("a", "b"):
            await store.create_object(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            )
        self.p = await make(store, "ConfigMap", "owner", namespace="b")
        self.v = [
            await make(
                store, "Secret", f"valid-{i}", namespace="b", owners=[ref(self.p, block=True)]
            )
            for i in range(3)
        ]
        self.d = await make(store, "Secret", "bad", namespace="a", owners=[ref(self.p, block=True)])
        self.c = await make(
            store, "ClusterRole", "cluster-bad", namespace=None, owners=[ref(self.p)]
        )
        return self


def _uid(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["uid"])


def _live(store: InMemoryStore, obj: dict[str, Any]) -> dict[str, Any] | None:
    meta = obj["metadata"]
    got: dict[str, Any] | None = store.get_object(
        obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")
    )
    return got if got is not None and got["metadata"]["uid"] == meta["uid"] else None


def _refs(store: InMemoryStore, obj: dict[str, Any]) -> list[str]:
    live = _live(store, obj)
    assert live is not None
    return [r["uid"] for r in live["metadata"].get("ownerReferences") or []]


async def _run_gc(
    audit: Audit, order: str, tg: Any, ignored: set[tuple[str, str]]
) -> tuple[GarbageCollector, OrderedSync, anyio.CancelScope]:
    first, second = (
        ("configmaps", "secrets") if order == "owner-first" else ("secrets", "configmaps")
    )
    view = OrderedSync(AuditedStore(audit, "gc"), first, second)
    gc = GarbageCollector(view, workers=3, discovery_period=0.2, ignored_resources=ignored)
    view.gc = gc
    scope = anyio.CancelScope()

    async def run() -> None:
        with scope:
            await gc.run()

    tg.start_soon(run)
    with anyio.fail_after(15):
        await gc.wait_synced()
    return gc, view, scope


async def _settle(gc: GarbageCollector) -> None:
    with anyio.fail_after(20):
        await gc.wait_idle(settle=0.1, horizon=1e9)


async def _delete(store: Any, obj: dict[str, Any], policy: str) -> None:
    resource = store.resource_for(obj["apiVersion"], obj["kind"])
    await store.delete(
        resource,
        obj["metadata"]["name"],
        namespace=obj["metadata"].get("namespace"),
        propagation_policy=policy,
    )


def _event_objects(store: InMemoryStore, uid: str) -> list[dict[str, Any]]:
    return [
        o
        for o in store.snapshot()
        if o["kind"] == "Event"
        and o.get("involvedObject", {}).get("uid") == uid
        and o.get("reason") == "OwnerRefInvalidNamespace"
    ]


@pytest.mark.parametrize("order", ["owner-first", "dependents-first"])
@pytest.mark.parametrize("policy", [None, "Background", "Foreground", "Orphan"])
@pytest.mark.parametrize("when", ["after-restart", "while-down"])
async def test_restart_incident(order: str, policy: str | None, when: str) -> None:
    store = InMemoryStore()
    audit = Audit(store)
    test_store = AuditedStore(audit, "test")
    scene = await Scene().build(store)
    ignored = {
        (r.group, r.resource)
        for r in (await store.discover()).resources
        if (r.group, r.resource) not in MONITORED
    }
    other = "dependents-first" if order == "owner-first" else "owner-first"
    async with anyio.create_task_group() as tg:
        # First controller: monitors sync in `order`.
        gc1, view1, scope1 = await _run_gc(audit, order, tg, ignored)
        assert view1.order[:2] == (
            ["configmaps", "secrets"] if order == "owner-first" else ["secrets", "configmaps"]
        )
        await _settle(gc1)
        assert _live(store, scene.d) is None, (
            "the dependent with the invalid reference is collected"
        )
        assert _live(store, scene.p) is not None
        assert all(_refs(store, v) == [_uid(scene.p)] for v in scene.v)
        assert _refs(store, scene.c) == [_uid(scene.p)]  # never collected (item 34)
        reported = {e.dependent.uid for e in gc1.recorded_events}
        assert _uid(scene.d) in reported
        assert reported <= {_uid(scene.d), _uid(scene.c)}
        for e in gc1.recorded_events:
            if e.dependent.uid == _uid(scene.d):
                assert e.reason == "OwnerRefInvalidNamespace"
                assert e.message == (
                    f"ownerRef [v1/ConfigMap, namespace: a, name: owner, uid: {_uid(scene.p)}] "
                    'does not exist in namespace "a"'
                )
        with anyio.fail_after(5):
            while not _event_objects(store, _uid(scene.d)):
                await anyio.sleep(0.01)
        event = _event_objects(store, _uid(scene.d))[0]
        assert event["type"] == "Warning"
        assert event["metadata"]["namespace"] == "a"
        assert event["involvedObject"]["name"] == "bad"

        # Restart: a new controller on the same store, monitors in the other order,
        # with a fresh bad dependent (and P deleted while no controller runs).
        scope1.cancel()
        d2 = await make(test_store, "Secret", "bad-2", namespace="a", owners=[ref(scene.p)])
        if when == "while-down" and policy is not None:
            await _delete(test_store, scene.p, policy)
        gc2, _view2, _scope2 = await _run_gc(audit, other, tg, ignored)
        await _settle(gc2)
        if when == "after-restart" and policy is not None:
            await _delete(test_store, scene.p, policy)
            await _settle(gc2)
        assert audit.violations == [], [str(v) for v in audit.violations]
        reported2 = {e.dependent.uid for e in gc2.recorded_events}
        assert reported2 <= {_uid(d2), _uid(scene.c)}, "a valid dependent was reported"
        if policy is None:
            assert _uid(d2) in reported2
            assert _live(store, d2) is None
            assert _live(store, scene.p) is not None
            assert all(_refs(store, v) == [_uid(scene.p)] for v in scene.v)
            assert _refs(store, scene.c) == [_uid(scene.p)]
        elif policy in ("Background", "Foreground"):
            assert _live(store, scene.p) is None
            assert all(_live(store, v) is None for v in scene.v)
            assert _live(store, d2) is None
            assert _live(store, scene.c) is not None  # cluster-scoped: never collected
        else:  # Orphan
            assert _live(store, scene.p) is None
            assert all(_refs(store, v) == [] for v in scene.v)
            # d2 was either collected (invalid reference) or orphaned first: both
            # are what Kubernetes does depending on which worker runs first.
            assert _live(store, d2) is None or _refs(store, d2) == []
            assert _live(store, scene.c) is not None
        for obj in store.snapshot():
            fins = obj["metadata"].get("finalizers") or []
            assert "orphan" not in fins and "foregroundDeletion" not in fins, obj["metadata"]
        tg.cancel_scope.cancel()
