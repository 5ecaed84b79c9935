"""Builders for the core tests: owner references, object dicts, small graphs.

The notation of gc-unit-cases.md is ``uid[/name][(block=..)][(ctrl=..)]``;
:func:`ref` takes the same pieces. Objects get a name derived from their uid
(``obj-<uid>``) unless told otherwise, so that a ref built with the default
name matches the owner's identity.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ownergc import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    GraphBuilder,
    Node,
    ObjectReference,
    OwnerReference,
)

FG = FINALIZER_DELETE_DEPENDENTS
ORPHAN = FINALIZER_ORPHAN_DEPENDENTS
DELETED_AT = "2022-02-23T00:00:00Z"


def name_for(uid: str) -> str:
    return f"obj-{uid}"


def ref(
    uid: str,
    name: str | None = None,
    *,
    block: bool | None = None,
    ctrl: bool | None = None,
    api_version: str = "v1",
    kind: str = "Pod",
) -> OwnerReference:
    return OwnerReference(api_version, kind, name or name_for(uid), uid, ctrl, block)


def obj(
    uid: str,
    owners: Iterable[OwnerReference] = (),
    *,
    name: str | None = None,
    ns: str | None = None,
    deleting: bool = False,
    finalizers: Iterable[str] = (),
    rv: str = "1",
) -> dict[str, Any]:
    """A metadata-only Kubernetes object (what the GC's informers deliver)."""
    meta: dict[str, Any] = {"name": name or name_for(uid), "uid": uid, "resourceVersion": rv}
    if ns is not None:
        meta["namespace"] = ns
    refs = [r.to_dict() for r in owners]
    if refs:
        meta["ownerReferences"] = refs
    if deleting:
        meta["deletionTimestamp"] = DELETED_AT
    fins = list(finalizers)
    if fins:
        meta["finalizers"] = fins
    return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": meta}


def ident(
    uid: str, *, name: str | None = None, ns: str | None = None, av: str = "v1", kind: str = "Pod"
) -> ObjectReference:
    return ObjectReference(av, kind, name or name_for(uid), uid, ns)


def upsert(
    builder: GraphBuilder,
    uid: str,
    owners: Iterable[OwnerReference] = (),
    *,
    av: str = "v1",
    kind: str = "Pod",
    **kw: Any,
) -> Node:
    node = builder.process_upsert(obj(uid, owners, **kw), av, kind)
    builder.uid_to_node.check_invariants()
    return node


def delete(
    builder: GraphBuilder, uid: str, *, av: str = "v1", kind: str = "Pod", **kw: Any
) -> None:
    builder.process_delete(obj(uid, **kw), av, kind)
    builder.uid_to_node.check_invariants()


def uids(nodes: Iterable[Node]) -> list[str]:
    return [n.uid for n in nodes]


def uid_multiset(nodes: Iterable[Node]) -> Counter[str]:
    return Counter(n.uid for n in nodes)


def graph_shape(builder: GraphBuilder) -> dict[str, tuple[list[str], set[str]]]:
    """uid -> (owner uids in order, dependent uids): the tables' "uid: owners / dependents"."""
    return {
        uid: ([r.uid for r in node.owners], {d.uid for d in node.dependents})
        for uid, node in builder.uid_to_node.items()
    }


def compact(patch: Any) -> str:
    return json.dumps(patch, separators=(",", ":"))
