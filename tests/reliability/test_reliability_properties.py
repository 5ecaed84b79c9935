"""Stateful property tests: random histories under random faults never delete what is not garbage.

A hypothesis ``RuleBasedStateMachine`` drives an InMemoryStore while a
GarbageCollector runs against it through a :class:`FaultyStore` (and the
auditing store of ``reliability_harness``). Rules create objects with owner
references (valid, stale uid, across namespaces, cluster-scoped owners),
rewrite owner references (cycles included), add and remove a custom
finalizer, delete with each propagation policy (or none), restart the
controller, and let time pass.

After every step: no audited violation (the GC never deleted an object with
no owner references or with a live, valid owner that never waited for its
dependents, and never removed a reference to such an owner except when
orphaning), and ``run()`` is still running. At the end the faults are healed
and the store must converge to the oracle (``expected_state``) with every
queue drained.

CI runs a derandomized, bounded number of examples. More::

    OWNERGC_RELIABILITY_EXAMPLES=500 pytest tests/reliability -k properties
    OWNERGC_RELIABILITY_SEED=123 ...      # random exploration from that hypothesis seed
    OWNERGC_RELIABILITY_REPORT=runs.jsonl # one JSON line per example (fault counts, outcome)
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

import anyio
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from ownergc.controller import GarbageCollector
from ownergc.errors import APIError
from ownergc.protocols import PatchType
from ownergc.testing.faults import FaultRates, FaultyStore
from ownergc_backends.memory import InMemoryStore
from tests.reliability.reliability_harness import (
    Audit,
    AuditedStore,
    GCRunner,
    converge,
    report_line,
)

HOLD = "test.ownergc.io/hold"
NAMESPACES = ("default", "other")
POLICIES = ("Background", "Foreground", "Orphan", None)

#: Fault profiles an example runs under (name -> rates). "mixed" turns everything on.
PROFILES: dict[str, FaultRates] = {
    "none": FaultRates(),
    "conflict": FaultRates.only("conflict", 0.3),
    "too_many_requests": FaultRates.only("too_many_requests", 0.2),
    "server_error": FaultRates.only("server_error", 0.2),
    "timeout": FaultRates.only("timeout", 0.2),
    "drop_watch": FaultRates.only("drop_watch", 0.1),
    "expire_watch": FaultRates.only("expire_watch", 0.05),
    "duplicate_events": FaultRates.only("duplicate_events", 0.2),
    "reorder_events": FaultRates.only("reorder_events", 0.3),
    "latency": FaultRates.only("latency", 0.5),
    "mixed": FaultRates.uniform(0.04, latency=0.3, reorder_events=0.1),
}

#: Resources the collector monitors in these runs (fewer monitors, faster examples).
MONITORED = {("", "configmaps"), ("", "secrets"), ("rbac.authorization.k8s.io", "clusterroles")}


#: Upper bound of the final convergence wait (only a failing run waits this long).
CONVERGE_TIMEOUT = float(os.environ.get("OWNERGC_RELIABILITY_CONVERGE_TIMEOUT", "10"))


def _examples() -> int:
    return int(os.environ.get("OWNERGC_RELIABILITY_EXAMPLES", "80"))


def _settings() -> settings:
    seed = os.environ.get("OWNERGC_RELIABILITY_SEED")
    return settings(
        max_examples=_examples(),
        stateful_step_count=int(os.environ.get("OWNERGC_RELIABILITY_STEPS", "20")),
        deadline=None,
        derandomize=seed is None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        print_blob=True,
    )


class Handle:
    def __init__(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.api_version: str = obj["apiVersion"]
        self.kind: str = obj["kind"]
        self.name: str = meta["name"]
        self.namespace: str | None = meta.get("namespace")
        self.uid: str = meta["uid"]

    @property
    def cluster_scoped(self) -> bool:
        return self.namespace is None

    def ref(self, *, block: bool | None, stale: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": ("stale-" + self.uid) if stale else self.uid,
        }
        if block is not None:
            out["blockOwnerDeletion"] = block
        return out


owner_specs = st.lists(
    st.tuples(
        st.integers(0, 10**6),
        st.sampled_from([None, True, False]),
        st.sampled_from([False, False, False, True]),
    ),
    max_size=3,
)


class GCMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._portal_cm = start_blocking_portal("asyncio")
        self.portal = self._portal_cm.__enter__()
        self.objects: list[Handle] = []
        self.counter = 0
        self.ready = False
        self.policies_used: set[str] = set()
        self.steps: list[str] = []

    # -- setup / teardown ----------------------------------------------------

    @initialize(
        seed=st.integers(0, 2**32 - 1),
        profile=st.sampled_from(sorted(PROFILES)),
        use_cache=st.booleans(),
    )
    def setup(self, seed: int, profile: str, use_cache: bool) -> None:
        self.started = time.monotonic()
        self.seed, self.profile, self.use_cache = seed, profile, use_cache
        self.store = InMemoryStore()
        self.audit = Audit(self.store)
        self.test_store = AuditedStore(self.audit, "test")
        self.faulty = FaultyStore(
            AuditedStore(self.audit, "gc"), seed=seed, rates=PROFILES[profile]
        )
        ignored = {
            (r.group, r.resource)
            for r in self.portal.call(self.store.discover).resources
            if (r.group, r.resource) not in MONITORED
        }
        self.runner = GCRunner(
            lambda: GarbageCollector(
                self.faulty,
                workers=3,
                discovery_period=0.1,
                initial_sync_timeout=10,
                use_cache=use_cache,
                ignored_resources=ignored,
            )
        )
        self.portal.call(self._create_namespace)
        self.host, _ = self.portal.start_task(self._host)
        self.ready = True
        self.portal.call(self._start_gc)

    async def _create_namespace(self) -> None:
        await self.test_store.create_object(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
        )

    async def _host(self, *, task_status: Any) -> None:
        """Owns the task group the collector runs in, until ``_shutdown``."""
        self._host_stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            self.tg = tg
            task_status.started()
            await self._host_stop.wait()
            await self.runner.stop()
            tg.cancel_scope.cancel()

    async def _start_gc(self) -> None:
        gc = await self.runner.start(self.tg)
        with anyio.fail_after(15):
            await gc.wait_synced()

    def teardown(self) -> None:
        try:
            if self.ready:
                self.faulty.enabled = False  # heal, then everything must converge
                began = time.monotonic()
                diff = self.portal.call(self._converge)
                converge_seconds = round(time.monotonic() - began, 3)
                record = {
                    "profile": self.profile,
                    "run_seed": getattr(self, "run_seed", None),
                    "seed": self.seed,
                    "use_cache": self.use_cache,
                    "policies": sorted(self.policies_used),
                    "faults": self.faulty.counts(),
                    "restarts": self.runner.restarts,
                    "objects": len(self.objects),
                    "violations": [str(v) for v in self.audit.violations],
                    "diff": diff,
                    "steps": self.steps,
                    "writes": self.audit.writes if diff or self.audit.violations else [],
                    "died": repr(self.runner.died) if self.runner.died else None,
                    "backend": "memory",
                    "converge_seconds": converge_seconds,
                    "seconds": round(time.monotonic() - self.started, 3),
                }
                report_line(record)
                assert not self.audit.violations, [str(v) for v in self.audit.violations]
                assert self.runner.died is None, self.runner.died
                assert diff == [], diff
        finally:
            if self.ready:
                self.portal.call(self._shutdown)
                self.host.result(timeout=30)
            self._portal_cm.__exit__(None, None, None)

    async def _converge(self) -> list[str]:
        return await converge(self.audit, self.runner, timeout=CONVERGE_TIMEOUT)

    async def _shutdown(self) -> None:
        self._host_stop.set()

    # -- invariants ----------------------------------------------------------

    @invariant()
    def nothing_wrongly_deleted(self) -> None:
        if self.ready:
            assert not self.audit.violations, [str(v) for v in self.audit.violations]

    @invariant()
    def collector_alive(self) -> None:
        if self.ready:
            assert self.runner.died is None, self.runner.died
            assert self.runner.alive

    # -- rules ---------------------------------------------------------------

    def _pick_owners(self, dependent_cluster_scoped: bool, specs: list[Any]) -> list[dict]:
        candidates = [h for h in self.objects if h.cluster_scoped or not dependent_cluster_scoped]
        refs: list[dict[str, Any]] = []
        seen: set[str] = set()
        for index, block, stale in specs:
            if not candidates:
                break
            owner = candidates[index % len(candidates)]
            ref = owner.ref(block=block, stale=stale)
            if ref["uid"] in seen:
                continue
            seen.add(ref["uid"])
            refs.append(ref)
        return refs

    new_objects = st.lists(
        st.tuples(
            st.sampled_from(["ConfigMap", "ConfigMap", "Secret", "ClusterRole"]),
            st.sampled_from(NAMESPACES),
            owner_specs,
            st.sampled_from([False, False, False, True]),
        ),
        min_size=1,
        max_size=4,
    )

    @rule(batch=new_objects)
    def create(self, batch: list[Any]) -> None:
        for kind, namespace, owners, hold in batch:
            self._create(kind, namespace, owners, hold)

    def _create(self, kind: str, namespace: str, owners: list[Any], hold: bool) -> None:
        cluster = kind == "ClusterRole"
        self.counter += 1
        meta: dict[str, Any] = {"name": f"o{self.counter}"}
        if not cluster:
            meta["namespace"] = namespace
        refs = self._pick_owners(cluster, owners)
        if refs:
            meta["ownerReferences"] = refs
        if hold:
            meta["finalizers"] = [HOLD]
        api_version = "rbac.authorization.k8s.io/v1" if cluster else "v1"
        obj = {"apiVersion": api_version, "kind": kind, "metadata": meta}
        created = self.portal.call(self.test_store.create_object, obj)
        self.objects.append(Handle(created))
        self.steps.append(f"create {kind} {meta.get('namespace')}/{meta['name']} {refs} {hold}")

    async def _patch(self, h: Handle, patch: dict[str, Any]) -> None:
        resource = self.store.resource_for(h.api_version, h.kind)
        # gone, or a new finalizer on a deleting object (422): fine
        with contextlib.suppress(APIError):
            await self.test_store.patch(
                resource, h.name, patch, patch_type=PatchType.MERGE, namespace=h.namespace
            )

    @precondition(lambda self: self.objects)
    @rule(pick=st.integers(0, 10**6), owners=owner_specs)
    def set_owner_references(self, pick: int, owners: list[Any]) -> None:
        h = self.objects[pick % len(self.objects)]
        refs = [r for r in self._pick_owners(h.cluster_scoped, owners) if r["uid"] != h.uid]
        self.steps.append(f"set_owner_references {h.name} {refs}")
        self.portal.call(self._patch, h, {"metadata": {"ownerReferences": refs or None}})

    @precondition(lambda self: self.objects)
    @rule(pick=st.integers(0, 10**6), add=st.booleans())
    def toggle_finalizer(self, pick: int, add: bool) -> None:
        h = self.objects[pick % len(self.objects)]
        current = self.store.get_object(h.api_version, h.kind, h.name, h.namespace)
        if current is None:
            return
        fins = [f for f in current["metadata"].get("finalizers") or [] if f != HOLD]
        if add:
            fins.append(HOLD)
        self.steps.append(f"finalizers {h.name} {fins}")
        patch = {
            "metadata": {
                "finalizers": fins or None,
                "resourceVersion": current["metadata"]["resourceVersion"],
            }
        }
        self.portal.call(self._patch, h, patch)

    @precondition(lambda self: self.objects)
    @rule(pick=st.integers(0, 10**6), policy=st.sampled_from(POLICIES))
    def delete(self, pick: int, policy: str | None) -> None:
        h = self.objects[pick % len(self.objects)]
        self.policies_used.add(policy or "default")
        self.steps.append(f"delete {h.name} {policy}")

        async def go() -> None:
            resource = self.store.resource_for(h.api_version, h.kind)
            with contextlib.suppress(APIError):
                await self.test_store.delete(
                    resource, h.name, namespace=h.namespace, propagation_policy=policy
                )

        self.portal.call(go)

    @precondition(lambda self: self.ready and self.runner.restarts < 2)
    @rule()
    def restart_controller(self) -> None:
        self.steps.append("restart")

        async def go() -> None:
            await self.runner.restart(self.tg)
            assert self.runner.gc is not None
            with anyio.fail_after(15):
                await self.runner.gc.wait_synced()

        self.portal.call(go)

    @rule(seconds=st.sampled_from([0.0, 0.005, 0.02, 0.05]))
    def let_time_pass(self, seconds: float) -> None:
        self.portal.call(anyio.sleep, seconds)


GCMachine.TestCase.settings = _settings()
TestGCUnderFaults = GCMachine.TestCase
