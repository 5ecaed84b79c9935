"""The backend Protocols: what the controller needs from an apiserver and a runtime.

Backends are structural (``typing.Protocol``): bring your own client, no
inheritance needed. Objects cross the seam as Kubernetes JSON dicts (the
shape ``kubectl get -o json`` prints), and errors as the classes in
:mod:`ownergc.errors`.

Guarantees every ObjectStore must give (the GC's correctness rests on them):

* ``delete`` and ``patch`` honour ``Preconditions`` atomically: a uid or
  resourceVersion mismatch raises :class:`~ownergc.errors.Conflict` and
  changes nothing.
* ``watch`` delivers every change after ``resource_version`` exactly once, in
  order, or raises :class:`~ownergc.errors.ResourceExpired` when that version
  is too old (the caller then relists).
* ``delete`` of an object that is already gone raises
  :class:`~ownergc.errors.NotFound` (callers treat it as success).
* A cancelled call may or may not have reached the server; callers retry
  with preconditions so a repeat is harmless.

The ContainerRuntime is the slice of CRI v1 the kubelet's GC uses, in Python
types (:mod:`ownergc.nodegc`). Guarantees every ContainerRuntime must give:

* ``remove_*`` are idempotent: an object that is already gone is success,
  never :class:`~ownergc.errors.NotFound`. ``stop_*`` of a stopped object is
  success too; ``stop_*`` of an unknown id may raise ``NotFound`` (containerd
  does), which the GC treats as "nothing left to remove".
* ``container_status`` raises :class:`~ownergc.errors.NotFound` for an
  unknown id: the GC relies on it to judge dangling log symlinks.
* ``remove_pod_sandbox`` force-removes whatever still runs in the sandbox.
* Native errors are translated to :mod:`ownergc.errors` at the seam
  (unreachable runtime: :class:`~ownergc.errors.Unavailable`).
* ``image_fs_stats`` reports capacity and available bytes of the filesystem
  holding the images (CRI has no such fields; a backend measures them),
  ``None`` when unknown.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from ownergc._core.types import JSONDict, PatchType, Preconditions, PropagationPolicy
from ownergc.nodegc._types import (
    Container,
    ContainerStatus,
    FsStats,
    Image,
    PodSandbox,
)

__all__ = [
    "APIResource",
    "BatchLister",
    "ContainerRuntime",
    "DiscoveryResult",
    "ObjectList",
    "ObjectStore",
    "PatchType",
    "Preconditions",
    "PropagationPolicy",
    "WatchEvent",
]


@dataclass(frozen=True, slots=True)
class APIResource:
    """One served resource of one group version, as discovery reports it."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    verbs: frozenset[str] = frozenset()
    #: True when ``version`` is the group's preferred version.
    preferred: bool = True
    #: ``group/version``, or just ``version`` for the core group (computed once:
    #: it is read for every watch event).
    api_version: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        api_version = f"{self.group}/{self.version}" if self.group else self.version
        object.__setattr__(self, "api_version", api_version)

    @property
    def group_resource(self) -> str:
        """``resource.group`` as kube flags spell it (``pods``, ``deployments.apps``)."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def __str__(self) -> str:
        return f"{self.api_version}/{self.resource}"


@dataclass(frozen=True, slots=True)
class DiscoveryResult:
    """Every served resource (all versions) plus the group versions that failed.

    A failing group must not hide the others: ``resources`` holds what could
    be discovered and ``failed`` maps ``group/version`` to the error text.
    """

    resources: tuple[APIResource, ...]
    failed: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ObjectList:
    """A list response: the items and the collection's resourceVersion to watch from."""

    items: list[JSONDict]
    resource_version: str


WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event; for BOOKMARK only ``object.metadata.resourceVersion`` is set."""

    type: WatchEventType
    object: JSONDict


@runtime_checkable
class ObjectStore(Protocol):
    """What the object garbage collector needs from a Kubernetes apiserver.

    ``metadata_only=True`` asks for ``PartialObjectMetadata`` (apiVersion,
    kind and metadata, no spec/status): it is all the GC needs, and backends
    that can should honour it to save memory and bandwidth.
    """

    async def discover(self) -> DiscoveryResult:
        """All served resources of all group versions (subresources excluded)."""
        ...

    async def list(
        self,
        resource: APIResource,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
        consistent: bool = True,
    ) -> ObjectList:
        """Every object of ``resource`` (in ``namespace``, or all namespaces).

        ``consistent=False`` is a monitor's list: a snapshot that may lag the
        newest state a little (kube-apiserver's watch cache,
        ``resourceVersion=0``), never one older than what this store already
        returned for the collection, whose metadata may hold only what a graph
        reads (uid, name, namespace, resourceVersion, ownerReferences,
        finalizers, deletionTimestamp; absent ones may be None). The
        controller's monitors ask for it, since every decision is confirmed by
        a live read. Stores that have only one kind of list ignore it.
        """
        ...

    def watch(
        self,
        resource: APIResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        metadata_only: bool = True,
        timeout_seconds: float | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """Changes after ``resource_version``, in order, until the stream ends.

        Raises :class:`ResourceExpired` (possibly on first iteration) when the
        version is too old. The stream may end at any time (server timeout,
        dropped connection); the caller re-watches from the last version seen.
        """
        ...

    async def get(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
    ) -> JSONDict:
        """The live object; raises :class:`~ownergc.errors.NotFound`."""
        ...

    async def create(
        self,
        resource: APIResource,
        obj: JSONDict,
        *,
        namespace: str | None = None,
    ) -> JSONDict:
        """Create ``obj``; the GC uses it only to record Events."""
        ...

    async def patch(
        self,
        resource: APIResource,
        name: str,
        patch: JSONDict | builtins.list[JSONDict],
        *,
        patch_type: PatchType,
        namespace: str | None = None,
    ) -> JSONDict:
        """Apply a patch and return the new object.

        Raises :class:`UnsupportedPatchType` when the resource does not accept
        ``patch_type`` (custom resources and strategic merge), :class:`Conflict`
        on a stale ``metadata.resourceVersion`` in a merge patch, :class:`Invalid`
        when the result does not validate (e.g. a changed ``metadata.uid``).
        If the patch empties the finalizers of an object being deleted, the
        object is removed and the last state is returned.
        """
        ...

    async def delete(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        preconditions: Preconditions | None = None,
    ) -> JSONDict | None:
        """Delete as kube-apiserver does.

        Returns the object when it remains (finalizers keep it, now with a
        deletionTimestamp), ``None`` when it was removed from storage.
        """
        ...


#: Receives one batch of a list's items (see :class:`BatchLister`).
ItemsSink = Callable[[list[JSONDict]], None]


@runtime_checkable
class BatchLister(Protocol):
    """An :class:`ObjectStore` that can hand a big list over while it arrives.

    A monitor's list of 100k objects is one answer of tens of megabytes; a
    store that decodes it as it arrives can give the items to the graph in
    batches, so that building the graph overlaps the server's writing of the
    answer instead of following it. The controller uses this when a store
    offers it and :meth:`ObjectStore.list` otherwise.
    """

    async def list_in_batches(
        self, resource: APIResource, on_items: ItemsSink, *, namespace: str | None = None
    ) -> str:
        """List as ``list(resource, namespace=namespace, metadata_only=True,
        consistent=False)`` does, handing the items to ``on_items`` in batches
        (called synchronously, never concurrently) instead of returning them;
        returns the list's resourceVersion. An answer read again after a failed
        attempt may hand some items over a second time: applying an item is an
        upsert, so that is harmless. An exception from ``on_items`` ends the list
        and propagates.
        """
        ...


@runtime_checkable
class ContainerRuntime(Protocol):
    """A container runtime as the kubelet's GC sees it (CRI RuntimeService + ImageService)."""

    async def list_containers(self) -> Sequence[Container]:
        """Every container in every state (CRI ``ListContainers``, empty filter)."""
        ...

    async def list_pod_sandboxes(self) -> Sequence[PodSandbox]:
        """Every sandbox in every state (CRI ``ListPodSandbox``, no filter)."""
        ...

    async def container_status(self, container_id: str) -> ContainerStatus:
        """One container's status (log path, labels); raises ``NotFound``."""
        ...

    async def stop_container(self, container_id: str, timeout: int) -> None:
        """Stop, killing after ``timeout`` seconds (0 = at once); may raise ``NotFound``."""
        ...

    async def remove_container(self, container_id: str) -> None:
        """Remove (force-stopping if needed). Already gone is success."""
        ...

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        """Stop every process of the sandbox and tear its network down; may raise ``NotFound``."""
        ...

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        """Remove the sandbox and any container left in it. Already gone is success."""
        ...

    async def list_images(self) -> Sequence[Image]:
        """Every image (CRI ``ListImages``, no filter)."""
        ...

    async def image_status(self, ref: str) -> Image | None:
        """The image a reference (tag, digest or id) names, or ``None`` if absent."""
        ...

    async def remove_image(self, image_id: str) -> None:
        """Remove an image by id (all its tags). Already gone is success."""
        ...

    async def image_fs_stats(self) -> FsStats:
        """Capacity and available bytes of the image filesystem."""
        ...


__all__ += ["ItemsSink", "JSONDict", "WatchEventType"]
