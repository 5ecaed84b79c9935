"""Where the node collector learns which pods are deleted or terminated (the kubelet's pod workers).

:class:`ObjectStorePodStateSource` answers from the apiserver;
:class:`RuntimePodStateSource` (the default) from the runtime alone, which
means *no pod is ever considered deleted*.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ownergc.nodegc import (
    Container,
    ContainerState,
    PodSandbox,
    PodStates,
    SandboxState,
)
from ownergc.protocols import APIResource, ObjectStore

__all__ = [
    "PODS",
    "ObjectStorePodStateSource",
    "PodStateSource",
    "RuntimePodStateSource",
    "StaticPodStateSource",
]

log = logging.getLogger("ownergc.nodegc")


@runtime_checkable
class PodStateSource(Protocol):
    """Answers the kubelet's pod-worker questions for the pods on this node.

    ``PodStates.synced`` doubles as ``allSourcesReady``: until the source has
    seen every pod once, nothing is judged deleted.
    """

    async def pod_states(
        self, sandboxes: Sequence[PodSandbox], containers: Sequence[Container]
    ) -> PodStates: ...


def _runtime_active(
    sandboxes: Sequence[PodSandbox], containers: Sequence[Container]
) -> tuple[set[str], set[str]]:
    """(every pod UID the runtime knows, the UIDs with something still running)."""
    seen: set[str] = set()
    active: set[str] = set()
    for sb in sandboxes:
        seen.add(sb.uid)
        if sb.state == SandboxState.READY:
            active.add(sb.uid)
    for c in containers:
        seen.add(c.pod_uid)
        if c.state in (ContainerState.RUNNING, ContainerState.UNKNOWN):
            active.add(c.pod_uid)
    return seen, active


class StaticPodStateSource:
    """Fixed answers (tests, embedding, or a caller that tracks pods itself)."""

    def __init__(self, states: PodStates) -> None:
        self.states = states

    async def pod_states(
        self, sandboxes: Sequence[PodSandbox], containers: Sequence[Container]
    ) -> PodStates:
        return self.states


class RuntimePodStateSource:
    """Pod state from the runtime alone: every pod exists, idle ones are terminated.

    Without the apiserver nothing tells a deleted pod from a pod that merely
    finished, so no pod is reported deleted and ``synced`` stays False (the
    kubelet's "sources not ready"): per-container and per-node caps and the
    sandbox rule (keep the newest) still apply; whole-pod cleanup and log
    directory GC never happen.
    """

    async def pod_states(
        self, sandboxes: Sequence[PodSandbox], containers: Sequence[Container]
    ) -> PodStates:
        seen, active = _runtime_active(sandboxes, containers)
        return PodStates(terminated=frozenset(seen - active), live=frozenset(active), synced=False)


PODS = APIResource(group="", version="v1", resource="pods", kind="Pod", namespaced=True)
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class ObjectStorePodStateSource:
    """Pod state from the apiserver (any :class:`~ownergc.protocols.ObjectStore`).

    Approximates the kubelet's pod workers from what the API and the runtime
    show: a pod is *terminated* when nothing of it runs any more (no READY
    sandbox, no running container) and it is finished (phase Succeeded or
    Failed) or being deleted; it is *deleted* when it was evicted, or is
    being deleted and terminated. A UID the apiserver does not know is an
    orphan and, once a list has succeeded, counts as deleted. Static pods
    are matched through their mirror pod's ``kubernetes.io/config.mirror``.
    If listing fails, the last good answer is reused; before the first
    success nothing is judged deleted.
    """

    def __init__(self, store: ObjectStore, *, resource: APIResource = PODS) -> None:
        self.store = store
        self.resource = resource
        self._pods: dict[str, dict[str, Any]] | None = None

    async def _refresh(self) -> None:
        try:
            listing = await self.store.list(self.resource, metadata_only=False)
        except Exception as exc:  # any backend failure: keep the previous view
            log.warning("listing pods failed, reusing the last pod view: %s", exc)
            return
        pods: dict[str, dict[str, Any]] = {}
        for obj in listing.items:
            meta = obj.get("metadata") or {}
            uid = meta.get("uid")
            if not uid:
                continue
            pods[uid] = obj
            mirror = (meta.get("annotations") or {}).get(_MIRROR_ANNOTATION)
            if mirror:
                pods.setdefault(mirror, obj)
        self._pods = pods

    async def pod_states(
        self, sandboxes: Sequence[PodSandbox], containers: Sequence[Container]
    ) -> PodStates:
        await self._refresh()
        seen, active = _runtime_active(sandboxes, containers)
        if self._pods is None:
            return PodStates(live=frozenset(seen), synced=False)
        deleted: set[str] = set()
        terminated: set[str] = set()
        live: set[str] = set()
        for uid, pod in self._pods.items():
            meta = pod.get("metadata") or {}
            status = pod.get("status") or {}
            deleting = bool(meta.get("deletionTimestamp"))
            phase = status.get("phase")
            done = uid not in active and (deleting or phase in ("Succeeded", "Failed"))
            evicted = phase == "Failed" and status.get("reason") == "Evicted"
            if done:
                terminated.add(uid)
            if evicted or (deleting and done):
                deleted.add(uid)
            elif not done:
                live.add(uid)
        return PodStates(
            deleted=frozenset(deleted),
            terminated=frozenset(terminated),
            live=frozenset(live),
            synced=True,
        )
