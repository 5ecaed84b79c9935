"""The collector's parts, each built and driven on its own (issue 23).

:class:`Operations` is built over an :class:`InMemoryStore` with a REST mapper
and counters, and nothing else; :class:`DependencyGraphBuilder` is run over a
store loaded with a real apiserver's objects, with no collector and no
workers, so what it feeds stays in its queues to be inspected.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
import pkgutil
from pathlib import Path
from typing import Any

import anyio
import pytest

import ownergc.controller
from ownergc import (
    FINALIZER_ORPHAN_DEPENDENTS,
    Delete,
    InvalidNamespaceEvent,
    ObjectReference,
    OwnerReference,
    Patch,
    Preconditions,
    PropagationPolicy,
    RemoveFinalizer,
)
from ownergc.controller import GarbageCollector, GCMetrics
from ownergc.controller._graph_builder import DependencyGraphBuilder
from ownergc.controller._mapper import RESTMapper
from ownergc.controller._operations import ObjectGone, Operations
from ownergc.errors import Conflict, RESTMappingError
from ownergc.protocols import APIResource
from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import delete, exists, fake_ref, live, make, ref
from tests.served_v130 import as_v130

pytestmark = pytest.mark.anyio

REAL = Path(__file__).resolve().parents[1] / "data" / "real-apiserver-1.24"


def ident(obj: dict[str, Any]) -> ObjectReference:
    meta = obj["metadata"]
    return ObjectReference(
        obj["apiVersion"], obj["kind"], meta["name"], meta["uid"], meta.get("namespace")
    )


async def _operations(store: InMemoryStore, **kw: Any) -> tuple[Operations, list[tuple[str, str]]]:
    mapper = RESTMapper()
    mapper.reset((await store.discover()).resources)
    actions: list[tuple[str, str]] = []
    ops = Operations(
        store, mapper, GCMetrics(), on_action=lambda w, d: actions.append((w, d["target"])), **kw
    )
    return ops, actions


# -- Operations ----------------------------------------------------------------


async def test_operations_delete_reports_removal_and_gone_objects() -> None:
    store = InMemoryStore()
    ops, actions = await _operations(store)
    cm = await make(store, "ConfigMap", "a")
    target = ident(cm)
    step = Delete(target, PropagationPolicy.BACKGROUND, Preconditions(uid=target.uid))

    assert await ops.delete(step, node=_node(cm)) is True  # left storage
    assert not exists(store, cm)
    assert ops.metrics.deletions == {"Background": 1}
    assert actions == [("delete", str(target))]
    with pytest.raises(ObjectGone):
        await ops.delete(step, node=_node(cm))  # nothing has the name any more
    assert ops.metrics.deletions == {"Background": 1}


async def test_operations_delete_keeps_preconditions_and_foreground_leaves_the_object() -> None:
    store = InMemoryStore()
    ops, _ = await _operations(store)
    cm = await make(store, "ConfigMap", "a")
    target = ident(cm)
    wrong_uid = Delete(target, PropagationPolicy.BACKGROUND, Preconditions(uid="another-uid"))
    with pytest.raises(Conflict):
        await ops.delete(wrong_uid, node=_node(cm))
    assert exists(store, cm)

    fg = Delete(target, PropagationPolicy.FOREGROUND, Preconditions(uid=target.uid))
    assert await ops.delete(fg, node=_node(cm)) is False  # still stored, being deleted
    cur = live(store, cm)
    assert cur is not None and cur["metadata"].get("deletionTimestamp")
    assert "foregroundDeletion" in cur["metadata"]["finalizers"]


async def test_operations_dry_run_reports_but_never_writes() -> None:
    store = InMemoryStore()
    ops, actions = await _operations(store, dry_run=True)
    cm = await make(store, "ConfigMap", "a")
    target = ident(cm)
    step = Delete(target, PropagationPolicy.BACKGROUND, Preconditions(uid=target.uid))
    assert await ops.delete(step, node=_node(cm)) is False
    await ops.patch(Patch(target, None, {"metadata": {"labels": {"x": "y"}}}))
    assert exists(store, cm)
    cur = live(store, cm)
    assert cur is not None and not cur["metadata"].get("labels")
    assert actions == [("delete", str(target)), ("patch", str(target))]
    assert ops.metrics.deletions == {} and ops.metrics.patches == 0


async def test_operations_patch_get_and_remove_finalizer() -> None:
    store = InMemoryStore()
    ops, actions = await _operations(store)
    owner = await make(store, "ConfigMap", "owner", finalizers=[FINALIZER_ORPHAN_DEPENDENTS])
    dep = await make(store, "Secret", "dep", owners=[ref(owner)])
    dep_id, owner_id = ident(dep), ident(owner)

    await ops.patch(Patch(dep_id, None, {"metadata": {"ownerReferences": None}}))
    cur = live(store, dep)
    assert cur is not None and not cur["metadata"].get("ownerReferences")
    assert ops.metrics.patches == 1

    secrets = ops.mapper.resource_for("v1", "Secret")
    got = await ops.get_or_none(secrets, dep_id)
    assert got is not None and got["metadata"]["uid"] == dep_id.uid
    assert await ops.get(secrets, "nope", "default") is None

    # No node: the GET-then-patch loop, as upstream's removeFinalizer.
    await ops.remove_finalizer(RemoveFinalizer(owner_id, FINALIZER_ORPHAN_DEPENDENTS))
    cur = live(store, owner)
    assert cur is not None and not cur["metadata"].get("finalizers")
    assert ops.metrics.finalizers_removed == 1
    assert ("remove_finalizer", str(owner_id)) in actions


async def test_operations_unknown_kind_is_a_mapping_error_not_a_write() -> None:
    store = InMemoryStore()
    ops, actions = await _operations(store)
    gadget = ObjectReference("example.com/v1", "Gadget", "g", "u-1", "default")
    with pytest.raises(RESTMappingError):
        await ops.patch(Patch(gadget, None, {"metadata": {"ownerReferences": None}}))
    assert actions == [] and ops.metrics.patches == 0


async def test_operations_create_event_writes_an_event_on_the_dependent() -> None:
    store = InMemoryStore()
    ops, _ = await _operations(store)
    dep = ObjectReference("v1", "Secret", "dep", "dep-uid", "kube-public")
    owner = OwnerReference("v1", "ConfigMap", "owner", "owner-uid")
    event = InvalidNamespaceEvent(dep, owner)
    events = ops.mapper.resource_for("v1", "Event")
    await ops.create_event(events, event)
    written = [o for o in store.snapshot() if o["kind"] == "Event"]
    assert len(written) == 1
    assert written[0]["involvedObject"]["uid"] == "dep-uid"
    assert written[0]["reason"] == "OwnerRefInvalidNamespace"
    assert written[0]["message"] == event.message
    assert written[0]["metadata"]["namespace"] == "kube-public"
    # A namespace that does not exist: not written, and not raised (only logged).
    elsewhere = ObjectReference("v1", "Secret", "dep", "dep-uid", "nowhere")
    await ops.create_event(events, InvalidNamespaceEvent(elsewhere, owner))
    assert len([o for o in store.snapshot() if o["kind"] == "Event"]) == 1


def _node(obj: dict[str, Any]) -> Any:
    """The graph node an observed ``obj`` becomes (the decision's view of it)."""
    from ownergc import GraphBuilder

    b = GraphBuilder()
    return b.process_upsert(obj, obj["apiVersion"], obj["kind"])


# -- DependencyGraphBuilder ----------------------------------------------------


def _real_store() -> InMemoryStore:
    """The objects a real 1.24 apiserver holds on a fresh control plane."""
    # (as a 1.30 server shows them: its FlowSchemas in v1, not the removed v1beta2)
    objects = [as_v130(o) for o in json.loads((REAL / "cluster.json").read_text())["items"]]
    store = InMemoryStore()
    store.load_objects(
        [
            o
            for o in objects
            if not (
                o["kind"] == "Namespace" and store.exists("v1", "Namespace", o["metadata"]["name"])
            )
        ]
    )
    return store


async def test_graph_builder_alone_builds_the_graph_and_feeds_its_queues() -> None:
    store = _real_store()
    recorded: list[tuple[APIResource, InvalidNamespaceEvent]] = []

    async def record(resource: APIResource, event: InvalidNamespaceEvent) -> None:
        recorded.append((resource, event))

    gb = DependencyGraphBuilder(
        store, RESTMapper(), GCMetrics(), discovery_period=0.2, record_event=record
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(gb.run)
        with anyio.fail_after(10):
            await gb.synced.wait()
        assert gb.is_synced()
        # Every real object of a deletable kind is a node (ComponentStatuses are
        # listable but not deletable, and carry no uid).
        expected = {
            o["metadata"]["uid"] for o in store.snapshot() if o["kind"] != "ComponentStatus"
        }
        assert expected and expected <= set(gb.uid_to_node)
        assert "ComponentStatus" not in {r.kind for r in gb.monitors}
        assert gb.mapper.resource_for("v1", "Service").resource == "services"

        service = store.get_object("v1", "Service", "kubernetes", "default")
        assert service is not None
        await make(store, "Namespace", "ns1", namespace=None)
        dangling = await make(
            store,
            "ConfigMap",
            "dangling",
            owners=[ref(service), fake_ref("v1", "ConfigMap", "gone", "gone-uid")],
        )
        wrong_ns = await make(store, "Secret", "wrong-ns", namespace="ns1", owners=[ref(service)])
        with anyio.fail_after(10):
            while len(gb.attempt_to_delete) < 2 or not recorded:
                await anyio.sleep(0.01)
        # Nothing drains the queues but this test.
        queued = {(n.uid, n.virtual) for n in gb.attempt_to_delete._queue}
        assert ("gone-uid", True) in queued  # the virtual owner, to verify
        assert (wrong_ns["metadata"]["uid"], False) in queued
        assert gb.uid_to_node[dangling["metadata"]["uid"]].owners
        assert [e.dependent.uid for e in gb.recorded_events] == [wrong_ns["metadata"]["uid"]]
        assert gb.metrics.invalid_namespace_events == 1
        assert recorded[0][0].resource == "events" and recorded[0][1].owner.name == "kubernetes"

        # An orphaning delete is the attemptToOrphan queue's.
        await delete(store, dangling, "Orphan")
        with anyio.fail_after(10):
            while not len(gb.attempt_to_orphan):
                await anyio.sleep(0.01)
        assert gb.attempt_to_orphan._queue[0].uid == dangling["metadata"]["uid"]
        tg.cancel_scope.cancel()


async def test_graph_builder_virtual_delete_is_ordered_with_the_monitors() -> None:
    store = InMemoryStore()
    gb = DependencyGraphBuilder(store, RESTMapper(), GCMetrics(), discovery_period=0.2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(gb.run)
        with anyio.fail_after(10):
            await gb.synced.wait()
        dep = await make(
            store, "Secret", "dep", owners=[fake_ref("v1", "ConfigMap", "gone", "gone-uid")]
        )
        with anyio.fail_after(10):
            while "gone-uid" not in gb.uid_to_node:
                await anyio.sleep(0.01)
        virtual = gb.uid_to_node["gone-uid"]
        assert virtual.virtual
        gb.enqueue_virtual_delete(virtual.identity)
        with anyio.fail_after(10):
            while gb.pending_changes:
                await anyio.sleep(0.01)
        assert "gone-uid" not in gb.uid_to_node
        assert dep["metadata"]["uid"] in gb.uid_to_node
        tg.cancel_scope.cancel()


# -- the composition -----------------------------------------------------------


def test_collector_hands_each_part_only_what_it_uses() -> None:
    store = InMemoryStore()
    gc = GarbageCollector(store, dry_run=True, record_events=False, absent_owner_cache_size=7)
    gb, ops = gc.graph_builder, gc.operations
    assert gb.mapper is ops.mapper is gc.rest_mapper
    assert gb.metrics is ops.metrics is gc.metrics
    assert gb.store is ops.store is store
    assert gc.attempt_to_delete is gb.attempt_to_delete
    assert gc.attempt_to_orphan is gb.attempt_to_orphan
    assert gc.queues == (gb.graph_changes, gb.attempt_to_delete, gb.attempt_to_orphan)
    assert gc.builder is gb.core and gc.builder.absent_owner_cache.max_size == 7
    assert gc.recorded_events is gb.recorded_events
    assert ops.dry_run and gb._record_event is None
    # Operations knows nothing of the graph, its queues or its monitors.
    assert not {"graph_builder", "monitors", "core", "attempt_to_delete"} & set(vars(ops))


def _classes_of(package: Any) -> list[type]:
    out: list[type] = []
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        out.extend(
            obj
            for _, obj in inspect.getmembers(module, inspect.isclass)
            if obj.__module__ == module.__name__
        )
    return out


def _allowed_base(base: type) -> bool:
    """A Protocol, an ABC, an exception, or a dataclass of plain data (no methods)."""
    if issubclass(base, BaseException) or getattr(base, "_is_protocol", False):
        return True
    if inspect.isabstract(base) or type(base).__name__ == "ABCMeta":
        return True
    return dataclasses.is_dataclass(base) and not any(
        inspect.isfunction(v) and not k.startswith("__") for k, v in vars(base).items()
    )


def test_no_controller_class_inherits_a_project_class() -> None:
    """Issue 23 item 5: compose, don't stack; a part's state is its own."""
    offenders = [
        f"{cls.__module__}.{cls.__qualname__}({base.__module__}.{base.__qualname__})"
        for cls in _classes_of(ownergc.controller)
        for base in cls.__bases__
        if base.__module__.split(".")[0] in ("ownergc", "ownergc_backends")
        and not _allowed_base(base)
    ]
    assert offenders == []


def test_the_check_catches_a_stacked_class() -> None:
    """The check above can fail: a class stacked on a concrete project class is caught."""
    assert not _allowed_base(Operations)
    assert not _allowed_base(DependencyGraphBuilder)
    assert _allowed_base(ObjectGone)
    tree = ast.parse("class X(Operations): pass")
    namespace: dict[str, Any] = {"Operations": Operations}
    exec(compile(tree, "<stacked>", "exec"), namespace)
    stacked = namespace["X"]
    assert [b for b in stacked.__bases__ if not _allowed_base(b)] == [Operations]
