"""The facade's write cost with managedFields: N ConfigMap creates over HTTP, back to back,
without a field manager (``NoFieldManagement``) and with the default ``ManagedFields``.

    PYTHONPATH=$PWD python benchmarks/managedfields.py [N]
"""

from __future__ import annotations

import http.client
import json
import sys
import time
from urllib.parse import urlsplit

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._apiserver.fieldmanager import FieldManager, NoFieldManagement
from ownergc_backends.memory.http import KubeAPIServer


def creates(n: int, fields: FieldManager | None) -> float:
    """Seconds for ``n`` creates on one keep-alive connection (``None``: the default)."""
    server = KubeAPIServer(InMemoryStore(), field_manager=fields)
    with _thread(server):
        parts = urlsplit(server.url)
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port)
        headers = {"Content-Type": "application/json", "User-Agent": "bench/1"}
        start = time.perf_counter()
        for i in range(n):
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"c{i}", "labels": {"app": "x"}},
                "data": {"a": "1", "b": "2"},
            }
            conn.request("POST", "/api/v1/namespaces/default/configmaps", json.dumps(body), headers)
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 201
        elapsed = time.perf_counter() - start
        conn.close()
    return elapsed


def _thread(server: KubeAPIServer):  # type: ignore[no-untyped-def]
    import contextlib

    import anyio
    import anyio.from_thread

    @contextlib.contextmanager
    def run():  # type: ignore[no-untyped-def]
        with anyio.from_thread.start_blocking_portal() as portal:
            future, _ = portal.start_task(server.serve)
            try:
                yield
            finally:
                future.cancel()

    return run()


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    for _ in range(2):
        for label, fields in (
            ("before (NoFieldManagement)", NoFieldManagement()),
            ("after (ManagedFields)", None),
        ):
            t = creates(n, fields)
            print(f"{label}: {n} creates in {t:.2f}s, {t / n * 1e6:.0f} us/create")
