"""The dependency graph as Graphviz DOT, byte-compatible with kube-controller-manager.

kube-controller-manager serves this at ``/debug/controllers/garbagecollector/graph``
(optionally ``?uid=...`` to restrict it to the component around some objects).
The format is the v1.26+ one: vertices sorted by uid, edges from dependent to
owner sorted by (from, to), attributes in a fixed order.

One conscious deviation: for an owner that has no node, upstream stores the
synthetic "missing" vertex under the *dependent's* uid, so a second dependent
of the same missing owner draws a second vertex with the same id. Here it is
stored under the missing owner's uid, so each missing owner is drawn once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ownergc._core.graph import Node
from ownergc._core.refs import OwnerReference

__all__ = ["DOTVertex", "graph_elements", "graph_to_dot", "graph_to_json", "select_component"]


@dataclass(frozen=True, slots=True)
class DOTVertex:
    uid: str
    group: str
    version: str
    kind: str
    namespace: str
    name: str
    missing: bool = False
    being_deleted: bool = False
    deleting_dependents: bool = False
    virtual: bool = False

    @property
    def label(self) -> str:
        return _label(
            self.uid,
            self.group,
            self.version,
            self.kind,
            self.namespace,
            self.name,
            self.missing,
            self.being_deleted,
            self.deleting_dependents,
            self.virtual,
        )

    def attributes(self) -> list[tuple[str, str]]:
        def flag(on: bool) -> str:
            return "true" if on else "false"

        return [
            ("label", self.label),
            ("group", self.group),
            ("version", self.version),
            ("kind", self.kind),
            ("namespace", self.namespace),
            ("name", self.name),
            ("uid", self.uid),
            ("missing", flag(self.missing)),
            ("beingDeleted", flag(self.being_deleted)),
            ("deletingDependents", flag(self.deleting_dependents)),
            ("virtual", flag(self.virtual)),
        ]


def _label(
    uid: str,
    group: str,
    version: str,
    kind: str,
    namespace: str,
    name: str,
    missing: bool,
    being_deleted: bool,
    deleting_dependents: bool,
    virtual: bool,
) -> str:
    gvk = f"{kind}.{version}.{group}" if group else f"{kind}.{version}"
    label = f"uid={uid}\nnamespace={namespace}\n{gvk}/{name}\n"
    if being_deleted or deleting_dependents or virtual or missing:
        conditions = [
            condition
            for condition, on in (
                ("beingDeleted", being_deleted),
                ("deletingDependents", deleting_dependents),
                ("virtual", virtual),
                ("missingFromGraph", missing),
            )
            if on
        ]
        label += ",".join(conditions) + "\n"
    return label


def _split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def _vertex(node: Node) -> DOTVertex:
    group, version = _split_api_version(node.api_version)
    return DOTVertex(
        uid=node.uid,
        group=group,
        version=version,
        kind=node.kind,
        namespace=node.namespace or "",
        name=node.name,
        being_deleted=node.being_deleted,
        deleting_dependents=node.deleting_dependents,
        virtual=node.virtual,
    )


def select_component(graph: Mapping[str, Node], uids: Iterable[str]) -> list[Node]:
    """Nodes reachable from ``uids`` following owners and dependents (unknown uids skipped)."""
    seen: dict[str, Node] = {}
    stack = [graph[uid] for uid in uids if uid in graph]
    while stack:
        node = stack.pop()
        if node.uid in seen:
            continue
        seen[node.uid] = node
        stack.extend(node.dependents)
        for ref in node.owners:
            owner = graph.get(ref.uid)
            if owner is not None:
                stack.append(owner)
    return list(seen.values())


#: Values %q leaves as they are (no backslash, quote or control character).
_PLAIN = re.compile(r'[^\\"\x00-\x1f\x7f]*\Z')


def _quote(value: str) -> str:
    """Go ``%q``: backslash and double quote escaped, control characters as escapes."""
    if _PLAIN.match(value):
        return f'"{value}"'  # the common case, without the per-character loop
    out = ['"']
    for ch in value:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _drawn(
    graph: Mapping[str, Node], uids: Iterable[str] | None
) -> tuple[dict[str, Node | OwnerReference], set[tuple[str, str]]]:
    """uid -> what its vertex is drawn from (the node, or for an owner without one
    the first reference naming it), and the edges (dependent uid, owner uid)."""
    nodes = list(graph.values()) if uids is None else select_component(graph, uids)
    drawn: dict[str, Node | OwnerReference] = {}
    for node in nodes:
        if node.owners or node.dependents:
            drawn[node.uid] = node
    edges: set[tuple[str, str]] = set()
    for node in nodes:
        from_uid = node.uid
        if from_uid not in drawn:
            continue
        for ref in node.owners:
            if ref.uid not in drawn:
                drawn[ref.uid] = ref
            edges.add((from_uid, ref.uid))
    return drawn, edges


def _dot_vertex(drawn: Node | OwnerReference) -> DOTVertex:
    if isinstance(drawn, Node):
        return _vertex(drawn)
    group, version = _split_api_version(drawn.api_version)
    return DOTVertex(
        uid=drawn.uid,
        group=group,
        version=version,
        kind=drawn.kind,
        namespace="",
        name=drawn.name,
        missing=True,
    )


def graph_elements(
    graph: Mapping[str, Node], uids: Iterable[str] | None = None
) -> tuple[list[DOTVertex], list[tuple[str, str]]]:
    """The vertices (sorted by uid) and edges (dependent uid, owner uid; sorted)
    drawn for ``graph``, or for the component around ``uids``: every node with
    an owner or a dependent, and a ``missing`` vertex for each owner without one."""
    drawn, edges = _drawn(graph, uids)
    return [_dot_vertex(drawn[uid]) for uid in sorted(drawn)], sorted(edges)


def _json_vertex(drawn: Node | OwnerReference) -> dict[str, Any]:
    """A vertex as ``graph -o json`` writes it: ``id``, then the DOT attributes in
    their order, the flags as booleans."""
    group, _, version = drawn.api_version.rpartition("/")
    uid, kind, name = drawn.uid, drawn.kind, drawn.name
    if isinstance(drawn, Node):
        namespace = drawn.namespace or ""
        missing = False
        being_deleted = drawn.being_deleted
        deleting_dependents = drawn.deleting_dependents
        virtual = drawn.virtual
    else:
        namespace = ""
        missing = True
        being_deleted = deleting_dependents = virtual = False
    return {
        "id": uid,
        "label": _label(
            uid,
            group,
            version,
            kind,
            namespace,
            name,
            missing,
            being_deleted,
            deleting_dependents,
            virtual,
        ),
        "group": group,
        "version": version,
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "uid": uid,
        "missing": missing,
        "beingDeleted": being_deleted,
        "deletingDependents": deleting_dependents,
        "virtual": virtual,
    }


def graph_to_json(
    graph: Mapping[str, Node], uids: Iterable[str] | None = None
) -> tuple[Iterator[dict[str, Any]], Iterator[dict[str, str]]]:
    """The nodes and edges of :func:`graph_elements` as ``graph -o json`` writes them
    (KCM's attributes, the flags as booleans; edges ``{"from": dependent, "to":
    owner}``), each made when iterated."""
    drawn, edges = _drawn(graph, uids)
    order = sorted(drawn)
    nodes = (_json_vertex(drawn[uid]) for uid in order)
    return nodes, ({"from": f, "to": t} for f, t in sorted(edges))


def graph_to_dot(graph: Mapping[str, Node], uids: Iterable[str] | None = None) -> str:
    """Render ``graph`` (or the component around ``uids``) as DOT text."""
    vertices, edges = graph_elements(graph, uids)
    lines = ["strict digraph full {\n"]
    if vertices:
        lines.append("  // Node definitions.\n")
        for vertex in vertices:
            lines.append(f"  {_quote(vertex.uid)} [\n")
            for key, value in vertex.attributes():
                lines.append(f"    {key}={_quote(value)}\n")
            lines.append("  ];\n")
    if edges:
        lines.append("  // Edge definitions.\n")
        for from_uid, to_uid in edges:
            lines.append(f"  {_quote(from_uid)} -> {_quote(to_uid)};\n")
    lines.append("}\n")
    return "".join(lines)
