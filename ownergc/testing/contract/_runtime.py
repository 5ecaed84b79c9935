"""``ContainerRuntimeContract``: every guarantee :class:`~ownergc.protocols.ContainerRuntime`
documents, as a pytest class a runtime backend subclasses.

A subclass provides a ``runtime`` fixture and :meth:`~ContainerRuntimeContract.seed`,
which puts one ready pod sandbox, one exited container in it and one unused
image into the runtime (a real runtime needs real processes and images, so
only the backend knows how). What the suite checks:

=====================================================  ===================================
guarantee                                              test
=====================================================  ===================================
list calls return every container / sandbox / image    ``test_lists_show_what_was_seeded``
in every state
``container_status`` of an unknown id raises           ``test_container_status``
``NotFound``; a known one reports its id
``remove_*`` of something already gone is success      ``test_removals_are_idempotent``
(containers, sandboxes, images); ``image_status``
of an absent image is ``None``
``remove_container`` removes a stopped container       ``test_remove_container``
``remove_pod_sandbox`` removes the sandbox and any     ``test_remove_pod_sandbox_takes_
container left in it                                   its_containers``
``remove_image`` removes the image by id               ``test_remove_image``
``image_fs_stats``: ``None`` or non-negative           ``test_image_fs_stats``
numbers, available not above capacity
=====================================================  ===================================
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ownergc.errors import NotFound
from ownergc.protocols import ContainerRuntime

__all__ = ["ContainerRuntimeContract", "RuntimeSeed"]

_ABSENT_ID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"


@dataclass(frozen=True, slots=True)
class RuntimeSeed:
    """What :meth:`ContainerRuntimeContract.seed` created."""

    sandbox_id: str
    #: An exited container inside ``sandbox_id``.
    container_id: str
    #: The id of an image no container uses.
    image_id: str


class ContainerRuntimeContract:
    """The ContainerRuntime contract as a pytest class; subclass it as ``Test...``."""

    async def seed(self, runtime: ContainerRuntime) -> RuntimeSeed:
        """Create a ready sandbox with an exited container, and an unused image."""
        raise NotImplementedError("a ContainerRuntimeContract subclass implements seed()")

    @pytest.fixture
    async def seeded(self, runtime: ContainerRuntime) -> RuntimeSeed:
        return await self.seed(runtime)

    @pytest.mark.anyio
    async def test_lists_show_what_was_seeded(
        self, runtime: ContainerRuntime, seeded: RuntimeSeed
    ) -> None:
        containers = {c.id: c for c in await runtime.list_containers()}
        assert containers[seeded.container_id].pod_sandbox_id == seeded.sandbox_id
        assert seeded.sandbox_id in {s.id for s in await runtime.list_pod_sandboxes()}
        assert seeded.image_id in {i.id for i in await runtime.list_images()}

    @pytest.mark.anyio
    async def test_container_status(self, runtime: ContainerRuntime, seeded: RuntimeSeed) -> None:
        status = await runtime.container_status(seeded.container_id)
        assert status.id == seeded.container_id
        with pytest.raises(NotFound):
            await runtime.container_status(_ABSENT_ID)

    @pytest.mark.anyio
    async def test_removals_are_idempotent(self, runtime: ContainerRuntime) -> None:
        await runtime.remove_container(_ABSENT_ID)
        await runtime.remove_pod_sandbox(_ABSENT_ID)
        await runtime.remove_image("sha256:" + _ABSENT_ID)
        assert await runtime.image_status("sha256:" + _ABSENT_ID) is None

    @pytest.mark.anyio
    async def test_remove_container(self, runtime: ContainerRuntime, seeded: RuntimeSeed) -> None:
        await runtime.remove_container(seeded.container_id)
        await runtime.remove_container(seeded.container_id)  # again: success
        assert seeded.container_id not in {c.id for c in await runtime.list_containers()}
        with pytest.raises(NotFound):
            await runtime.container_status(seeded.container_id)

    @pytest.mark.anyio
    async def test_remove_pod_sandbox_takes_its_containers(
        self, runtime: ContainerRuntime, seeded: RuntimeSeed
    ) -> None:
        await runtime.stop_pod_sandbox(seeded.sandbox_id)
        await runtime.remove_pod_sandbox(seeded.sandbox_id)
        assert seeded.sandbox_id not in {s.id for s in await runtime.list_pod_sandboxes()}
        assert seeded.container_id not in {c.id for c in await runtime.list_containers()}
        await runtime.remove_pod_sandbox(seeded.sandbox_id)  # again: success

    @pytest.mark.anyio
    async def test_remove_image(self, runtime: ContainerRuntime, seeded: RuntimeSeed) -> None:
        assert await runtime.image_status(seeded.image_id) is not None
        await runtime.remove_image(seeded.image_id)
        assert await runtime.image_status(seeded.image_id) is None
        assert seeded.image_id not in {i.id for i in await runtime.list_images()}
        await runtime.remove_image(seeded.image_id)  # again: success

    @pytest.mark.anyio
    async def test_image_fs_stats(self, runtime: ContainerRuntime) -> None:
        stats = await runtime.image_fs_stats()
        for value in (stats.capacity_bytes, stats.available_bytes):
            assert value is None or value >= 0
        if stats.capacity_bytes is not None and stats.available_bytes is not None:
            assert stats.available_bytes <= stats.capacity_bytes
