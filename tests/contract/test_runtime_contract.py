"""The ContainerRuntime contract against InMemoryRuntime and CRIRuntime on a real containerd."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ownergc.nodegc import Image
from ownergc.protocols import ContainerRuntime
from ownergc.testing.contract import ContainerRuntimeContract, RuntimeSeed
from ownergc.testing.faults import FaultyRuntime
from ownergc_backends.memory import InMemoryRuntime


class TestInMemoryRuntime(ContainerRuntimeContract):
    @pytest.fixture
    def runtime(self) -> InMemoryRuntime:
        return InMemoryRuntime()

    async def seed(self, runtime: ContainerRuntime) -> RuntimeSeed:
        assert isinstance(runtime, InMemoryRuntime)
        runtime.add_image(Image(id="sha256:used", size=10, repo_tags=("busybox:1",)))
        runtime.add_image(Image(id="sha256:unused", size=20, repo_tags=("nginx:1",)))
        sandbox = runtime.run_pod("web", "uid-1")
        container = runtime.create_container(sandbox, "app", image_id="sha256:used")
        return RuntimeSeed(sandbox.id, container.id, "sha256:unused")


@pytest.mark.cri
class TestCRIRuntime(ContainerRuntimeContract):
    @pytest.fixture
    async def runtime(self, containerd) -> AsyncIterator[ContainerRuntime]:
        from ownergc_backends.cri import CRIRuntime

        self.env = containerd
        async with CRIRuntime(containerd.endpoint, timeout=60) as rt:
            await containerd.reset(rt)
            yield rt
            await containerd.remove_everything()

    async def seed(self, runtime: ContainerRuntime) -> RuntimeSeed:
        from tests.nodegc._nodegc_cri_env import EXTRA

        sandbox = await self.env.run_pod(runtime, "web", "uid-contract")
        container = await self.env.run_container(runtime, sandbox, "app")
        unused = await runtime.image_status(EXTRA[0])
        assert unused is not None
        return RuntimeSeed(sandbox[0], container, unused.id)


class TestHealedFaultyRuntime(ContainerRuntimeContract):
    """A FaultyRuntime with no failures set must be indistinguishable from its runtime."""

    @pytest.fixture
    def runtime(self) -> FaultyRuntime:
        faulty = FaultyRuntime(InMemoryRuntime())
        faulty.fail("remove_image", "sha256:unused", RuntimeError("set, then healed"))
        faulty.clear()
        return faulty

    async def seed(self, runtime: ContainerRuntime) -> RuntimeSeed:
        assert isinstance(runtime, FaultyRuntime)
        return await TestInMemoryRuntime().seed(runtime.inner)
