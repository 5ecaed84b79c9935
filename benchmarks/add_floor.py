"""How close the pure core's add is to an add that checks nothing (issue 19's pure bar).

On the same bodies as ``benchmarks/graph.py`` (10000x10 by default), in one
process and in turn, round after round:

* ``process_upsert``: the graph builder's add, as ``graph.py --builder-only`` times it;
* ``checked_minimal``: ``process_upsert``'s common case (an object first seen
  alive, with one reference to an owner already observed, or none) written
  again as one flat function with the very same checks and the fewest Python
  operations, closure variables instead of the builder's fields (anything
  else goes to ``process_upsert``): what a rewrite of the checked add could
  still gain;
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
from ownergc._core.graph_builder import FROM_GRAPH


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


def checked_minimal_adder(builder: GraphBuilder) -> Callable[[dict[str, Any], str, str], None]:
    """``process_upsert``'s common case with its checks, flat (see the module docstring)."""
    graph = builder._graph
    cache = builder._ref_cache
    namespaces = builder._namespaces
    upsert = builder.process_upsert
    new = Node.__new__

    def add(obj: dict[str, Any], api_version: str, kind: str) -> None:
        meta = obj.get("metadata") if type(obj) is dict else None
        if type(meta) is dict:
            uid = meta.get("uid")
            name = meta.get("name")
            namespace = meta.get("namespace") or None
            if (
                type(uid) is str
                and uid
                and type(name) is str
                and name
                and (namespace is None or type(namespace) is str)
                and meta.get("deletionTimestamp") is None
                and not meta.get("finalizers")
                and uid not in graph
            ):
                refs = meta.get("ownerReferences")
                owner = hit = None
                if refs is not None:
                    entry = refs[0] if type(refs) is list and len(refs) == 1 else None
                    hit = cache.get(entry.get("uid")) if type(entry) is dict else None
                    if hit is not None and (
                        entry.get("controller") is hit.controller  # type: ignore[union-attr]
                        and entry.get("blockOwnerDeletion") is hit.block  # type: ignore[union-attr]
                        and entry.get("name") == hit.name  # type: ignore[union-attr]
                        and entry.get("kind") == hit.kind  # type: ignore[union-attr]
                        and entry.get("apiVersion") == hit.api_version  # type: ignore[union-attr]
                    ):
                        owner = graph.get(hit.uid)
                    if not (
                        owner is not None
                        and owner.namespace == namespace
                        and not owner.deleting_dependents
                        and hit.name == owner.name  # type: ignore[union-attr]
                        and hit.kind == owner.kind  # type: ignore[union-attr]
                        and hit.api_version == owner.api_version  # type: ignore[union-attr]
                    ):
                        upsert(obj, api_version, kind)
                        return
                    namespace = owner.namespace
                elif namespace is not None:
                    namespace = namespaces.setdefault(namespace, namespace)
                node = new(Node)
                node.owners = hit.owners if hit is not None else ()
                node.dependents = NO_DEPENDENTS
                node.being_deleted = False
                node.deleting_dependents = False
                node.virtual = False
                node.resource_version = meta.get("resourceVersion")
                node.finalizers = ()
                node.api_version = api_version
                node.kind = kind
                node.name = name
                node.uid = uid
                node.namespace = namespace
                graph[uid] = node
                if owner is not None:
                    deps = owner.dependents
                    if type(deps) is set:
                        deps.add(node)
                    else:
                        owner.dependents = {node}
                return
        upsert(obj, api_version, kind, FROM_GRAPH)

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
    # checked_minimal must build process_upsert's very graph (else it is not the same add)
    graphs = []
    for make in (lambda b: b.process_upsert, checked_minimal_adder):
        builder = GraphBuilder()
        add = make(builder)
        for obj in owner_objs:
            add(obj, "apps/v1", "ReplicaSet")
        for obj in dep_objs:
            add(obj, "v1", "Pod")
        graphs.append(
            {
                uid: (node.identity, node.owners, {d.uid for d in node.dependents}, node.finalizers)
                for uid, node in builder.uid_to_node.items()
            }
        )
    assert graphs[0] == graphs[1], "checked_minimal built another graph"
    del graphs, builder, add
    rates: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for what in ("process_upsert", "checked_minimal", "floor"):
            for collector in ("gc_on", "gc_off"):
                builder = GraphBuilder()
                add = (
                    builder.process_upsert
                    if what == "process_upsert"
                    else checked_minimal_adder(builder)
                    if what == "checked_minimal"
                    else floor_adder(builder)
                )
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
                if what == "checked_minimal":
                    builder.uid_to_node.check_invariants()
                rates.setdefault(f"{what}_{collector}", []).append(n_objects / (t1 - t0))
                del builder, add
                gc.collect()
    report: dict[str, Any] = {"shape": args.shape, "core": "compiled" if COMPILED else "pure"}
    for name, values in rates.items():
        report[name] = {"median": round(statistics.median(values)), "best": round(max(values))}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
