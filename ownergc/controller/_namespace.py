"""NamespaceController: kube-controller-manager's namespace controller, on anyio.

A namespace DELETE only marks it ``Terminating``; the namespace controller
is what empties it. For each terminating namespace that still carries the
``kubernetes`` entry in ``spec.finalizers`` it deletes every namespaced
object in it (Background propagation, uid precondition), waits until the
objects held by finalizers are gone, and then removes ``kubernetes`` from
``spec.finalizers`` so the apiserver can drop the namespace. Without it,
namespace deletion never finishes, which is what envtest users hit.

Like the GarbageCollector it uses only the :class:`~ownergc.protocols.ObjectStore`
Protocol. Deviations from kube-controller-manager: no
``NamespaceContentRemaining`` / ``NamespaceFinalizersRemaining`` status
conditions, no graceful pod termination estimate (objects are polled with
exponential backoff from 50 ms to 5 s), and ``spec.finalizers`` is edited
through a JSON patch of the namespace itself (guarded by its
resourceVersion) rather than the ``/finalize`` subresource.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ownergc.controller._queue import ItemExponentialRateLimiter, WorkQueue
from ownergc.errors import Conflict, Invalid, NotFound, ResourceExpired
from ownergc.protocols import (
    APIResource,
    ObjectStore,
    PatchType,
    Preconditions,
    PropagationPolicy,
)

__all__ = ["FINALIZER_KUBERNETES", "NamespaceController"]

log = logging.getLogger("ownergc.namespace")

#: The ``spec.finalizers`` entry that the namespace controller owns.
FINALIZER_KUBERNETES = "kubernetes"

_CONTENT_VERBS = frozenset({"list", "delete"})


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
        quiet_since: float | None = None
        while True:
            now = anyio.current_time()
            if self._pending_events or not self.queue.is_idle(horizon):
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= settle:
                return
            await anyio.sleep(min(0.01, settle / 2) if settle > 0 else 0)

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
        backoff = 0.1
        while True:
            try:
                resource = await self._namespaces()
                listed = await self.store.list(resource, metadata_only=False)
                for obj in listed.items:
                    self._observe(obj)
                self._synced.set()
                rv = listed.resource_version
                while True:
                    stream = self.store.watch(
                        resource,
                        resource_version=rv,
                        metadata_only=False,
                        timeout_seconds=self.watch_timeout,
                    )
                    try:
                        async for event in stream:
                            meta = event.object.get("metadata") or {}
                            rv = meta.get("resourceVersion") or rv
                            if event.type in ("ADDED", "MODIFIED"):
                                self._observe(event.object)
                            elif event.type == "DELETED":
                                self.terminating.discard(str(meta.get("name")))
                    finally:
                        aclose = getattr(stream, "aclose", None)
                        if aclose is not None:
                            with anyio.CancelScope(shield=True):
                                await aclose()
                    backoff = 0.1
            except ResourceExpired:
                continue
            except Exception as exc:
                self.log.warning("namespace watch failed; retrying in %.1fs: %s", backoff, exc)
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)

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
        queue = self.queue
        while True:
            name = await queue.get()
            try:
                done = await self._sync(name)
            except Exception as exc:
                self.log.warning("namespace %s: %s; will retry", name, exc)
                queue.add_rate_limited(name)
            else:
                if done:
                    queue.forget(name)
                else:
                    queue.add_rate_limited(name)
            finally:
                queue.done(name)

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
        remaining = await self._delete_content(name)
        if remaining:
            self.log.info("namespace %s: %d objects remaining", name, remaining)
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

    async def _delete_content(self, namespace: str) -> int:
        """Delete every namespaced object in ``namespace``; how many are still there."""
        result = await self.store.discover()
        remaining = 0
        for res in result.resources:
            if not (res.namespaced and res.preferred and "/" not in res.resource):
                continue
            if not res.verbs >= _CONTENT_VERBS:
                continue
            try:
                listed = await self.store.list(res, namespace=namespace, metadata_only=True)
            except NotFound:
                continue
            for obj in listed.items:
                meta = obj.get("metadata") or {}
                if meta.get("deletionTimestamp"):
                    remaining += 1
                    continue
                target = f"{res.kind} {namespace}/{meta.get('name')}"
                self._action("delete", {"target": target, "policy": "Background"})
                try:
                    left = await self.store.delete(
                        res,
                        meta["name"],
                        namespace=namespace,
                        propagation_policy=PropagationPolicy.BACKGROUND,
                        preconditions=Preconditions(uid=meta.get("uid")),
                    )
                except (NotFound, Conflict):
                    continue
                self.deleted_objects += 1
                if left is not None:
                    remaining += 1
        return remaining

    def _action(self, what: str, details: Mapping[str, Any]) -> None:
        self.log.info("%s %s", what, details.get("target"), extra=dict(details))
        if self.on_action is not None:
            self.on_action(what, details)
