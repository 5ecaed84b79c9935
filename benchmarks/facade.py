"""The REST facade's request rate: N GETs, LISTs, PATCHes and DELETEs over one
keep-alive connection.

The facade (``ownergc_backends.memory.http.KubeAPIServer`` over an
InMemoryStore holding ``--objects`` ConfigMaps) runs in a child process, so
that the client's work does not share its interpreter; the client sends one
request at a time on one connection (``http.client``), as a controller's
informer or kubectl does, and reads every response whole.

The cases: ``get`` (one ConfigMap, whole), ``list`` (``--objects`` of them),
and the garbage collector's own requests, as ``ownergc controller`` sends them
(metadata-only ``Accept``): ``get-meta`` (a GET of one object's metadata),
``patch`` (a merge patch of one object's ownerReferences, alternating between
two values so that every PATCH writes) and ``delete`` (a DELETE with a
DeleteOptions body carrying the uid precondition and the propagation policy,
of a new object each time). Two cases write a Pod, the kind with the most
defaults (one container with a port and a probe, one volume): ``pod-create``
(a POST of a new Pod each time, answered whole) and ``pod-patch`` (the
``patch`` case's merge patch of one Pod's ownerReferences).

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
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

CM = "/api/v1/namespaces/default/configmaps"
#: What the collector's requests accept (metadata only, JSON as the fallback).
META_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
#: One request: method, path, body, headers.
Call = tuple[str, str, bytes | None, dict[str, str]]


CASES = ("get", "list", "get-meta", "patch", "delete", "pod-create", "pod-patch")
PODS = "/api/v1/namespaces/default/pods"


def _pod(name: str) -> dict[str, object]:
    """A small Pod as a client writes it: one container with a port and a probe, one
    volume (what the server defaults fills in the rest)."""
    probe = {"httpGet": {"port": 8080}}
    container = {
        "name": "app",
        "image": "registry.example/app:1.0",
        "ports": [{"containerPort": 8080}],
        "readinessProbe": probe,
        "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {"containers": [container], "volumes": [{"name": "cache", "emptyDir": {}}]},
    }


def _serve(objects: int, doomed: int) -> None:
    """The child: fill a store, serve it, print the URL and the uids of the objects to
    delete, run until stdin closes."""
    from ownergc_backends.memory import InMemoryStore
    from ownergc_backends.memory.http import run_in_thread

    store = InMemoryStore()
    configmaps = store.resource_for("v1", "ConfigMap")

    with run_in_thread(store) as server:
        create = functools.partial(store.create, namespace="default")
        for i in range(objects):
            body = {"metadata": {"name": f"cm-{i}", "labels": {"i": str(i)}}, "data": {"k": "v"}}
            server.call(create, configmaps, body)
        uids = []
        if doomed:  # in a namespace of their own: the LIST case lists ``objects``
            namespaces = store.resource_for("v1", "Namespace")
            server.call(store.create, namespaces, {"metadata": {"name": "doomed"}})
        create = functools.partial(store.create, namespace="doomed")
        for i in range(doomed):
            body = {"metadata": {"name": f"doomed-{i}"}, "data": {"k": "v"}}
            uids.append(server.call(create, configmaps, body)["metadata"]["uid"])
        pods = store.resource_for("v1", "Pod")
        server.call(functools.partial(store.create, namespace="default"), pods, _pod("patched"))
        print(server.url, flush=True)
        print(json.dumps(uids), flush=True)
        # Each line asks for the CPU seconds this process (the server) used so far.
        for _line in sys.stdin:
            print(time.process_time(), flush=True)


def _round(
    conn: http.client.HTTPConnection, calls: Iterator[Call], n: int, cpu: Callable[[], float]
) -> tuple[float, float]:
    """Requests per second, and the server's CPU microseconds per request."""
    batch = [next(calls) for _ in range(n)]
    cpu_before = cpu()
    started = time.perf_counter()
    for method, path, body, headers in batch:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        resp.read()
        if resp.status not in (200, 201):
            raise SystemExit(f"{method} {path}: {resp.status}")
    elapsed = time.perf_counter() - started
    return n / elapsed, (cpu() - cpu_before) / n * 1e6


def _calls(case: str, uids: list[str]) -> Iterator[Call]:
    """The requests of one case, without end (``delete``: as many as there are uids)."""
    meta = {"Accept": META_ACCEPT}
    if case == "get":
        yield from itertools.repeat(("GET", f"{CM}/cm-0", None, {}))
    elif case == "list":
        yield from itertools.repeat(("GET", CM, None, {}))
    elif case == "get-meta":
        yield from itertools.repeat(("GET", f"{CM}/cm-0", None, meta))
    elif case in ("patch", "pod-patch"):
        headers = {**meta, "Content-Type": "application/merge-patch+json"}
        path = f"{CM}/cm-1" if case == "patch" else f"{PODS}/patched"
        for i in itertools.count():
            ref = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": f"owner-{i % 2}",
                "uid": f"00000000-0000-0000-0000-00000000000{i % 2}",
            }
            body = {"metadata": {"ownerReferences": [ref]}}
            yield ("PATCH", path, json.dumps(body).encode(), headers)
    elif case == "pod-create":
        headers = {"Content-Type": "application/json"}
        for i in itertools.count():
            yield ("POST", PODS, json.dumps(_pod(f"bench-{i}")).encode(), headers)
    elif case == "delete":
        headers = {**meta, "Content-Type": "application/json"}
        for i, uid in enumerate(uids):
            options = {
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "propagationPolicy": "Background",
                "preconditions": {"uid": uid},
            }
            path = f"/api/v1/namespaces/doomed/configmaps/doomed-{i}"
            yield ("DELETE", path, json.dumps(options).encode(), headers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="requests per round and case")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--objects", type=int, default=20, help="ConfigMaps in the list")
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--doomed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.objects, args.doomed)
        return
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        raise SystemExit(f"unknown cases: {', '.join(sorted(unknown))}")
    warm_up = min(200, args.n)
    doomed = warm_up + args.n * args.rounds if "delete" in cases else 0
    child = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve",
            "--objects",
            str(args.objects),
            "--doomed",
            str(doomed),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        uids = json.loads(child.stdout.readline())
        parts = urlsplit(url)
        assert parts.hostname is not None and parts.port is not None
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        stdin, stdout = child.stdin, child.stdout
        assert stdin is not None

        def server_cpu() -> float:
            stdin.write("cpu\n")
            stdin.flush()
            return float(stdout.readline())

        for name in cases:
            calls = _calls(name, uids)
            _round(conn, calls, warm_up, server_cpu)
            rounds = [_round(conn, calls, args.n, server_cpu) for _ in range(args.rounds)]
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
