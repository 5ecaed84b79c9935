"""``FaultyRuntime``: the ContainerRuntime wrapper."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ownergc.nodegc import Container, ContainerStatus, FsStats, Image, PodSandbox
from ownergc.protocols import ContainerRuntime


class FaultyRuntime:
    """A ContainerRuntime that forwards to ``inner`` and fails the calls it is told to.

    ``fail("remove_container", container_id, ServerError("boom"))`` makes that
    call raise from now on (what a runtime that cannot remove one container
    does); ``clear()`` heals it. Everything else of ``inner`` (an
    ``InMemoryRuntime``'s ``calls``, ``add_image``, ...) is forwarded.
    """

    def __init__(self, inner: ContainerRuntime) -> None:
        self.inner = inner
        self._failures: dict[tuple[str, str], BaseException] = {}

    def fail(self, operation: str, target_id: str, error: BaseException) -> None:
        """``operation`` (a ContainerRuntime method name) on ``target_id`` raises ``error``."""
        self._failures[(operation, target_id)] = error

    def clear(self) -> None:
        self._failures.clear()

    def _check(self, operation: str, target_id: str = "") -> None:
        error = self._failures.get((operation, target_id))
        if error is not None:
            raise error

    async def list_containers(self) -> Sequence[Container]:
        self._check("list_containers")
        return await self.inner.list_containers()

    async def list_pod_sandboxes(self) -> Sequence[PodSandbox]:
        self._check("list_pod_sandboxes")
        return await self.inner.list_pod_sandboxes()

    async def container_status(self, container_id: str) -> ContainerStatus:
        self._check("container_status", container_id)
        return await self.inner.container_status(container_id)

    async def stop_container(self, container_id: str, timeout: int) -> None:
        self._check("stop_container", container_id)
        await self.inner.stop_container(container_id, timeout)

    async def remove_container(self, container_id: str) -> None:
        self._check("remove_container", container_id)
        await self.inner.remove_container(container_id)

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        self._check("stop_pod_sandbox", sandbox_id)
        await self.inner.stop_pod_sandbox(sandbox_id)

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        self._check("remove_pod_sandbox", sandbox_id)
        await self.inner.remove_pod_sandbox(sandbox_id)

    async def list_images(self) -> Sequence[Image]:
        self._check("list_images")
        return await self.inner.list_images()

    async def image_status(self, ref: str) -> Image | None:
        self._check("image_status", ref)
        return await self.inner.image_status(ref)

    async def remove_image(self, image_id: str) -> None:
        self._check("remove_image", image_id)
        await self.inner.remove_image(image_id)

    async def image_fs_stats(self) -> FsStats:
        self._check("image_fs_stats")
        return await self.inner.image_fs_stats()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
