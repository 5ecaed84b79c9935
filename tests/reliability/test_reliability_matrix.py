"""The fault matrix: every fault kind × every propagation policy × both backends.

One fixed tree (a root with blocking mids and leaves, a finalizer-held leaf,
a dependent shared with a keeper, a bystander with no owner refs, a stale
reference) is built and synced; the root is deleted with the policy while
the collector (through a FaultyStore) suffers the fault; then the faults
are healed and the store must converge to exactly the state the oracle
computes from the pre-deletion snapshot plus that DELETE. The oracle being
fed the *initial* state, a wrongly deleted object shows up as "missing".

Backends: ``memory`` (the collector on the InMemoryStore, every DELETE also
audited) and ``http`` (the collector on a KubeStore talking to the REST
facade over loopback; FaultyStore wraps the KubeStore).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from ownergc.controller import GarbageCollector
from ownergc.testing.faults import FaultRates, FaultyStore
from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import make, ref
from tests.reliability.reliability_harness import (
    Audit,
    AuditedStore,
    GCRunner,
    _apiserver_delete,
    expected_state,
    gc_objects,
    report_line,
    state_diff,
)

pytestmark = pytest.mark.anyio

HOLD = "test.ownergc.io/hold"
MONITORED = {("", "configmaps"), ("", "secrets")}

FAULTS: dict[str, FaultRates] = {
    "none": FaultRates(),
    "conflict": FaultRates.only("conflict", 0.5),
    "too_many_requests": FaultRates.only("too_many_requests", 0.3),
    "server_error": FaultRates.only("server_error", 0.3),
    "timeout": FaultRates.only("timeout", 0.3),
    "drop_watch": FaultRates.only("drop_watch", 0.2),
    "expire_watch": FaultRates.only("expire_watch", 0.1),
    "duplicate_events": FaultRates.only("duplicate_events", 0.3),
    "reorder_events": FaultRates.only("reorder_events", 0.5),
    "latency": FaultRates.only("latency", 0.8),
    "mixed": FaultRates.uniform(0.08, latency=0.3),
}


async def build_tree(store: Any) -> dict[str, Any]:
    root = await make(store, "ConfigMap", "root")
    keeper = await make(store, "ConfigMap", "keeper")
    mids = [
        await make(store, "Secret", f"mid-{i}", owners=[ref(root, block=True)]) for i in range(3)
    ]
    for i, mid in enumerate(mids):
        for j in range(2):
            await make(store, "ConfigMap", f"leaf-{i}-{j}", owners=[ref(mid, block=j == 0)])
    await make(store, "Secret", "held", owners=[ref(mids[0], block=True)], finalizers=[HOLD])
    await make(store, "Secret", "shared", owners=[ref(root), ref(keeper)])
    await make(store, "Secret", "bystander")
    stale = dict(ref(keeper), uid="uid-that-never-existed", name="gone")
    await make(store, "Secret", "stale-and-keeper", owners=[stale, ref(keeper)])
    return root


@asynccontextmanager
async def gc_store(backend: str, store: InMemoryStore, audit: Audit) -> AsyncIterator[Any]:
    if backend == "memory":
        yield AuditedStore(audit, "gc")
        return
    from tests.kube.kube_helpers import kube_store_for, served

    async with served(store) as server, kube_store_for(server) as kube:
        yield kube


@pytest.mark.parametrize("backend", ["memory", "http"])
@pytest.mark.parametrize("policy", ["Background", "Foreground", "Orphan"])
@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_fault_matrix(fault: str, policy: str, backend: str) -> None:
    seed = sum(map(ord, f"{fault}/{policy}/{backend}"))
    store = InMemoryStore()
    audit = Audit(store)
    root = await build_tree(store)
    ignored = {
        (r.group, r.resource)
        for r in (await store.discover()).resources
        if (r.group, r.resource) not in MONITORED
    }
    async with gc_store(backend, store, audit) as inner, anyio.create_task_group() as tg:
        faulty = FaultyStore(inner, seed=seed, rates=FAULTS[fault])
        runner = GCRunner(
            lambda: GarbageCollector(
                faulty, workers=4, discovery_period=0.1, ignored_resources=ignored
            )
        )
        gc = await runner.start(tg)
        with anyio.fail_after(20):
            await gc.wait_synced()
            # Every object observed before the cascade starts (item 53's caveat).
            while len([n for n in gc.uid_to_node.values() if not n.virtual]) < len(
                gc_objects(store.snapshot())
            ):
                await anyio.sleep(0.01)
        model = gc_objects(store.snapshot())
        _apiserver_delete(model, next(o for o in model.values() if o.name == "root"), policy)
        expected = expected_state(model)
        resource = store.resource_for("v1", "ConfigMap")
        await AuditedStore(audit, "test").delete(
            resource, "root", namespace="default", propagation_policy=policy
        )
        # Let the cascade run under faults, then heal and require convergence.
        # The window is at least 0.5 s and lasts until some fault was injected
        # (a loaded machine may not reach the first faulted call in 0.5 s).
        with anyio.move_on_after(0.5):
            while state_diff(gc_objects(store.snapshot()), expected):
                await anyio.sleep(0.02)
        with anyio.move_on_after(15):
            while fault != "none" and not faulty.counts():
                if not state_diff(gc_objects(store.snapshot()), expected):
                    break
                await anyio.sleep(0.02)
        faulty.enabled = False
        diff: list[str] = []
        with anyio.move_on_after(30):
            while diff := state_diff(gc_objects(store.snapshot()), expected):
                await anyio.sleep(0.02)
        with anyio.fail_after(20):
            await gc.wait_idle(settle=0.05, horizon=1e9)
        diff = state_diff(gc_objects(store.snapshot()), expected)
        report_line(
            {
                "matrix": True,
                "backend": backend,
                "profile": fault,
                "policies": [policy],
                "seed": seed,
                "faults": faulty.counts(),
                "violations": [str(v) for v in audit.violations],
                "diff": diff,
                "died": repr(runner.died) if runner.died else None,
            }
        )
        # Foreground: the held leaf blocks mid-0, which blocks the root (item 48).
        assert (root["metadata"]["uid"] in expected) is (policy == "Foreground")
        assert audit.violations == [], [str(v) for v in audit.violations]
        assert runner.alive, runner.died
        assert diff == []
        if fault != "none":
            assert faulty.counts(), "the fault was never injected"
        await runner.stop()
        tg.cancel_scope.cancel()
