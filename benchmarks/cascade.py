"""Cascading deletion through the kube backend: objects/s and requests per object.

Each case builds a tree in an InMemoryStore, serves it with the Kubernetes
REST facade (``ownergc_backends.memory.http``), and runs the
GarbageCollector on a :class:`~ownergc_backends.kube.KubeStore` pointed at
the facade over loopback HTTP. After the initial sync the facade's counters
are reset, the root is deleted directly in the store (the user's DELETE is
not the collector's cost), and the clock runs until every object the
collector must remove is gone.

Shapes: ``fanout`` (one owner, N dependents with ``blockOwnerDeletion``) and
``chain`` (a line of N objects, each owning the next). ``collected`` counts
the objects the collector removed: the dependents, plus the root under
Foreground (the collector removes its ``foregroundDeletion`` finalizer).
``requests_per_object`` is the facade's count of get/list/watch/create/patch/
delete requests during the cascade divided by ``collected`` (discovery is
reported separately: it is periodic, not per object).

Run: ``python benchmarks/cascade.py`` (the default cases), or e.g.
``python benchmarks/cascade.py --shape fanout --sizes 2000 --qps 40 --burst 30``.
Prints one JSON object per line per case. The facade, the client and the
collector share one event loop (and the machine's cores), so objects/s is a
lower bound for the client side; requests per object does not depend on it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from _which_ownergc import checkout_unless_installed  # benchmarks/

sys.path.extend(checkout_unless_installed())

from ownergc.controller import GarbageCollector
from ownergc_backends.kube import DEFAULT_BURST, DEFAULT_QPS, KubeStore
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import serve_in_background

COST_VERBS = ("get", "list", "watch", "create", "patch", "delete", "update")


def _ref(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


async def build(store: InMemoryStore, shape: str, n: int) -> tuple[dict[str, Any], list[Any]]:
    """The root and the objects the collector must remove (as (apiVersion, kind, name))."""
    root = await store.create_object(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "root", "namespace": "default"},
        }
    )
    doomed: list[tuple[str, str, str]] = []
    if shape == "fanout":
        for i in range(n):
            obj = await store.create_object(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {
                        "name": f"dep-{i:06d}",
                        "namespace": "default",
                        "ownerReferences": [_ref(root)],
                        "labels": {"app": "bench"},
                    },
                }
            )
            doomed.append(("v1", "Secret", obj["metadata"]["name"]))
    elif shape == "chain":
        parent = root
        for i in range(1, n):
            parent = await store.create_object(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": f"link-{i:04d}",
                        "namespace": "default",
                        "ownerReferences": [_ref(parent)],
                    },
                }
            )
            doomed.append(("v1", "ConfigMap", parent["metadata"]["name"]))
    else:
        raise ValueError(f"unknown shape {shape!r}")
    return root, doomed


class _DeletionWatch:
    """Counts the doomed objects' DELETED events on the store's own watch.

    Polling ``exists`` for 20,000 names would steal the event loop from the
    collector; a watch costs O(1) per deletion.
    """

    def __init__(self, store: InMemoryStore, doomed: list[tuple[str, str, str]]) -> None:
        self.store = store
        self.pending = {(av, kind, name) for av, kind, name in doomed}
        self.done = anyio.Event()

    async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        kinds = sorted({(av, kind) for av, kind, _ in self.pending})
        rv = self.store.resource_version
        async with anyio.create_task_group() as tg:
            for av, kind in kinds:
                tg.start_soon(self._watch, av, kind, rv)
            task_status.started()

    async def _watch(self, api_version: str, kind: str, rv: str) -> None:
        resource = self.store.resource_for(api_version, kind)
        async for ev in self.store.watch(resource, resource_version=rv):
            if ev.type == "DELETED":
                self.pending.discard((api_version, kind, ev.object["metadata"]["name"]))
                if not self.pending:
                    self.done.set()


async def run_case(
    shape: str, n: int, policy: str, qps: float, burst: int, workers: int, timeout: float
) -> dict[str, Any]:
    store = InMemoryStore()
    _root, doomed = await build(store, shape, n)
    if policy == "Foreground":
        doomed.append(("v1", "ConfigMap", "root"))
    async with serve_in_background(store) as server:
        kube = await KubeStore.from_kubeconfig_dict(server.kubeconfig(), qps=qps, burst=burst)
        async with kube:
            gc = GarbageCollector(kube, workers=workers)
            async with anyio.create_task_group() as tg:
                tg.start_soon(gc.run)
                with anyio.fail_after(300):
                    await gc.wait_synced()
                    await gc.wait_idle()
                    # Under a QPS budget the monitors' first watch requests may
                    # still be queued in the rate limiter: let them go out
                    # before counting, so the figures are the cascade's own.
                    while server.open_watches < len(gc.monitored_resources()):
                        await anyio.sleep(0.01)
                server.clear_requests()
                kube.reset_counts()
                metrics_before = dict(gc.metrics.deletions)
                resource = store.resource_for("v1", "ConfigMap")
                watchers = _DeletionWatch(store, doomed)
                await tg.start(watchers.run)
                start = time.perf_counter()
                await store.delete(resource, "root", namespace="default", propagation_policy=policy)
                with anyio.move_on_after(timeout):
                    await watchers.done.wait()
                remaining = sorted(watchers.pending)
                timed_out = bool(remaining)
                elapsed = time.perf_counter() - start
                counts = {verb: server.request_count(verb) for verb in (*COST_VERBS, "discovery")}
                client_counts = kube.request_counts
                retries = kube.retries
                throttled_s = kube.rate_limiter.waited
                tg.cancel_scope.cancel()
    collected = len(doomed) - len(remaining)
    cost = sum(counts[v] for v in COST_VERBS)
    return {
        "shape": shape,
        "n": n,
        "policy": policy,
        "qps": qps,
        "burst": burst,
        "workers": workers,
        "collected": collected,
        "timed_out": timed_out,
        "seconds": round(elapsed, 3),
        "objects_per_s": round(collected / elapsed, 1) if elapsed > 0 else None,
        "requests": cost,
        "requests_per_object": round(cost / collected, 3) if collected else None,
        "server_requests": {k: v for k, v in counts.items() if v},
        "client_requests": {k: v for k, v in client_counts.items() if v},
        "retries": retries,
        "throttled_seconds": round(throttled_s, 2),
        "gc_deletions": {k: v - metrics_before.get(k, 0) for k, v in gc.metrics.deletions.items()},
        "cache_decisions": gc.metrics.cache_decisions,
        "cache_fallbacks": gc.metrics.cache_fallbacks,
    }


async def _http_get(port: int, path: str) -> tuple[int, str]:
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        with contextlib.suppress(anyio.EndOfStream):
            while True:
                data += await stream.receive()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def _process_cpu(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_case_process(
    shape: str,
    n: int,
    policy: str,
    qps: float,
    burst: int,
    workers: int,
    timeout: float,
    profile: str | None = None,
) -> dict[str, Any]:
    """The same case with the collector as a separate `ownergc controller` process.

    The apiserver side (store, facade, deletion watch) and the collector then
    run on separate cores, as a real apiserver and kube-controller-manager do;
    the inline mode makes them share one event loop and one core.

    The collector starts on an empty cluster and syncs; then the tree is
    created (the collector sees every ADDED event, as it does in a cluster)
    and the root deleted. Its CPU is counted from the first create to the
    last deletion, as issue 11 measured kube-controller-manager's, and for
    the cascade alone (from the root's DELETE). ``profile`` samples the
    collector with py-spy over that window into a speedscope file.
    """
    store = InMemoryStore()
    doomed: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with serve_in_background(store) as server:
            kubeconfig = Path(tmp) / "kubeconfig"
            server.write_kubeconfig(kubeconfig)
            cmd = controller_command(kubeconfig, port := _free_port(), workers, qps, burst)
            # At the default log level, as a user runs it (-v logs every deletion).
            async with await anyio.open_process(cmd, stdout=None, stderr=subprocess.PIPE) as proc:
                assert proc.stderr is not None

                async def drain_stderr() -> None:
                    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
                        while True:
                            await proc.stderr.receive()  # type: ignore[union-attr]

                async with anyio.create_task_group() as tg:
                    tg.start_soon(drain_stderr)
                    with anyio.fail_after(300):
                        while (await _ready(port)) != 200:
                            await anyio.sleep(0.05)
                        await _steady_watches(server)
                    spy = _start_profiler(proc.pid, profile) if profile else None
                    cpu_start = _process_cpu(proc.pid)
                    _root, doomed = await build(store, shape, n)
                    if policy == "Foreground":
                        doomed.append(("v1", "ConfigMap", "root"))
                    await anyio.sleep(1.0)  # the creation events are processed meanwhile
                    server.clear_requests()
                    resource = store.resource_for("v1", "ConfigMap")
                    watchers = _DeletionWatch(store, doomed)
                    await tg.start(watchers.run)
                    cpu_created = _process_cpu(proc.pid)
                    server_cpu_start = time.process_time()
                    start = time.perf_counter()
                    await store.delete(
                        resource, "root", namespace="default", propagation_policy=policy
                    )
                    with anyio.move_on_after(timeout):
                        await watchers.done.wait()
                    elapsed = time.perf_counter() - start
                    server_cpu = time.process_time() - server_cpu_start
                    cpu_total = _process_cpu(proc.pid)
                    if spy is not None:
                        spy.send_signal(2)  # SIGINT: py-spy writes its file and exits
                        await anyio.to_thread.run_sync(spy.wait)
                    remaining = sorted(watchers.pending)
                    counts = {v: server.request_count(v) for v in (*COST_VERBS, "discovery")}
                    _, metrics = await _http_get(port, "/metrics")
                    proc.terminate()
                    tg.cancel_scope.cancel()
    collected = len(doomed) - len(remaining)
    cost = sum(counts[v] for v in COST_VERBS)

    def metric(name: str) -> float:
        m = re.search(rf"^{re.escape(name)} (\S+)$", metrics, re.M)
        return float(m.group(1)) if m else 0.0

    def per_object(seconds: float) -> int | None:
        return round(seconds / collected * 1e6) if collected else None

    return {
        "shape": shape,
        "n": n,
        "policy": policy,
        "qps": qps,
        "burst": burst,
        "workers": workers,
        "collector": "process",
        "collected": collected,
        "timed_out": bool(remaining),
        "seconds": round(elapsed, 3),
        "objects_per_s": round(collected / elapsed, 1) if elapsed > 0 else None,
        "requests": cost,
        "requests_per_object": round(cost / collected, 3) if collected else None,
        "server_requests": {k: v for k, v in counts.items() if v},
        "cache_decisions": metric("ownergc_cache_decisions_total"),
        "cache_fallbacks": metric("ownergc_cache_fallbacks_total"),
        # The collector process's own user+system CPU (the facade's excluded) per
        # collected object: from the first create to the last deletion (every
        # creation watch event included), and for the cascade alone.
        "collector_cpu_us_per_object": per_object(cpu_total - cpu_start),
        "cascade_cpu_us_per_object": per_object(cpu_total - cpu_created),
        # This process's CPU over the cascade (the facade serving the collector, the
        # store, the deletion watch) per collected object: the server side's cost,
        # which other load on the machine disturbs much less than objects/s.
        "server_cpu_us_per_object": per_object(server_cpu),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _ready(port: int) -> int:
    """/readyz's status, 0 while the collector is not listening yet."""
    try:
        return (await _http_get(port, "/readyz"))[0]
    except OSError:
        return 0


async def _steady_watches(server: Any) -> None:
    """Until the collector's watches are open and their number has held for a second."""
    seen, since = -1, time.monotonic()
    while True:
        now = server.open_watches
        if now != seen:
            seen, since = now, time.monotonic()
        elif now >= 2 and time.monotonic() - since >= 1.0:
            return
        await anyio.sleep(0.05)


def controller_command(
    kubeconfig: Path, port: int, workers: int, qps: float, burst: int
) -> list[str]:
    """``ownergc controller`` against a facade's kubeconfig (``qps <= 0``: unthrottled)."""
    unthrottled = qps <= 0
    return [
        sys.executable,
        "-m",
        "ownergc",
        "controller",
        "--kubeconfig",
        str(kubeconfig),
        "--port",
        str(port),
        "--bind-address",
        "127.0.0.1",
        "--workers",
        str(workers),
        "--qps",
        str(1e9 if unthrottled else qps),
        "--burst",
        str(10**9 if unthrottled else burst),
    ]


def _start_profiler(pid: int, path: str) -> subprocess.Popen[bytes]:
    """py-spy sampling ``pid`` (pip install py-spy) until SIGINT, into ``path``."""
    cmd = ["py-spy", "record", "--pid", str(pid), "--rate", "250", "-o", path]
    fmt = "speedscope" if path.endswith(".json") else "raw"
    cmd += ["--format", fmt]
    spy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # attached before the first create
    return spy


DEFAULT_CASES = [
    # (shape, n, qps, burst)
    ("fanout", 2000, 0.0, 0),
    ("fanout", 20000, 0.0, 0),
    ("chain", 200, 0.0, 0),
    ("fanout", 2000, DEFAULT_QPS, DEFAULT_BURST),
    ("chain", 200, DEFAULT_QPS, DEFAULT_BURST),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=["fanout", "chain"])
    parser.add_argument("--sizes", default=None, help="comma-separated N (with --shape)")
    parser.add_argument("--policies", default="Background,Foreground")
    parser.add_argument("--qps", type=float, default=None, help="0 = unthrottled")
    parser.add_argument("--burst", type=int, default=None)
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=900.0, help="per case, seconds")
    parser.add_argument(
        "--collector",
        choices=["process", "inline"],
        default="process",
        help="run the collector as an `ownergc controller` process (own core, as in a "
        "cluster; default) or inline on the facade's event loop",
    )
    parser.add_argument(
        "--profile",
        default=None,
        metavar="PATH",
        help="sample the collector process with py-spy from the first create to the last "
        "deletion: PATH.json (speedscope) or any other name (collapsed stacks)",
    )
    args = parser.parse_args(argv)
    if args.shape:
        sizes = [int(s) for s in (args.sizes or "2000").split(",")]
        qps = DEFAULT_QPS if args.qps is None else args.qps
        burst = DEFAULT_BURST if args.burst is None else args.burst
        cases = [(args.shape, n, qps, burst) for n in sizes]
    else:
        cases = DEFAULT_CASES
    for shape, n, qps, burst in cases:
        for policy in args.policies.split(","):
            case = (shape, n, policy, qps, burst, args.workers, args.timeout)
            if args.collector == "process":
                result = anyio.run(run_case_process, *case, args.profile)
            else:
                result = anyio.run(run_case, *case)
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
