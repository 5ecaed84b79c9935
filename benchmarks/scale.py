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

Backends: ``memory`` (the collector on the InMemoryStore) and ``http`` (on a
KubeStore talking to the REST facade over loopback; facade, client and
collector share one event loop and one core).

Run: ``python benchmarks/scale.py [--objects N] [--backend memory|http]
[--policy Background|Foreground]``. Prints one JSON line per case. The full
100k run is a benchmark, not a CI job.
"""

from __future__ import annotations

import argparse
import gc as gc_module
import json
import resource
import subprocess
import sys
import time
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ownergc.controller import GarbageCollector
from ownergc.protocols import ObjectList, WatchEvent
from ownergc_backends.memory import InMemoryStore

MONITORED = {("", "configmaps"), ("", "secrets")}


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
            start = time.perf_counter()
            cm = store.resource_for("v1", "ConfigMap")
            for _kind, name in roots:
                await store.delete(cm, name, namespace="default", propagation_policy=policy)
            with anyio.move_on_after(timeout):
                await gone.done.wait()
            result["cascade_seconds"] = round(time.perf_counter() - start, 2)
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
    actual = {
        o["metadata"]["uid"]: o
        for o in store.snapshot()
        if o["kind"] in ("ConfigMap", "Secret")
        and o["metadata"]["namespace"] == "default"
        and o["metadata"]["name"] != "kube-root-ca.crt"
    }
    ok = {u: _shape(o) for u, o in actual.items()} == {u: _shape(o) for u, o in expected.items()}
    result["survivors"] = len(actual)
    result["oracle_ok"] = ok
    result["peak_rss_mb"] = round(_maxrss_bytes() / 2**20)
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

    async def list(self, resource: Any, *, metadata_only: bool = True) -> ObjectList:
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
    result: dict[str, Any] = {"mode": how, "objects": owners * (per_owner + 1)}
    gc_module.collect()
    rss_before = _rss_bytes()
    h = Harness()
    elapsed = 0.0
    if how == "initial_list":
        owner_objs, dep_objs = make_objects(owners, per_owner)
        h.gc.store = _ListedStore({"ReplicaSet": owner_objs, "Pod": dep_objs})  # type: ignore[assignment]
        del owner_objs, dep_objs
        start = time.perf_counter()
        for key in (("apps/v1", "ReplicaSet"), ("v1", "Pod")):
            await h.gc._relist(h.monitors[key])
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
    parser.add_argument("--backend", choices=["memory", "http"], default="memory")
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
    result = anyio.run(
        run_case, args.objects, args.backend, args.policy, args.workers, args.timeout
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
