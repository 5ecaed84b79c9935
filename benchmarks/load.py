"""Loading N objects into an InMemoryStore: seconds and objects per second.

What ``ownergc preview``, ``why`` and ``lint`` pay before they can analyse a
cluster: every object read from it (or from manifests) is copied into an
in-memory store with ``InMemoryStore.load_objects``, uids and all. The
objects are shaped like issue 22's cluster: ConfigMaps in 100 namespaces,
one owner per ten with nine dependents owning it by uid.

Two ways of calling it:

* ``batch`` — one ``load_objects`` call with every object;
* ``each`` — one call per object, as ``load_manifests`` (and through it
  ``preview``'s and ``serve``'s loading) does, to name the file of a bad one;
* ``create`` — one ``create_object`` per object, as a client's creates
  arrive (``kubectl apply`` of a directory): defaulted, admitted, and for a
  Service given its addresses by the registry, which loading skips (objects
  from a cluster keep theirs).

``--budget S`` stops a run after S seconds of loading (a quadratic load of
100k objects would take hours); the line then says ``"complete": false``
and the rate is over the objects loaded so far.

``--kind Service`` loads Services instead (a cluster IP each, a node port for
one in 50), which measures the Service registry's allocation at scale.
``--kind Gadget`` loads custom resources of a CRD whose schema has bounds, an
enum, a pattern, a format, a map list and defaults: what checking a custom
resource against its structural schema (and defaulting it) costs a create.

Run: ``python benchmarks/load.py [--objects 10000 100000] [--mode batch each]
[--kind ConfigMap|Service]``.
Prints one JSON line per (N, mode). Timings on a loaded machine are noisy:
compare runs made back to back.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
from _which_ownergc import checkout_unless_installed  # benchmarks/

sys.path.extend(checkout_unless_installed())

from ownergc_backends.memory import InMemoryStore

NAMESPACES = 100

#: The CRD of ``--kind Gadget``: a schema of the usual operator shape.
GADGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.bench.example.com"},
    "spec": {
        "group": "bench.example.com",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {
                                    "replicas": {
                                        "type": "integer",
                                        "minimum": 0,
                                        "maximum": 100,
                                        "default": 1,
                                    },
                                    "size": {"type": "string", "enum": ["small", "large"]},
                                    "image": {"type": "string", "pattern": "^[a-z0-9./:-]+$"},
                                    "owner": {"type": "string", "format": "email"},
                                    "paused": {"type": "boolean", "default": False},
                                    "ports": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {
                                                "name": {"type": "string", "maxLength": 15},
                                                "port": {
                                                    "type": "integer",
                                                    "minimum": 1,
                                                    "maximum": 65535,
                                                },
                                                "protocol": {
                                                    "type": "string",
                                                    "default": "TCP",
                                                },
                                            },
                                        },
                                    },
                                    "labels": {
                                        "type": "object",
                                        "additionalProperties": {"type": "string"},
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


def cluster(n: int, kind: str = "ConfigMap") -> Iterator[dict[str, Any]]:
    """``n`` ConfigMaps (or Services, one in 50 a NodePort one): owners (one in ten)
    and their nine dependents each."""
    owner_uid = owner_name = ""
    for i in range(n):
        ns = f"ns-{i // 10 % NAMESPACES}"  # an owner and its dependents share one
        uid = str(uuid.uuid4())
        meta: dict[str, Any] = {"name": f"cm-{i}", "namespace": ns, "uid": uid}
        if i % 10 == 0:
            owner_uid, owner_name = uid, f"cm-{i}"
        else:
            meta["ownerReferences"] = [
                {"apiVersion": "v1", "kind": kind, "name": owner_name, "uid": owner_uid}
            ]
        if kind == "Gadget":
            meta["ownerReferences"] = []
            spec = {
                "size": "small" if i % 2 else "large",
                "image": "registry.example.com/app:1.2.3",
                "owner": "team@example.com",
                "ports": [{"name": "http", "port": 8080}, {"name": "metrics", "port": 9090}],
                "labels": {"app": "web", "tier": "front"},
            }
            yield {
                "apiVersion": "bench.example.com/v1",
                "kind": kind,
                "metadata": meta,
                "spec": spec,
            }
        elif kind == "Service":
            # each given a cluster IP by the registry, one in 50 a node port (100k: 2,000
            # of the 2,768 the range holds)
            spec = {"ports": [{"port": 80}], "type": "ClusterIP" if i % 50 else "NodePort"}
            yield {"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": spec}
        else:
            yield {"apiVersion": "v1", "kind": kind, "metadata": meta, "data": {"k": "v"}}


def run(n: int, mode: str, budget: float, kind: str = "ConfigMap") -> dict[str, Any]:
    objects = list(cluster(n, kind))
    store = InMemoryStore()
    store.load_objects(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{i}"}}
        for i in range(NAMESPACES)
    )
    if kind == "Gadget":
        store.load_objects([GADGET_CRD])
    gc.collect()
    loaded = 0
    start = time.perf_counter()
    if mode == "batch":
        loaded = len(store.load_objects(objects))
    elif mode == "create":

        async def create_each() -> int:
            created = 0
            for obj in objects:
                await store.create_object(obj)
                created += 1
                if created % 1000 == 0 and time.perf_counter() - start > budget:
                    break
            return created

        loaded = anyio.run(create_each)
    else:
        for obj in objects:
            store.load_objects([obj])
            loaded += 1
            if loaded % 1000 == 0 and time.perf_counter() - start > budget:
                break
    seconds = time.perf_counter() - start
    return {
        "objects": n,
        "kind": kind,
        "mode": mode,
        "loaded": loaded,
        "complete": loaded == n,
        "seconds": round(seconds, 3),
        "objects_per_second": round(loaded / seconds) if seconds else None,
        "us_per_object": round(seconds / max(1, loaded) * 1e6, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--mode", nargs="+", choices=("batch", "each", "create"), default=["batch", "each"]
    )
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per run at most")
    parser.add_argument(
        "--kind",
        choices=("ConfigMap", "Service", "Gadget"),
        default="ConfigMap",
        help="what to load: Services are given addresses and node ports as they are stored; "
        "Gadgets (custom resources) are checked against their CRD's schema and defaulted",
    )
    args = parser.parse_args(argv)
    for n in args.objects:
        for mode in args.mode:
            print(json.dumps(run(n, mode, args.budget, args.kind)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
