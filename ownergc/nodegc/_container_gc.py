"""Container, sandbox and pod-log-directory eviction: the kubelet's runtime GC.

Rule 1: everything here is a function of its arguments. The caller lists the
runtime, asks its pod-state source, reads the clock once, and executes the
plan it gets back. Nothing in this module touches a runtime, a file or a
clock.

How a container is judged (kubelet ``evictContainers``):

1. *Candidates*: not RUNNING, and created at least ``min_age`` ago (age counts
   from creation, not exit; equality is old enough).
2. *Evict units*: candidates grouped by (pod UID label, ``metadata.name``).
3. If all pod sources are ready, units of deleted pods (and, on the
   eviction-manager path, terminated pods) are removed whole.
4. Each remaining unit keeps its ``max_per_pod_container`` newest.
5. If more than ``max_containers`` remain, every unit is cut to
   ``max(max_containers // units, 1)``; only if that still leaves too many
   are the oldest of the rest removed. Step 5 can leave *fewer* than the cap.

Removal counting assumes success ("not too aggressive"): the kubelet never
removes an extra container to make up for one that failed to go.

Tie-break (upstream leaves it to Go's unstable sort): containers and
sandboxes are ordered by ``(created_at, id)``; of two created in the same
nanosecond, the one with the smaller id counts as older and goes first.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from ownergc.nodegc._errors import InvalidPolicy
from ownergc.nodegc._time import duration_ns, format_duration
from ownergc.nodegc._types import (
    Container,
    ContainerState,
    PodSandbox,
    PodStates,
    SandboxState,
)

__all__ = [
    "MIN_STOP_GRACE_PERIOD_SECONDS",
    "ContainerGCPlan",
    "ContainerGCPolicy",
    "ContainerRemoval",
    "RemovalReason",
    "SandboxRemoval",
    "plan_container_eviction",
    "plan_container_gc",
    "plan_pod_log_dir_eviction",
    "plan_sandbox_eviction",
    "pod_uid_from_log_dir",
    "stop_timeout_seconds",
]

#: The kubelet never gives a container less than this to stop.
MIN_STOP_GRACE_PERIOD_SECONDS = 2

_DELETION_GRACE_ANNOTATION = "io.kubernetes.pod.deletionGracePeriod"
_TERMINATION_GRACE_ANNOTATION = "io.kubernetes.pod.terminationGracePeriod"


@dataclass(frozen=True, slots=True)
class ContainerGCPolicy:
    """The kubelet's ``GCPolicy`` (deprecated flags, still honoured upstream).

    * ``min_age`` — ``--minimum-container-ttl-duration``: younger dead
      containers are never touched.
    * ``max_per_pod_container`` — ``--maximum-dead-containers-per-container``:
      dead containers kept per (pod, container name); negative = no cap.
    * ``max_containers`` — ``--maximum-dead-containers``: dead containers kept
      on the node; negative = no cap.
    """

    min_age: timedelta = timedelta(0)
    max_per_pod_container: int = 1
    max_containers: int = -1

    def __post_init__(self) -> None:
        if self.min_age < timedelta(0):
            raise InvalidPolicy(
                f"invalid minimum garbage collection age: {format_duration(self.min_age)}"
            )


class RemovalReason(str, enum.Enum):
    """Why a plan removes something (used for logs and metrics labels)."""

    DELETED_POD = "deleted-pod"
    TERMINATED_POD = "terminated-pod"
    MAX_PER_POD_CONTAINER = "max-per-pod-container"
    MAX_CONTAINERS = "max-containers"
    SUPERSEDED_SANDBOX = "superseded-sandbox"


@dataclass(frozen=True, slots=True)
class ContainerRemoval:
    """One container to remove; UNKNOWN ones must be stopped first."""

    id: str
    pod_uid: str
    name: str
    created_at: int
    reason: RemovalReason
    #: The container is in UNKNOWN state: ``StopContainer`` first, skip it if that fails.
    stop_first: bool = False
    #: Seconds for that ``StopContainer`` call.
    stop_timeout: int = MIN_STOP_GRACE_PERIOD_SECONDS


@dataclass(frozen=True, slots=True)
class SandboxRemoval:
    """One sandbox to stop and then remove."""

    id: str
    pod_uid: str
    created_at: int
    reason: RemovalReason


@dataclass(frozen=True, slots=True)
class ContainerGCPlan:
    """What one runtime-GC pass removes, each list oldest first."""

    containers: tuple[ContainerRemoval, ...] = ()
    sandboxes: tuple[SandboxRemoval, ...] = ()
    #: Entry names under the pod logs directory (not full paths).
    pod_log_dirs: tuple[str, ...] = ()

    @property
    def container_ids(self) -> list[str]:
        return [r.id for r in self.containers]

    @property
    def sandbox_ids(self) -> list[str]:
        return [r.id for r in self.sandboxes]

    def __bool__(self) -> bool:
        return bool(self.containers or self.sandboxes or self.pod_log_dirs)


def stop_timeout_seconds(container: Container) -> int:
    """The grace period the kubelet gives an UNKNOWN container it must stop.

    Rebuilt from the pod's annotations on the container (deletion grace
    first, then termination grace), floored at 2 s. The kubelet would also
    run a preStop hook and subtract its duration; ownergc runs no hooks.
    """
    for key in (_DELETION_GRACE_ANNOTATION, _TERMINATION_GRACE_ANNOTATION):
        raw = container.annotations.get(key, container.labels.get(key))
        if raw is None:
            continue
        try:
            seconds = int(raw)
        except ValueError:
            continue
        return max(seconds, MIN_STOP_GRACE_PERIOD_SECONDS)
    return MIN_STOP_GRACE_PERIOD_SECONDS


def _age_key(c: Container | PodSandbox) -> tuple[int, str]:
    return (c.created_at, c.id)


def _split_keep_newest(
    items: Sequence[Container], keep: int
) -> tuple[list[Container], list[Container]]:
    """(kept newest ``keep``, removed oldest first). ``keep <= 0`` removes all."""
    ordered = sorted(items, key=_age_key)
    if keep <= 0:
        return [], ordered
    cut = max(len(ordered) - keep, 0)
    return ordered[cut:], ordered[:cut]


def _removal(c: Container, reason: RemovalReason) -> ContainerRemoval:
    unknown = c.state == ContainerState.UNKNOWN
    return ContainerRemoval(
        id=c.id,
        pod_uid=c.pod_uid,
        name=c.name,
        created_at=c.created_at,
        reason=reason,
        stop_first=unknown,
        stop_timeout=stop_timeout_seconds(c) if unknown else MIN_STOP_GRACE_PERIOD_SECONDS,
    )


def _pod_goes(uid: str, pods: PodStates, evict_terminated_pods: bool) -> RemovalReason | None:
    if pods.should_pod_content_be_removed(uid):
        return RemovalReason.DELETED_POD
    if evict_terminated_pods and pods.should_pod_runtime_be_removed(uid):
        return RemovalReason.TERMINATED_POD
    return None


def plan_container_eviction(
    containers: Iterable[Container],
    pods: PodStates,
    policy: ContainerGCPolicy,
    now: int,
    *,
    all_sources_ready: bool,
    evict_terminated_pods: bool = False,
) -> tuple[ContainerRemoval, ...]:
    """The containers step of the runtime GC (see the module docstring)."""
    cutoff = now - duration_ns(policy.min_age)
    units: dict[tuple[str, str], list[Container]] = {}
    for c in containers:
        if c.state == ContainerState.RUNNING or c.created_at > cutoff:
            continue
        units.setdefault((c.pod_uid, c.name), []).append(c)

    removed: list[ContainerRemoval] = []

    # Deleted (or, for the eviction manager, terminated) pods lose every
    # candidate; without all sources ready a "deleted" pod may just not have
    # been seen yet, so nothing is judged by pod state at all.
    if all_sources_ready:
        for key in list(units):
            reason = _pod_goes(key[0], pods, evict_terminated_pods)
            if reason is not None:
                removed.extend(_removal(c, reason) for c in sorted(units.pop(key), key=_age_key))

    def cap_units(per_unit: int, reason: RemovalReason) -> None:
        for key, unit in units.items():
            kept, gone = _split_keep_newest(unit, per_unit)
            units[key] = kept
            removed.extend(_removal(c, reason) for c in gone)

    if policy.max_per_pod_container >= 0:
        cap_units(policy.max_per_pod_container, RemovalReason.MAX_PER_POD_CONTAINER)

    limit = policy.max_containers
    if limit >= 0 and sum(map(len, units.values())) > limit:
        # Spread the allowance evenly, at least one per unit; this may leave
        # fewer than ``limit`` (upstream behaviour, kept on purpose).
        cap_units(max(limit // len(units), 1), RemovalReason.MAX_CONTAINERS)
        rest = [c for unit in units.values() for c in unit]
        if len(rest) > limit:
            _, gone = _split_keep_newest(rest, limit)
            removed.extend(_removal(c, RemovalReason.MAX_CONTAINERS) for c in gone)

    removed.sort(key=lambda r: (r.created_at, r.id))
    return tuple(removed)


def plan_sandbox_eviction(
    sandboxes: Iterable[PodSandbox],
    containers: Iterable[Container],
    pods: PodStates,
    *,
    evict_terminated_pods: bool = False,
) -> tuple[SandboxRemoval, ...]:
    """The sandboxes step: keep a live pod's newest sandbox, never an active one.

    A sandbox is active while it is READY or any listed container (in any
    state) still points at it. There is no MinAge and, unlike containers,
    no ``all_sources_ready`` gate (the kubelet gets that effect only through
    its oracle answering "not deleted" for unknown pods until first sync).
    """
    active = {c.pod_sandbox_id for c in containers}
    by_uid: dict[str, list[PodSandbox]] = {}
    for sb in sandboxes:
        by_uid.setdefault(sb.uid, []).append(sb)

    removed: list[SandboxRemoval] = []
    for uid, group in by_uid.items():
        ordered = sorted(group, key=_age_key)
        reason = _pod_goes(uid, pods, evict_terminated_pods)
        if reason is None:
            candidates = ordered[:-1]  # the newest stays, whatever its state
            reason = RemovalReason.SUPERSEDED_SANDBOX
        else:
            candidates = ordered
        for sb in candidates:
            if sb.state == SandboxState.READY or sb.id in active:
                continue
            removed.append(SandboxRemoval(sb.id, uid, sb.created_at, reason))
    removed.sort(key=lambda r: (r.created_at, r.id))
    return tuple(removed)


def pod_uid_from_log_dir(entry: str) -> str:
    """The pod UID of a pod log directory: the text after the last ``_``.

    Covers ``<namespace>_<pod>_<uid>`` and the old bare ``<uid>`` format.
    """
    return entry.rsplit("_", 1)[-1]


def plan_pod_log_dir_eviction(
    entries: Iterable[str],
    pods: PodStates,
    *,
    all_sources_ready: bool,
) -> tuple[str, ...]:
    """Pod log directories (entry names, in the given order) of deleted pods.

    Only deleted pods lose their logs; terminated ones keep them even on the
    eviction-manager path. Nothing is judged before all sources are ready.
    """
    if not all_sources_ready:
        return ()
    return tuple(e for e in entries if pods.should_pod_content_be_removed(pod_uid_from_log_dir(e)))


def plan_container_gc(
    containers: Iterable[Container],
    sandboxes: Iterable[PodSandbox],
    pods: PodStates,
    policy: ContainerGCPolicy,
    now: int,
    *,
    all_sources_ready: bool,
    evict_terminated_pods: bool = False,
    pod_log_dirs: Iterable[str] = (),
) -> ContainerGCPlan:
    """A whole runtime-GC pass: containers, then sandboxes, then pod log dirs.

    The sandbox step is judged as if every planned container removal
    succeeded. The kubelet re-lists the runtime between the steps instead, so
    a container that fails to go keeps its sandbox; ``NodeGarbageCollector``
    does the same by calling the step functions with fresh listings.
    """
    containers = list(containers)
    gone = plan_container_eviction(
        containers,
        pods,
        policy,
        now,
        all_sources_ready=all_sources_ready,
        evict_terminated_pods=evict_terminated_pods,
    )
    gone_ids = {r.id for r in gone}
    remaining = [c for c in containers if c.id not in gone_ids]
    return ContainerGCPlan(
        containers=gone,
        sandboxes=plan_sandbox_eviction(
            sandboxes, remaining, pods, evict_terminated_pods=evict_terminated_pods
        ),
        pod_log_dirs=plan_pod_log_dir_eviction(
            pod_log_dirs, pods, all_sources_ready=all_sources_ready
        ),
    )
