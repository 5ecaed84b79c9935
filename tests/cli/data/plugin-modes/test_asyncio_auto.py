"""A pytest-asyncio test suite (auto mode: no markers) using ownergc's fixtures unchanged."""

OWNER = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "o", "namespace": "default"}}


def dependent(owner):
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": owner["metadata"]["uid"]}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "d", "namespace": "default", "ownerReferences": [ref]},
    }


async def test_store_collects(ownergc_store):
    owner = await ownergc_store.create_object(OWNER)
    await ownergc_store.create_object(dependent(owner))
    await ownergc_store.delete_object("v1", "ConfigMap", "o", "default")
    await ownergc_store.wait_idle()
    assert not ownergc_store.exists("v1", "Secret", "d", "default")


async def test_cluster_serves_http(ownergc_cluster):
    import json
    import urllib.request

    url = f"{ownergc_cluster.url}/api/v1/namespaces/default/configmaps"
    body = json.loads(urllib.request.urlopen(url).read())
    assert body["kind"] == "ConfigMapList"
