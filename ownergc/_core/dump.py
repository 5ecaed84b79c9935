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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ownergc._core.graph import Node

__all__ = ["DOTVertex", "graph_elements", "graph_to_dot", "select_component"]


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
        gvk = f"{self.kind}.{self.version}"
        if self.group:
            gvk += f".{self.group}"
        label = f"uid={self.uid}\nnamespace={self.namespace}\n{gvk}/{self.name}\n"
        conditions = [
            name
            for name, on in (
                ("beingDeleted", self.being_deleted),
                ("deletingDependents", self.deleting_dependents),
                ("virtual", self.virtual),
                ("missingFromGraph", self.missing),
            )
            if on
        ]
        if conditions:
            label += ",".join(conditions) + "\n"
        return label

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

    def to_json(self) -> dict[str, Any]:
        """``graph -o json``'s node: ``id`` and the DOT attributes, the flags as booleans."""
        return {
            "id": self.uid,
            "label": self.label,
            "group": self.group,
            "version": self.version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "missing": self.missing,
            "beingDeleted": self.being_deleted,
            "deletingDependents": self.deleting_dependents,
            "virtual": self.virtual,
        }


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


def graph_elements(
    graph: Mapping[str, Node], uids: Iterable[str] | None = None
) -> tuple[list[DOTVertex], list[tuple[str, str]]]:
    """The vertices (sorted by uid) and edges (dependent uid, owner uid; sorted)
    drawn for ``graph``, or for the component around ``uids``: every node with
    an owner or a dependent, and a ``missing`` vertex for each owner without one."""
    nodes = list(graph.values()) if uids is None else select_component(graph, uids)
    vertices: dict[str, DOTVertex] = {}
    for node in nodes:
        if node.owners or node.dependents:
            vertices[node.uid] = _vertex(node)
    edges: set[tuple[str, str]] = set()
    for node in nodes:
        from_uid = node.uid
        if from_uid not in vertices:
            continue
        for ref in node.owners:
            if ref.uid not in vertices:
                group, version = _split_api_version(ref.api_version)
                vertices[ref.uid] = DOTVertex(
                    uid=ref.uid,
                    group=group,
                    version=version,
                    kind=ref.kind,
                    namespace="",
                    name=ref.name,
                    missing=True,
                )
            edges.add((from_uid, ref.uid))
    return [vertices[uid] for uid in sorted(vertices)], sorted(edges)


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
