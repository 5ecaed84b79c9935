"""/healthz, /readyz, /metrics and the debug graph served by the controller."""

from __future__ import annotations

import anyio
import pytest

from ownergc.controller._http import ControllerEndpoints, serve_http
from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import delete, make, ref, running_gc, settle

pytestmark = pytest.mark.anyio


async def http_get(port: int, path: str) -> tuple[int, dict[str, str], str]:
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        try:
            while True:
                data += await stream.receive()
        except anyio.EndOfStream:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return status, headers, body.decode()


async def test_probes_metrics_and_graph() -> None:
    store = InMemoryStore()
    async with running_gc(store) as gc, anyio.create_task_group() as tg:
        port = await tg.start(
            lambda task_status: serve_http(
                ControllerEndpoints(gc), host="127.0.0.1", port=0, task_status=task_status
            )
        )
        owner = await make(store, "ConfigMap", "owner")
        dep = await make(store, "Secret", "dep", owners=[ref(owner)])
        await settle(gc)

        assert (await http_get(port, "/healthz"))[0] == 200
        status, _, body = await http_get(port, "/readyz")
        assert status == 200 and "synced" in body

        status, headers, dot = await http_get(port, "/debug/controllers/garbagecollector/graph")
        assert status == 200
        assert headers["Content-Type"] == "text/vnd.graphviz"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert f'"{dep["metadata"]["uid"]}" -> "{owner["metadata"]["uid"]}";' in dot

        _, _, sub = await http_get(
            port, f"/debug/controllers/garbagecollector/graph?uid={owner['metadata']['uid']}"
        )
        assert sub.count(" [\n") == 2
        assert (await http_get(port, "/debug/controllers/garbagecollector/other"))[0] == 404

        await delete(store, owner, "Background")
        await settle(gc)
        status, headers, metrics = await http_get(port, "/metrics")
        assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert 'ownergc_deletions_total{policy="Background"} 1' in metrics
        assert 'workqueue_adds_total{name="garbage_collector_attempt_to_delete"}' in metrics
        assert 'workqueue_depth{name="garbage_collector_graph_changes"} 0' in metrics
        assert "garbagecollector_controller_resources_sync_error_total 0" in metrics
        assert (
            'workqueue_work_duration_seconds_bucket{name="garbage_collector_attempt_to_delete",le="+Inf"}'
            in metrics
        )
        assert "ownergc_synced 1" in metrics
        tg.cancel_scope.cancel()


async def test_readyz_reports_not_ready_until_synced() -> None:
    store = InMemoryStore()
    from ownergc.controller import GarbageCollector

    gc = GarbageCollector(store)
    endpoints = ControllerEndpoints(gc)
    resp = endpoints("GET", "/readyz", {})
    assert resp.status == 503
    assert endpoints("POST", "/healthz", {}).status == 405
