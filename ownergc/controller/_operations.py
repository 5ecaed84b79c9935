"""Operations: the collector's API calls (upstream's operations.go).

GET, PATCH, DELETE, the removal of the GC's own finalizers and the writing
of events, each guarded by uid / resourceVersion preconditions so that a
decision taken from the watch cache never acts on an object that changed
since; a failed precondition raises :class:`StaleCache` and the worker redoes
the decision from live reads.

:class:`Operations` receives the store, the REST mapper (read only) and the
shared counters; it knows nothing of monitors, queues or the graph. When an
object turns out gone it says so (:class:`ObjectGone`, or ``delete``
returning True) and the caller tells the graph.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

import anyio

from ownergc import (
    Delete,
    InvalidNamespaceEvent,
    Node,
    ObjectReference,
    Patch,
    RemoveFinalizer,
    finalizers_merge_patch,
    metadata_of,
    owner_references_of,
    remove_finalizer_patch,
)
from ownergc.controller._gc_metrics import GCMetrics
from ownergc.controller._mapper import RESTMapper
from ownergc.errors import Conflict, NotFound, UnsupportedPatchType
from ownergc.protocols import APIResource, ObjectStore, PatchType, Preconditions

__all__ = ["ObjectGone", "Operations", "StaleCache", "node_as_object"]

log = logging.getLogger("ownergc.controller")


class ObjectGone(Exception):
    """Nothing has the step's target name any more: the object it meant is gone."""


class StaleCache(Exception):
    """A precondition built from the watch cache failed: redo the decision from live reads."""


class Operations:
    """The collector's writes and reads through the store, each reported once done.

    ``dry_run`` reports writes instead of making them; ``use_cache`` lets
    :meth:`remove_finalizer` try a patch built from the graph's view first;
    ``on_action`` receives every write (or, in dry run, every intended one).
    """

    def __init__(
        self,
        store: ObjectStore,
        mapper: RESTMapper,
        metrics: GCMetrics,
        *,
        dry_run: bool = False,
        use_cache: bool = True,
        logger: logging.Logger | None = None,
        on_action: Callable[[str, Mapping[str, Any]], None] | None = None,
    ) -> None:
        self.store = store
        self.mapper = mapper
        self.metrics = metrics
        self.dry_run = dry_run
        self.use_cache = use_cache
        self.log = logger or log
        self.on_action = on_action

    async def get(
        self, resource: APIResource, name: str, namespace: str | None
    ) -> Mapping[str, Any] | None:
        """The object's metadata, or None when nothing has that name."""
        try:
            return await self.store.get(resource, name, namespace=namespace, metadata_only=True)
        except NotFound:
            return None

    async def get_or_none(
        self, resource: APIResource, ident: ObjectReference
    ) -> Mapping[str, Any] | None:
        """``ident``'s metadata (namespaced as ``resource`` is), or None when absent."""
        try:
            return await self.store.get(
                resource,
                ident.name,
                namespace=ident.namespace if resource.namespaced else None,
                metadata_only=True,
            )
        except NotFound:
            return None

    async def patch(self, step: Patch, *, ignore_not_found: bool = False) -> None:
        """Apply a strategic merge patch, or the JSON merge patch where SMP is unsupported."""
        ident = step.target
        resource = self.mapper.resource_for(ident.api_version, ident.kind)
        ns = ident.namespace if resource.namespaced else None
        details = {"why": step.why, "patch": step.smp or step.jmp}
        if self.dry_run:
            self._action("patch", ident, details)
            return
        try:
            if step.smp is not None:
                try:
                    await self.store.patch(
                        resource,
                        ident.name,
                        step.smp,
                        patch_type=PatchType.STRATEGIC_MERGE,
                        namespace=ns,
                    )
                except UnsupportedPatchType:
                    await self.store.patch(
                        resource, ident.name, step.jmp, patch_type=PatchType.MERGE, namespace=ns
                    )
            else:
                await self.store.patch(
                    resource, ident.name, step.jmp, patch_type=PatchType.MERGE, namespace=ns
                )
        except NotFound:
            if not ignore_not_found:
                raise
            return
        self.metrics.patches += 1
        self._action("patch", ident, details)

    async def delete(
        self,
        step: Delete,
        node: Node,
        *,
        cached: bool = False,
        decided_on: Mapping[str, Any] | None = None,
    ) -> bool:
        """DELETE with the step's preconditions; True when the object left storage.

        Raises :class:`ObjectGone` when nothing has the name any more, and
        :class:`StaleCache` on a failed precondition of a ``cached`` decision.
        """
        ident = step.target
        resource = self.mapper.resource_for(ident.api_version, ident.kind)
        ns = ident.namespace if resource.namespaced else None
        details = {"policy": step.policy.value, "why": step.why}
        if self.dry_run:
            self._action("delete", ident, details)
            return False
        preconditions = step.preconditions
        for _ in range(2):
            try:
                remaining = await self.store.delete(
                    resource,
                    ident.name,
                    namespace=ns,
                    propagation_policy=step.policy,
                    preconditions=preconditions,
                )
            except NotFound:
                # Nothing has this name any more (a same-named replacement would
                # have failed the uid precondition with 409): our object is gone.
                raise ObjectGone(str(ident)) from None
            except Conflict as exc:
                if cached:
                    raise StaleCache(str(exc)) from exc
                if preconditions.resource_version is None:
                    raise
                # Only the resourceVersion moved? Re-read: if the owners are
                # unchanged the decision still holds, so retry (once).
                latest = await self.get_or_none(resource, ident)
                if latest is None:
                    raise ObjectGone(str(ident)) from None
                if (
                    metadata_of(latest).get("uid") != ident.uid
                    # The refs the decision was made from, not the graph's: the
                    # graph may have caught up with a write the read had not seen.
                    or owner_references_of(latest)
                    != (node.owners if decided_on is None else owner_references_of(decided_on))
                ):
                    raise
                # Guard the retry with the re-read's resourceVersion: a uid-only
                # DELETE would also remove an object whose refs changed after
                # the re-read (e.g. a live owner added).
                preconditions = Preconditions(
                    uid=ident.uid, resource_version=metadata_of(latest).get("resourceVersion")
                )
                continue
            self.metrics.count_deletion(step.policy.value)
            self._action("delete", ident, details)
            return remaining is None
        # Still conflicting after the retry: not deleted; requeue and decide afresh.
        raise Conflict(f"{ident} kept changing while being deleted; will retry")

    async def remove_finalizer(self, step: RemoveFinalizer, node: Node | None = None) -> None:
        """removeFinalizer: a JSON merge patch guarded by resourceVersion, retried on 409.

        With the watch cache in use, the first attempt is built from what the
        graph last observed of ``node`` (no GET); a stale view answers 409 and
        the upstream loop (GET, patch; 4 attempts with backoff) takes over.
        """
        ident = step.target
        resource = self.mapper.resource_for(ident.api_version, ident.kind)
        ns = ident.namespace if resource.namespaced else None
        details = {"finalizer": step.finalizer}

        async def apply(patch: dict[str, Any]) -> bool:
            """True when done (patched, or the object is gone); False on 409."""
            try:
                await self.store.patch(
                    resource, ident.name, patch, patch_type=PatchType.MERGE, namespace=ns
                )
            except NotFound:
                return True
            except Conflict:
                return False
            self.metrics.finalizers_removed += 1
            self._action("remove_finalizer", ident, details)
            return True

        if (
            self.use_cache
            and not self.dry_run
            and node is not None
            and not node.virtual
            and node.uid == ident.uid
            and node.resource_version is not None
            and step.finalizer in node.finalizers
        ):
            cached = finalizers_merge_patch(node.resource_version, node.finalizers, step.finalizer)
            if await apply(cached):
                return
            self.metrics.cache_fallbacks += 1
        delay = 0.01
        for _attempt in range(4):
            latest = await self.get_or_none(resource, ident)
            if latest is None or metadata_of(latest).get("uid") != ident.uid:
                return
            latest_patch = remove_finalizer_patch(latest, step.finalizer)
            if latest_patch is None:
                return
            if self.dry_run:
                self._action("remove_finalizer", ident, details)
                return
            if await apply(latest_patch):
                return
            await anyio.sleep(delay * (1 + random.random() * 0.1))
            delay *= 5
        raise Conflict(
            "updateMaxRetries(4) has reached. The garbage collector will retry later for "
            f"owner {ident}"
        )

    async def create_event(self, resource: APIResource, event: InvalidNamespaceEvent) -> None:
        """Write ``event`` as a core/v1 Event on its dependent; a failure is only logged."""
        dep = event.dependent
        namespace = dep.namespace or "default"
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{dep.name}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": dep.api_version,
                "kind": dep.kind,
                "name": dep.name,
                "namespace": dep.namespace or "",
                "uid": dep.uid,
            },
            "reason": event.reason,
            "message": event.message,
            "type": event.type,
            "source": {"component": "garbage-collector-controller"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": "garbage-collector-controller",
        }
        try:
            await self.store.create(resource, body, namespace=namespace)
        except Exception as exc:
            self.log.info("could not record event: %s", exc)

    def _action(self, what: str, ident: ObjectReference, fields: Mapping[str, Any]) -> None:
        """Report a write: done (after the server accepted it) or, in dry run, intended.

        The report (``target`` first) is built only when someone reads it: the
        default log level and no ``on_action`` hook cost nothing per object."""
        log_it = self.log.isEnabledFor(logging.INFO)
        if not log_it and self.on_action is None:
            return
        details = {"target": str(ident), **fields}
        if log_it:
            prefix = "dry-run: would " if self.dry_run else ""
            self.log.info("%s%s %s", prefix, what, details["target"], extra=details)
        if self.on_action is not None:
            self.on_action(what, details)


def node_as_object(node: Node) -> dict[str, Any]:
    """The metadata the graph last observed for ``node``, shaped like a live read."""
    ident = node.identity
    meta: dict[str, Any] = {
        "name": ident.name,
        "uid": ident.uid,
        "resourceVersion": node.resource_version,
    }
    if ident.namespace:
        meta["namespace"] = ident.namespace
    if node.owners:
        meta["ownerReferences"] = [ref.to_dict() for ref in node.owners]
    if node.finalizers:
        meta["finalizers"] = list(node.finalizers)
    if node.being_deleted:
        meta["deletionTimestamp"] = "observed"
    return {"apiVersion": ident.api_version, "kind": ident.kind, "metadata": meta}
