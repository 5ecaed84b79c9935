"""Value types the node-GC policies consume: what a CRI runtime reports.

They mirror the CRI v1 messages field for field where the GC looks at them
(and nothing more), so a backend converts a protobuf into one of these in a
line and the policies never see a transport type. All are frozen: a plan is
a function of a snapshot, and a snapshot must not change under it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "CONTAINER_NAME_LABEL",
    "POD_NAMESPACE_LABEL",
    "POD_NAME_LABEL",
    "POD_UID_LABEL",
    "Container",
    "ContainerState",
    "ContainerStatus",
    "FsStats",
    "Image",
    "PodSandbox",
    "PodStates",
    "SandboxState",
]

#: Labels the kubelet puts on every container (and sandbox) it creates.
POD_UID_LABEL = "io.kubernetes.pod.uid"
POD_NAME_LABEL = "io.kubernetes.pod.name"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
CONTAINER_NAME_LABEL = "io.kubernetes.container.name"

_EMPTY: Mapping[str, str] = MappingProxyType({})


class ContainerState(enum.IntEnum):
    """CRI ``ContainerState``; values are the wire numbers."""

    CREATED = 0
    RUNNING = 1
    EXITED = 2
    UNKNOWN = 3


class SandboxState(enum.IntEnum):
    """CRI ``PodSandboxState``; values are the wire numbers."""

    READY = 0
    NOTREADY = 1


def _frozen_map(m: Mapping[str, str] | None) -> Mapping[str, str]:
    return MappingProxyType(dict(m)) if m else _EMPTY


@dataclass(frozen=True, slots=True)
class Container:
    """A CRI ``Container`` as ``ListContainers`` reports it.

    ``name`` is ``metadata.name`` (the GC groups by it, not by the
    ``io.kubernetes.container.name`` label); ``created_at`` is in ns.
    """

    id: str
    pod_sandbox_id: str = ""
    name: str = ""
    attempt: int = 0
    state: ContainerState = ContainerState.CREATED
    created_at: int = 0
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)
    #: ``image.image``: what the container was created from (a ref or an id).
    image: str = ""
    #: ``image_ref``: historically a digest or an id, depending on the runtime.
    image_ref: str = ""
    #: ``image_id`` (CRI field 10, k8s 1.30+): the ``Image.id``; preferred when set.
    image_id: str = ""
    #: ``image.runtime_handler``: only used when records are keyed per handler.
    image_runtime_handler: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", _frozen_map(self.labels))
        object.__setattr__(self, "annotations", _frozen_map(self.annotations))
        object.__setattr__(self, "state", ContainerState(self.state))

    @property
    def pod_uid(self) -> str:
        """The pod UID label; ``""`` when absent (such containers share one unit)."""
        return self.labels.get(POD_UID_LABEL, "")

    @property
    def image_key(self) -> str:
        """The image id the image GC counts as in use (``image_id``, else ``image_ref``)."""
        return self.image_id or self.image_ref


@dataclass(frozen=True, slots=True)
class ContainerStatus:
    """The part of CRI ``ContainerStatus`` the GC reads before removing a container."""

    id: str
    state: ContainerState = ContainerState.CREATED
    created_at: int = 0
    finished_at: int = 0
    #: Absolute path of the current log file; rotated ones share it as a prefix.
    log_path: str = ""
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", _frozen_map(self.labels))
        object.__setattr__(self, "annotations", _frozen_map(self.annotations))
        object.__setattr__(self, "state", ContainerState(self.state))


@dataclass(frozen=True, slots=True)
class PodSandbox:
    """A CRI ``PodSandbox``; ``uid`` is ``metadata.uid`` (sandbox GC groups by it)."""

    id: str
    uid: str = ""
    name: str = ""
    namespace: str = ""
    attempt: int = 0
    state: SandboxState = SandboxState.READY
    created_at: int = 0
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", _frozen_map(self.labels))
        object.__setattr__(self, "annotations", _frozen_map(self.annotations))
        object.__setattr__(self, "state", SandboxState(self.state))


@dataclass(frozen=True, slots=True)
class Image:
    """A CRI ``Image`` from ``ListImages``. ``pinned`` exempts it from every GC."""

    id: str
    size: int = 0
    repo_tags: tuple[str, ...] = ()
    repo_digests: tuple[str, ...] = ()
    pinned: bool = False
    #: ``spec.runtime_handler`` (RuntimeClassInImageCriAPI); "" for the default.
    runtime_handler: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "repo_tags", tuple(self.repo_tags))
        object.__setattr__(self, "repo_digests", tuple(self.repo_digests))


@dataclass(frozen=True, slots=True)
class FsStats:
    """The image filesystem. CRI has no capacity field: backends measure it.

    ``None`` means unknown, which the kubelet treats as 0 (and then refuses
    to GC: ``invalid capacity 0 on image filesystem``).
    """

    capacity_bytes: int | None
    available_bytes: int | None
    #: Bytes used by images as the runtime reports it (informational).
    used_bytes: int | None = None
    mountpoint: str = ""


@dataclass(frozen=True, slots=True)
class PodStates:
    """The pod-state oracle the container, sandbox and log GC consult.

    The kubelet asks its pod workers two questions per pod UID; this is a
    snapshot of the answers:

    * ``deleted`` — ``ShouldPodContentBeRemoved``: the pod was evicted, or it
      is both deleted and terminated. Its containers, sandboxes and log dir go.
    * ``terminated`` — ``ShouldPodRuntimeBeRemoved``: every container of the
      pod has been stopped. Only the eviction-manager path acts on it.
    * ``live`` — pods that are known and neither of the above.
    * a UID in none of the sets is *unknown*; both questions then answer
      ``synced`` (the kubelet's ``podsSynced``: once every pod has been seen,
      a UID nobody knows is an orphan that only exists in the runtime).
    """

    deleted: frozenset[str] = frozenset()
    terminated: frozenset[str] = frozenset()
    live: frozenset[str] = frozenset()
    synced: bool = False

    def __post_init__(self) -> None:
        for name in ("deleted", "terminated", "live"):
            object.__setattr__(self, name, frozenset(getattr(self, name)))

    def _known(self, uid: str) -> bool:
        return uid in self.deleted or uid in self.terminated or uid in self.live

    def should_pod_content_be_removed(self, uid: str) -> bool:
        """True when the pod's containers, sandboxes and logs may all go."""
        if self._known(uid):
            return uid in self.deleted
        return self.synced

    def should_pod_runtime_be_removed(self, uid: str) -> bool:
        """True when the pod's runtime objects are no longer needed (terminated)."""
        if self._known(uid):
            return uid in self.terminated
        return self.synced
