"""The REST facade's request rate: N GETs and N LISTs over one keep-alive connection.

The facade (``ownergc_backends.memory.http.KubeAPIServer`` over an
InMemoryStore holding ``--objects`` ConfigMaps) runs in a child process, so
that the client's work does not share its interpreter; the client sends one
request at a time on one connection (``http.client``), as a controller's
informer or kubectl does, and reads every response whole.

Which checkout is measured is the one ``PYTHONPATH`` selects for the child:
compare two back to back, e.g.::

    PYTHONPATH=/work/main python benchmarks/facade.py
    PYTHONPATH=$PWD python benchmarks/facade.py

Prints one JSON object per case: requests/s (best of ``--rounds``, the least
disturbed by other load) and the median, and the server process's CPU time
per request (``time.process_time`` in the child, read between rounds), which
other load on the machine disturbs much less than the rate.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from urllib.parse import urlsplit

CM = "/api/v1/namespaces/default/configmaps"


def _serve(objects: int) -> None:
    """The child: fill a store, serve it, print the URL, run until stdin closes."""
    from ownergc_backends.memory import InMemoryStore
    from ownergc_backends.memory.http import run_in_thread

    store = InMemoryStore()
    configmaps = store.resource_for("v1", "ConfigMap")

    with run_in_thread(store) as server:
        for i in range(objects):
            body = {"metadata": {"name": f"cm-{i}", "labels": {"i": str(i)}}, "data": {"k": "v"}}
            server.call(functools.partial(store.create, namespace="default"), configmaps, body)
        print(server.url, flush=True)
        # Each line asks for the CPU seconds this process (the server) used so far.
        for _line in sys.stdin:
            print(time.process_time(), flush=True)


def _round(
    conn: http.client.HTTPConnection, path: str, n: int, cpu: Callable[[], float]
) -> tuple[float, float]:
    """Requests per second, and the server's CPU microseconds per request."""
    cpu_before = cpu()
    started = time.perf_counter()
    for _ in range(n):
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise SystemExit(f"GET {path}: {resp.status}")
    elapsed = time.perf_counter() - started
    return n / elapsed, (cpu() - cpu_before) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="requests per round and case")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--objects", type=int, default=20, help="ConfigMaps in the list")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.objects)
        return
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--objects", str(args.objects)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        parts = urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        stdin, stdout = child.stdin, child.stdout
        assert stdin is not None

        def server_cpu() -> float:
            stdin.write("cpu\n")
            stdin.flush()
            return float(stdout.readline())

        cases = {"get": f"{CM}/cm-0", "list": CM}
        for name, path in cases.items():
            _round(conn, path, min(200, args.n), server_cpu)  # warm up
            rounds = [_round(conn, path, args.n, server_cpu) for _ in range(args.rounds)]
            rates = [r for r, _ in rounds]
            cpus = [c for _, c in rounds]
            print(
                json.dumps(
                    {
                        "case": name,
                        "objects": args.objects if name == "list" else 1,
                        "requests": args.n,
                        "best_per_s": round(max(rates)),
                        "median_per_s": round(statistics.median(rates)),
                        "server_cpu_us_per_request_min": round(min(cpus), 1),
                        "server_cpu_us_per_request_median": round(statistics.median(cpus), 1),
                    }
                ),
                flush=True,
            )
        conn.close()
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=30)


if __name__ == "__main__":
    main()
