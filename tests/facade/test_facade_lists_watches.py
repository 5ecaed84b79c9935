"""List and watch the way kube-apiserver answers them (issue 9, items 2 and 3).

Boolean query parameters as the apiserver reads them, limit/continue pages
from one snapshot (410 for an expired token), watch-list (sendInitialEvents)
with its initial-events-end BOOKMARK, BOOKMARK events, and the request log.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.facade_helpers import configmap, connect, request

CMS = "/api/v1/namespaces/default/configmaps"


def read_events(server: KubeAPIServer, path: str, count: int) -> list[dict[str, Any]]:
    """The first ``count`` events of a watch (newline-delimited JSON in chunks)."""
    conn = connect(server)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        assert resp.status == 200
        events = []
        while len(events) < count:
            line = resp.readline()
            assert line, "the watch ended early"
            events.append(json.loads(line))
        return events
    finally:
        conn.close()


@pytest.mark.parametrize("value", ["true", "True", "1", "yes", ""])
def test_watch_flag_is_true_for_anything_but_0_and_false(
    server: KubeAPIServer, store: InMemoryStore, value: str
) -> None:
    request(server, "POST", CMS, configmap("a"))
    [event] = read_events(server, f"{CMS}?watch={value}&resourceVersion=0", 1)
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "a"


@pytest.mark.parametrize("value", ["false", "False", "0"])
def test_watch_0_or_false_is_a_list(server: KubeAPIServer, value: str) -> None:
    reply = request(server, "GET", f"{CMS}?watch={value}")
    assert reply.status == 200 and reply.json()["kind"] == "ConfigMapList"


def test_orphan_dependents_reads_like_the_apiserver(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    request(server, "POST", CMS, configmap("o"))
    reply = request(server, "DELETE", f"{CMS}/o?orphanDependents=True")
    assert reply.status == 200
    assert "orphan" in reply.json()["metadata"]["finalizers"]


def test_pages_come_from_one_snapshot(server: KubeAPIServer) -> None:
    for i in range(5):
        request(server, "POST", CMS, configmap(f"c{i}"))
    first = request(server, "GET", f"{CMS}?limit=2").json()
    assert [o["metadata"]["name"] for o in first["items"]] == ["c0", "c1"]
    assert first["metadata"]["remainingItemCount"] == 3
    rv = first["metadata"]["resourceVersion"]
    # Changes after the first page do not show in the later pages.
    request(server, "DELETE", f"{CMS}/c3")
    request(server, "POST", CMS, configmap("c9"))
    token = first["metadata"]["continue"]
    second = request(server, "GET", f"{CMS}?limit=2&continue={token}").json()
    assert [o["metadata"]["name"] for o in second["items"]] == ["c2", "c3"]
    assert second["metadata"]["resourceVersion"] == rv
    third = request(server, "GET", f"{CMS}?limit=2&continue={second['metadata']['continue']}")
    body = third.json()
    assert [o["metadata"]["name"] for o in body["items"]] == ["c4"]
    assert "continue" not in body["metadata"]


def test_a_list_at_version_0_is_one_answer_from_the_watch_cache(server: KubeAPIServer) -> None:
    """kube-apiserver serves ``resourceVersion=0`` from its watch cache, which
    ignores ``limit``: a reflector's first list is one response."""
    for i in range(5):
        request(server, "POST", CMS, configmap(f"w{i}", labels={"n": str(i % 2)}))
    body = request(server, "GET", f"{CMS}?resourceVersion=0&limit=2").json()
    assert [o["metadata"]["name"] for o in body["items"]] == [f"w{i}" for i in range(5)]
    assert "continue" not in body["metadata"]
    assert body["metadata"]["resourceVersion"] == server.store.resource_version
    # Selectors still apply, and each selection is its own answer.
    odd = request(server, "GET", f"{CMS}?resourceVersion=0&limit=1&labelSelector=n%3D1").json()
    assert [o["metadata"]["name"] for o in odd["items"]] == ["w1", "w3"]
    # Without a version the list is a consistent one, paged.
    assert "continue" in request(server, "GET", f"{CMS}?limit=2").json()["metadata"]


def test_the_cached_answer_follows_writes_and_forms(server: KubeAPIServer) -> None:
    request(server, "POST", CMS, configmap("a"))
    first = request(server, "GET", f"{CMS}?resourceVersion=0")
    again = request(server, "GET", f"{CMS}?resourceVersion=0")
    assert again.body == first.body
    request(server, "POST", CMS, configmap("b"))
    after = request(server, "GET", f"{CMS}?resourceVersion=0").json()
    assert [o["metadata"]["name"] for o in after["items"]] == ["a", "b"]
    assert after["metadata"]["resourceVersion"] != first.json()["metadata"]["resourceVersion"]
    partial = request(
        server,
        "GET",
        f"{CMS}?resourceVersion=0",
        headers={"Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
    ).json()
    assert partial["kind"] == "PartialObjectMetadataList"
    assert [o["kind"] for o in partial["items"]] == ["PartialObjectMetadata"] * 2
    full = request(server, "GET", f"{CMS}?resourceVersion=0").json()
    assert full["kind"] == "ConfigMapList" and "data" in full["items"][0]


def test_without_the_watch_cache_version_0_lists_are_paged(store: InMemoryStore) -> None:
    """As kube-apiserver with ``--watch-cache=false``."""
    with run_in_thread(store, watch_cache=False) as server:
        for i in range(3):
            request(server, "POST", CMS, configmap(f"p{i}"))
        page = request(server, "GET", f"{CMS}?resourceVersion=0&limit=2").json()
    assert len(page["items"]) == 2 and page["metadata"]["remainingItemCount"] == 1


def test_an_expired_continue_token_is_410(server: KubeAPIServer) -> None:
    for i in range(3):
        request(server, "POST", CMS, configmap(f"e{i}"))
    token = request(server, "GET", f"{CMS}?limit=1").json()["metadata"]["continue"]
    server._pages.ttl = -1.0  # everything saved from now on is already too old
    token_old = request(server, "GET", f"{CMS}?limit=1").json()["metadata"]["continue"]
    gone = request(server, "GET", f"{CMS}?limit=1&continue={token_old}")
    assert gone.status == 410 and gone.json()["reason"] == "Expired"
    assert request(server, "GET", f"{CMS}?continue=not-a-token").status == 400
    # The other token was saved before and still works once.
    assert request(server, "GET", f"{CMS}?limit=1&continue={token}").status == 200


def test_watch_list_sends_the_objects_then_the_initial_events_end_bookmark(
    server: KubeAPIServer,
) -> None:
    request(server, "POST", CMS, configmap("x"))
    request(server, "POST", CMS, configmap("y"))
    path = (
        f"{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true&fieldSelector=metadata.name%3Dy"
    )
    added, bookmark = read_events(server, path, 2)
    assert added["type"] == "ADDED" and added["object"]["metadata"]["name"] == "y"
    assert bookmark["type"] == "BOOKMARK"
    meta = bookmark["object"]["metadata"]
    assert meta["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(meta["resourceVersion"]) >= int(added["object"]["metadata"]["resourceVersion"])


def test_a_watch_list_request_is_validated_like_the_apiserver(server: KubeAPIServer) -> None:
    reply = request(server, "GET", f"{CMS}?watch=1&sendInitialEvents=true")
    assert reply.status == 422 and reply.json()["reason"] == "Invalid"


def test_bookmarks_when_allowed(server: KubeAPIServer) -> None:
    server.bookmark_interval = 0.05
    request(server, "POST", CMS, configmap("b"))
    rv = request(server, "GET", CMS).json()["metadata"]["resourceVersion"]
    [event] = read_events(server, f"{CMS}?watch=1&allowWatchBookmarks=true&resourceVersion={rv}", 1)
    assert event["type"] == "BOOKMARK"
    assert event["object"]["kind"] == "ConfigMap"
    assert event["object"]["metadata"]["resourceVersion"] == rv


def test_each_request_is_logged_with_its_status(
    server: KubeAPIServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="ownergc.memory.http"):
        request(server, "GET", f"{CMS}/missing?pretty=true")
    [line] = [r.getMessage() for r in caplog.records if "missing" in r.getMessage()]
    assert line.startswith(f"GET {CMS}/missing?pretty=true 404 ")
    assert line.endswith("ms")
