"""Graph-builder throughput and memory, the way the controller feeds it.

For each shape (owners x dependents-per-owner) this builds watch-event
objects up front (as a watch decoder would hand them over), then times:

* add events: a watch ADDED event for every owner, then every dependent,
  through the controller's own path (``GarbageCollector``'s monitor
  callback, its graph-changes queue and graph-builder loop, which applies
  ``GraphBuilder.process_upsert`` and dispatches into the work queues);
* DELETED events for the owners, which enqueue every dependent for
  attemptToDelete.

The same events are also applied to a bare ``GraphBuilder`` (``builder_*``:
``process_upsert`` / ``process_delete`` and a ``drain`` per delete, no
controller, no work queues), which is what the graph core itself costs;
``builder_list_add_events_per_s`` applies the same bodies as two list results
(``process_list``, the batch path of a monitor's first list and its relists).

Memory: tracemalloc measures what the graph and the queues hold after the
adds (event bodies are not retained by the controller and are excluded).

Run: ``python benchmarks/graph.py [--shapes 1000x10,10000x10,1x100000] [--repeat 3] [--cpu]
[--builder-only] [--processes N]`` (``--cpu`` times with the process's CPU time instead
of the wall clock: steadier on a machine other work is loading; ``--builder-only`` times
the bare builder alone, a few seconds a run; ``--processes N`` runs it all in N fresh
processes in turn and adds each rate's lowest, median and highest over them).
Prints one JSON object per line per shape; ``core`` says which graph core ran
(``compiled``, what ``pip install .`` builds when a C compiler is present, or
``pure``, with ``OWNERGC_PURE=1``). The ownergc measured is the installed one
(a line on stderr says so when it is not this checkout); ``PYTHONPATH=<checkout>``
measures a checkout instead, and a checkout with nothing installed is measured as it is
(``benchmarks/_which_ownergc.py``).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
import uuid
from typing import Any

import anyio
from _which_ownergc import checkout_unless_installed  # benchmarks/

sys.path.extend(checkout_unless_installed())

from ownergc import GraphBuilder
from ownergc._core.graph import COMPILED
from ownergc.controller import GarbageCollector, WorkQueue
from ownergc.controller._monitors import Monitor
from ownergc.protocols import APIResource, WatchEvent


def make_objects(
    owners: int, per_owner: int, *, first: int = 0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Owners ``first`` .. ``first + owners - 1`` with ``per_owner`` dependents each."""
    owner_objs = []
    dep_objs = []
    for i in range(first, first + owners):
        ouid = str(uuid.uuid4())
        oname = f"web-{i:06d}-7d9f8c6b5"
        owner_objs.append(
            {
                "apiVersion": "meta.k8s.io/v1",
                "kind": "PartialObjectMetadata",
                "metadata": {
                    "name": oname,
                    "namespace": f"ns-{i % 50}",
                    "uid": ouid,
                    "resourceVersion": str(1000 + i),
                    "creationTimestamp": "2026-11-22T00:00:00Z",
                    "labels": {"app": "web", "pod-template-hash": "7d9f8c6b5"},
                },
            }
        )
        for j in range(per_owner):
            dep_objs.append(
                {
                    "apiVersion": "meta.k8s.io/v1",
                    "kind": "PartialObjectMetadata",
                    "metadata": {
                        "name": f"{oname}-{j:06d}",
                        "namespace": f"ns-{i % 50}",
                        "uid": str(uuid.uuid4()),
                        "resourceVersion": str(10_000_000 + i * per_owner + j),
                        "creationTimestamp": "2026-11-22T00:00:00Z",
                        "labels": {"app": "web", "pod-template-hash": "7d9f8c6b5"},
                        "ownerReferences": [
                            {
                                "apiVersion": "apps/v1",
                                "kind": "ReplicaSet",
                                "name": oname,
                                "uid": ouid,
                                "controller": True,
                                "blockOwnerDeletion": True,
                            }
                        ],
                    },
                }
            )
    return owner_objs, dep_objs


class _UnusedStore:
    """The benchmark feeds events directly; the collector never calls its store."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"benchmark store called: {name}")


class Harness:
    """The controller's own event path: monitor callback -> graph-changes queue ->
    graph builder loop -> attemptToDelete / attemptToOrphan queues."""

    def __init__(self) -> None:
        self.gc = GarbageCollector(_UnusedStore())  # type: ignore[arg-type]
        self.monitors = {
            (av, kind): Monitor(
                APIResource(group, version, resource, kind, True, frozenset(VERBS)),
                anyio.CancelScope(),
            )
            for av, group, version, resource, kind in (
                ("apps/v1", "apps", "v1", "replicasets", "ReplicaSet"),
                ("v1", "", "v1", "pods", "Pod"),
            )
        }

    @property
    def builder(self) -> GraphBuilder:
        return self.gc.builder

    @property
    def to_delete(self) -> WorkQueue[Any]:
        return self.gc.attempt_to_delete

    async def feed(self, events: list[WatchEvent], api_version: str, kind: str) -> None:
        mon = self.monitors[(api_version, kind)]
        gb = self.gc.graph_builder
        on_event = gb.on_watch_event
        async with anyio.create_task_group() as tg:
            tg.start_soon(gb.process_graph_changes)
            for start in range(0, len(events), BATCH):
                for event in events[start : start + BATCH]:
                    on_event(mon, event)
                while gb.pending_changes:
                    await anyio.sleep(0)
            tg.cancel_scope.cancel()

    async def drain(self) -> None:
        """Run the graph-builder loop until every queued change is applied."""
        gb = self.gc.graph_builder
        async with anyio.create_task_group() as tg:
            tg.start_soon(gb.process_graph_changes)
            while gb.pending_changes:
                await anyio.sleep(0)
            tg.cancel_scope.cancel()


#: The timer: the wall clock, or the process's CPU time with ``--cpu``.
clock = time.perf_counter

VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
#: Events delivered per watch read (a chunk of a watch stream).
BATCH = 1000


async def measure_memory(owners: int, per_owner: int) -> float:
    """Bytes the controller retains per object once the event bodies are gone.

    The bodies are built inside the traced window and dropped after feeding,
    so strings the graph keeps (names, uids, resourceVersions) are counted and
    the transient bodies are not.
    """
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    owner_objs, dep_objs = make_objects(owners, per_owner)
    n_objects = len(owner_objs) + len(dep_objs)
    h = Harness()
    await h.feed([WatchEvent("ADDED", o) for o in owner_objs], "apps/v1", "ReplicaSet")
    await h.feed([WatchEvent("ADDED", o) for o in dep_objs], "v1", "Pod")
    del owner_objs, dep_objs
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(h.builder.uid_to_node) == n_objects
    del h
    return (after - before) / n_objects


class GCTimer:
    """Collections per generation and their time, from ``gc.callbacks`` (``--gc``)."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = clock()
        else:
            self.count[info["generation"]] += 1
            self.seconds[info["generation"]] += clock() - self._started

    def __enter__(self) -> GCTimer:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)

    def report(self) -> dict[str, Any]:
        return {
            "collections": self.count,
            "gc_ms": [round(s * 1e3, 1) for s in self.seconds],
        }


def builder_alone(
    owner_objs: list[dict[str, Any]], dep_objs: list[dict[str, Any]], repeat: int
) -> tuple[float, float, float]:
    """Best add, delete and list-add events/s of a bare GraphBuilder on the same bodies.

    List adds: the same bodies as two list results (``process_list``, the batch
    path a monitor's first list and relists take), timed up to and including
    the young-generation collection their allocations call for (which
    ``process_list``, pausing the cyclic GC, leaves to the next allocation).
    """
    best_add = best_del = best_list = 0.0
    n_objects = len(owner_objs) + len(dep_objs)
    for _ in range(repeat):
        b = GraphBuilder()
        upsert = b.process_upsert
        t0 = clock()
        for o in owner_objs:
            upsert(o, "apps/v1", "ReplicaSet")
        for o in dep_objs:
            upsert(o, "v1", "Pod")
        t1 = clock()
        delete, drain = b.process_delete, b.drain
        for o in owner_objs:
            delete(o, "apps/v1", "ReplicaSet")
            drain()
        t2 = clock()
        assert len(b.uid_to_node) == len(dep_objs)
        best_add = max(best_add, n_objects / (t1 - t0))
        best_del = max(best_del, len(owner_objs) / (t2 - t1))
        # (the bound methods hold the builder too: all dropped here, so that freeing
        # this graph is not timed as part of the next run's deletes)
        del b, upsert, delete, drain
        gc.collect()
        b = GraphBuilder()
        t3 = clock()
        b.process_list(owner_objs, "apps/v1", "ReplicaSet")
        b.process_list(dep_objs, "v1", "Pod")
        gc.collect(0)
        t4 = clock()
        assert len(b.uid_to_node) == n_objects
        best_list = max(best_list, n_objects / (t4 - t3))
        del b
        gc.collect()
    return best_add, best_del, best_list


async def run_shape(
    owners: int, per_owner: int, repeat: int, time_gc: bool = False
) -> dict[str, Any]:
    owner_objs, dep_objs = make_objects(owners, per_owner)
    owner_adds = [WatchEvent("ADDED", o) for o in owner_objs]
    dep_adds = [WatchEvent("ADDED", o) for o in dep_objs]
    owner_deletes = [WatchEvent("DELETED", o) for o in owner_objs]
    n_objects = len(owner_objs) + len(dep_objs)
    # The pre-built event bodies stand in for what a watch decoder hands over
    # and drops; freeze them so the cyclic GC does not rescan them on every
    # full collection (a running controller does not hold them at all).
    gc.collect()
    gc.freeze()
    best_add = best_del = 0.0
    gc_of_best: dict[str, Any] = {}
    for _ in range(repeat):
        h = Harness()
        with GCTimer() as timer:
            t0 = clock()
            await h.feed(owner_adds, "apps/v1", "ReplicaSet")
            await h.feed(dep_adds, "v1", "Pod")
            t1 = clock()
        if n_objects / (t1 - t0) > best_add:
            gc_of_best = {"add_ms": round((t1 - t0) * 1e3, 1), **timer.report()}
        assert len(h.builder.uid_to_node) == n_objects
        t2 = clock()
        await h.feed(owner_deletes, "apps/v1", "ReplicaSet")
        t3 = clock()
        assert len(h.to_delete) == len(dep_objs)
        best_add = max(best_add, n_objects / (t1 - t0))
        best_del = max(best_del, owners / (t3 - t2))
        del h
        gc.collect()
    alone_add, alone_del, alone_list = builder_alone(owner_objs, dep_objs, repeat)
    del owner_objs, dep_objs, owner_adds, dep_adds, owner_deletes
    gc.unfreeze()
    gc.collect()
    bytes_per_object = await measure_memory(owners, per_owner)
    return {
        "shape": f"{owners}x{per_owner}",
        "core": "compiled" if COMPILED else "pure",
        "objects": n_objects,
        "add_events_per_s": round(best_add),
        "delete_events_per_s": round(best_del),
        "dependents_enqueued_per_s": round(best_del * per_owner),
        "bytes_per_object": round(bytes_per_object),
        "builder_add_events_per_s": round(alone_add),
        "builder_delete_events_per_s": round(alone_del),
        "builder_list_add_events_per_s": round(alone_list),
        **({"gc_in_best_add": gc_of_best} if time_gc else {}),
    }


def run_builder_only(owners: int, per_owner: int, repeat: int) -> dict[str, Any]:
    """``--builder-only``: the bare builder's rates alone (no controller, no memory)."""
    owner_objs, dep_objs = make_objects(owners, per_owner)
    gc.collect()
    gc.freeze()  # as run_shape does: the bodies stand in for what a decoder drops
    alone_add, alone_del, alone_list = builder_alone(owner_objs, dep_objs, repeat)
    del owner_objs, dep_objs
    gc.unfreeze()
    gc.collect()
    return {
        "shape": f"{owners}x{per_owner}",
        "core": "compiled" if COMPILED else "pure",
        "builder_add_events_per_s": round(alone_add),
        "builder_delete_events_per_s": round(alone_del),
        "builder_list_add_events_per_s": round(alone_list),
    }


def across_processes(count: int) -> None:
    """``--processes N``: this script run N times as it was called (each run with
    ``--processes 1``, which overrides N: argparse keeps the last), its lines printed as
    they come, then the spread of every rate per shape."""
    argv = [*sys.argv[1:], "--processes", "1"]
    rates: dict[tuple[str, str], list[float]] = {}
    for _ in range(count):
        out = subprocess.run(
            [sys.executable, __file__, *argv], check=True, capture_output=True, text=True
        ).stdout
        for line in out.splitlines():
            result = json.loads(line)
            print(json.dumps(result), flush=True)
            for key, value in result.items():
                if key.endswith("_per_s"):
                    rates.setdefault((result["shape"], key), []).append(value)
    for (shape, key), values in rates.items():
        values.sort()
        spread = {
            "lowest": values[0],
            "median": round(statistics.median(values)),
            "highest": values[-1],
        }
        print(json.dumps({"shape": shape, "rate": key, "processes": count, **spread}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1000x10,10000x10,1x100000")
    parser.add_argument("--repeat", type=int, default=3, help="runs per shape; best is reported")
    parser.add_argument(
        "--gc",
        action="store_true",
        help="also report the cyclic GC's collections per generation and their time "
        "during the best add phase",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time with the process's CPU time (time.process_time), not the wall clock",
    )
    parser.add_argument(
        "--builder-only",
        action="store_true",
        help="only the bare GraphBuilder's add and delete rates (the graph core alone)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="run the whole measurement in N fresh processes, one after the other, and "
        "also print each rate's lowest, median and highest over them (on a virtual "
        "machine one process can run every round 20-30%% slower than the next: where its "
        "memory landed)",
    )
    args = parser.parse_args()
    if args.processes > 1:
        across_processes(args.processes)
        return
    if args.cpu:
        global clock
        clock = time.process_time
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]

    async def go() -> None:
        for owners, per_owner in shapes:
            if args.builder_only:
                result = run_builder_only(owners, per_owner, args.repeat)
            else:
                result = await run_shape(owners, per_owner, args.repeat, args.gc)
            print(json.dumps(result), flush=True)

    anyio.run(go)


if __name__ == "__main__":
    main()
