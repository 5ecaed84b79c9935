"""KubeStore conformance over real HTTP: the facade of InMemoryStore on loopback.

Each test drives KubeStore (kubernetes.aio underneath) against
``ownergc_backends.memory.http.KubeAPIServer`` and checks the answer, the
translated error, or the facade's request counters. What every ObjectStore
must do (CRUD, preconditions, patch types, 415, compaction) is the contract
suite's, run against KubeStore in tests/contract/; this module keeps what is
KubeStore's own (discovery paths, metadata-only, retries, timeouts, limits).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from ownergc.errors import (
    AlreadyExists,
    Conflict,
    Invalid,
    NotFound,
    ResourceExpired,
    ServerError,
    TooManyRequests,
    Unavailable,
    error_for_status,
)
from ownergc.protocols import APIResource, ObjectStore, PatchType, PropagationPolicy
from ownergc.testing.faults import FaultyStore
from ownergc_backends.kube import KubeStore, TokenBucket
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer
from tests.kube.kube_helpers import kube_store_for, served

pytestmark = pytest.mark.anyio


def too_many(retry_after: float) -> TooManyRequests:
    return TooManyRequests("injected", reason="TooManyRequests", retry_after=retry_after)


def configmaps(mem: InMemoryStore) -> APIResource:
    return mem.resource_for("v1", "ConfigMap")


PARTIAL = ("meta.k8s.io/v1", "PartialObjectMetadata")


@pytest.fixture
def mem() -> InMemoryStore:
    store = InMemoryStore()
    store.register_resource(
        group="example.com", versions="v1", resource="widgets", kind="Widget", namespaced=True
    )
    return store


@pytest.fixture
def faulty(mem: InMemoryStore) -> FaultyStore:
    return FaultyStore(mem)


@pytest.fixture
async def server(
    mem: InMemoryStore, request: pytest.FixtureRequest
) -> AsyncIterator[KubeAPIServer]:
    """Served through ``faulty`` (no random faults) when the test scripts faults."""
    wanted = "faulty" in request.fixturenames
    async with served(request.getfixturevalue("faulty") if wanted else mem) as srv:
        yield srv


@pytest.fixture
async def kube(server: KubeAPIServer) -> AsyncIterator[KubeStore]:
    async with kube_store_for(server) as store:
        yield store


async def cm(mem: InMemoryStore, name: str, **meta: Any) -> dict[str, Any]:
    created: dict[str, Any] = await mem.create_object(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", **meta},
            "data": {"big": "x" * 100},
        }
    )
    return created


def res(mem: InMemoryStore, api_version: str, kind: str) -> Any:
    return mem.resource_for(api_version, kind)


# -- discovery -------------------------------------------------------------------


async def test_is_an_object_store(kube: KubeStore) -> None:
    assert isinstance(kube, ObjectStore)


async def test_discovery_matches_the_store(mem: InMemoryStore, kube: KubeStore) -> None:
    got = await kube.discover()
    want = await mem.discover()
    assert not got.failed
    assert {(r.group, r.version, r.resource) for r in got.resources} == {
        (r.group, r.version, r.resource) for r in want.resources
    }
    by_key = {(r.group, r.version, r.resource): r for r in got.resources}
    for r in want.resources:
        mine = by_key[(r.group, r.version, r.resource)]
        assert (mine.kind, mine.namespaced, mine.verbs, mine.preferred) == (
            r.kind,
            r.namespaced,
            r.verbs,
            r.preferred,
        ), r
    assert all("/" not in r.resource for r in got.resources)
    widgets = by_key[("example.com", "v1", "widgets")]
    assert widgets.kind == "Widget" and widgets.namespaced


async def test_a_failing_group_version_does_not_hide_the_others(
    mem: InMemoryStore, kube: KubeStore
) -> None:
    mem.set_discovery_failure("example.com/v1", "the aggregated server is down")
    got = await kube.discover()
    assert "example.com/v1" in got.failed
    assert not any(r.group == "example.com" for r in got.resources)
    assert any(r.resource == "configmaps" for r in got.resources)


async def test_legacy_discovery_with_an_injected_503(
    server: KubeAPIServer, faulty: FaultyStore, mem: InMemoryStore
) -> None:
    async with kube_store_for(server, aggregated_discovery=False) as kube:
        down = error_for_status(503, "injected", reason="ServiceUnavailable")
        faulty.fail_next("discover", down, name="example.com/v1")
        got = await kube.discover()
        assert list(got.failed) == ["example.com/v1"]
        assert "503" in got.failed["example.com/v1"]
        assert any(r.resource == "deployments" for r in got.resources)
        again = await kube.discover()
        assert not again.failed


# -- metadata-only reads ---------------------------------------------------------------


async def test_list_get_watch_are_metadata_only(mem: InMemoryStore, kube: KubeStore) -> None:
    a = await cm(mem, "a", labels={"x": "y"})
    r = res(mem, "v1", "ConfigMap")
    listed = await kube.list(r)
    assert listed.resource_version
    (item,) = listed.items
    assert (item["apiVersion"], item["kind"]) == PARTIAL
    assert set(item) == {"apiVersion", "kind", "metadata"}
    assert item["metadata"]["uid"] == a["metadata"]["uid"]
    assert item["metadata"]["labels"] == {"x": "y"}

    got = await kube.get(r, "a", namespace="default")
    assert (got["apiVersion"], got["kind"]) == PARTIAL and "data" not in got

    full = await kube.get(r, "a", namespace="default", metadata_only=False)
    assert (full["apiVersion"], full["kind"]) == ("v1", "ConfigMap")
    assert full["data"] == {"big": "x" * 100}

    full_list = await kube.list(r, metadata_only=False)
    assert full_list.items[0]["data"] == {"big": "x" * 100}

    events = []
    stream = kube.watch(r, resource_version=listed.resource_version, timeout_seconds=5)
    await cm(mem, "b")
    async for ev in stream:
        events.append(ev)
        break
    await stream.aclose()  # type: ignore[attr-defined]
    assert events[0].type == "ADDED"
    assert (events[0].object["apiVersion"], events[0].object["kind"]) == PARTIAL
    assert events[0].object["metadata"]["name"] == "b"
    assert "data" not in events[0].object


async def test_list_paginates_into_one_snapshot(server: KubeAPIServer, mem: InMemoryStore) -> None:
    for i in range(25):
        await cm(mem, f"cm-{i:02d}")
    async with kube_store_for(server, list_page_size=10) as kube:
        listed = await kube.list(res(mem, "v1", "ConfigMap"))
        assert [o["metadata"]["name"] for o in listed.items] == [f"cm-{i:02d}" for i in range(25)]
        # A server that pages sends 3 requests; one that ignores limit sends 1.
        assert kube.request_counts["list"] in (1, 3)


async def test_get_in_namespace_and_cluster_scoped(mem: InMemoryStore, kube: KubeStore) -> None:
    await mem.create_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n1"}})
    ns = await kube.get(res(mem, "v1", "Namespace"), "n1")
    assert ns["metadata"]["name"] == "n1"
    with pytest.raises(NotFound):
        await kube.get(res(mem, "v1", "ConfigMap"), "missing", namespace="default")


# -- watch --------------------------------------------------------------------------


async def collect(stream: Any, n: int, timeout: float = 5.0) -> list[Any]:
    out = []
    with anyio.fail_after(timeout):
        async for ev in stream:
            out.append(ev)
            if len(out) >= n:
                break
    await stream.aclose()
    return out


async def test_watch_resumes_from_the_last_version_after_a_drop(
    server: KubeAPIServer, faulty: FaultyStore, mem: InMemoryStore, kube: KubeStore
) -> None:
    r = res(mem, "v1", "ConfigMap")
    start = (await kube.list(r)).resource_version
    await cm(mem, "a")
    await cm(mem, "b")
    first = await collect(kube.watch(r, resource_version=start), 2)
    assert [e.object["metadata"]["name"] for e in first] == ["a", "b"]
    last_rv = first[-1].object["metadata"]["resourceVersion"]

    # The server drops the stream: the iterator ends normally (caller re-watches).
    stream = kube.watch(r, resource_version=last_rv, timeout_seconds=30)
    ended = anyio.Event()
    seen: list[Any] = []

    async def consume() -> None:
        async for ev in stream:
            seen.append(ev)
        ended.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await anyio.sleep(0.2)
        faulty.drop_watches()
        with anyio.fail_after(5):
            await ended.wait()
    assert seen == []
    await cm(mem, "c")
    again = await collect(kube.watch(r, resource_version=last_rv), 1)
    assert [e.object["metadata"]["name"] for e in again] == ["c"]  # no duplicates


async def test_watch_sees_modified_and_deleted(mem: InMemoryStore, kube: KubeStore) -> None:
    r = res(mem, "v1", "ConfigMap")
    a = await cm(mem, "a")
    rv = a["metadata"]["resourceVersion"]
    await mem.patch(
        r,
        "a",
        {"metadata": {"labels": {"v": "2"}}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    await mem.delete(r, "a", namespace="default")
    events = await collect(kube.watch(r, resource_version=rv), 2)
    assert [e.type for e in events] == ["MODIFIED", "DELETED"]
    assert events[0].object["metadata"]["labels"] == {"v": "2"}


async def test_watch_expired_raises_resource_expired(
    server: KubeAPIServer, faulty: FaultyStore, mem: InMemoryStore, kube: KubeStore
) -> None:
    r = res(mem, "v1", "ConfigMap")
    start = (await kube.list(r)).resource_version
    stream = kube.watch(r, resource_version=start, timeout_seconds=30)
    failure: list[BaseException] = []

    async def consume() -> None:
        try:
            async for _ in stream:
                pass
        except ResourceExpired as exc:
            failure.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await anyio.sleep(0.2)
        faulty.expire_watches()
    assert len(failure) == 1 and failure[0].code == 410


async def test_cancelling_a_watch_releases_its_connection(
    server: KubeAPIServer, mem: InMemoryStore, kube: KubeStore
) -> None:
    r = res(mem, "v1", "ConfigMap")
    start = (await kube.list(r)).resource_version
    with anyio.move_on_after(0.3):
        async for _ in kube.watch(r, resource_version=start, timeout_seconds=60):
            pass
    # The server sees the connection close (its watch ends) without waiting for
    # timeoutSeconds, and the client's pool holds nothing.
    with anyio.fail_after(5):
        while server.open_watches:
            await anyio.sleep(0.01)
    assert len(kube._transport.session.connector._acquired) == 0
    # The store still works after the cancelled watch.
    assert (await kube.list(r)).items == []


# -- writes ---------------------------------------------------------------------------


async def test_patch_conflict_and_invalid(mem: InMemoryStore, kube: KubeStore) -> None:
    r = res(mem, "v1", "ConfigMap")
    await cm(mem, "a")
    with pytest.raises(Conflict):
        await kube.patch(
            r,
            "a",
            {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}},
            patch_type=PatchType.MERGE,
            namespace="default",
        )
    with pytest.raises(Invalid) as info:
        await kube.patch(
            r,
            "a",
            {"metadata": {"uid": "another"}},
            patch_type=PatchType.MERGE,
            namespace="default",
        )
    assert info.value.code == 422


@pytest.mark.parametrize(
    ("policy", "finalizer"),
    [
        (PropagationPolicy.BACKGROUND, None),
        (PropagationPolicy.FOREGROUND, "foregroundDeletion"),
        (PropagationPolicy.ORPHAN, "orphan"),
        (None, None),
    ],
)
async def test_delete_with_policies(
    mem: InMemoryStore, kube: KubeStore, policy: PropagationPolicy | None, finalizer: str | None
) -> None:
    r = res(mem, "v1", "ConfigMap")
    owner = await cm(mem, "owner")
    await cm(
        mem,
        "dep",
        ownerReferences=[
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": "owner",
                "uid": owner["metadata"]["uid"],
            }
        ],
    )
    out = await kube.delete(r, "owner", namespace="default", propagation_policy=policy)
    if finalizer is None:
        assert out is None
        assert not mem.exists("v1", "ConfigMap", "owner", "default")
    else:
        assert out is not None
        assert out["metadata"]["finalizers"] == [finalizer]
        assert out["metadata"]["deletionTimestamp"]


async def test_create_and_already_exists(mem: InMemoryStore, kube: KubeStore) -> None:
    r = res(mem, "v1", "Event")
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": "default"},
        "reason": "OwnerRefInvalidNamespace",
        "involvedObject": {"name": "x"},
    }
    out = await kube.create(r, body, namespace="default")
    assert out["metadata"]["uid"] and out["reason"] == "OwnerRefInvalidNamespace"
    with pytest.raises(AlreadyExists):
        await kube.create(r, body, namespace="default")
    with pytest.raises(Invalid):
        await kube.create(
            res(mem, "v1", "ConfigMap"),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "Bad_Name", "namespace": "default"},
            },
        )


# -- error translation, retries, timeouts --------------------------------------------------


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await anyio.sleep(0)


async def test_429_retry_after_is_honoured(
    server: KubeAPIServer, faulty: FaultyStore, mem: InMemoryStore
) -> None:
    await cm(mem, "a")
    sleeps = Sleeps()
    async with kube_store_for(server, sleep=sleeps) as kube:
        faulty.fail_next("get", too_many(2), resource=configmaps(mem), name="a", times=2)
        got = await kube.get(res(mem, "v1", "ConfigMap"), "a", namespace="default")
        assert got["metadata"]["name"] == "a"
        assert sleeps.delays == [2.0, 2.0]
        assert kube.retries == 2
        assert kube.request_counts["get"] == 3


async def test_429_gives_up_after_max_retries(
    server: KubeAPIServer, faulty: FaultyStore, mem: InMemoryStore
) -> None:
    await cm(mem, "a")
    async with kube_store_for(server, sleep=Sleeps(), max_retries=2) as kube:
        faulty.fail_next("delete", too_many(1), resource=configmaps(mem), name="a", times=5)
        with pytest.raises(TooManyRequests) as info:
            await kube.delete(res(mem, "v1", "ConfigMap"), "a", namespace="default")
        assert info.value.retry_after == 1.0
        assert kube.request_counts["delete"] == 3
    assert mem.exists("v1", "ConfigMap", "a", "default")


async def test_500_is_not_retried_without_retry_after(
    server: KubeAPIServer, faulty: FaultyStore, mem: InMemoryStore, kube: KubeStore
) -> None:
    await cm(mem, "a")
    faulty.fail_next("get", ServerError("injected", reason="InternalError"), name="a")
    with pytest.raises(ServerError) as info:
        await kube.get(res(mem, "v1", "ConfigMap"), "a", namespace="default")
    assert info.value.code == 500
    assert kube.request_counts["get"] == 1
    assert await kube.get(res(mem, "v1", "ConfigMap"), "a", namespace="default")


async def test_503_with_retry_after_is_retried(
    server: KubeAPIServer, faulty: FaultyStore, mem: InMemoryStore
) -> None:
    await cm(mem, "a")
    sleeps = Sleeps()
    async with kube_store_for(server, sleep=sleeps) as kube:
        later = error_for_status(503, "injected", reason="ServiceUnavailable", retry_after=1)
        faulty.fail_next("list", later, resource=configmaps(mem))
        listed = await kube.list(res(mem, "v1", "ConfigMap"))
        assert len(listed.items) == 1 and sleeps.delays == [1.0]


async def test_slow_answer_times_out_as_unavailable(
    server: KubeAPIServer, faulty: FaultyStore, mem: InMemoryStore
) -> None:
    await cm(mem, "a")
    async with kube_store_for(server, request_timeout=0.3) as kube:
        faulty.delay_next("get", 2.0, resource=configmaps(mem), name="a")
        with pytest.raises(Unavailable, match="timeout"):
            await kube.get(res(mem, "v1", "ConfigMap"), "a", namespace="default")
        # The next request gets a fresh connection and succeeds.
        assert await kube.get(res(mem, "v1", "ConfigMap"), "a", namespace="default")


async def test_connection_refused_is_unavailable(mem: InMemoryStore) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    async with await KubeStore.from_kubeconfig_dict(config) as kube:
        with pytest.raises(Unavailable, match="cannot connect"):
            await kube.discover()
        with pytest.raises(Unavailable):
            await kube.list(res(mem, "v1", "ConfigMap"))
        with pytest.raises(Unavailable):
            await collect(kube.watch(res(mem, "v1", "ConfigMap"), resource_version="0"), 1)


# -- rate limiting and counters ------------------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept = 0.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept += seconds
        self.now += seconds
        await anyio.sleep(0)


async def test_rate_limit_spaces_requests(server: KubeAPIServer, mem: InMemoryStore) -> None:
    await cm(mem, "a")
    t = FakeTime()
    bucket = TokenBucket(10, 3, clock=t.clock, sleep=t.sleep)
    async with kube_store_for(server, rate_limiter=bucket) as kube:
        before = server.request_count("get") if hasattr(server, "request_count") else None
        for _ in range(13):
            await kube.get(res(mem, "v1", "ConfigMap"), "a", namespace="default")
        # burst 3 free, then 10 requests at 10/s: 1.0 s of (fake) waiting.
        assert t.slept == pytest.approx(1.0)
        assert bucket.throttled == 10
        assert kube.request_counts["get"] == 13
        if before is not None:
            assert server.request_count("get") - before == 13


async def test_watches_take_no_token(server: KubeAPIServer, mem: InMemoryStore) -> None:
    """client-go does not rate limit watches (one long request each): opening many
    watches waits for no token, and leaves the bucket to the other requests."""
    t = FakeTime()
    bucket = TokenBucket(10, 1, clock=t.clock, sleep=t.sleep)
    r = res(mem, "v1", "ConfigMap")
    async with kube_store_for(server, rate_limiter=bucket) as kube:
        listed = await kube.list(r)  # the burst's one token
        for _ in range(5):
            events = kube.watch(r, resource_version=listed.resource_version, timeout_seconds=1)
            async with anyio.create_task_group() as tg:

                async def first(events: Any = events) -> None:
                    async for _ in events:
                        break

                tg.start_soon(first)
                await anyio.sleep(0.05)
                await cm(mem, f"w{_}")
        assert kube.request_counts["watch"] == 5
        assert bucket.throttled == 0 and t.slept == 0
        await kube.list(r)
        assert bucket.throttled == 1  # the next non-watch request waits as before


async def test_request_counts_match_the_server(
    server: KubeAPIServer, mem: InMemoryStore, kube: KubeStore
) -> None:
    r = res(mem, "v1", "ConfigMap")
    await cm(mem, "a")
    await kube.discover()
    await kube.list(r)
    await kube.get(r, "a", namespace="default")
    await kube.patch(
        r,
        "a",
        {"metadata": {"labels": {"x": "1"}}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    await kube.delete(r, "a", namespace="default")
    counts = kube.request_counts
    assert counts["list"] == 1 and counts["get"] == 1
    assert counts["patch"] == 1 and counts["delete"] == 1
    assert counts["discovery"] >= 2
    assert kube.requests_total == sum(counts.values())


async def test_discovery_has_a_bucket_of_its_own(server: KubeAPIServer, mem: InMemoryStore) -> None:
    """As kube-controller-manager's "controller-discovery" client has its own rate
    limiter: a start-up's discovery requests do not spend the lists' burst."""
    t = FakeTime()
    lists = TokenBucket(10, 2, clock=t.clock, sleep=t.sleep)
    discovery = TokenBucket(10, 2, clock=t.clock, sleep=t.sleep)
    async with kube_store_for(server, rate_limiter=lists, discovery_rate_limiter=discovery) as kube:
        await kube.discover()
        assert discovery.throttled > 0 and lists.throttled == 0
        r = res(mem, "v1", "ConfigMap")
        await kube.list(r)
        await kube.list(r)
        assert lists.throttled == 0  # the burst of two was still whole
        await kube.list(r)
        assert lists.throttled == 1
