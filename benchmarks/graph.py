"""Graph-builder throughput and memory, the way the controller feeds it.

For each shape (owners x dependents-per-owner) this builds watch-event
objects up front (as a watch decoder would hand them over), then times:

* add events: ``GraphBuilder.process_upsert`` for every owner, then every
  dependent, dispatching the builder's outboxes into the controller's
  work queues exactly as ``GarbageCollector`` does;
* delete events for the owners (``process_delete``), which enqueue every
  dependent for attemptToDelete.

Memory: tracemalloc measures what the graph and the queues hold after the
adds (event bodies are not retained by the controller and are excluded).

Run: ``python benchmarks/graph.py [--shapes 1000x10,10000x10,1x100000] [--repeat 3]``.
Prints one JSON object per line per shape.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import tracemalloc
import uuid
from typing import Any

import anyio

from ownergc import GraphBuilder
from ownergc.controller import WorkQueue


def make_objects(owners: int, per_owner: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    owner_objs = []
    dep_objs = []
    for i in range(owners):
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


class Harness:
    """The controller's event path without the store: builder + queue dispatch."""

    def __init__(self) -> None:
        self.builder = GraphBuilder()
        self.to_delete: WorkQueue[Any] = WorkQueue("garbage_collector_attempt_to_delete")
        self.to_orphan: WorkQueue[Any] = WorkQueue("garbage_collector_attempt_to_orphan")

    def dispatch(self) -> None:
        b = self.builder
        if b.attempt_to_delete or b.attempt_to_delete_rate_limited or b.attempt_to_orphan:
            to_delete, limited, orphan, _events = b.drain()
            for n in to_delete:
                self.to_delete.add(n)
            for n in limited:
                self.to_delete.add_rate_limited(n)
            for n in orphan:
                self.to_orphan.add(n)

    def add_all(self, objs: list[dict[str, Any]], api_version: str, kind: str) -> None:
        upsert = self.builder.process_upsert
        dispatch = self.dispatch
        for obj in objs:
            upsert(obj, api_version, kind)
            dispatch()

    def delete_all(self, objs: list[dict[str, Any]], api_version: str, kind: str) -> None:
        delete = self.builder.process_delete
        dispatch = self.dispatch
        for obj in objs:
            delete(obj, api_version, kind)
            dispatch()


async def run_shape(owners: int, per_owner: int, repeat: int) -> dict[str, Any]:
    owner_objs, dep_objs = make_objects(owners, per_owner)
    n_objects = len(owner_objs) + len(dep_objs)
    # The pre-built event bodies stand in for what a watch decoder hands over
    # and drops; freeze them so the cyclic GC does not rescan them on every
    # full collection (a running controller does not hold them at all).
    gc.collect()
    gc.freeze()
    best_add = best_del = 0.0
    bytes_per_object = 0.0
    for attempt in range(repeat):
        gc.collect()
        if attempt == 0:
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
        h = Harness()
        t0 = time.perf_counter()
        h.add_all(owner_objs, "apps/v1", "ReplicaSet")
        h.add_all(dep_objs, "v1", "Pod")
        t1 = time.perf_counter()
        if attempt == 0:
            after = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            bytes_per_object = (after - before) / n_objects
        assert len(h.builder.uid_to_node) == n_objects
        t2 = time.perf_counter()
        h.delete_all(owner_objs, "apps/v1", "ReplicaSet")
        t3 = time.perf_counter()
        assert len(h.to_delete) == len(dep_objs)
        best_add = max(best_add, n_objects / (t1 - t0))
        best_del = max(best_del, owners / (t3 - t2))
        del h
    result = {
        "shape": f"{owners}x{per_owner}",
        "objects": n_objects,
        "add_events_per_s": round(best_add),
        "delete_events_per_s": round(best_del),
        "dependents_enqueued_per_s": round(best_del * per_owner),
        "bytes_per_object": round(bytes_per_object),
    }
    del owner_objs, dep_objs
    gc.unfreeze()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1000x10,10000x10,1x100000")
    parser.add_argument("--repeat", type=int, default=3, help="runs per shape; best is reported")
    args = parser.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]

    async def go() -> None:
        for owners, per_owner in shapes:
            print(json.dumps(await run_shape(owners, per_owner, args.repeat)), flush=True)

    anyio.run(go)


if __name__ == "__main__":
    main()
