"""How close the pure core's add is to an add that checks nothing (issue 19's pure bar).

On the same bodies as ``benchmarks/graph.py`` (10000x10 by default), in one
process and in turn, round after round:

* ``process_upsert``: the graph builder's add, as ``graph.py --builder-only`` times it;
* ``floor``: the least an add can do in Python and still build the same graph
  for these bodies — a node made and filled, stored under its uid, and put
  in its owner's dependents. No check of the body, no parse or cache of the
  owner reference, no namespace string kept once, no check that the owner
  matches the reference, no deletion state or finalizers read. It is not a
  correct add (a malformed body breaks it, a bad reference goes unflagged);
  it is the bound below which no correct pure add can go;

each with the cyclic garbage collector on, as it runs, and off (``gc.disable()``
around the timed loop), which shows what collecting the nodes costs: a pure
node is an instance of a Python class, which CPython tracks, and the library
does not change the process's collector settings.

Run: ``python benchmarks/add_floor.py [--shape 10000x10] [--rounds 12]``; prints one
JSON object: the median and best events/s of each. Times with the process's CPU
time (steadier on a shared machine than the wall clock).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from _which_ownergc import checkout_unless_installed  # benchmarks/

sys.path.extend(checkout_unless_installed())

from graph import make_objects  # benchmarks/graph.py

from ownergc import GraphBuilder
from ownergc._core.graph import COMPILED, NO_DEPENDENTS, Node


def floor_adder(builder: GraphBuilder) -> Callable[[dict[str, Any], str, str], None]:
    """The floor add above, into ``builder``'s graph."""
    graph = builder.uid_to_node

    def add(obj: dict[str, Any], api_version: str, kind: str) -> None:
        meta = obj["metadata"]
        uid = meta["uid"]
        refs = meta.get("ownerReferences")
        node = Node.__new__(Node)
        node.owners = ()
        node.dependents = NO_DEPENDENTS
        node.being_deleted = False
        node.deleting_dependents = False
        node.virtual = False
        node.resource_version = meta["resourceVersion"]
        node.finalizers = ()
        node.api_version = api_version
        node.kind = kind
        node.name = meta["name"]
        node.uid = uid
        node.namespace = meta["namespace"]
        graph[uid] = node
        if refs:
            owner = graph[refs[0]["uid"]]
            deps = owner.dependents
            if type(deps) is set:
                deps.add(node)
            else:
                owner.dependents = {node}

    return add


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="10000x10")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    owners, per_owner = (int(n) for n in args.shape.split("x"))
    owner_objs, dep_objs = make_objects(owners, per_owner)
    n_objects = len(owner_objs) + len(dep_objs)
    gc.collect()
    gc.freeze()  # as graph.py does: the bodies stand in for what a decoder drops
    rates: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for what in ("process_upsert", "floor"):
            for collector in ("gc_on", "gc_off"):
                builder = GraphBuilder()
                add = builder.process_upsert if what == "process_upsert" else floor_adder(builder)
                if collector == "gc_off":
                    gc.disable()
                t0 = time.process_time()
                for obj in owner_objs:
                    add(obj, "apps/v1", "ReplicaSet")
                for obj in dep_objs:
                    add(obj, "v1", "Pod")
                t1 = time.process_time()
                gc.enable()
                assert len(builder.uid_to_node) == n_objects
                rates.setdefault(f"{what}_{collector}", []).append(n_objects / (t1 - t0))
                del builder, add
                gc.collect()
    report: dict[str, Any] = {"shape": args.shape, "core": "compiled" if COMPILED else "pure"}
    for name, values in rates.items():
        report[name] = {"median": round(statistics.median(values)), "best": round(max(values))}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
