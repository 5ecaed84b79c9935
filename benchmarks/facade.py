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
disturbed by other load) and the median.
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
        sys.stdin.read()


def _rate(conn: http.client.HTTPConnection, path: str, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise SystemExit(f"GET {path}: {resp.status}")
    return n / (time.perf_counter() - started)


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
        cases = {"get": f"{CM}/cm-0", "list": CM}
        for name, path in cases.items():
            _rate(conn, path, min(200, args.n))  # warm up
            rates = [_rate(conn, path, args.n) for _ in range(args.rounds)]
            print(
                json.dumps(
                    {
                        "case": name,
                        "objects": args.objects if name == "list" else 1,
                        "requests": args.n,
                        "best_per_s": round(max(rates)),
                        "median_per_s": round(statistics.median(rates)),
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
