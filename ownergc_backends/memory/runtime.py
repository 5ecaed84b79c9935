"""An in-memory ContainerRuntime: containers, sandboxes, images and an image fs.

It behaves like containerd's CRI where the GC can tell the difference
(removals are idempotent, stopping or inspecting an unknown id is
``NotFound``, removing a sandbox takes its containers with it, removing an
image in use is allowed) so that tests and the ``ownergc node --runtime
memory`` demo exercise the same code paths as a real node. Every call is
recorded in :attr:`InMemoryRuntime.calls`; to make the runtime misbehave,
wrap it in :class:`ownergc.testing.faults.FaultyRuntime`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import anyio.lowlevel

from ownergc.errors import NotFound
from ownergc.nodegc import (
    CONTAINER_NAME_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    Container,
    ContainerState,
    ContainerStatus,
    FsStats,
    Image,
    PodSandbox,
    SandboxState,
    resolve_image,
)

__all__ = ["InMemoryRuntime"]

_GiB = 1 << 30


class InMemoryRuntime:
    """A :class:`~ownergc.protocols.ContainerRuntime` held in memory.

    The image filesystem has ``capacity_bytes``; what is available is the
    capacity minus ``other_used_bytes`` minus the sizes of the images
    present, so removing images visibly frees space.
    """

    def __init__(
        self,
        *,
        capacity_bytes: int | None = 100 * _GiB,
        other_used_bytes: int = 0,
        mountpoint: str = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs",
    ) -> None:
        self.capacity_bytes = capacity_bytes
        self.other_used_bytes = other_used_bytes
        self.mountpoint = mountpoint
        self.containers: dict[str, Container] = {}
        self.sandboxes: dict[str, PodSandbox] = {}
        self.images: dict[str, Image] = {}
        self.log_paths: dict[str, str] = {}
        #: ``(operation, id)`` of every call, in order (listings use id ``""``).
        self.calls: list[tuple[str, str]] = []

    # --- populating -----------------------------------------------------------

    def add_image(self, image: Image) -> Image:
        self.images[image.id] = image
        return image

    def add_sandbox(self, sandbox: PodSandbox) -> PodSandbox:
        self.sandboxes[sandbox.id] = sandbox
        return sandbox

    def add_container(self, container: Container, *, log_path: str = "") -> Container:
        self.containers[container.id] = container
        if log_path:
            self.log_paths[container.id] = log_path
        return container

    def run_pod(
        self,
        name: str,
        uid: str,
        *,
        namespace: str = "default",
        attempt: int = 0,
        created_at: int = 0,
        state: SandboxState = SandboxState.READY,
    ) -> PodSandbox:
        """Add a sandbox labelled the way the kubelet labels one."""
        labels = {POD_NAME_LABEL: name, POD_NAMESPACE_LABEL: namespace, POD_UID_LABEL: uid}
        return self.add_sandbox(
            PodSandbox(
                id=f"{name}_{namespace}_{uid}_{attempt}",
                uid=uid,
                name=name,
                namespace=namespace,
                attempt=attempt,
                state=state,
                created_at=created_at,
                labels=labels,
            )
        )

    def create_container(
        self,
        sandbox: PodSandbox,
        name: str,
        *,
        attempt: int = 0,
        state: ContainerState = ContainerState.EXITED,
        created_at: int = 0,
        image_id: str = "",
        log_path: str = "",
        annotations: dict[str, str] | None = None,
    ) -> Container:
        """Add a container to ``sandbox`` labelled the way the kubelet labels one."""
        labels = {
            POD_NAME_LABEL: sandbox.name,
            POD_NAMESPACE_LABEL: sandbox.namespace,
            POD_UID_LABEL: sandbox.uid,
            CONTAINER_NAME_LABEL: name,
        }
        return self.add_container(
            Container(
                id=f"{sandbox.id}_{name}_{attempt}",
                pod_sandbox_id=sandbox.id,
                name=name,
                attempt=attempt,
                state=state,
                created_at=created_at,
                labels=labels,
                annotations=annotations or {},
                image=image_id,
                image_ref=image_id,
                image_id=image_id,
            ),
            log_path=log_path,
        )

    def set_container_state(self, container_id: str, state: ContainerState) -> None:
        self.containers[container_id] = dataclasses.replace(
            self.containers[container_id], state=state
        )

    def set_sandbox_state(self, sandbox_id: str, state: SandboxState) -> None:
        self.sandboxes[sandbox_id] = dataclasses.replace(self.sandboxes[sandbox_id], state=state)

    async def _enter(self, operation: str, target_id: str = "") -> None:
        await anyio.lowlevel.checkpoint()
        self.calls.append((operation, target_id))

    # --- ContainerRuntime ---------------------------------------------------------

    async def list_containers(self) -> Sequence[Container]:
        await self._enter("list_containers")
        return list(self.containers.values())

    async def list_pod_sandboxes(self) -> Sequence[PodSandbox]:
        await self._enter("list_pod_sandboxes")
        return list(self.sandboxes.values())

    async def container_status(self, container_id: str) -> ContainerStatus:
        await self._enter("container_status", container_id)
        c = self.containers.get(container_id)
        if c is None:
            raise NotFound(f"container {container_id!r} not found")
        return ContainerStatus(
            id=c.id,
            state=c.state,
            created_at=c.created_at,
            log_path=self.log_paths.get(c.id, ""),
            labels=c.labels,
            annotations=c.annotations,
        )

    async def stop_container(self, container_id: str, timeout: int) -> None:
        await self._enter("stop_container", container_id)
        if container_id not in self.containers:
            raise NotFound(f"container {container_id!r} not found")
        if self.containers[container_id].state != ContainerState.EXITED:
            self.set_container_state(container_id, ContainerState.EXITED)

    async def remove_container(self, container_id: str) -> None:
        await self._enter("remove_container", container_id)
        self.containers.pop(container_id, None)
        self.log_paths.pop(container_id, None)

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        await self._enter("stop_pod_sandbox", sandbox_id)
        if sandbox_id not in self.sandboxes:
            raise NotFound(f"sandbox {sandbox_id!r} not found")
        self.set_sandbox_state(sandbox_id, SandboxState.NOTREADY)
        for c in self._in_sandbox(sandbox_id):
            if c.state != ContainerState.EXITED:
                self.set_container_state(c.id, ContainerState.EXITED)

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        await self._enter("remove_pod_sandbox", sandbox_id)
        for c in self._in_sandbox(sandbox_id):
            self.containers.pop(c.id, None)
            self.log_paths.pop(c.id, None)
        self.sandboxes.pop(sandbox_id, None)

    async def list_images(self) -> Sequence[Image]:
        await self._enter("list_images")
        return list(self.images.values())

    async def image_status(self, ref: str) -> Image | None:
        await self._enter("image_status", ref)
        return resolve_image(self.images.values(), ref)

    async def remove_image(self, image_id: str) -> None:
        await self._enter("remove_image", image_id)
        img = resolve_image(self.images.values(), image_id)
        if img is not None:
            del self.images[img.id]

    async def image_fs_stats(self) -> FsStats:
        await self._enter("image_fs_stats")
        used = sum(i.size for i in self.images.values())
        available = None
        if self.capacity_bytes is not None:
            available = max(self.capacity_bytes - self.other_used_bytes - used, 0)
        return FsStats(self.capacity_bytes, available, used, self.mountpoint)

    # --- helpers ------------------------------------------------------------------------

    def _in_sandbox(self, sandbox_id: str) -> Iterable[Container]:
        return [c for c in self.containers.values() if c.pod_sandbox_id == sandbox_id]
