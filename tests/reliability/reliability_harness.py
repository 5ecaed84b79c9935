"""Shared machinery of the reliability suite: an auditing store, the oracle, a GC runner.

* :class:`Audit` / :class:`AuditedStore` sit between the collector (and the
  FaultyStore above it) and the InMemoryStore. Every write of every caller
  goes through one lock, so the state an audit looks at just before a write
  is exactly the state the write is applied to. A DELETE made by the
  collector is a *violation* when the object has no owner references, or
  has an owner reference to a live, valid owner that has never been
  waiting for its dependents (owners only stop being solid by being
  deleted, or by switching to Foreground, so such an owner was solid when
  the collector decided too). A collector PATCH that removes a reference to
  such an owner is a violation too, unless that owner is being deleted with
  the ``orphan`` finalizer (orphaning removes exactly those references).
* :func:`expected_state` is the oracle: the semantics of gc-semantics.md
  (sections D, F, G, H and the apiserver's DELETE, section N) applied as a
  pure fixpoint computation to a snapshot of the store. At quiescence the
  store must already be that fixpoint: no garbage left, no dangling or
  waiting reference on a kept object, no ``orphan`` finalizer, and a
  ``foregroundDeletion`` finalizer only on an owner that a still-existing
  blocking dependent holds.
* :class:`GCRunner` runs a GarbageCollector in a task, can restart it, and
  says whether ``run()`` died.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ownergc.controller import GarbageCollector
from ownergc.protocols import (
    APIResource,
    DiscoveryResult,
    ObjectList,
    PatchType,
    Preconditions,
    PropagationPolicy,
)
from ownergc.testing.faults import TOUCH_ANNOTATION

FG = "foregroundDeletion"
ORPHAN = "orphan"

#: (apiVersion, kind) -> namespaced, for every kind the suites use.
KINDS: dict[tuple[str, str], bool] = {
    ("v1", "ConfigMap"): True,
    ("v1", "Secret"): True,
    ("v1", "Pod"): True,
    ("v1", "Node"): False,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): False,
    ("apps/v1", "Deployment"): True,
    ("apps/v1", "ReplicaSet"): True,
}


# -- state snapshots -------------------------------------------------------------


@dataclass
class Obj:
    api_version: str
    kind: str
    namespace: str | None
    name: str
    uid: str
    refs: list[dict[str, Any]]
    finalizers: list[str]
    deleting: bool

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Obj:
        meta = raw["metadata"]
        return cls(
            raw["apiVersion"],
            raw["kind"],
            meta.get("namespace") or None,
            meta["name"],
            meta["uid"],
            [dict(r) for r in meta.get("ownerReferences") or []],
            list(meta.get("finalizers") or []),
            meta.get("deletionTimestamp") is not None,
        )

    def key(self) -> tuple[Any, ...]:
        return (
            self.kind,
            self.namespace or "",
            self.name,
            self.uid,
            tuple((r["uid"], r["kind"], r["name"], r.get("blockOwnerDeletion")) for r in self.refs),
            tuple(self.finalizers),
            self.deleting,
        )

    def label(self) -> str:
        return f"{self.kind}/{self.namespace or ''}/{self.name}"


def gc_objects(snapshot: Iterable[dict[str, Any]]) -> dict[str, Obj]:
    """The objects of the kinds the suites use, by uid."""
    out: dict[str, Obj] = {}
    for raw in snapshot:
        if (raw["apiVersion"], raw["kind"]) in KINDS:
            obj = Obj.of(raw)
            out[obj.uid] = obj
    return out


class _Index:
    def __init__(self, objs: dict[str, Obj]) -> None:
        self.objs = objs
        self.by_name = {(o.api_version, o.kind, o.namespace, o.name): o for o in objs.values()}

    def resolve(self, dep: Obj, ref: dict[str, Any]) -> Obj | str | None:
        """isDangling: the owner ``ref`` names as the collector looks it up; None when
        absent; "unresolvable" for a cluster-scoped dependent naming a namespaced kind."""
        namespaced = KINDS.get((ref["apiVersion"], ref["kind"]))
        if namespaced is None:
            return "unresolvable"
        if namespaced and dep.namespace is None:
            return "unresolvable"
        ns = dep.namespace if namespaced else None
        owner = self.by_name.get((ref["apiVersion"], ref["kind"], ns, ref["name"]))
        if owner is None or owner.uid != ref["uid"]:
            return None
        return owner

    def dependents(self, uid: str) -> list[Obj]:
        return [o for o in self.objs.values() if any(r["uid"] == uid for r in o.refs)]


def waiting(obj: Obj) -> bool:
    return obj.deleting and FG in obj.finalizers


def _apiserver_delete(objs: dict[str, Obj], obj: Obj, policy: str) -> None:
    """The generic registry DELETE (items 83, 85, 86) with an explicit policy."""
    fins = [f for f in obj.finalizers if f not in (ORPHAN, FG)]
    if policy == "Orphan":
        fins.append(ORPHAN)
    elif policy == "Foreground":
        fins.append(FG)
    if set(fins) == set(obj.finalizers):
        fins = obj.finalizers
    if not fins:
        del objs[obj.uid]
        return
    obj.finalizers = list(fins)
    obj.deleting = True


def _remove_finalizer(objs: dict[str, Obj], obj: Obj, finalizer: str) -> None:
    obj.finalizers = [f for f in obj.finalizers if f != finalizer]
    if obj.deleting and not obj.finalizers:
        del objs[obj.uid]


def _policy_for(obj: Obj) -> str:
    if ORPHAN in obj.finalizers:
        return "Orphan"
    if FG in obj.finalizers:
        return "Foreground"
    return "Background"


def _step(objs: dict[str, Obj]) -> bool:
    """One pass of the model collector; True when it changed something."""
    for uid in sorted(objs):
        obj = objs.get(uid)
        if obj is None:
            continue
        index = _Index(objs)
        if obj.deleting:
            if ORPHAN in obj.finalizers:
                for dep in index.dependents(uid):
                    dep.refs = [r for r in dep.refs if r["uid"] != uid]
                _remove_finalizer(objs, obj, ORPHAN)
                return True
            if FG in obj.finalizers:
                blocking = [
                    d
                    for d in index.dependents(uid)
                    if any(r["uid"] == uid and r.get("blockOwnerDeletion") is True for r in d.refs)
                ]
                if not blocking:
                    _remove_finalizer(objs, obj, FG)
                    return True
            continue
        if not obj.refs:
            continue
        resolved = [index.resolve(obj, r) for r in obj.refs]
        if any(r == "unresolvable" for r in resolved):
            continue  # never collected, refs never cleaned (item 34)
        is_solid = [isinstance(o, Obj) and not waiting(o) for o in resolved]
        solid = [r for r, ok in zip(obj.refs, is_solid, strict=True) if ok]
        bad = [r for r, ok in zip(obj.refs, is_solid, strict=True) if not ok]
        if solid:
            if bad:
                bad_uids = {r["uid"] for r in bad}
                obj.refs = [r for r in obj.refs if r["uid"] not in bad_uids]
                return True
            continue
        any_waiting = any(isinstance(o, Obj) and waiting(o) for o in resolved)
        deps = index.dependents(uid)
        if any_waiting and deps:
            if any(waiting(d) for d in deps):
                for r in obj.refs:
                    if r.get("blockOwnerDeletion") is True:
                        r["blockOwnerDeletion"] = False
            _apiserver_delete(objs, obj, "Foreground")
        else:
            _apiserver_delete(objs, obj, _policy_for(obj))
        return True
    return False


def expected_state(objs: dict[str, Obj], *, max_steps: int = 100_000) -> dict[str, Obj]:
    """The oracle: the state the semantics converge to from ``objs`` (a deep copy)."""
    model = {
        uid: Obj(
            o.api_version,
            o.kind,
            o.namespace,
            o.name,
            o.uid,
            [dict(r) for r in o.refs],
            list(o.finalizers),
            o.deleting,
        )
        for uid, o in objs.items()
    }
    for _ in range(max_steps):
        if not _step(model):
            return model
    raise AssertionError("the oracle did not converge")


def state_diff(actual: dict[str, Obj], expected: dict[str, Obj]) -> list[str]:
    """Human-readable differences between two states (empty when equal)."""
    out = []
    for uid in sorted(actual.keys() | expected.keys()):
        a, e = actual.get(uid), expected.get(uid)
        if a is None:
            assert e is not None
            out.append(f"missing {e.label()} (expected {e.key()})")
        elif e is None:
            out.append(f"garbage left: {a.label()} {a.key()}")
        elif a.key() != e.key():
            out.append(f"{a.label()}: actual {a.key()} != expected {e.key()}")
    return out


# -- the auditing store ------------------------------------------------------------


@dataclass
class Violation:
    what: str
    target: str
    detail: str

    def __str__(self) -> str:
        return f"{self.what}: {self.target}: {self.detail}"


@dataclass
class Audit:
    """Shared by every AuditedStore view of one InMemoryStore."""

    inner: Any  # InMemoryStore
    violations: list[Violation] = field(default_factory=list)
    ever_waiting: set[str] = field(default_factory=set)
    #: (caller, verb, target label, policy) of every write that went through.
    writes: list[tuple[str, str, str, str]] = field(default_factory=list)
    gc_deletions: list[str] = field(default_factory=list)
    _lock: anyio.Lock | None = None

    @property
    def lock(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    def current(self) -> dict[str, Obj]:
        return gc_objects(self.inner.snapshot())

    def note_waiting(self) -> None:
        for obj in self.current().values():
            if waiting(obj):
                self.ever_waiting.add(obj.uid)

    def _lookup(self, resource: APIResource, name: str, namespace: str | None) -> Obj | None:
        raw = self.inner.get_object(
            resource.api_version, resource.kind, name, namespace if resource.namespaced else None
        )
        return (
            Obj.of(raw)
            if raw is not None and (resource.api_version, resource.kind) in KINDS
            else None
        )

    def solid_owner(self, state: dict[str, Obj], dep: Obj, ref: dict[str, Any]) -> Obj | None:
        """The owner ``ref`` names if it is live and valid and never waited for dependents."""
        owner = _Index(state).resolve(dep, ref)
        if isinstance(owner, Obj) and owner.uid not in self.ever_waiting and not waiting(owner):
            return owner
        return None

    def check_gc_delete(
        self, resource: APIResource, name: str, namespace: str | None, pre: Preconditions | None
    ) -> None:
        target = self._lookup(resource, name, namespace)
        if target is None:
            return
        if pre is not None and pre.uid is not None and pre.uid != target.uid:
            return  # precondition fails: nothing will happen
        raw = self.inner.get_object(
            resource.api_version, resource.kind, name, namespace if resource.namespaced else None
        )
        if (
            pre is not None
            and pre.resource_version is not None
            and raw["metadata"]["resourceVersion"] != pre.resource_version
        ):
            return
        if target.deleting and not target.refs:
            return  # re-delete of an object already being deleted (finalizer switch)
        if not target.refs:
            self.violations.append(
                Violation("GC deleted an object without owner references", target.label(), "")
            )
            return
        state = self.current()
        for ref in target.refs:
            owner = self.solid_owner(state, target, ref)
            if owner is not None:
                self.violations.append(
                    Violation(
                        "GC deleted an object that has a solid owner",
                        target.label(),
                        f"owner {owner.label()} uid={owner.uid} finalizers={owner.finalizers} "
                        f"deleting={owner.deleting}; refs={target.refs}",
                    )
                )

    def check_gc_patch(self, before: Obj | None, after_raw: dict[str, Any] | None) -> None:
        if before is None or after_raw is None:
            return
        after = Obj.of(after_raw)
        removed = [r for r in before.refs if r["uid"] not in {x["uid"] for x in after.refs}]
        if not removed:
            return
        state = self.current()
        for ref in removed:
            owner = self.solid_owner(state, before, ref)
            if owner is not None and not (owner.deleting and ORPHAN in owner.finalizers):
                self.violations.append(
                    Violation(
                        "GC removed a reference to a solid owner",
                        before.label(),
                        f"owner {owner.label()} finalizers={owner.finalizers}",
                    )
                )


class AuditedStore:
    """An ObjectStore view of ``audit.inner`` for one caller (``"gc"`` or ``"test"``)."""

    def __init__(self, audit: Audit, caller: str) -> None:
        self.audit = audit
        self.caller = caller
        self.inner = audit.inner

    async def discover(self) -> DiscoveryResult:
        result: DiscoveryResult = await self.inner.discover()
        return result

    async def list(self, resource: APIResource, **kw: Any) -> ObjectList:
        result: ObjectList = await self.inner.list(resource, **kw)
        return result

    def watch(self, resource: APIResource, **kw: Any) -> Any:
        return self.inner.watch(resource, **kw)

    async def get(self, resource: APIResource, name: str, **kw: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.inner.get(resource, name, **kw)
        return result

    async def create(self, resource: APIResource, obj: dict[str, Any], **kw: Any) -> Any:
        async with self.audit.lock:
            out = await self.inner.create(resource, obj, **kw)
            self.audit.writes.append((self.caller, "create", str(resource), ""))
            self.audit.note_waiting()
            return out

    async def create_object(self, obj: dict[str, Any]) -> dict[str, Any]:
        resource = self.inner.resource_for(obj["apiVersion"], obj["kind"])
        result: dict[str, Any] = await self.create(resource, obj)
        return result

    async def patch(
        self,
        resource: APIResource,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType,
        namespace: str | None = None,
    ) -> Any:
        async with self.audit.lock:
            touch = _is_touch(patch)
            before = self.audit._lookup(resource, name, namespace)
            try:
                out = await self.inner.patch(
                    resource, name, patch, patch_type=patch_type, namespace=namespace
                )
            finally:
                self.audit.note_waiting()
            label = before.label() if before else name
            self.audit.writes.append((self.caller, "patch", label, "touch" if touch else ""))
            if self.caller == "gc" and not touch:
                self.audit.check_gc_patch(before, out)
            return out

    async def delete(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | str | None = None,
        preconditions: Preconditions | None = None,
    ) -> Any:
        async with self.audit.lock:
            if self.caller == "gc":
                self.audit.check_gc_delete(resource, name, namespace, preconditions)
            before = self.audit._lookup(resource, name, namespace)
            try:
                out = await self.inner.delete(
                    resource,
                    name,
                    namespace=namespace,
                    propagation_policy=propagation_policy,
                    preconditions=preconditions,
                )
            finally:
                self.audit.note_waiting()
            policy = str(getattr(propagation_policy, "value", propagation_policy))
            label = before.label() if before else name
            self.audit.writes.append((self.caller, "delete", label, policy))
            if self.caller == "gc":
                self.audit.gc_deletions.append(label)
            return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _is_touch(patch: Any) -> bool:
    if not isinstance(patch, dict):
        return False
    meta = patch.get("metadata")
    return (
        isinstance(meta, dict)
        and set(meta) == {"annotations"}
        and set(meta["annotations"]) == {TOUCH_ANNOTATION}
    )


# -- running the collector ---------------------------------------------------------


class GCRunner:
    """A GarbageCollector in a background task of a task group; restartable."""

    def __init__(self, make: Callable[[], GarbageCollector]) -> None:
        self.make = make
        self.gc: GarbageCollector | None = None
        self.died: BaseException | str | None = None
        self._scope: anyio.CancelScope | None = None
        self._stopped: anyio.Event | None = None
        self.restarts = 0

    async def start(self, tg: Any) -> GarbageCollector:
        gc = self.make()
        self.gc = gc
        scope = anyio.CancelScope()
        stopped = anyio.Event()
        self._scope, self._stopped = scope, stopped

        async def run() -> None:
            try:
                with scope:
                    await gc.run()
                if not scope.cancel_called:
                    self.died = "GarbageCollector.run() returned"
            except Exception as exc:  # a dead controller is a test failure, reported later
                self.died = exc
            finally:
                stopped.set()

        tg.start_soon(run)
        return gc

    @property
    def alive(self) -> bool:
        return self._stopped is not None and not self._stopped.is_set() and self.died is None

    async def stop(self) -> None:
        if self._scope is not None and self._stopped is not None:
            self._scope.cancel()
            await self._stopped.wait()

    async def restart(self, tg: Any) -> GarbageCollector:
        await self.stop()
        self.restarts += 1
        return await self.start(tg)


def _steady_poll(node: Any) -> bool:
    """A virtual owner whose every dependent is being deleted: Kubernetes (and ownergc)
    keep polling it, alternating identities when dependents in several namespaces name
    its uid (items 38, 42), until those dependents are gone. Not work left undone."""
    return bool(node.virtual) and all(dep.being_deleted for dep in node.dependents)


def is_drained(gc: GarbageCollector) -> bool:
    """Every queue empty and nothing in flight, except steady virtual-owner polls."""
    if gc.graph_builder.pending_changes or not gc.queues[0].is_idle(1e9):
        return False
    if not gc.attempt_to_orphan.is_idle(1e9):
        return False
    q = gc.attempt_to_delete
    items = [*q._queue, *q._processing, *(item for _, _, item in q._waiting)]
    return all(_steady_poll(item) for item in items)


async def drained(gc: GarbageCollector, *, settle: float = 0.1) -> None:
    """Return once :func:`is_drained` has held for ``settle`` seconds."""
    quiet_since: float | None = None
    while True:
        now = anyio.current_time()
        if not is_drained(gc):
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= settle:
            return
        await anyio.sleep(0.01)


async def converge(
    audit: Audit, runner: GCRunner, *, timeout: float = 20.0, poll: float = 0.02
) -> list[str]:
    """Wait until the store equals the oracle of itself and the collector is idle.

    Returns the remaining differences (empty on success). The timeout only
    bounds a failing run; a passing run returns as soon as both hold.
    """
    diff: list[str] = []
    with anyio.move_on_after(timeout):
        while True:
            current = audit.current()
            diff = state_diff(current, expected_state(current))
            if not diff and runner.gc is not None:
                with anyio.move_on_after(5):
                    await drained(runner.gc)
                    current = audit.current()
                    diff = state_diff(current, expected_state(current))
                    if not diff:
                        return []
            await anyio.sleep(poll)
    return diff or ["collector did not become idle"]


def report_line(record: dict[str, Any]) -> None:
    """Append a JSON line to $OWNERGC_RELIABILITY_REPORT (for docs/reliability.md)."""
    path = os.environ.get("OWNERGC_RELIABILITY_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
