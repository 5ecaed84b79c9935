"""Watch streams over raw HTTP, fault injection, the request log, restarts and concurrency."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from ownergc.errors import ResourceExpired, ServerError, TooManyRequests, error_for_status
from ownergc.protocols import APIResource
from ownergc.testing.faults import FaultyStore
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, serve_in_background
from tests.facade.facade_helpers import PARTIAL, configmap, connect, request

BASE = "/api/v1/namespaces/default/configmaps"


class Stream:
    """A watch response read one JSON event per line."""

    def __init__(self, resp: http.client.HTTPResponse) -> None:
        self.resp = resp

    def next(self) -> dict[str, Any]:
        line = self.resp.readline()
        assert line, "the watch stream ended"
        event: dict[str, Any] = json.loads(line)
        return event

    def rest(self) -> list[dict[str, Any]]:
        """Every remaining event until the server ends the stream cleanly."""
        return [json.loads(line) for line in self.resp.read().splitlines() if line.strip()]


@contextmanager
def watch(server: KubeAPIServer, query: str, accept: str | None = None) -> Iterator[Stream]:
    conn = connect(server)
    try:
        conn.request("GET", f"{BASE}?watch=true&{query}", headers={"Accept": accept or "*/*"})
        resp = conn.getresponse()
        assert resp.status == 200
        assert resp.getheader("Transfer-Encoding") == "chunked"
        assert resp.getheader("Content-Type") == "application/json"
        yield Stream(resp)
    finally:
        conn.close()


def wait_until(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def create(server: KubeAPIServer, name: str, **meta: Any) -> dict[str, Any]:
    reply = request(server, "POST", BASE, configmap(name, **meta))
    assert reply.status == 201, reply.body
    created: dict[str, Any] = reply.json()
    return created


# ---------------------------------------------------------------- watch


def test_watch_streams_added_modified_deleted_from_a_version(server: KubeAPIServer) -> None:
    first = create(server, "before")
    rv = first["metadata"]["resourceVersion"]
    with watch(server, f"resourceVersion={rv}") as events:
        create(server, "a")
        patch = request(
            server,
            "PATCH",
            f"{BASE}/a",
            {"data": {"k": "2"}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patch.status == 200
        assert request(server, "DELETE", f"{BASE}/a").status == 200
        seen = [events.next() for _ in range(3)]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("DELETED", "a"),
    ]
    assert seen[1]["object"]["data"] == {"k": "2"}
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in seen]
    assert versions == sorted(versions) and versions[0] > int(rv)


def test_watch_without_version_lists_first_then_ends_at_timeout(server: KubeAPIServer) -> None:
    create(server, "x")
    started = time.monotonic()
    with watch(server, "timeoutSeconds=1") as events:
        rest = events.rest()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in rest] == [("ADDED", "x")]
    assert 0.9 <= time.monotonic() - started < 5
    assert server.open_watches == 0


def test_metadata_only_watch_events(server: KubeAPIServer) -> None:
    with watch(server, "resourceVersion=1", accept=f"{PARTIAL},application/json") as events:
        create(server, "m")
        event = events.next()
    assert event["type"] == "ADDED"
    assert event["object"]["kind"] == "PartialObjectMetadata"
    assert "data" not in event["object"]


def test_watch_field_selector_on_name(server: KubeAPIServer) -> None:
    with watch(server, "resourceVersion=1&fieldSelector=metadata.name%3Dwanted") as events:
        create(server, "other")
        create(server, "wanted")
        event = events.next()
    assert event["object"]["metadata"]["name"] == "wanted"


def test_watch_label_selector_turns_transitions_into_added_and_deleted(
    server: KubeAPIServer,
) -> None:
    create(server, "l", labels={"app": "no"})
    rv = request(server, "GET", BASE).json()["metadata"]["resourceVersion"]
    with watch(server, f"resourceVersion={rv}&labelSelector=app%3Dyes") as events:
        merge = {"Content-Type": "application/merge-patch+json"}
        for value in ("yes", "yes", "no"):
            patch = {"metadata": {"labels": {"app": value}}, "data": {"v": str(time.time())}}
            assert request(server, "PATCH", f"{BASE}/l", patch, headers=merge).status == 200
        seen = [events.next()["type"] for _ in range(3)]
    assert seen == ["ADDED", "MODIFIED", "DELETED"]


def test_client_closing_a_watch_releases_it(server: KubeAPIServer) -> None:
    with watch(server, "resourceVersion=1"):
        wait_until(lambda: server.open_watches == 1)
    wait_until(lambda: server.open_watches == 0)


def test_drop_watches_closes_the_connection_mid_stream(
    server: KubeAPIServer, faulty: FaultyStore
) -> None:
    with watch(server, "resourceVersion=1") as events:
        create(server, "d")
        assert events.next()["type"] == "ADDED"
        assert faulty.drop_watches() == 1
        with pytest.raises(http.client.IncompleteRead):
            events.resp.read()
    wait_until(lambda: server.open_watches == 0)
    assert faulty.open_watches == 0


def test_expire_watches_sends_410_error_event_and_fails_old_versions(
    server: KubeAPIServer, faulty: FaultyStore
) -> None:
    old = create(server, "e1")["metadata"]["resourceVersion"]
    create(server, "e2")
    with watch(server, f"resourceVersion={old}") as events:
        assert events.next()["object"]["metadata"]["name"] == "e2"
        wait_until(lambda: faulty.open_watches == 1)
        assert faulty.expire_watches() == 1
        rest = events.rest()  # ends cleanly after the ERROR event
    assert [e["type"] for e in rest] == ["ERROR"]
    status = rest[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    with watch(server, f"resourceVersion={old}") as events:
        again = events.rest()
    assert again[0]["object"]["code"] == 410
    current = request(server, "GET", BASE).json()["metadata"]["resourceVersion"]
    with watch(server, f"resourceVersion={current}&timeoutSeconds=1") as events:
        assert events.rest() == []  # a relisted client watches again normally


def test_watch_from_an_evicted_version_is_an_error_event() -> None:
    store = InMemoryStore(event_window=2)

    async def main() -> list[dict[str, Any]]:
        async with serve_in_background(store) as server:
            for i in range(5):
                await store.create_object(configmap(f"w{i}"))
            with anyio.fail_after(10):
                stream = await anyio.connect_tcp("127.0.0.1", server.port)
                async with stream:
                    await stream.send(
                        f"GET {BASE}?watch=1&resourceVersion=2 HTTP/1.1\r\nHost: x\r\n"
                        "Connection: close\r\n\r\n".encode()
                    )
                    data = b""
                    while b"0\r\n\r\n" not in data:
                        data += await stream.receive()
        body = data.split(b"\r\n\r\n", 1)[1]
        lines = [ln for ln in body.split(b"\r\n") if ln.startswith(b"{")]
        return [json.loads(ln) for ln in lines]

    events = anyio.run(main)
    assert [e["type"] for e in events] == ["ERROR"]
    assert events[0]["object"]["code"] == 410


# ---------------------------------------------------------------- scripted faults
# The facade has no fault hooks: a FaultyStore admits each request and the facade
# answers what it raises as kube-apiserver would (Status body, Retry-After).


def test_a_scripted_429_with_retry_after_then_recovers(
    server: KubeAPIServer, faulty: FaultyStore, configmaps: APIResource
) -> None:
    busy = TooManyRequests("slow down", reason="TooManyRequests", retry_after=3)
    faulty.fail_next("list", busy, resource=configmaps, times=2)
    for _ in range(2):
        reply = request(server, "GET", BASE)
        assert reply.status == 429
        assert reply.headers["retry-after"] == "3"
        assert reply.json()["reason"] == "TooManyRequests"
    assert request(server, "GET", BASE).status == 200
    assert [e.status for e in server.requests] == [429, 429, 200]


def test_scripted_faults_match_by_verb_resource_and_name(
    server: KubeAPIServer, faulty: FaultyStore, configmaps: APIResource
) -> None:
    create(server, "f")
    faulty.fail_next("delete", ServerError("etcd is sad", reason="InternalError"))
    unavailable = error_for_status(503, "later", reason="ServiceUnavailable", retry_after=0.5)
    faulty.fail_next("get", unavailable, resource=configmaps, name="f")
    assert request(server, "GET", BASE).status == 200  # neither matches a list
    reply = request(server, "GET", f"{BASE}/f")
    assert reply.status == 503 and reply.headers["retry-after"] == "1"  # rounded up
    assert request(server, "GET", f"{BASE}/f").status == 200
    failed = request(server, "DELETE", f"{BASE}/f")
    assert failed.status == 500 and failed.json()["reason"] == "InternalError"
    assert request(server, "DELETE", f"{BASE}/f").status == 200
    faulty.fail_next("list", ResourceExpired("gone", reason="Gone"))
    faulty.clear_scripted()
    assert request(server, "GET", BASE).status == 200


def test_delay_next_slows_a_successful_response(
    server: KubeAPIServer, faulty: FaultyStore, configmaps: APIResource
) -> None:
    faulty.delay_next("list", 0.3, resource=configmaps)
    started = time.monotonic()
    assert request(server, "GET", BASE).status == 200
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    request(server, "GET", BASE)
    assert time.monotonic() - started < 0.3


def test_a_scripted_fault_on_a_watch_request_answers_before_the_stream(
    server: KubeAPIServer, faulty: FaultyStore
) -> None:
    faulty.fail_next("watch", ResourceExpired("too old resource version", reason="Expired"))
    conn = connect(server)
    try:
        conn.request("GET", f"{BASE}?watch=true&resourceVersion=1")
        resp = conn.getresponse()
        assert resp.status == 410
        assert json.loads(resp.read())["reason"] == "Expired"
    finally:
        conn.close()


def test_a_scripted_fault_on_group_version_discovery(
    server: KubeAPIServer, faulty: FaultyStore
) -> None:
    down = error_for_status(503, "the aggregated server is down", reason="ServiceUnavailable")
    faulty.fail_next("discover", down, name="apps/v1")
    assert request(server, "GET", "/api/v1").status == 200
    assert request(server, "GET", "/apis/apps/v1").status == 503
    assert request(server, "GET", "/apis/apps/v1").status == 200


def test_serving_a_store_that_is_not_in_memory_is_refused() -> None:
    with pytest.raises(TypeError, match="InMemoryStore or a wrapper"):
        KubeAPIServer(object())  # type: ignore[arg-type]


def test_request_log_counts_verbs(server: KubeAPIServer) -> None:
    create(server, "c")
    request(server, "GET", f"{BASE}/c")
    request(server, "GET", BASE)
    request(
        server, "PATCH", f"{BASE}/c", [], headers={"Content-Type": "application/json-patch+json"}
    )
    request(server, "DELETE", f"{BASE}/c")
    request(server, "GET", "/apis")
    assert dict(server.verb_counts) == {
        "create": 1,
        "get": 1,
        "list": 1,
        "patch": 1,
        "delete": 1,
        "discovery": 1,
    }
    assert server.request_count() == 6 and server.request_count("delete") == 1
    assert server.requests[-2] == ("DELETE", f"{BASE}/c", 200)
    server.clear_requests()
    assert server.requests == [] and server.request_count() == 0


# ---------------------------------------------------------------- lifecycle


def test_restart_on_the_same_port_keeps_the_store(store: InMemoryStore) -> None:
    async def main() -> None:
        async with serve_in_background(store) as first:
            port = first.port
            async with await anyio.connect_tcp("127.0.0.1", port) as s:
                body = json.dumps(configmap("kept")).encode()
                await s.send(
                    f"POST {BASE} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n".encode()
                    + body
                )
                assert (await s.receive()).startswith(b"HTTP/1.1 201")
        with pytest.raises(OSError):
            await anyio.connect_tcp("127.0.0.1", port)
        async with anyio.create_task_group() as tg:
            await tg.start(first.serve)  # serving again reuses the port
            assert first.port == port
            async with await anyio.connect_tcp("127.0.0.1", port) as s:
                await s.send(
                    f"GET {BASE}/kept HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
                )
                assert (await s.receive()).startswith(b"HTTP/1.1 200")
            tg.cancel_scope.cancel()

    anyio.run(main)


def test_many_concurrent_connections_with_open_watches(server: KubeAPIServer) -> None:
    watchers = 30
    conns = [connect(server) for _ in range(watchers)]
    try:
        responses = []
        for conn in conns:
            conn.request("GET", f"{BASE}?watch=true&resourceVersion=1")
            responses.append(conn.getresponse())
        wait_until(lambda: server.open_watches == watchers)
        errors: list[BaseException] = []

        def writer(i: int) -> None:
            try:
                for j in range(5):
                    assert request(server, "POST", BASE, configmap(f"c-{i}-{j}")).status == 201
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        for resp in responses:
            names = {json.loads(resp.readline())["object"]["metadata"]["name"] for _ in range(100)}
            assert len(names) == 100
    finally:
        for conn in conns:
            conn.close()
    wait_until(lambda: server.open_watches == 0)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_serves_under_both_anyio_backends(store: InMemoryStore, backend: str) -> None:
    if backend == "trio":
        pytest.importorskip("trio", minversion="0.32")  # what anyio's trio extra needs

    async def main() -> bytes:
        async with (
            serve_in_background(store) as server,
            await anyio.connect_tcp("127.0.0.1", server.port) as s,
        ):
            await s.send(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            with anyio.fail_after(5):
                while True:
                    try:
                        data += await s.receive()
                    except anyio.EndOfStream:
                        return data

    data = anyio.run(main, backend=backend)
    assert data.startswith(b"HTTP/1.1 200 OK")
    assert b'"NamespaceList"' in data
