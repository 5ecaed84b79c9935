"""kubernetes_asyncio (which sends watch=True) against `ownergc serve`."""

from __future__ import annotations

import pytest

from tests.cli.cli_helpers import Served

kubernetes_asyncio = pytest.importorskip("kubernetes_asyncio")

pytestmark = pytest.mark.anyio


async def test_list_watch_and_delete(served: Served) -> None:
    from kubernetes_asyncio import client, config, watch

    await config.load_kube_config(config_file=str(served.kubeconfig))
    async with client.ApiClient() as api:
        v1 = client.CoreV1Api(api)
        await v1.create_namespaced_config_map(
            "default", {"metadata": {"name": "aio"}, "data": {"k": "v"}}
        )
        listed = await v1.list_namespaced_config_map("default", limit=1)
        assert len(listed.items) == 1
        w = watch.Watch()
        seen = []
        async with w:
            async for event in w.stream(
                v1.list_namespaced_config_map, "default", timeout_seconds=5
            ):
                seen.append((event["type"], event["object"].metadata.name))
                if ("ADDED", "aio") in seen:
                    w.stop()
        assert ("ADDED", "aio") in seen
        await v1.delete_namespaced_config_map(
            "aio", "default", body=client.V1DeleteOptions(propagation_policy="Foreground")
        )
