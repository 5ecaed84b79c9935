"""lightkube and kr8s (two popular async clients) against `ownergc serve`."""

from __future__ import annotations

import pytest

from tests.cli.cli_helpers import Served

pytestmark = pytest.mark.anyio


async def test_lightkube_create_list_watch_and_cascade(served: Served) -> None:
    lightkube = pytest.importorskip("lightkube")
    from lightkube import AsyncClient, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
    from lightkube.resources.core_v1 import ConfigMap, Secret

    client = AsyncClient(config=KubeConfig.from_file(str(served.kubeconfig)))
    owner = await client.create(
        ConfigMap(metadata=ObjectMeta(name="lk-owner"), data={"a": "1"}), namespace="default"
    )
    ref = OwnerReference(apiVersion="v1", kind="ConfigMap", name="lk-owner", uid=owner.metadata.uid)
    await client.create(
        Secret(metadata=ObjectMeta(name="lk-dep", ownerReferences=[ref])), namespace="default"
    )
    names = [cm.metadata.name async for cm in client.list(ConfigMap, namespace="default")]
    assert "lk-owner" in names
    seen = []
    async for event, obj in client.watch(ConfigMap, namespace="default", resource_version="0"):
        seen.append((event, obj.metadata.name))
        if ("ADDED", "lk-owner") in seen:
            break
    await client.delete(
        ConfigMap, "lk-owner", namespace="default", cascade=lightkube.types.CascadeType.FOREGROUND
    )
    # the collector removes the dependent, then releases the owner
    import anyio

    with anyio.fail_after(30):
        while True:
            try:
                await client.get(Secret, "lk-dep", namespace="default")
            except lightkube.ApiError as exc:
                assert exc.status.code == 404
                break
            await anyio.sleep(0.1)
    await client.close()


async def test_kr8s_create_get_list_and_delete(served: Served) -> None:
    kr8s = pytest.importorskip("kr8s")
    from kr8s.asyncio.objects import ConfigMap

    api = await kr8s.asyncio.api(kubeconfig=str(served.kubeconfig))
    cm = await ConfigMap(
        {"metadata": {"name": "k8s-cm", "namespace": "default"}, "data": {"a": "1"}}, api=api
    )
    await cm.create()
    got = await ConfigMap.get("k8s-cm", namespace="default", api=api)
    assert got.raw["data"] == {"a": "1"}
    names = [c.name async for c in api.get("configmaps", namespace="default")]
    assert "k8s-cm" in names
    await got.delete(propagation_policy="Background")
    assert not await got.exists()
