"""NamespaceController: kube-controller-manager's namespace controller, on anyio.

A namespace DELETE only marks it ``Terminating``; the namespace controller
is what empties it. For each terminating namespace that still carries the
``kubernetes`` entry in ``spec.finalizers`` it deletes every namespaced
object in it (Background propagation, uid precondition), waits until the
objects held by finalizers are gone, and then removes ``kubernetes`` from
``spec.finalizers`` so the apiserver can drop the namespace. Without it,
namespace deletion never finishes, which is what envtest users hit.

Like the GarbageCollector it uses only the :class:`~ownergc.protocols.ObjectStore`
Protocol. Like kube-controller-manager it reports each pass in the
namespace's status conditions (``NamespaceDeletionDiscoveryFailure``,
``NamespaceDeletionGroupVersionParsingFailure``,
``NamespaceDeletionContentFailure``, ``NamespaceContentRemaining``,
``NamespaceFinalizersRemaining``, with the same reasons and messages), so
``kubectl describe namespace`` and ``ownergc why`` can say what holds it.
Deviations: no graceful pod termination estimate (objects are polled with
exponential backoff from 50 ms to 5 s); ``spec.finalizers`` is edited
through a JSON patch of the namespace itself (guarded by its
resourceVersion) rather than the ``/finalize`` subresource, and the
conditions through a merge patch of the namespace rather than ``/status``
(a real apiserver ignores that one: there kube-controller-manager writes
them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ownergc import FINALIZER_KUBERNETES
from ownergc.controller._listwatch import list_and_watch
from ownergc.controller._queue import ItemExponentialRateLimiter, WorkQueue, wait_quiet
from ownergc.errors import Conflict, Invalid, NotFound, OwnerGCError
from ownergc.protocols import (
    APIResource,
    JSONDict,
    ObjectStore,
    PatchType,
    Preconditions,
    PropagationPolicy,
    WatchEventType,
)

__all__ = ["FINALIZER_KUBERNETES", "NamespaceController"]

log = logging.getLogger("ownergc.namespace")

#: The ``spec.finalizers`` entry that the namespace controller owns.

_CONTENT_VERBS = frozenset({"list", "delete"})


@dataclass
class _ContentReport:
    """What one pass over a namespace's content found: the conditions' inputs."""

    #: ``group/version`` -> why its discovery failed.
    discovery_failures: dict[str, str] = field(default_factory=dict)
    #: Errors listing or deleting, one line each.
    errors: list[str] = field(default_factory=list)
    #: ``resource.group`` (``configmaps.`` for the core group) -> objects left.
    remaining: dict[str, int] = field(default_factory=dict)
    #: finalizer -> objects left that carry it.
    finalizers: dict[str, int] = field(default_factory=dict)

    @property
    def left(self) -> int:
        """Objects, failures and undiscoverable groups standing between the namespace
        and its finalization (content of a group that cannot be listed may remain)."""
        return sum(self.remaining.values()) + len(self.errors) + len(self.discovery_failures)


def namespace_conditions(report: _ContentReport) -> list[dict[str, str]]:
    """The five deletion conditions kube-controller-manager's namespace controller
    sets, each ``True`` with the problem or ``False`` with its all-clear reason."""

    def cond(
        kind: str, bad: bool, reason: tuple[str, str], message: tuple[str, str]
    ) -> dict[str, str]:
        return {
            "type": kind,
            "status": "True" if bad else "False",
            "reason": reason[0] if bad else reason[1],
            "message": message[0] if bad else message[1],
        }

    failed = report.discovery_failures
    remaining = ", ".join(
        f"{res} has {n} resource instances" for res, n in sorted(report.remaining.items())
    )
    finalizers = ", ".join(
        f"{fin} in {n} resource instances" for fin, n in sorted(report.finalizers.items())
    )
    return [
        cond(
            "NamespaceDeletionDiscoveryFailure",
            bool(failed),
            ("DiscoveryFailed", "ResourcesDiscovered"),
            (
                f"Discovery failed for some groups, {len(failed)} failing: "
                + ", ".join(f"{gv}: {err}" for gv, err in sorted(failed.items())),
                "All resources successfully discovered",
            ),
        ),
        cond(
            "NamespaceDeletionGroupVersionParsingFailure",
            False,
            ("GroupVersionParsingFailed", "ParsedGroupVersions"),
            ("", "All legacy kube types successfully parsed"),
        ),
        cond(
            "NamespaceDeletionContentFailure",
            bool(report.errors),
            ("ContentDeletionFailed", "ContentDeleted"),
            (
                f"Failed to delete all resource types, {len(report.errors)} remaining: "
                + ", ".join(report.errors),
                "All content successfully deleted, may be waiting on finalization",
            ),
        ),
        cond(
            "NamespaceContentRemaining",
            bool(report.remaining),
            ("SomeResourcesRemain", "ContentRemoved"),
            (f"Some resources are remaining: {remaining}", "All content successfully removed"),
        ),
        cond(
            "NamespaceFinalizersRemaining",
            bool(report.finalizers),
            ("SomeFinalizersRemain", "ContentHasNoFinalizers"),
            (
                f"Some content in the namespace has finalizers remaining: {finalizers}",
                "All content-preserving finalizers finished",
            ),
        ),
    ]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class NamespaceController:
    """Empties terminating namespaces and then lets the apiserver remove them.

    ``await ctl.run()`` runs until cancelled; ``wait_synced()`` returns after
    the first namespace list, ``wait_idle()`` when no namespace is being
    worked on or due for a retry within ``horizon`` seconds.
    """

    def __init__(
        self,
        store: ObjectStore,
        *,
        workers: int = 10,
        watch_timeout: float | None = 300.0,
        retry_base: float = 0.05,
        retry_cap: float = 5.0,
        logger: logging.Logger | None = None,
        on_action: Callable[[str, Mapping[str, Any]], None] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.store = store
        self.workers = workers
        self.watch_timeout = watch_timeout
        self.log = logger or log
        self.on_action = on_action
        self.queue: WorkQueue[str] = WorkQueue(
            "namespace", item_limiter=ItemExponentialRateLimiter(retry_base, retry_cap)
        )
        self.deleted_objects = 0
        self.finalized: list[str] = []
        #: Terminating namespaces seen and not yet gone.
        self.terminating: set[str] = set()
        self._synced = anyio.Event()
        self._pending_events = 0
        self._tg: TaskGroup | None = None

    async def run(self) -> None:
        """Run until cancelled."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self.queue.run_delays)
                tg.start_soon(self._monitor)
                for _ in range(self.workers):
                    tg.start_soon(self._worker)
        finally:
            self.queue.shutdown()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    async def wait_idle(self, *, settle: float = 0.05, horizon: float = 1.0) -> None:
        """Return when nothing is queued, processing or due within ``horizon`` seconds
        and that has held for ``settle`` seconds."""
        await self._synced.wait()
        await wait_quiet(lambda: not self._pending_events and self.queue.is_idle(horizon), settle)

    def recheck(self) -> None:
        """Look at every terminating namespace now instead of at its next backoff
        (e.g. after a test removed the finalizer that held its last object)."""
        for name in sorted(self.terminating):
            self.queue.forget(name)
            self.queue.add(name)

    # -- watching namespaces -------------------------------------------------

    async def _namespaces(self) -> APIResource:
        result = await self.store.discover()
        for res in result.resources:
            if res.group == "" and res.resource == "namespaces" and res.preferred:
                return res
        raise NotFound("the server does not serve namespaces")

    async def _monitor(self) -> None:
        await list_and_watch(
            self.store,
            self._namespaces,
            metadata_only=False,
            watch_timeout=self.watch_timeout,
            on_list=self._listed,
            on_event=self._event,
            log=self.log,
            what="namespace",
        )

    def _listed(self, items: list[JSONDict]) -> None:
        for obj in items:
            self._observe(obj)
        self._synced.set()

    def _event(self, kind: WatchEventType, obj: Mapping[str, Any]) -> None:
        if kind in ("ADDED", "MODIFIED"):
            self._observe(obj)
        elif kind == "DELETED":
            self.terminating.discard(str((obj.get("metadata") or {}).get("name")))

    def _observe(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        if meta.get("deletionTimestamp") and FINALIZER_KUBERNETES in (spec.get("finalizers") or []):
            name = meta.get("name")
            if isinstance(name, str):
                self.terminating.add(name)
                self.queue.add(name)

    # -- emptying a namespace ------------------------------------------------

    async def _worker(self) -> None:
        await self.queue.work(self._sync, self._sync_failed)

    def _sync_failed(self, name: str, exc: Exception) -> None:
        self.log.warning("namespace %s: %s; will retry", name, exc)

    async def _sync(self, name: str) -> bool:
        """One pass over a terminating namespace; True when nothing is left to do."""
        resource = await self._namespaces()
        try:
            ns = await self.store.get(resource, name, metadata_only=False)
        except NotFound:
            return True
        meta = ns.get("metadata") or {}
        spec = ns.get("spec") or {}
        finalizers = list(spec.get("finalizers") or [])
        if not meta.get("deletionTimestamp") or FINALIZER_KUBERNETES not in finalizers:
            return True
        report = await self._delete_content(name)
        await self._report(resource, ns, report)
        if report.left:
            self.log.info("namespace %s: %d objects remaining", name, report.left)
            return False
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
            {
                "op": "replace",
                "path": "/spec/finalizers",
                "value": [f for f in finalizers if f != FINALIZER_KUBERNETES],
            },
        ]
        self._action("finalize", {"target": f"Namespace {name}", "finalizer": "kubernetes"})
        try:
            await self.store.patch(resource, name, patch, patch_type=PatchType.JSON)
        except NotFound:
            return True
        except (Conflict, Invalid):
            return False  # changed meanwhile: look again
        self.finalized.append(name)
        return True

    async def _delete_content(self, namespace: str) -> _ContentReport:
        """Delete every namespaced object in ``namespace``; what is still there."""
        result = await self.store.discover()
        report = _ContentReport(discovery_failures=dict(result.failed))
        for res in result.resources:
            if not (res.namespaced and res.preferred and "/" not in res.resource):
                continue
            if not res.verbs >= _CONTENT_VERBS:
                continue
            label = f"{res.resource}.{res.group}"
            try:
                listed = await self.store.list(res, namespace=namespace, metadata_only=True)
            except NotFound:
                continue
            except OwnerGCError as exc:
                report.errors.append(f"{label}: {exc}")
                continue
            left = 0
            for obj in listed.items:
                meta = obj.get("metadata") or {}
                if meta.get("deletionTimestamp"):
                    left += 1
                    for fin in meta.get("finalizers") or ():
                        report.finalizers[fin] = report.finalizers.get(fin, 0) + 1
                    continue
                target = f"{res.kind} {namespace}/{meta.get('name')}"
                self._action("delete", {"target": target, "policy": "Background"})
                try:
                    kept = await self.store.delete(
                        res,
                        meta["name"],
                        namespace=namespace,
                        propagation_policy=PropagationPolicy.BACKGROUND,
                        preconditions=Preconditions(uid=meta.get("uid")),
                    )
                except (NotFound, Conflict):
                    continue
                except OwnerGCError as exc:
                    report.errors.append(f"{label}: {exc}")
                    left += 1
                    continue
                self.deleted_objects += 1
                if kept is not None:
                    left += 1
                    for fin in (kept.get("metadata") or {}).get("finalizers") or ():
                        report.finalizers[fin] = report.finalizers.get(fin, 0) + 1
            if left:
                report.remaining[label] = left
        return report

    async def _report(
        self, resource: APIResource, ns: Mapping[str, Any], report: _ContentReport
    ) -> None:
        """Write the pass's conditions into the namespace's status when they changed."""
        status = ns.get("status") or {}
        old = {c.get("type"): c for c in status.get("conditions") or () if isinstance(c, Mapping)}
        new = namespace_conditions(report)
        if all({k: old.get(c["type"], {}).get(k) for k in c} == c for c in new):
            return
        now = _now()
        for c in new:
            before = old.get(c["type"])
            same = before is not None and before.get("status") == c["status"]
            c["lastTransitionTime"] = (
                str(before.get("lastTransitionTime")) if same and before else now
            )
        others = [c for t, c in old.items() if t not in {n["type"] for n in new}]
        meta = ns.get("metadata") or {}
        try:
            await self.store.patch(
                resource,
                str(meta.get("name")),
                {"status": {"conditions": [*new, *others]}},
                patch_type=PatchType.MERGE,
            )
        except (NotFound, Conflict, Invalid):
            return  # gone or changed meanwhile: the next pass reports again

    def _action(self, what: str, details: Mapping[str, Any]) -> None:
        self.log.info("%s %s", what, details.get("target"), extra=dict(details))
        if self.on_action is not None:
            self.on_action(what, details)
