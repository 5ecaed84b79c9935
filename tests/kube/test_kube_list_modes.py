"""How KubeStore lists: consistent pages, the watch cache, watch-list, and their fallbacks.

The facade answers as a recent kube-apiserver; :class:`ListProxy` in front of
it plays servers that cannot serve a list from a cache (410, "too large
resource version", a list that pages whatever the version) or that do not
serve watch-list (a refusal, or a server that ignores ``sendInitialEvents``).
The end-to-end tests run the collector on the store with watches expiring
or dropping while the cluster changes, and check that the graph converges
to exactly what the server holds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from ownergc.protocols import APIResource
from ownergc.testing.faults import FaultyStore
from ownergc_backends.kube import KubeStore
from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import make, ref, running_gc
from tests.kube.kube_helpers import kube_store_for, served, settle_over_http
from tests.kube.list_proxy import ListProxy, Rule, kubeconfig_for, status_answer

pytestmark = pytest.mark.anyio

GRAPH_FIELDS = {
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "ownerReferences",
    "finalizers",
    "deletionTimestamp",
}


async def populate(mem: InMemoryStore, owners: int = 30, per_owner: int = 4) -> None:
    for i in range(owners):
        owner = await make(mem, "ConfigMap", f"owner-{i}")
        for j in range(per_owner):
            await make(mem, "ConfigMap", f"dep-{i}-{j}", owners=[ref(owner, block=True)])


def configmaps(mem: InMemoryStore) -> APIResource:
    return mem.resource_for("v1", "ConfigMap")


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o["metadata"] for o in items}


def ownership(items: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {
        meta["uid"]: sorted(r["uid"] for r in meta.get("ownerReferences") or ())
        for meta in by_name(items).values()
    }


@asynccontextmanager
async def behind(
    mem: InMemoryStore | FaultyStore, rule: Rule, *, watch_cache: bool = True
) -> AsyncIterator[ListProxy]:
    """The facade serving ``mem``, behind a proxy applying ``rule``."""
    async with served(mem, watch_cache=watch_cache) as server:
        proxy = ListProxy(server.port, rule)
        async with proxy.running():
            yield proxy


async def kube_behind(proxy: ListProxy, **options: Any) -> KubeStore:
    options.setdefault("qps", 0)
    return await KubeStore.from_kubeconfig_dict(kubeconfig_for(proxy.url), **options)


def forward(method: str, path: str, query: dict[str, str]) -> None:
    return None


# -- from the cache --------------------------------------------------------------------


async def test_a_monitor_list_asks_the_cache_and_gets_the_graph_fields() -> None:
    mem = InMemoryStore()
    await populate(mem)
    async with behind(mem, forward) as proxy, await kube_behind(proxy) as kube:
        cached = await kube.list(configmaps(mem), consistent=False)
        current = await kube.list(configmaps(mem))
    lists = proxy.queries("/configmaps")
    assert lists[0]["resourceVersion"] == "0"
    # The consistent list names no version: etcd's newest state.
    assert "resourceVersion" not in lists[-1]
    assert ownership(cached.items) == ownership(current.items)
    assert len(cached.items) == 150
    for obj in cached.items:
        # Only the graph's fields are built; the absent ones stay absent.
        assert {"name", "namespace", "uid", "resourceVersion"} <= set(obj["metadata"])
        assert set(obj["metadata"]) <= GRAPH_FIELDS
        assert (obj["apiVersion"], obj["kind"]) == ("meta.k8s.io/v1", "PartialObjectMetadata")
    # The consistent list keeps the rest of the metadata.
    assert all("creationTimestamp" in o["metadata"] for o in current.items)


async def test_a_server_that_pages_the_cache_list_is_read_to_the_end() -> None:
    """Without its watch cache the facade pages every list by ``limit``, as
    kube-apiserver with ``--watch-cache=false`` does at resourceVersion=0: the
    continue tokens are followed."""
    mem = InMemoryStore()
    await populate(mem)
    async with (
        behind(mem, forward, watch_cache=False) as proxy,
        await kube_behind(proxy, list_page_size=40) as kube,
    ):
        cached = await kube.list(configmaps(mem), consistent=False)
        assert kube.list_modes["cache-paginated"] == 1
    assert len(cached.items) == 150
    assert len({o["metadata"]["uid"] for o in cached.items}) == 150
    pages = proxy.queries("/configmaps")
    assert len(pages) == 4 and pages[0]["resourceVersion"] == "0"
    assert all("continue" in q for q in pages[1:])


@pytest.mark.parametrize(
    "refusal",
    [
        status_answer(410, "Expired", "too old resource version: 1 (5)"),
        status_answer(
            504,
            "Timeout",
            "Too large resource version: 99, current: 5",
            causes=[{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            retryAfterSeconds=1,
        ),
    ],
    ids=["expired", "too-large"],
)
async def test_a_relist_the_cache_cannot_serve_falls_back_to_a_consistent_list(
    refusal: bytes,
) -> None:
    """After a watch, a relist asks for a state at least as new as the watch saw
    (no limit: served by the cache); when the cache refuses, a consistent list."""
    mem = InMemoryStore()
    await populate(mem, owners=5)
    refuse = {"on": False}

    def rule(method: str, path: str, query: dict[str, str]) -> bytes | None:
        versioned = query.get("resourceVersion") not in (None, "", "0")
        if refuse["on"] and "watch" not in query and versioned:
            return refusal
        return None

    async with behind(mem, rule) as proxy, await kube_behind(proxy, sleep=_no_sleep) as kube:
        res = configmaps(mem)
        first = await kube.list(res, consistent=False)
        stream = kube.watch(res, resource_version=first.resource_version, timeout_seconds=5)
        made = await make(mem, "ConfigMap", "late")
        async for event in stream:
            if event.object["metadata"].get("name") == "late":
                break
        await stream.aclose()  # type: ignore[attr-defined]
        relist = await kube.list(res, consistent=False)
        assert made["metadata"]["uid"] in {o["metadata"]["uid"] for o in relist.items}
        newest = relist.resource_version
        refuse["on"] = True
        await make(mem, "ConfigMap", "later")
        fallback = await kube.list(res, consistent=False)
        assert kube.list_modes["consistent"] == 1
    lists = [q for q in proxy.queries("/configmaps") if "watch" not in q]
    # The relist after the watch: the version the watch reached, no limit.
    assert lists[1]["resourceVersion"] not in ("", "0") and "limit" not in lists[1]
    assert lists[2]["resourceVersion"] == newest
    # The fallback: no version at all, paginated.
    assert "resourceVersion" not in lists[3] and lists[3]["limit"] == "500"
    assert {o["metadata"]["name"] for o in fallback.items} == {
        o["metadata"]["name"] for o in mem.snapshot() if o["kind"] == "ConfigMap"
    }


async def test_a_server_rejecting_version_zero_gets_a_consistent_list() -> None:
    def rule(method: str, path: str, query: dict[str, str]) -> bytes | None:
        if query.get("resourceVersion") == "0":
            return status_answer(400, "BadRequest", "resourceVersion: unsupported value")
        return None

    mem = InMemoryStore()
    await populate(mem, owners=5)
    async with behind(mem, rule) as proxy, await kube_behind(proxy) as kube:
        listed = await kube.list(configmaps(mem), consistent=False)
        assert kube.list_modes["consistent"] == 1 and not kube.list_modes["cache"]
    lists = proxy.queries("/configmaps")
    assert [q.get("resourceVersion") for q in lists] == ["0", None]
    assert len(listed.items) == 25
    assert all(set(o["metadata"]) <= GRAPH_FIELDS for o in listed.items)
    assert all("uid" in o["metadata"] for o in listed.items)


async def _no_sleep(delay: float) -> None:
    await anyio.lowlevel.checkpoint()


# -- watch-list ------------------------------------------------------------------------


async def test_watch_list_streams_the_initial_state_where_served() -> None:
    mem = InMemoryStore()
    await populate(mem)
    async with behind(mem, forward) as proxy, await kube_behind(proxy, watch_list=True) as kube:
        streamed = await kube.list(configmaps(mem), consistent=False)
        current = await kube.list(configmaps(mem))
        assert kube.list_modes["watch-list"] == 1
        assert not kube.watch_list_unsupported
    first = proxy.queries("/configmaps")[0]
    assert first["sendInitialEvents"] == "true"
    assert first["resourceVersionMatch"] == "NotOlderThan"
    assert first["allowWatchBookmarks"] == "true"
    assert ownership(streamed.items) == ownership(current.items)
    assert streamed.resource_version == current.resource_version


async def test_a_server_refusing_watch_list_is_remembered_and_listed() -> None:
    """A 1.24 server rejects ``resourceVersionMatch`` on a watch (422): list instead,
    and do not ask again."""

    def rule(method: str, path: str, query: dict[str, str]) -> bytes | None:
        if "sendInitialEvents" in query:
            return status_answer(
                422,
                "Invalid",
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",
            )
        return None

    mem = InMemoryStore()
    await populate(mem, owners=5)
    async with behind(mem, rule) as proxy, await kube_behind(proxy, watch_list=True) as kube:
        one = await kube.list(configmaps(mem), consistent=False)
        two = await kube.list(configmaps(mem), consistent=False)
        assert kube.watch_list_unsupported == {"v1"}
        assert kube.list_modes["cache"] == 2
    asked = [q for q in proxy.queries("/configmaps") if "sendInitialEvents" in q]
    assert len(asked) == 1
    assert ownership(one.items) == ownership(two.items) and len(one.items) == 25


async def test_a_server_ignoring_send_initial_events_is_detected() -> None:
    """A server that drops the parameters watches "from now on" after sending the
    current objects, with no initial-events-end bookmark: silence gives it away."""

    def rule(method: str, path: str, query: dict[str, str]) -> str | None:
        if "sendInitialEvents" in query:
            return "/api/v1/configmaps?" + "watch=true&allowWatchBookmarks=true"
        return None

    mem = InMemoryStore()
    await populate(mem, owners=5)
    options = {"watch_list": True, "watch_list_idle_timeout": 0.5}
    async with behind(mem, rule) as proxy, await kube_behind(proxy, **options) as kube:
        listed = await kube.list(configmaps(mem), consistent=False)
        assert kube.watch_list_unsupported == {"v1"}
        assert kube.list_modes["cache"] == 1 and not kube.list_modes["watch-list"]
    assert len(listed.items) == 25


# -- relists converge ------------------------------------------------------------------


def graph_matches(gc: Any, mem: InMemoryStore) -> None:
    """The graph holds every ConfigMap with exactly the owners the server has."""
    want = {
        o["metadata"]["uid"]: sorted(r["uid"] for r in o["metadata"].get("ownerReferences") or ())
        for o in mem.snapshot()
        if o["kind"] == "ConfigMap"
    }
    have = {
        uid: sorted(r.uid for r in node.owners)
        for uid, node in gc.uid_to_node.items()
        if node.kind == "ConfigMap" and not node.virtual
    }
    assert have == want


@pytest.mark.parametrize("fault", ["expire", "drop"])
@pytest.mark.parametrize("watch_list", [False, True], ids=["cache-list", "watch-list"])
async def test_relists_after_faults_converge_to_the_servers_graph(
    fault: str, watch_list: bool
) -> None:
    mem = InMemoryStore()
    await populate(mem, owners=10, per_owner=3)
    faulty = FaultyStore(mem)
    async with (
        served(faulty) as server,
        kube_store_for(server, watch_list=watch_list) as kube,
        running_gc(kube, workers=3) as gc,
    ):
        await settle_over_http(gc, store=mem)
        graph_matches(gc, mem)
        owners = [o for o in mem.snapshot() if o["metadata"]["name"].startswith("owner-")]
        for round_ in range(4):
            if fault == "expire":
                faulty.expire_watches()
            else:
                faulty.drop_watches()
            # Changes while the monitors relist or re-watch.
            await make(mem, "ConfigMap", f"new-{round_}", owners=[ref(owners[round_], block=True)])
            victim = f"dep-{round_}-0"
            await mem.delete(configmaps(mem), victim, namespace="default")
            moved = f"dep-{round_}-1"
            await mem.patch(
                configmaps(mem),
                moved,
                {"metadata": {"ownerReferences": [ref(owners[-1 - round_])]}},
                patch_type="application/merge-patch+json",  # type: ignore[arg-type]
                namespace="default",
            )
            await anyio.sleep(0.05)
        await settle_over_http(gc, store=mem)
        graph_matches(gc, mem)
        counts = kube.list_modes
        assert counts["watch-list" if watch_list else "cache"] >= 1
        if fault == "expire":
            # Every expiry made the monitor list again.
            assert sum(counts.values()) > len(gc.monitored_resources())
