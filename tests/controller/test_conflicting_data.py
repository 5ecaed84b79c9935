"""gc-unit-cases §10 (upstream TestConflictingData), step by step.

Each step is one action of the upstream test: an informer event applied to
the graph, one attemptToDelete item processed, or one graph change (virtual
delete) processed. After each step the attemptToDelete queue, the API calls
made and the absent-owner cache are compared with the table. The collector
runs with ``use_cache=False``: upstream's request pattern (live GET of the
item, then of each owner). Rate-limited re-adds are made immediate, as the
upstream test's fake queue does.

One documented difference: when the collector's DELETE removes an object,
ownergc also queues a virtual delete event for it at once (the informer's
delete arrives later and finds no node). The tables do not list that
graph change; the steps here drain it where the table's next action is the
informer delete, which leaves the graph exactly as upstream's.
"""

from __future__ import annotations

from typing import Any

import pytest

from ownergc import ObjectReference
from ownergc.controller import GarbageCollector
from ownergc.controller._monitors import MonitorSynced, ObjectChanged, ObjectDeleted, VirtualDeleted
from ownergc_backends.memory import InMemoryStore

pytestmark = pytest.mark.anyio

# (apiVersion, kind, namespace, name, uid)
POD1NS1 = ("v1", "Pod", "ns1", "podname1", "poduid1")
POD2NS1 = ("v1", "Pod", "ns1", "podname2", "poduid2")
POD2NS2 = ("v1", "Pod", "ns2", "podname2", "poduid2")
NODE1 = ("v1", "Node", None, "nodename", "nodeuid1")
NODE1_NS1 = ("v1", "Node", "ns1", "nodename", "nodeuid1")
POD1_NONS = ("v1", "Pod", None, "podname1", "poduid1")

EVT = (
    "ownerRef [v1/Pod, namespace: ns1, name: podname2, uid: poduid2] does not exist in "
    'namespace "ns1"'
)
EVTC = 'ownerRef [v1/Pod, namespace: , name: podname1, uid: poduid1] does not exist in namespace ""'


def obj(ident: tuple[Any, ...], owner: tuple[Any, ...] | None = None) -> dict[str, Any]:
    av, kind, ns, name, uid = ident
    meta: dict[str, Any] = {"name": name, "uid": uid, "resourceVersion": "1"}
    if ns:
        meta["namespace"] = ns
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": owner[0], "kind": owner[1], "name": owner[3], "uid": owner[4]}
        ]
    return {"apiVersion": av, "kind": kind, "metadata": meta}


def label(ident: tuple[Any, ...], virtual: bool = False) -> str:
    av, kind, ns, name, uid = ident
    return f"{kind}.{av}/{ns or ''}/{name}/{uid}" + (" v" if virtual else "")


_CHANGE_NAMES = {
    ObjectChanged: "upsert",
    ObjectDeleted: "delete",
    VirtualDeleted: "virtual_delete",
    MonitorSynced: "synced",
}


class Harness:
    def __init__(self, server_objects: list[dict[str, Any]]) -> None:
        self.store = InMemoryStore()
        self.store.load_objects(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                for n in ("ns1", "ns2")
            ]
            + server_objects
        )
        self.gc = GarbageCollector(self.store, use_cache=False, record_events=False)
        q = self.gc.attempt_to_delete
        q.add_rate_limited = q.add  # type: ignore[method-assign]

    async def start(self) -> None:
        found = await self.store.discover()
        self.gc.rest_mapper.reset(found.resources)

    def add(self, o: dict[str, Any]) -> None:
        self.gc.builder.process_upsert(o, o["apiVersion"], o["kind"], old_obj=None)
        self.gc.graph_builder.dispatch()

    def delete(self, o: dict[str, Any]) -> None:
        self.gc.builder.process_delete(o, o["apiVersion"], o["kind"])
        self.gc.graph_builder.dispatch()

    async def attempt_to_delete(self) -> list[tuple[str, str, str | None, str | None]]:
        self.store.clear_requests()
        q = self.gc.attempt_to_delete
        node = await q.get()
        try:
            await self.gc._process_attempt_to_delete(node)
        finally:
            q.done(node)
        return [
            (r.verb, r.resource.resource if r.resource else "", r.namespace, r.name)
            for r in self.store.requests
        ]

    def graph_changes(self) -> list[tuple[str, Any]]:
        """(upstream's event type, payload) of each queued graph change."""
        return [(_CHANGE_NAMES[type(c)], c[0]) for c in self.gc.graph_builder.graph_changes._items]

    def process_graph_change(self) -> None:
        gb = self.gc.graph_builder
        change = gb.graph_changes._items.popleft()
        gb.pending_changes -= 1
        gb.process_graph_change(change)

    def drain_own_virtual_deletes(self) -> None:
        while self.gc.graph_builder.graph_changes._items:
            self.process_graph_change()

    def queue(self) -> list[str]:
        out = []
        for node in self.gc.attempt_to_delete._queue:
            i = node.identity
            out.append(label((i.api_version, i.kind, i.namespace, i.name, i.uid), node.virtual))
        return out

    def cache(self) -> set[str]:
        return {
            label((i.api_version, i.kind, i.namespace, i.name, i.uid))
            for i in self.gc.builder.absent_owner_cache
        }

    def node(self, uid: str) -> Any:
        return self.gc.uid_to_node[uid]

    def events(self) -> list[str]:
        return [e.message for e in self.gc.recorded_events]


def ident_of(node: Any) -> tuple[Any, ...]:
    i: ObjectReference = node.identity
    return (i.api_version, i.kind, i.namespace, i.name, i.uid)


async def test_10_1_good_child_in_ns1_with_cluster_scoped_owner() -> None:
    h = Harness([obj(POD1NS1, NODE1), obj(NODE1)])
    await h.start()
    h.add(obj(POD1NS1, NODE1))
    assert h.queue() == [label(NODE1_NS1, True)]
    assert await h.attempt_to_delete() == [("get", "nodes", None, "nodename")]
    assert h.queue() == [label(NODE1_NS1, True)]  # still virtual: requeued to poll
    h.add(obj(NODE1))
    assert ident_of(h.node("nodeuid1")) == NODE1 and not h.node("nodeuid1").virtual
    assert await h.attempt_to_delete() == []  # the stale virtual pointer is dropped
    assert h.queue() == []


async def test_10_2_bad_child_in_ns1_owner_in_ns2_child_first() -> None:
    h = Harness([obj(POD1NS1, POD2NS1), obj(POD2NS2)])
    await h.start()
    h.add(obj(POD1NS1, POD2NS1))
    assert h.queue() == [label(POD2NS1, True)]
    h.add(obj(POD2NS2))
    assert h.queue() == [label(POD2NS1, True), label(POD1NS1)]
    assert h.events() == [EVT]
    assert await h.attempt_to_delete() == []
    assert h.queue() == [label(POD1NS1)]
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "podname1"),
        ("get", "pods", "ns1", "podname2"),
        ("delete", "pods", "ns1", "podname1"),
    ]
    assert h.queue() == []
    assert h.cache() == {label(POD2NS1)}
    h.drain_own_virtual_deletes()
    h.delete(obj(POD1NS1, POD2NS1))
    assert "poduid1" not in h.gc.uid_to_node
    assert ident_of(h.node("poduid2")) == POD2NS2
    assert h.store.exists("v1", "Pod", "podname2", "ns2")


async def test_10_3_bad_child_in_ns1_owner_in_ns2_owner_first() -> None:
    h = Harness([obj(POD1NS1, POD2NS1), obj(POD2NS2)])
    await h.start()
    h.add(obj(POD2NS2))
    assert h.queue() == []
    h.add(obj(POD1NS1, POD2NS1))
    assert h.queue() == [label(POD1NS1)]
    assert h.events() == [EVT]
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "podname1"),
        ("get", "pods", "ns1", "podname2"),
        ("delete", "pods", "ns1", "podname1"),
    ]
    assert h.cache() == {label(POD2NS1)}
    h.drain_own_virtual_deletes()
    h.delete(obj(POD1NS1, POD2NS1))
    assert "poduid1" not in h.gc.uid_to_node
    assert ident_of(h.node("poduid2")) == POD2NS2
    assert h.store.exists("v1", "Pod", "podname2", "ns2")


async def test_10_4_bad_cluster_scoped_child_owner_in_ns1_child_first() -> None:
    h = Harness([obj(NODE1, POD1_NONS), obj(POD1NS1)])
    await h.start()
    h.add(obj(NODE1, POD1_NONS))
    assert h.queue() == [label(POD1_NONS, True)]
    assert await h.attempt_to_delete() == []  # namespaced kind without namespace
    assert h.queue() == []  # not requeued
    h.add(obj(POD1NS1))
    assert ident_of(h.node("poduid1")) == POD1NS1
    assert h.queue() == [label(NODE1)]
    assert h.events() == [EVTC]
    assert await h.attempt_to_delete() == [("get", "nodes", None, "nodename")]
    assert h.queue() == []
    assert h.store.exists("v1", "Node", "nodename")


async def test_10_5_bad_cluster_scoped_child_owner_in_ns1_owner_first() -> None:
    h = Harness([obj(NODE1, POD1_NONS), obj(POD1NS1)])
    await h.start()
    h.add(obj(POD1NS1))
    h.add(obj(NODE1, POD1_NONS))
    assert h.queue() == [label(NODE1)]
    assert h.events() == [EVTC]
    assert await h.attempt_to_delete() == [("get", "nodes", None, "nodename")]
    assert h.queue() == []
    assert h.store.exists("v1", "Node", "nodename")


async def test_10_14_cluster_scoped_bad_child_namespaced_good_child_missing_parent() -> None:
    h = Harness([obj(NODE1, POD1_NONS), obj(POD2NS1, POD1NS1)])
    await h.start()
    h.add(obj(NODE1, POD1_NONS))
    assert h.queue() == [label(POD1_NONS, True)]
    h.add(obj(POD2NS1, POD1NS1))
    assert h.queue() == [label(POD1_NONS, True), label(POD2NS1)]
    assert await h.attempt_to_delete() == []
    assert h.queue() == [label(POD2NS1)]
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "podname2"),
        ("get", "pods", "ns1", "podname1"),
        ("delete", "pods", "ns1", "podname2"),
    ]
    assert h.cache() == {label(POD1NS1)}
    assert h.queue() == []
    h.drain_own_virtual_deletes()
    h.delete(obj(POD2NS1, POD1NS1))
    assert ident_of(h.node("poduid1")) == POD1_NONS and h.node("poduid1").virtual
    assert h.queue() == []  # steady state, no retries
    assert h.store.exists("v1", "Node", "nodename")


async def test_10_15_cluster_scoped_bad_child_namespaced_good_child_late_parent() -> None:
    h = Harness([obj(NODE1, POD1_NONS), obj(POD2NS1, POD1NS1), obj(POD1NS1)])
    await h.start()
    h.add(obj(NODE1, POD1_NONS))
    h.add(obj(POD2NS1, POD1NS1))
    assert await h.attempt_to_delete() == []
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "podname2"),
        ("get", "pods", "ns1", "podname1"),
    ]
    h.add(obj(POD1NS1))
    assert ident_of(h.node("poduid1")) == POD1NS1 and not h.node("poduid1").virtual
    assert h.events() == [EVTC]
    assert h.queue() == [label(NODE1)]
    assert await h.attempt_to_delete() == [("get", "nodes", None, "nodename")]
    assert h.queue() == []
    for name, ns in (("podname2", "ns1"), ("podname1", "ns1")):
        assert h.store.exists("v1", "Pod", name, ns)
    assert h.store.exists("v1", "Node", "nodename")


async def test_10_16_namespaced_good_child_cluster_scoped_bad_child_missing_parent() -> None:
    h = Harness([obj(NODE1, POD1_NONS), obj(POD2NS1, POD1NS1)])
    await h.start()
    h.add(obj(POD2NS1, POD1NS1))
    assert h.queue() == [label(POD1NS1, True)]
    h.add(obj(NODE1, POD1_NONS))
    assert h.queue() == [label(POD1NS1, True), label(NODE1)]
    assert await h.attempt_to_delete() == [("get", "pods", "ns1", "podname1")]
    assert h.queue() == [label(NODE1)]
    assert [k for k, _ in h.graph_changes()] == ["virtual_delete"]
    assert await h.attempt_to_delete() == [("get", "nodes", None, "nodename")]
    assert h.queue() == []
    h.process_graph_change()
    assert ident_of(h.node("poduid1")) == POD1_NONS and h.node("poduid1").virtual
    assert h.queue() == [label(POD2NS1), label(POD1_NONS, True)]
    assert h.cache() == {label(POD1NS1)}
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "podname2"),
        ("delete", "pods", "ns1", "podname2"),
    ]
    assert h.queue() == [label(POD1_NONS, True)]
    h.drain_own_virtual_deletes()
    h.delete(obj(POD2NS1, POD1NS1))
    assert h.queue() == [label(POD1_NONS, True)]
    assert await h.attempt_to_delete() == []
    assert h.queue() == []  # steady state
    assert h.store.exists("v1", "Node", "nodename")


# -- API-version cases (§10.6-10.9, 10.13) ---------------------------------

ROLE1_V1BETA1 = ("rbac.authorization.k8s.io/v1beta1", "Role", "ns1", "role1", "roleuid1")
ROLE1_V1 = ("rbac.authorization.k8s.io/v1", "Role", "ns1", "role1", "roleuid1")
DEPL_APPS = ("apps/v1", "Deployment", "ns1", "deployment1", "deploymentuid1")
DEPL_EXT = ("extensions/v1beta1", "Deployment", "ns1", "deployment1", "deploymentuid1")
BAD_SECRET_REF = ("v1", "Secret", "ns1", "secretname", "deploymentuid1")
BAD_CHILD = ("v1", "Pod", "ns1", "badpod", "badpoduid")
GOOD_CHILD = ("v1", "Pod", "ns1", "goodpod", "goodpoduid")


async def test_10_6_good_child_owner_through_non_preferred_accessible_version() -> None:
    h = Harness([obj(POD1NS1, ROLE1_V1BETA1)])
    h.store.register_resource(
        group="rbac.authorization.k8s.io",
        versions=["v1", "v1beta1"],
        preferred_version="v1",
        resource="roles",
        kind="Role",
        strategic_merge_patch=True,
    )
    h.store.load_objects([obj(ROLE1_V1)])
    await h.start()
    h.add(obj(POD1NS1, ROLE1_V1BETA1))
    assert h.queue() == [label(ROLE1_V1BETA1, True)]
    assert await h.attempt_to_delete() == [("get", "roles", "ns1", "role1")]
    assert h.queue() == [label(ROLE1_V1BETA1, True)]  # found, still virtual: requeued
    h.add(obj(ROLE1_V1))
    assert ident_of(h.node("roleuid1")) == ROLE1_V1
    assert h.queue() == [label(ROLE1_V1BETA1, True), label(POD1NS1)]
    assert await h.attempt_to_delete() == []
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "podname1"),
        ("get", "roles", "ns1", "role1"),
    ]
    assert h.queue() == []  # solid owner: kept
    roles = h.store.resource_for("rbac.authorization.k8s.io/v1", "Role")
    await h.store.delete(roles, "role1", namespace="ns1")
    h.delete(obj(ROLE1_V1))
    assert h.cache() == {label(ROLE1_V1)}
    assert h.queue() == [label(POD1NS1)]
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "podname1"),
        ("get", "roles", "ns1", "role1"),
        ("delete", "pods", "ns1", "podname1"),
    ]
    assert h.cache() == {label(ROLE1_V1), label(ROLE1_V1BETA1)}
    h.drain_own_virtual_deletes()
    h.delete(obj(POD1NS1, ROLE1_V1BETA1))
    assert "poduid1" not in h.gc.uid_to_node and "roleuid1" not in h.gc.uid_to_node


async def test_10_7_child_owner_with_inaccessible_version_child_first() -> None:
    h = Harness([obj(POD1NS1, DEPL_EXT), obj(DEPL_APPS)])
    await h.start()
    h.add(obj(POD1NS1, DEPL_EXT))
    assert h.queue() == [label(DEPL_EXT, True)]
    assert await h.attempt_to_delete() == []  # REST mapping fails: requeued
    assert h.queue() == [label(DEPL_EXT, True)]
    h.add(obj(DEPL_APPS))
    assert h.queue() == [label(DEPL_EXT, True), label(POD1NS1)]
    assert await h.attempt_to_delete() == []
    assert await h.attempt_to_delete() == [("get", "pods", "ns1", "podname1")]
    assert h.queue() == [label(POD1NS1)]  # mapping error: requeued
    deployments = h.store.resource_for("apps/v1", "Deployment")
    await h.store.delete(deployments, "deployment1", namespace="ns1")
    h.delete(obj(DEPL_APPS))
    assert h.cache() == {label(DEPL_APPS)}
    assert h.queue() == [label(POD1NS1)]
    assert await h.attempt_to_delete() == [("get", "pods", "ns1", "podname1")]
    assert h.queue() == [label(POD1NS1)]  # requeued forever: never treated as absent
    assert h.store.exists("v1", "Pod", "podname1", "ns1")


async def test_10_8_child_owner_with_inaccessible_version_owner_first() -> None:
    h = Harness([obj(POD1NS1, DEPL_EXT), obj(DEPL_APPS)])
    await h.start()
    h.add(obj(DEPL_APPS))
    assert h.queue() == []
    h.add(obj(POD1NS1, DEPL_EXT))
    assert h.queue() == [label(POD1NS1)]
    assert await h.attempt_to_delete() == [("get", "pods", "ns1", "podname1")]
    assert h.queue() == [label(POD1NS1)]
    deployments = h.store.resource_for("apps/v1", "Deployment")
    await h.store.delete(deployments, "deployment1", namespace="ns1")
    h.delete(obj(DEPL_APPS))
    assert h.cache() == {label(DEPL_APPS)}
    assert await h.attempt_to_delete() == [("get", "pods", "ns1", "podname1")]
    assert h.queue() == [label(POD1NS1)]
    assert h.store.exists("v1", "Pod", "podname1", "ns1")


async def test_10_9_child_nonexistent_owner_inaccessible_version_first() -> None:
    h = Harness([obj(POD1NS1, DEPL_EXT), obj(POD2NS1, DEPL_APPS)])
    await h.start()
    h.add(obj(POD1NS1, DEPL_EXT))
    h.add(obj(POD2NS1, DEPL_APPS))
    assert h.queue() == [label(DEPL_EXT, True), label(POD2NS1)]
    assert await h.attempt_to_delete() == []
    assert h.queue() == [label(POD2NS1), label(DEPL_EXT, True)]  # requeued to the end
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "podname2"),
        ("get", "deployments", "ns1", "deployment1"),
        ("delete", "pods", "ns1", "podname2"),
    ]
    assert h.cache() == {label(DEPL_APPS)}
    assert h.queue() == [label(DEPL_EXT, True)]
    h.drain_own_virtual_deletes()
    h.delete(obj(POD2NS1, DEPL_APPS))
    assert ident_of(h.node("deploymentuid1")) == DEPL_EXT and h.node("deploymentuid1").virtual
    assert await h.attempt_to_delete() == []
    assert h.queue() == [label(DEPL_EXT, True)]
    assert h.store.exists("v1", "Pod", "podname1", "ns1")


async def test_10_13_bad_child_existing_owner_wrong_version_good_child_first() -> None:
    h = Harness([obj(GOOD_CHILD, DEPL_APPS), obj(BAD_CHILD, BAD_SECRET_REF), obj(DEPL_APPS)])
    await h.start()
    h.add(obj(GOOD_CHILD, DEPL_APPS))
    assert h.queue() == [label(DEPL_APPS, True)]
    h.add(obj(BAD_CHILD, BAD_SECRET_REF))
    assert h.queue() == [label(DEPL_APPS, True), label(BAD_CHILD)]
    assert await h.attempt_to_delete() == [("get", "deployments", "ns1", "deployment1")]
    assert h.queue() == [label(BAD_CHILD), label(DEPL_APPS, True)]  # still virtual: polls
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "badpod"),
        ("get", "secrets", "ns1", "secretname"),
        ("delete", "pods", "ns1", "badpod"),
    ]
    assert h.cache() == {label(BAD_SECRET_REF)}
    assert h.queue() == [label(DEPL_APPS, True)]
    h.drain_own_virtual_deletes()
    h.add(obj(DEPL_APPS))
    assert not h.node("deploymentuid1").virtual
    assert h.queue() == [label(DEPL_APPS)]  # the same pointer, now observed
    h.delete(obj(BAD_CHILD, BAD_SECRET_REF))
    assert await h.attempt_to_delete() == [("get", "deployments", "ns1", "deployment1")]
    assert h.queue() == []
    assert h.store.exists("v1", "Pod", "goodpod", "ns1")
    assert h.store.exists("apps/v1", "Deployment", "deployment1", "ns1")


async def test_10_11_bad_child_wrong_version_bad_parent_delete_then_good_parent() -> None:
    h = Harness([obj(GOOD_CHILD, DEPL_APPS), obj(BAD_CHILD, BAD_SECRET_REF), obj(DEPL_APPS)])
    await h.start()
    h.add(obj(BAD_CHILD, BAD_SECRET_REF))
    assert h.queue() == [label(BAD_SECRET_REF, True)]
    h.add(obj(GOOD_CHILD, DEPL_APPS))
    assert h.queue() == [label(BAD_SECRET_REF, True), label(GOOD_CHILD)]
    assert await h.attempt_to_delete() == [("get", "secrets", "ns1", "secretname")]
    assert h.queue() == [label(GOOD_CHILD)]
    assert [k for k, _ in h.graph_changes()] == ["virtual_delete"]
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "goodpod"),
        ("get", "deployments", "ns1", "deployment1"),
    ]
    assert h.queue() == []
    h.process_graph_change()
    node = h.node("deploymentuid1")
    assert ident_of(node) == DEPL_APPS and node.virtual  # re-identified, still virtual
    assert h.queue() == [label(BAD_CHILD), label(DEPL_APPS, True)]
    assert h.cache() == {label(BAD_SECRET_REF)}
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "badpod"),
        ("delete", "pods", "ns1", "badpod"),  # absent-owner cache hit: no owner GET
    ]
    assert h.queue() == [label(DEPL_APPS, True)]
    assert await h.attempt_to_delete() == [("get", "deployments", "ns1", "deployment1")]
    assert h.queue() == [label(DEPL_APPS, True)]
    h.drain_own_virtual_deletes()
    h.add(obj(DEPL_APPS))
    assert h.queue() == [label(DEPL_APPS)]
    h.delete(obj(BAD_CHILD, BAD_SECRET_REF))
    assert await h.attempt_to_delete() == [("get", "deployments", "ns1", "deployment1")]
    assert h.queue() == []
    assert h.store.exists("v1", "Pod", "goodpod", "ns1")


async def test_10_10_child_nonexistent_owner_inaccessible_version_accessible_first() -> None:
    h = Harness([obj(POD2NS1, DEPL_APPS), obj(POD1NS1, DEPL_EXT)])
    await h.start()
    h.add(obj(POD2NS1, DEPL_APPS))
    h.add(obj(POD1NS1, DEPL_EXT))
    assert h.queue() == [label(DEPL_APPS, True), label(POD1NS1)]
    assert await h.attempt_to_delete() == [("get", "deployments", "ns1", "deployment1")]
    assert h.queue() == [label(POD1NS1)]
    assert [k for k, _ in h.graph_changes()] == ["virtual_delete"]
    assert await h.attempt_to_delete() == [("get", "pods", "ns1", "podname1")]
    assert h.queue() == [label(POD1NS1)]  # mapping error: requeued
    h.process_graph_change()
    node = h.node("deploymentuid1")
    assert ident_of(node) == DEPL_EXT and node.virtual
    assert h.queue() == [label(POD1NS1), label(POD2NS1), label(DEPL_EXT, True)]
    assert h.cache() == {label(DEPL_APPS)}
    assert await h.attempt_to_delete() == [("get", "pods", "ns1", "podname1")]
    assert h.queue() == [label(POD2NS1), label(DEPL_EXT, True), label(POD1NS1)]
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "podname2"),
        ("delete", "pods", "ns1", "podname2"),
    ]
    assert h.queue() == [label(DEPL_EXT, True), label(POD1NS1)]
    assert await h.attempt_to_delete() == []
    assert h.queue() == [label(POD1NS1), label(DEPL_EXT, True)]
    h.drain_own_virtual_deletes()
    h.delete(obj(POD2NS1, DEPL_APPS))
    assert h.queue() == [label(POD1NS1), label(DEPL_EXT, True)]
    assert h.store.exists("v1", "Pod", "podname1", "ns1")


async def test_10_12_bad_child_wrong_version_good_parent_before_bad_parent_delete() -> None:
    h = Harness([obj(GOOD_CHILD, DEPL_APPS), obj(BAD_CHILD, BAD_SECRET_REF), obj(DEPL_APPS)])
    await h.start()
    h.add(obj(BAD_CHILD, BAD_SECRET_REF))
    h.add(obj(GOOD_CHILD, DEPL_APPS))
    assert await h.attempt_to_delete() == [("get", "secrets", "ns1", "secretname")]
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "goodpod"),
        ("get", "deployments", "ns1", "deployment1"),
    ]
    assert [k for k, _ in h.graph_changes()] == ["virtual_delete"]
    # The informer's add of the real owner is processed before the pending virtual delete.
    pending = h.gc.graph_builder.graph_changes._items.popleft()
    h.add(obj(DEPL_APPS))
    h.gc.graph_builder.graph_changes._items.appendleft(pending)
    assert ident_of(h.node("deploymentuid1")) == DEPL_APPS
    assert h.queue() == [label(BAD_CHILD)]
    h.process_graph_change()
    assert ident_of(h.node("deploymentuid1")) == DEPL_APPS  # observed node kept
    assert h.cache() == {label(BAD_SECRET_REF)}
    assert h.queue() == [label(BAD_CHILD)]
    assert await h.attempt_to_delete() == [
        ("get", "pods", "ns1", "badpod"),
        ("delete", "pods", "ns1", "badpod"),
    ]
    h.drain_own_virtual_deletes()
    h.delete(obj(BAD_CHILD, BAD_SECRET_REF))
    assert h.queue() == []
    assert h.cache() == {label(BAD_SECRET_REF)}
    assert "badpoduid" not in h.gc.uid_to_node
    assert h.store.exists("v1", "Pod", "goodpod", "ns1")
