"""The official ``kubernetes`` Python client (sync and asyncio) against the facade."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from ownergc.errors import TooManyRequests
from ownergc.protocols import APIResource, PropagationPolicy
from ownergc.testing.faults import FaultyStore
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, serve_in_background
from tests.facade.facade_helpers import PARTIAL, PARTIAL_LIST

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client as k8s  # noqa: E402
from kubernetes import watch as k8s_watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402


def plain(obj: Any) -> Any:
    """A response as JSON data, whether the client returned a model or a dict."""
    return k8s.ApiClient().sanitize_for_serialization(obj)


def cm(name: str, **meta: Any) -> Any:
    return k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=name, **meta), data={"k": "v"})


@pytest.fixture
def core(api_client: Any) -> Any:
    return k8s.CoreV1Api(api_client)


@pytest.fixture
def widgets(store: InMemoryStore) -> None:
    """A custom kind, as a CRD would serve it (no strategic merge patch)."""
    store.register_resource(
        group="example.com", versions="v1", resource="widgets", kind="Widget", namespaced=True
    )


def test_crud_round_trip(core: Any, store: InMemoryStore) -> None:
    created = core.create_namespaced_config_map("default", cm("a", labels={"x": "1"}))
    assert created.metadata.uid and created.metadata.resource_version
    got = core.read_namespaced_config_map("a", "default")
    assert got.metadata.uid == created.metadata.uid and got.data == {"k": "v"}
    got.data = {"k": "changed"}
    updated = core.replace_namespaced_config_map("a", "default", got)
    assert updated.data == {"k": "changed"}
    listed = core.list_namespaced_config_map("default", label_selector="x=1")
    assert [i.metadata.name for i in listed.items] == ["a"]
    assert int(listed.metadata.resource_version) >= int(updated.metadata.resource_version)
    status = plain(core.delete_namespaced_config_map("a", "default"))
    assert status["kind"] == "Status" and status["status"] == "Success"
    assert status["details"] == {
        "name": "a",
        "kind": "configmaps",
        "uid": created.metadata.uid,
    }
    assert store.get_object("v1", "ConfigMap", "a", "default") is None


def test_delete_pod_returns_the_deleted_pod(core: Any) -> None:
    pod = k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="p"),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="busybox")]),
    )
    created = core.create_namespaced_pod("default", pod)
    gone = plain(core.delete_namespaced_pod("p", "default"))
    assert gone["kind"] == "Pod" and gone["metadata"]["uid"] == created.metadata.uid
    assert int(gone["metadata"]["resourceVersion"]) > int(created.metadata.resource_version)


@pytest.mark.parametrize(
    ("policy", "finalizer"),
    [("Orphan", "orphan"), ("Foreground", "foregroundDeletion")],
)
def test_delete_options_reach_the_store(
    core: Any, store: InMemoryStore, policy: str, finalizer: str
) -> None:
    created = core.create_namespaced_config_map("default", cm("owner"))
    body = k8s.V1DeleteOptions(
        propagation_policy=policy,
        preconditions=k8s.V1Preconditions(uid=created.metadata.uid),
    )
    remaining = plain(core.delete_namespaced_config_map("owner", "default", body=body))
    # The object stays, marked as deleting, with the policy's finalizer.
    assert remaining["kind"] == "ConfigMap"
    assert remaining["metadata"]["finalizers"] == [finalizer]
    assert remaining["metadata"]["deletionTimestamp"]
    stored = store.get_object("v1", "ConfigMap", "owner", "default")
    assert stored["metadata"]["finalizers"] == [finalizer]


def test_delete_policy_as_query_parameter_and_default(core: Any, store: InMemoryStore) -> None:
    core.create_namespaced_config_map("default", cm("q"))
    core.delete_namespaced_config_map("q", "default", propagation_policy="Orphan")
    assert store.get_object("v1", "ConfigMap", "q", "default")["metadata"]["finalizers"] == [
        "orphan"
    ]
    # ReplicationControllers default to orphaning (their GC policy), as upstream.
    rc = k8s.V1ReplicationController(metadata=k8s.V1ObjectMeta(name="rc"))
    core.create_namespaced_replication_controller("default", rc)
    left = plain(core.delete_namespaced_replication_controller("rc", "default"))
    assert left["metadata"]["finalizers"] == ["orphan"]


def test_delete_precondition_and_invalid_options(core: Any) -> None:
    core.create_namespaced_config_map("default", cm("pre"))
    stale = k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid="not-the-uid"))
    with pytest.raises(ApiException) as conflict:
        core.delete_namespaced_config_map("pre", "default", body=stale)
    assert conflict.value.status == 409
    assert json.loads(conflict.value.body)["reason"] == "Conflict"
    bad = k8s.V1DeleteOptions(propagation_policy="Sideways")
    with pytest.raises(ApiException) as invalid:
        core.delete_namespaced_config_map("pre", "default", body=bad)
    assert invalid.value.status == 422
    with pytest.raises(ApiException) as missing:
        core.delete_namespaced_config_map("ghost", "default")
    assert missing.value.status == 404


def test_orphan_dependents_false_on_a_kept_object_is_202(server: KubeAPIServer, core: Any) -> None:
    core.create_namespaced_config_map("default", cm("o", finalizers=["example.com/keep"]))
    body = k8s.V1DeleteOptions(orphan_dependents=False)
    _, status, _ = core.delete_namespaced_config_map_with_http_info("o", "default", body=body)
    assert status == 202
    assert server.requests[-1].status == 202


@pytest.mark.parametrize(
    ("content_type", "patch", "expected"),
    [
        ("application/strategic-merge-patch+json", {"data": {"s": "1"}}, {"k": "v", "s": "1"}),
        ("application/merge-patch+json", {"data": {"k": None, "m": "1"}}, {"m": "1"}),
        ("application/json-patch+json", [{"op": "add", "path": "/data/j", "value": "1"}], None),
    ],
)
def test_three_patch_types(
    core: Any, content_type: str, patch: Any, expected: dict[str, str] | None
) -> None:
    core.create_namespaced_config_map("default", cm("p"))
    patched = core.patch_namespaced_config_map("p", "default", patch, _content_type=content_type)
    assert patched.data == (expected or {"k": "v", "j": "1"})


def test_strategic_merge_on_a_custom_kind_is_415_and_merge_works(
    api_client: Any, widgets: None
) -> None:
    custom = k8s.CustomObjectsApi(api_client)
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", body)
    with pytest.raises(ApiException) as refused:
        custom.patch_namespaced_custom_object(
            "example.com",
            "v1",
            "default",
            "widgets",
            "w",
            {"spec": {"a": 1}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert refused.value.status == 415
    assert json.loads(refused.value.body)["reason"] == "UnsupportedMediaType"
    merged = custom.patch_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "widgets",
        "w",
        {"spec": {"a": 1}},
        _content_type="application/merge-patch+json",
    )
    assert merged["spec"] == {"a": 1}
    with pytest.raises(ApiException) as apply:
        custom.patch_namespaced_custom_object(
            "example.com",
            "v1",
            "default",
            "widgets",
            "w",
            {"spec": {"a": 2}},
            _content_type="application/apply-patch+yaml",
        )
    # Served now: without fieldManager kube-apiserver refuses an apply with 422.
    assert apply.value.status == 422
    assert "fieldManager" in json.loads(apply.value.body)["message"]


def test_metadata_only_through_call_api(api_client: Any, core: Any) -> None:
    core.create_namespaced_config_map("default", cm("meta"))

    def call(path: str, accept: str) -> Any:
        url = api_client.configuration.host + path
        response = api_client.call_api("GET", url, header_params={"Accept": accept})
        return json.loads(response.read())

    one = call("/api/v1/namespaces/default/configmaps/meta", PARTIAL)
    assert one["kind"] == "PartialObjectMetadata" and "data" not in one
    many = call("/api/v1/configmaps", f"{PARTIAL_LIST},application/json")
    assert many["kind"] == "PartialObjectMetadataList"
    assert [i["metadata"]["name"] for i in many["items"]] == ["meta"]


def test_watch_helper_streams_and_raises_410_after_expiry(
    server: KubeAPIServer, faulty: FaultyStore, core: Any
) -> None:
    start = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", cm("w1"))
    core.delete_namespaced_config_map("w1", "default")
    w = k8s_watch.Watch()
    seen = [
        (e["type"], e["object"].metadata.name)
        for e in w.stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=start,
            timeout_seconds=1,
        )
    ]
    assert seen == [("ADDED", "w1"), ("DELETED", "w1")]
    faulty.expire_watches()
    with pytest.raises(ApiException) as expired:
        for _ in k8s_watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=1
        ):
            pass
    assert expired.value.status == 410


def too_many(retry_after: float) -> TooManyRequests:
    return TooManyRequests("too many requests", reason="TooManyRequests", retry_after=retry_after)


def test_429_reaches_the_client_with_retry_after(
    server: KubeAPIServer, faulty: FaultyStore, configmaps: APIResource
) -> None:
    config = k8s.Configuration()
    config.host = server.url
    config.retries = False  # see the raw answer; urllib3 would otherwise retry
    faulty.fail_next("list", too_many(7), resource=configmaps)
    with k8s.ApiClient(config) as raw_client, pytest.raises(ApiException) as throttled:
        k8s.CoreV1Api(raw_client).list_namespaced_config_map("default")
    assert throttled.value.status == 429
    assert throttled.value.headers["Retry-After"] == "7"


def test_sync_client_honours_retry_after(
    server: KubeAPIServer, faulty: FaultyStore, configmaps: APIResource, core: Any
) -> None:
    faulty.fail_next("list", too_many(1), resource=configmaps)
    started = time.monotonic()
    assert core.list_namespaced_config_map("default").items == []
    assert time.monotonic() - started >= 1
    assert [e.status for e in server.requests] == [429, 200]


@pytest.mark.anyio
async def test_asyncio_client_lists_and_watches(store: InMemoryStore) -> None:
    """``kubernetes.aio`` (aiohttp) in the test's own loop, the server beside it."""
    from kubernetes.aio import client as aio
    from kubernetes.aio import config as aio_config
    from kubernetes.aio import watch as aio_watch

    async with serve_in_background(store) as server:
        api_client = await aio_config.new_client_from_config_dict(server.kubeconfig())
        async with api_client:
            core = aio.CoreV1Api(api_client)
            start = (await core.list_namespaced_config_map("default")).metadata.resource_version
            await core.create_namespaced_config_map(
                "default", aio.V1ConfigMap(metadata=aio.V1ObjectMeta(name="async"))
            )
            names = []
            async with aio_watch.Watch() as w:
                async for event in w.stream(
                    core.list_namespaced_config_map,
                    "default",
                    resource_version=start,
                    timeout_seconds=1,
                ):
                    names.append((event["type"], event["object"].metadata.name))
            assert names == [("ADDED", "async")]
            deleted = await core.delete_namespaced_config_map(
                "async", "default", propagation_policy=PropagationPolicy.BACKGROUND.value
            )
            assert deleted["status"] == "Success"
