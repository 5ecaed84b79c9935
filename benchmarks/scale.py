"""Scale runs: ~111k objects through the collector, with the result checked against an oracle.

The forest (``--objects N``, default 100000): N/100 owners (ConfigMaps) with
100 dependents each (Secrets, ``blockOwnerDeletion: true``; N dependents in
all), 10 chains of N/100 ConfigMaps (each owning the next), and N/1000
bystanders without owner references. Objects are loaded with
``InMemoryStore.load_objects`` (uids made up up front), so building costs
no API calls.

For each policy (Background, Foreground) a fresh process builds the forest,
starts a GarbageCollector (20 workers, watch-cache decisions) on the chosen
backend, and reports:

* ``sync_seconds``: start to ``wait_synced`` plus every object in the graph;
* ``cascade_seconds``: from DELETE of every owner and chain root (issued
  directly to the store, with the policy) until every object the oracle says
  goes is gone (counted on the store's own watch);
* ``gc_rss_bytes_per_object``: growth of the process's current RSS
  (``/proc/self/statm``) from "store built" to "synced", per object, i.e.
  what the collector (graph, monitors, client; for http also the facade's
  and client's buffers) costs per object; ``store_rss_bytes_per_object`` is
  the InMemoryStore's own cost; ``peak_rss_mb`` is the process peak
  (``getrusage``) at the end, cascade included;
* ``oracle_ok``: the survivors are exactly the oracle's (bystanders, with
  unchanged metadata) and nothing else of the forest remains.

Backends: ``memory`` (the collector on the InMemoryStore), ``http`` (on a
KubeStore talking to the REST facade over loopback; facade, client and
collector share one event loop and one core) and ``process`` (the real
``ownergc controller`` CLI, unthrottled, as its own process on a KubeStore
against the facade in this one, as in a cluster). ``process`` reports the
collector process's own figures: ``sync_seconds`` from its start until
``/metrics`` shows it synced with every object in the graph (interpreter
start-up included), ``collector_rss_bytes_per_object`` (its RSS once synced
minus its RSS on an empty cluster, per object), ``collector_peak_rss_mb``,
and for the cascade ``cascade_cpu_us_per_object`` (its user + system CPU per
object it removed) and ``requests_per_object`` (the facade's count).

Run: ``python benchmarks/scale.py [--objects N] [--backend memory|http|process]
[--policy Background|Foreground]``. Prints one JSON line per case. The full
100k run is a benchmark, not a CI job.
"""

from __future__ import annotations

import argparse
import contextlib
import gc as gc_module
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import anyio
from _which_ownergc import checkout_unless_installed  # benchmarks/

sys.path.extend(checkout_unless_installed())
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ownergc.controller import GarbageCollector
from ownergc.protocols import ObjectList, WatchEvent
from ownergc_backends.memory import InMemoryStore

MONITORED = {("", "configmaps"), ("", "secrets")}
COST_VERBS = ("get", "list", "watch", "create", "patch", "delete", "update")


def _rss_bytes() -> int:
    """Current resident set size (Linux /proc; falls back to the peak elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * resource.getpagesize()
    except OSError:
        return _maxrss_bytes()


def _maxrss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


def _obj(kind: str, name: str, uid: str, owners: list[dict[str, Any]] | None = None) -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


def _ref(kind: str, name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def roots_of(n: int) -> list[tuple[str, str]]:
    """The objects to delete, as (kind, name): every owner and every chain root."""
    owners = [("ConfigMap", f"owner-{i}") for i in range(max(1, n // 100))]
    return owners + [("ConfigMap", f"chain-{c}-0") for c in range(10)]


def forest(n: int) -> Iterator[dict[str, Any]]:
    """The objects, generated (so building the store leaves no high-water mark)."""
    for i in range(max(1, n // 100)):
        uid = str(uuid.uuid4())
        yield _obj("ConfigMap", f"owner-{i}", uid)
        ref = [_ref("ConfigMap", f"owner-{i}", uid)]
        for j in range(100):
            yield _obj("Secret", f"dep-{i}-{j}", str(uuid.uuid4()), ref)
    length = max(1, n // 100)
    for c in range(10):
        prev: list[dict[str, Any]] | None = None
        for k in range(length):
            uid = str(uuid.uuid4())
            name = f"chain-{c}-{k}"
            yield _obj("ConfigMap", name, uid, prev)
            prev = [_ref("ConfigMap", name, uid)]
    for b in range(max(1, n // 1000)):
        yield _obj("Secret", f"bystander-{b}", str(uuid.uuid4()))


def oracle(objs: Iterable[dict[str, Any]], roots: list[tuple[str, str]]) -> dict[str, Any]:
    """Survivors by uid after deleting ``roots`` (Background or Foreground: same end state
    here, as nothing carries a custom finalizer): everything whose owners all go, goes."""
    objs = [o for o in objs if o["kind"] in ("ConfigMap", "Secret")]
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in objs}
    dependents: dict[str, list[dict[str, Any]]] = {}
    for o in objs:
        for r in o["metadata"].get("ownerReferences") or []:
            dependents.setdefault(r["uid"], []).append(o)
    gone = {by_name[r]["metadata"]["uid"] for r in roots}
    queue = deque(gone)
    while queue:
        uid = queue.popleft()
        for dep in dependents.get(uid, []):
            duid = dep["metadata"]["uid"]
            if duid not in gone and all(
                r["uid"] in gone for r in dep["metadata"]["ownerReferences"]
            ):
                gone.add(duid)
                queue.append(duid)
    return {o["metadata"]["uid"]: o for o in objs if o["metadata"]["uid"] not in gone}


def _shape(o: dict[str, Any]) -> tuple[Any, ...]:
    m = o["metadata"]
    return (
        o["kind"],
        m["name"],
        m["uid"],
        tuple(r["uid"] for r in m.get("ownerReferences") or []),
        tuple(m.get("finalizers") or []),
        m.get("deletionTimestamp") is not None,
    )


class _Gone:
    """Counts DELETED events of the store's own watches until ``target`` objects went."""

    def __init__(self, store: InMemoryStore, target: int) -> None:
        self.store, self.target, self.count = store, target, 0
        self.done = anyio.Event()

    async def run(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        rv = self.store.resource_version
        async with anyio.create_task_group() as tg:
            for kind in ("ConfigMap", "Secret"):
                tg.start_soon(self._watch, kind, rv)
            task_status.started()

    async def _watch(self, kind: str, rv: str) -> None:
        res = self.store.resource_for("v1", kind)
        async for ev in self.store.watch(res, resource_version=rv):
            if ev.type == "DELETED":
                self.count += 1
                if self.count >= self.target:
                    self.done.set()


async def run_case(n: int, backend: str, policy: str, workers: int, timeout: float) -> Any:
    if backend == "http":  # import the client before measuring what the collector adds
        import ownergc_backends.kube
        import ownergc_backends.memory.http  # noqa: F401
    roots = roots_of(n)
    rss_start = _rss_bytes()
    store = InMemoryStore(event_window=max(100_000, 4 * n), request_log_limit=1000)
    total = len(store.load_objects(forest(n)))
    ignored = {
        (r.group, r.resource)
        for r in (await store.discover()).resources
        if (r.group, r.resource) not in MONITORED
    }
    rss_built = _rss_bytes()
    result: dict[str, Any] = {
        "backend": backend,
        "policy": policy,
        "objects": total,
        "owners": n // 100,
        "dependents": (n // 100) * 100,
        "chains": "10x" + str(max(1, n // 100)),
        "workers": workers,
    }

    expected: dict[str, Any] = {}

    async def body(gc_store: Any) -> None:
        gc = GarbageCollector(gc_store, workers=workers, ignored_resources=ignored)
        async with anyio.create_task_group() as tg:
            start = time.perf_counter()
            tg.start_soon(gc.run)
            with anyio.fail_after(timeout):
                await gc.wait_synced()
                while len(gc.uid_to_node) < total:
                    await anyio.sleep(0.05)
                await gc.wait_idle(settle=0.2)
            result["sync_seconds"] = round(time.perf_counter() - start, 2)
            rss_synced = _rss_bytes()
            result["store_rss_bytes_per_object"] = round((rss_built - rss_start) / total)
            result["gc_rss_bytes_per_object"] = round((rss_synced - rss_built) / total)
            # The oracle, from the semantics, on the state the cascade starts from.
            expected.update(oracle(store.snapshot(), roots))
            gone = _Gone(store, total - len(expected))
            await tg.start(gone.run)
            elapsed = await _cascade(store, roots, policy, gone, timeout)
            result["cascade_seconds"] = round(elapsed, 2)
            result["objects_per_s"] = round(gone.count / max(result["cascade_seconds"], 1e-9))
            with anyio.move_on_after(timeout):
                await gc.wait_idle(settle=0.2)
            result["gc_deletions"] = dict(gc.metrics.deletions)
            result["gc_errors"] = gc.metrics.errors
            tg.cancel_scope.cancel()

    if backend == "memory":
        await body(store)
    else:
        from ownergc_backends.kube import KubeStore
        from ownergc_backends.memory.http import serve_in_background

        async with serve_in_background(store) as server:
            kube = await KubeStore.from_kubeconfig_dict(server.kubeconfig(), qps=0, burst=0)
            async with kube:
                await body(kube)
    result.update(_against_oracle(store, expected))
    result["peak_rss_mb"] = round(_maxrss_bytes() / 2**20)
    return result


async def _cascade(
    store: Any, roots: list[tuple[str, str]], policy: str, gone: Any, timeout: float
) -> float:
    """Delete the roots with ``policy``; seconds until ``gone`` counted every removal
    (or ``timeout`` passed)."""
    start = time.perf_counter()
    cm = store.resource_for("v1", "ConfigMap")
    for _kind, name in roots:
        await store.delete(cm, name, namespace="default", propagation_policy=policy)
    with anyio.move_on_after(timeout):
        await gone.done.wait()
    return time.perf_counter() - start


def _against_oracle(store: Any, expected: dict[str, Any]) -> dict[str, Any]:
    """The survivors of the cascade in ``store``, and whether they are the oracle's."""
    actual = {
        o["metadata"]["uid"]: o
        for o in store.snapshot()
        if o["kind"] in ("ConfigMap", "Secret")
        and o["metadata"]["namespace"] == "default"
        and o["metadata"]["name"] != "kube-root-ca.crt"
    }
    ok = {u: _shape(o) for u, o in actual.items()} == {u: _shape(o) for u, o in expected.items()}
    return {"survivors": len(actual), "oracle_ok": ok}


def _proc_kb(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` figure (VmRSS, VmHWM) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _metrics(port: int) -> dict[str, float]:
    """The collector's /metrics, unlabelled series only."""
    from cascade import _http_get  # benchmarks/cascade.py

    _, text = await _http_get(port, "/metrics")
    out: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if line and not line.startswith("#") and "{" not in name:
            out[name] = float(value)
    return out


async def _controller(
    server: Any, tmp: str, ignored: set[tuple[str, str]], workers: int
) -> tuple[Any, int]:
    """``ownergc controller`` (the real CLI, unthrottled) against the facade ``server``."""
    from cascade import _free_port, controller_command

    kubeconfig = Path(tmp) / "kubeconfig"
    server.write_kubeconfig(kubeconfig)
    port = _free_port()
    cmd = controller_command(kubeconfig, port, workers, qps=0, burst=0)
    for group, res in sorted(ignored):
        cmd += ["--ignore-resource", f"{group}/{res}"]
    proc = await anyio.open_process(cmd, stdout=None, stderr=subprocess.DEVNULL)
    return proc, port


async def _until_graph_holds(port: int, nodes: int, timeout: float) -> dict[str, float]:
    with anyio.fail_after(timeout):
        while True:
            with contextlib.suppress(OSError):
                metrics = await _metrics(port)
                if (
                    metrics.get("ownergc_synced") == 1
                    and metrics.get("ownergc_graph_nodes", 0) >= nodes
                ):
                    return metrics
            await anyio.sleep(0.05)


async def run_case_process(n: int, policy: str, workers: int, timeout: float) -> Any:
    """The collector as its own ``ownergc controller`` process on a KubeStore, against
    the REST facade of an InMemoryStore in this process: the collector's figures
    (time to sync, RSS, CPU) are its process's alone, the facade's excluded."""
    from ownergc_backends.memory.http import serve_in_background

    roots = roots_of(n)
    result: dict[str, Any] = {
        "backend": "process",
        "policy": policy,
        "owners": n // 100,
        "dependents": (n // 100) * 100,
        "chains": "10x" + str(max(1, n // 100)),
        "workers": workers,
    }
    with tempfile.TemporaryDirectory() as tmp:
        # The same controller on an empty cluster: its RSS is the baseline the
        # per-object figure is counted from.
        empty = InMemoryStore()
        ignored = {
            (r.group, r.resource)
            for r in (await empty.discover()).resources
            if (r.group, r.resource) not in MONITORED
        }
        async with serve_in_background(empty) as server:
            proc, port = await _controller(server, tmp, ignored, workers)
            async with proc:
                base_nodes = (await _until_graph_holds(port, 0, timeout))["ownergc_graph_nodes"]
                await anyio.sleep(1.0)
                rss_empty = _proc_kb(proc.pid, "VmRSS")
                proc.terminate()
        store = InMemoryStore(event_window=max(100_000, 4 * n), request_log_limit=1000)
        total = len(store.load_objects(forest(n)))
        result["objects"] = total
        async with serve_in_background(store) as server:
            start = time.perf_counter()
            proc, port = await _controller(server, tmp, ignored, workers)
            async with proc, anyio.create_task_group() as tg:
                await _until_graph_holds(port, total + base_nodes, timeout)
                result["sync_seconds"] = round(time.perf_counter() - start, 2)
                result["sync_cpu_seconds"] = round(_proc_cpu(proc.pid), 2)
                await anyio.sleep(1.0)  # settled
                rss_synced = _proc_kb(proc.pid, "VmRSS")
                result["collector_rss_mb"] = round(rss_synced / 2**20)
                result["collector_rss_bytes_per_object"] = round((rss_synced - rss_empty) / total)
                expected = oracle(store.snapshot(), roots)
                gone = _Gone(store, total - len(expected))
                await tg.start(gone.run)
                server.clear_requests()
                cpu_before = _proc_cpu(proc.pid)
                elapsed = await _cascade(store, roots, policy, gone, timeout)
                cpu = _proc_cpu(proc.pid) - cpu_before
                result["cascade_seconds"] = round(elapsed, 2)
                # What the collector removed: the roots' dependents, and under
                # Foreground the roots too (it removes their finalizer).
                collected = gone.count - (len(roots) if policy == "Background" else 0)
                result["collected"] = collected
                result["objects_per_s"] = round(collected / max(elapsed, 1e-9))
                result["cascade_cpu_us_per_object"] = round(cpu / max(collected, 1) * 1e6)
                cost = sum(server.request_count(v) for v in COST_VERBS)
                result["requests_per_object"] = round(cost / max(collected, 1), 3)
                result["server_requests"] = {
                    v: c for v in COST_VERBS if (c := server.request_count(v))
                }
                await anyio.sleep(1.0)
                result["collector_peak_rss_mb"] = round(_proc_kb(proc.pid, "VmHWM") / 2**20)
                metrics = await _metrics(port)
                result["gc_errors"] = metrics.get("ownergc_errors_total", 0)
                proc.terminate()
                tg.cancel_scope.cancel()
    result.update(_against_oracle(store, expected))
    return result


def _graph_events(
    owners: int, per_owner: int, batch: int
) -> Iterator[tuple[str, str, list[WatchEvent]]]:
    """Watch events for ``owners`` ReplicaSets with ``per_owner`` Pods each, made a
    batch at a time (as a watch decoder hands them over and drops them)."""
    from graph import make_objects  # benchmarks/graph.py: the same object shapes

    step = max(1, batch // (per_owner + 1))
    for start in range(0, owners, step):
        count = min(step, owners - start)
        owner_objs, dep_objs = make_objects(count, per_owner, first=start)
        yield "apps/v1", "ReplicaSet", [WatchEvent("ADDED", o) for o in owner_objs]
        yield "v1", "Pod", [WatchEvent("ADDED", o) for o in dep_objs]


class _ListedStore:
    """Answers the monitors' initial lists from objects made up front; nothing else."""

    def __init__(self, items: dict[str, list[dict[str, Any]]]) -> None:
        self.items = items

    async def list(self, resource: Any, *, metadata_only: bool = True, **_: Any) -> ObjectList:
        return ObjectList(items=self.items.pop(resource.kind), resource_version="1")


async def run_graph_only(n: int, how: str) -> dict[str, Any]:
    """``n`` objects through the controller's event path, no HTTP and no store.

    ``how``: ``initial_list`` (each monitor's first list, applied the way a
    relist applies it) or ``watch_events`` (ADDED events through the monitor
    callback, made a batch at a time as a watch decoder hands them over).
    One process per mode, RSS being per process; bodies are dropped before
    the RSS is read, so its growth is what the controller keeps.
    """
    from graph import BATCH, Harness, make_objects

    per_owner = 99
    owners = max(1, n // (per_owner + 1))
    from ownergc._core.graph import COMPILED

    result: dict[str, Any] = {
        "mode": how,
        "objects": owners * (per_owner + 1),
        "core": "compiled" if COMPILED else "pure",
    }
    gc_module.collect()
    rss_before = _rss_bytes()
    h = Harness()
    elapsed = 0.0
    if how == "initial_list":
        owner_objs, dep_objs = make_objects(owners, per_owner)
        h.gc.graph_builder.store = _ListedStore({"ReplicaSet": owner_objs, "Pod": dep_objs})  # type: ignore[assignment]
        del owner_objs, dep_objs
        start = time.perf_counter()
        for key in (("apps/v1", "ReplicaSet"), ("v1", "Pod")):
            await h.gc.graph_builder.relist(h.monitors[key])
        await h.drain()
        elapsed = time.perf_counter() - start
    else:
        for api_version, kind, events in _graph_events(owners, per_owner, BATCH * 10):
            start = time.perf_counter()
            await h.feed(events, api_version, kind)
            elapsed += time.perf_counter() - start
            del events
    assert len(h.builder.uid_to_node) == result["objects"]
    gc_module.collect()
    rss_after = _rss_bytes()
    result["seconds"] = round(elapsed, 2)
    result["objects_per_s"] = round(result["objects"] / elapsed)
    result["rss_bytes_per_object"] = round((rss_after - rss_before) / result["objects"])
    result["peak_rss_mb"] = round(_maxrss_bytes() / 2**20)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument(
        "--backend",
        choices=["memory", "http", "process"],
        default="memory",
        help="process: the `ownergc controller` CLI as its own process against the facade",
    )
    parser.add_argument("--policy", choices=["Background", "Foreground"])
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument(
        "--graph-only",
        action="store_true",
        help="only the graph through the controller's event path (no store, no HTTP): "
        "e.g. --graph-only --objects 1000000",
    )
    parser.add_argument(
        "--graph-mode", choices=["initial_list", "watch_events"], help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.graph_only:
        if args.graph_mode is None:
            for how in ("initial_list", "watch_events"):
                cmd = [sys.executable, __file__, "--graph-only", "--graph-mode", how]
                subprocess.run([*cmd, "--objects", str(args.objects)], check=True)
            return
        print(json.dumps(anyio.run(run_graph_only, args.objects, args.graph_mode)), flush=True)
        return
    if args.policy is None:
        # One process per policy: peak RSS is per process.
        for policy in ("Background", "Foreground"):
            cmd = [
                sys.executable,
                __file__,
                "--objects",
                str(args.objects),
                "--backend",
                args.backend,
                "--policy",
                policy,
                "--workers",
                str(args.workers),
                "--timeout",
                str(args.timeout),
            ]
            subprocess.run(cmd, check=True)
        return
    if args.backend == "process":
        result = anyio.run(run_case_process, args.objects, args.policy, args.workers, args.timeout)
    else:
        result = anyio.run(
            run_case, args.objects, args.backend, args.policy, args.workers, args.timeout
        )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
