"""Regression tests: shrunk failing examples of the reliability suite, as plain tests.

Each test names the invariant that failed, the minimal history, and the fix.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import delete, exists, make, owner_uids, ref, running_gc, settle
from tests.reliability.reliability_harness import Audit, expected_state, state_diff

pytestmark = pytest.mark.anyio

HOLD = "test.ownergc.io/hold"


def assert_oracle(store: InMemoryStore) -> None:
    current = Audit(store).current()
    assert state_diff(current, expected_state(current)) == []


@pytest.mark.parametrize("use_cache", [True, False])
async def test_restart_during_held_foreground_deletion_still_processes_late_dependents(
    use_cache: bool,
) -> None:
    """Found by the state machine (profile "none", two restarts).

    o1 is in foreground deletion, held by a blocking dependent that a custom
    finalizer keeps. o6 has a non-blocking ref to o1 and a solid owner o2. A
    collector started now observes o1 (listed first) before o6, so the
    foreground transition enqueued o1's dependents while o6 was not yet in the
    graph, and nothing else ever enqueues a non-blocking dependent: o6 kept its
    reference to the waiting owner forever (and without o2 would never have
    been deleted while o1 waits).
    """
    store = InMemoryStore()
    o1 = await make(store, "ConfigMap", "o1")
    o2 = await make(store, "ConfigMap", "o2")
    blocker = await make(store, "ConfigMap", "o3", owners=[ref(o1, block=True)], finalizers=[HOLD])
    o6 = await make(store, "ConfigMap", "o6", owners=[ref(o1), ref(o2)])
    lone = await make(store, "ConfigMap", "o7", owners=[ref(o1)])
    await delete(store, blocker, "Background")  # held by HOLD: blocks o1 forever
    await delete(store, o1, "Foreground")
    async with running_gc(store, use_cache=use_cache) as gc:
        await settle(gc)
        assert exists(store, o1)  # still held by the blocking dependent
        assert owner_uids(store, o6) == [o2["metadata"]["uid"]]
        assert not exists(store, lone)
        assert_oracle(store)


class _RewriteBeforeDelete:
    """Passes everything to ``store``; before the collector's first DELETE of ``name``
    a concurrent writer sets that object's owner references to ``refs`` and waits
    until the collector's graph has observed the write."""

    def __init__(self, store: InMemoryStore, name: str, refs: list[dict[str, Any]]) -> None:
        self.store = store
        self.name = name
        self.refs = refs
        self.gc: Any = None
        self.fired = False

    async def delete(self, resource: Any, name: str, **kw: Any) -> Any:
        if name == self.name and not self.fired:
            self.fired = True
            from ownergc.protocols import PatchType

            patched = await self.store.patch(
                resource,
                name,
                {"metadata": {"ownerReferences": self.refs}},
                patch_type=PatchType.MERGE,
                namespace=kw.get("namespace"),
            )
            rv = patched["metadata"]["resourceVersion"]
            uid = patched["metadata"]["uid"]
            with anyio.fail_after(5):
                while (node := self.gc.uid_to_node.get(uid)) is None or node.resource_version != rv:
                    await anyio.sleep(0.001)
        return await self.store.delete(resource, name, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


async def test_conflict_recheck_compares_with_the_refs_it_decided_on() -> None:
    """Found while auditing the DELETE conflict re-check (use_cache=False, item 66).

    The collector read X live with refs [A] (A absent) and sent DELETE with
    X's resourceVersion. Meanwhile a writer set X's refs to [A, B] (B live),
    and the graph observed that. The DELETE failed with 409; the re-check
    compared the re-read refs with the *graph's* refs (equal: [A, B]) instead
    of the refs the decision was made from ([A]), concluded "only the
    resourceVersion moved" and retried with a uid-only precondition: X was
    deleted although B is a live, solid owner.
    """
    store = InMemoryStore()
    b = await make(store, "ConfigMap", "b")
    a_ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "uid-of-absent-a"}
    wrapper = _RewriteBeforeDelete(store, "x", [a_ref, ref(b)])
    async with running_gc(wrapper, use_cache=False) as gc:  # type: ignore[arg-type]
        wrapper.gc = gc
        x = await make(store, "ConfigMap", "x", owners=[a_ref])
        await settle(gc)
        assert wrapper.fired
        assert exists(store, x), "x was deleted although its owner b is live"
        assert owner_uids(store, x) == [b["metadata"]["uid"]]
        assert exists(store, b)


class _ChangeRefsBeforeRetry:
    """The collector's first DELETE of ``name`` meets a concurrent write (409); just
    before its retried DELETE, a writer gives the object the owner refs ``refs``."""

    def __init__(self, store: InMemoryStore, name: str, refs: list[dict[str, Any]]) -> None:
        self.store, self.name, self.refs = store, name, refs
        self.deletes = 0

    async def delete(self, resource: Any, name: str, **kw: Any) -> Any:
        if name == self.name:
            self.deletes += 1
            from ownergc.protocols import PatchType

            if self.deletes == 1:
                patch: dict[str, Any] = {"metadata": {"annotations": {"touched": "1"}}}
            elif self.deletes == 2:
                patch = {"metadata": {"ownerReferences": self.refs}}
            else:
                patch = {}
            if patch:
                await self.store.patch(
                    resource,
                    name,
                    patch,
                    patch_type=PatchType.MERGE,
                    namespace=kw.get("namespace"),
                )
        return await self.store.delete(resource, name, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


async def test_conflict_retry_keeps_a_resource_version_precondition() -> None:
    """Found by the seeded soak (run 1166, profile "conflict", live decisions).

    X's only owner is absent; the collector's DELETE (guarded by X's
    resourceVersion) got 409 because something touched X; the re-read showed
    the same refs, so it retried, but with a uid-only precondition. A writer
    gave X a live owner between the re-read and the retry, and X was deleted.
    The retry now carries the re-read's resourceVersion.
    """
    store = InMemoryStore()
    b = await make(store, "ConfigMap", "b")
    a_ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "uid-of-absent-a"}
    wrapper = _ChangeRefsBeforeRetry(store, "x", [a_ref, ref(b)])
    async with running_gc(wrapper, use_cache=False) as gc:  # type: ignore[arg-type]
        x = await make(store, "ConfigMap", "x", owners=[a_ref])
        await settle(gc)
        assert wrapper.deletes >= 2
        assert exists(store, x), "x was deleted although its owner b is live"
        assert owner_uids(store, x) == [b["metadata"]["uid"]]


class _OrphanFinalizerRemovalTimesOut:
    """The collector's first removal of ``owner``'s orphan finalizer is applied, then a
    new dependent of the owner appears (and is in the graph), then the call times out."""

    def __init__(self, store: InMemoryStore, owner: dict[str, Any]) -> None:
        self.store, self.owner = store, owner
        self.gc: Any = None
        self.late: dict[str, Any] | None = None

    async def patch(self, resource: Any, name: str, patch: Any, **kw: Any) -> Any:
        out = await self.store.patch(resource, name, patch, **kw)
        meta = patch.get("metadata", {}) if isinstance(patch, dict) else {}
        if name == self.owner["metadata"]["name"] and "finalizers" in meta and self.late is None:
            from ownergc.errors import ServerTimeout

            self.late = await make(self.store, "Secret", "late", owners=[ref(self.owner)])
            node = self.gc.uid_to_node
            with anyio.fail_after(5):
                while (
                    self.late["metadata"]["uid"] not in node
                    or node[self.late["metadata"]["uid"]]
                    not in node[self.owner["metadata"]["uid"]].dependents
                ):
                    await anyio.sleep(0.001)
            raise ServerTimeout("the request timed out (but was applied)")
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.parametrize("use_cache", [True, False])
async def test_orphan_retry_does_not_strip_refs_once_orphaning_is_over(use_cache: bool) -> None:
    """Found by the seeded soak (run 1329, profile "timeout").

    The owner, held by a custom finalizer, was deleted with Orphan; the
    collector orphaned its dependents and removed the ``orphan`` finalizer,
    but that PATCH timed out after being applied, so the owner was retried.
    A dependent created in between (the owner is still there, being deleted,
    not orphaning any more: a solid owner) lost its reference on the retry.
    The orphan worker now re-reads the owner and stops when the finalizer is gone.
    """
    store = InMemoryStore()
    owner = await make(store, "ConfigMap", "owner", finalizers=[HOLD])
    early = await make(store, "Secret", "early", owners=[ref(owner)])
    wrapper = _OrphanFinalizerRemovalTimesOut(store, owner)
    async with running_gc(wrapper, use_cache=use_cache) as gc:  # type: ignore[arg-type]
        wrapper.gc = gc
        await settle(gc)
        await delete(store, owner, "Orphan")
        with anyio.fail_after(10):
            while wrapper.late is None:
                await anyio.sleep(0.01)
        await settle(gc)
        assert owner_uids(store, early) == []
        assert owner_uids(store, wrapper.late) == [owner["metadata"]["uid"]]
        assert store.get_object("v1", "ConfigMap", "owner", "default")["metadata"][
            "finalizers"
        ] == [HOLD]
        assert_oracle(store)


class _TouchBeforeDeletes:
    """A concurrent writer touches ``name`` before each of the collector's first
    ``times`` DELETEs of it, so each one meets a 409."""

    def __init__(self, store: InMemoryStore, name: str, times: int) -> None:
        self.store, self.name, self.left = store, name, times
        self.deletes = 0

    async def delete(self, resource: Any, name: str, **kw: Any) -> Any:
        if name == self.name:
            self.deletes += 1
            if self.left > 0:
                self.left -= 1
                from ownergc.protocols import PatchType

                await self.store.patch(
                    resource,
                    name,
                    {"metadata": {"annotations": {"touched": str(self.left)}}},
                    patch_type=PatchType.MERGE,
                    namespace=kw.get("namespace"),
                )
        return await self.store.delete(resource, name, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.parametrize("use_cache", [True, False])
async def test_garbage_is_collected_after_repeated_delete_conflicts(use_cache: bool) -> None:
    """Found by the seeded soak (run 1342, profile "conflict") after the retry above
    gained a resourceVersion precondition: when the retry met a 409 too, ``_delete``
    fell out of its retry loop as if it had succeeded, the item was forgotten and
    the garbage stayed. Exhausted retries now raise (the item is requeued)."""
    store = InMemoryStore()
    a_ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "uid-of-absent-a"}
    wrapper = _TouchBeforeDeletes(store, "x", times=4)
    async with running_gc(wrapper, use_cache=use_cache) as gc:  # type: ignore[arg-type]
        x = await make(store, "ConfigMap", "x", owners=[a_ref])
        with anyio.fail_after(10):
            while exists(store, x):
                await anyio.sleep(0.01)
        await settle(gc)
        assert wrapper.deletes >= 3
        assert_oracle(store)


async def test_scripted_faults_fail_the_next_matching_calls_and_change_nothing() -> None:
    from ownergc.errors import Conflict, ServerError, UnsupportedPatchType
    from ownergc.protocols import PatchType
    from ownergc.testing.faults import FaultyStore

    faulty = FaultyStore(InMemoryStore())
    configmaps = faulty.resource_for("v1", "ConfigMap")
    await faulty.create_object(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
    )
    faulty.fail_next("delete", ServerError("etcd is sad"), resource=configmaps, name="c", times=2)
    for _ in range(2):
        with pytest.raises(ServerError):
            await faulty.delete(configmaps, "c", namespace="default")
        assert faulty.exists("v1", "ConfigMap", "c", "default")
    assert await faulty.delete(configmaps, "c", namespace="default") is None
    faulty.fail_next("patch", UnsupportedPatchType("nope"))
    with pytest.raises(UnsupportedPatchType):
        await faulty.patch(configmaps, "x", {}, patch_type=PatchType.MERGE, namespace="default")
    faulty.fail_next("watch", Conflict("boom"))
    stream = faulty.watch(configmaps, resource_version="0")
    with pytest.raises(Conflict):
        await stream.__anext__()
    await stream.aclose()
