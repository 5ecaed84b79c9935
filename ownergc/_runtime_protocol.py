"""The ContainerRuntime Protocol: what node GC needs from a container runtime.

It is the slice of CRI v1 the kubelet's GC uses, in Python types
(:mod:`ownergc.nodegc`). Guarantees every implementation must give:

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

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ownergc.nodegc._types import (
    Container,
    ContainerStatus,
    FsStats,
    Image,
    PodSandbox,
)

__all__ = ["ContainerRuntime"]


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
