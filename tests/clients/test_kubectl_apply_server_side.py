"""Server-side apply by real clients against `ownergc serve`: kubectl 1.37 and 1.20
(``apply --server-side``), lightkube's ``Client.apply``; and the GC collects an applied
dependent like any other."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.cli.cli_helpers import Kubectl, Served


def _manifest(tmp: Path, name: str, data: dict[str, str]) -> str:
    path = tmp / f"{name}-{len(data)}-{'-'.join(sorted(data))}.json"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default"},
                "data": data,
            }
        )
    )
    return str(path)


_RAW = "/api/v1/namespaces/default/configmaps/ssa"


def test_kubectl_apply_server_side(kubectl: Kubectl, tmp_path: Path) -> None:
    first = _manifest(tmp_path, "ssa", {"a": "1", "b": "2"})
    out = kubectl.run("apply", "--server-side", "-f", first)
    assert "serverside-applied" in out.stdout
    # --raw: kubectl >= 1.21 hides managedFields from get -o json.
    got = json.loads(kubectl.run("get", "--raw", _RAW).stdout)
    assert got["data"] == {"a": "1", "b": "2"}
    (entry,) = got["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl", "Apply")
    # Re-apply without b: kubectl's manager gives it up and it is removed.
    kubectl.run("apply", "--server-side", "-f", _manifest(tmp_path, "ssa", {"a": "3"}))
    assert kubectl.json("get", "configmap", "ssa", "-n", "default")["data"] == {"a": "3"}
    # Another manager changing a: a conflict, worded as the server words it.
    other = _manifest(tmp_path, "ssa", {"a": "4"})
    refused = kubectl.run(
        "apply", "--server-side", "--field-manager", "other", "-f", other, check=False
    )
    assert refused.returncode != 0
    assert 'conflict with "kubectl": .data.a' in refused.stderr, refused.stderr
    kubectl.run(
        "apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", other
    )
    taken = json.loads(kubectl.run("get", "--raw", _RAW).stdout)
    assert taken["data"] == {"a": "4"}
    owners = {e["manager"] for e in taken["metadata"]["managedFields"]}
    assert "other" in owners


@pytest.mark.anyio
async def test_lightkube_apply_and_the_gc_collects_an_applied_dependent(served: Served) -> None:
    lightkube = pytest.importorskip("lightkube")
    from lightkube import AsyncClient, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
    from lightkube.resources.core_v1 import ConfigMap

    client = AsyncClient(config=KubeConfig.from_file(str(served.kubeconfig)))
    try:
        owner = await client.apply(
            ConfigMap(metadata=ObjectMeta(name="lk-ssa-owner"), data={"x": "1"}),
            namespace="default",
            field_manager="lk",
        )
        assert owner.metadata.managedFields[0].manager == "lk"
        ref = OwnerReference(
            apiVersion="v1", kind="ConfigMap", name="lk-ssa-owner", uid=owner.metadata.uid
        )
        dep = await client.apply(
            ConfigMap(metadata=ObjectMeta(name="lk-ssa-dep", ownerReferences=[ref])),
            namespace="default",
            field_manager="lk",
        )
        assert dep.metadata.ownerReferences[0].uid == owner.metadata.uid
        again = await client.apply(
            ConfigMap(metadata=ObjectMeta(name="lk-ssa-owner"), data={"x": "2"}),
            namespace="default",
            field_manager="lk",
        )
        assert again.data == {"x": "2"}
        await client.delete(ConfigMap, "lk-ssa-owner", namespace="default")
        with anyio.fail_after(30):
            while True:
                try:
                    await client.get(ConfigMap, "lk-ssa-dep", namespace="default")
                except lightkube.ApiError as exc:
                    assert exc.status.code == 404
                    break
                await anyio.sleep(0.1)
    finally:
        await client.close()
