"""The ownerReference graph drawn for people: Graphviz DOT, no I/O.

:mod:`ownergc._core.dump` writes kube-controller-manager's debug format (for
diffing against ``/debug/controllers/garbagecollector/graph``); this module
draws what a person opens the picture to see. A :class:`Picture` is built
from objects (Kubernetes JSON, metadata is enough), cut down to a subset,
then written as DOT:

* a box per object labelled ``Kind name``; namespaced objects inside a box
  per namespace, cluster-scoped ones outside; the uid only in the tooltip;
* its state as colour and style: being deleted (and by which finalizers),
  waiting for its dependents (foreground), orphaning its dependents, an
  absent owner (dashed), a reference a lint rule flags (red, the rule in the
  tooltip), the root cause of a ``why`` answer (thick magenta border);
* edges from dependent to owner, bold for ``controller: true`` and with a
  square head for ``blockOwnerDeletion: true``; dotted "waits for" edges
  added by ``why``;
* a small legend naming only the states and edges that appear.

Every node and edge carries a Graphviz ``class`` (``deleting``,
``foreground``, ``controller``, ...) so the SVG can be inspected and styled.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "READABLE_NODES",
    "Picture",
    "PictureEdge",
    "PictureNode",
    "WaitEdge",
    "build_picture",
    "picture_to_dot",
]

#: Above this many boxes a drawing stops being readable; the cli says how to narrow it.
READABLE_NODES = 60

_FOREGROUND = "foregroundDeletion"
_ORPHAN = "orphan"

#: Cluster-scoped built-in kinds (group, kind): an absent owner of such a kind is drawn
#: outside every namespace box. Other absent owners sit with their dependent.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
    }
)

# state -> (fill colour, legend text); order is the legend's.
_STATES: dict[str, tuple[str, str]] = {
    "present": ("#e3eefa", "exists"),
    "deleting": ("#ffd8a8", "being deleted (finalizers listed)"),
    "foreground": ("#ffb74d", "waits for its dependents (foreground)"),
    "orphaning": ("#d7c8f0", "orphaning its dependents"),
    "absent": ("#ffffff", "absent owner (not found)"),
}
_RED = "#d32f2f"
_ROOT = "#c2185b"
_BORDER = "#4a5a70"


@dataclass(frozen=True, slots=True)
class PictureNode:
    """One object (or an owner that was referenced but not found)."""

    uid: str
    api_version: str
    kind: str
    name: str
    namespace: str | None = None
    being_deleted: bool = False
    finalizers: tuple[str, ...] = ()
    absent: bool = False
    #: ``rule: message`` lines of the lint findings on this object.
    problems: tuple[str, ...] = ()
    root_cause: str | None = None
    #: Has an owner or a dependent (objects with neither are usually left out).
    related: bool = False

    @property
    def foreground(self) -> bool:
        return self.being_deleted and _FOREGROUND in self.finalizers

    @property
    def orphaning(self) -> bool:
        return self.being_deleted and _ORPHAN in self.finalizers

    @property
    def state(self) -> str:
        if self.absent:
            return "absent"
        if self.foreground:
            return "foreground"
        if self.orphaning:
            return "orphaning"
        return "deleting" if self.being_deleted else "present"

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True, slots=True)
class PictureEdge:
    """An ownerReference, drawn from the dependent to its owner."""

    dependent: str
    owner: str
    controller: bool = False
    block_owner_deletion: bool = False
    #: The lint finding that flags this reference, if any.
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class WaitEdge:
    """``why``'s "waits for": ``holder`` cannot go before ``held`` (``via`` says why)."""

    holder: str
    held: str
    via: str = ""


@dataclass(frozen=True, slots=True)
class Picture:
    """What to draw: objects by uid, their references, ``why``'s waits; cut down by the methods."""

    nodes: Mapping[str, PictureNode]
    edges: tuple[PictureEdge, ...]
    waits: tuple[WaitEdge, ...] = ()
    title: str = ""

    def component(self, uids: Iterable[str]) -> Picture:
        """The objects connected to ``uids`` through owners and dependents (``--uid``)."""
        links: dict[str, set[str]] = {}
        for e in self.edges:
            links.setdefault(e.dependent, set()).add(e.owner)
            links.setdefault(e.owner, set()).add(e.dependent)
        seen: set[str] = set()
        stack = [u for u in uids if u in self.nodes]
        while stack:
            uid = stack.pop()
            if uid not in seen:
                seen.add(uid)
                stack.extend(links.get(uid, ()))
        return self.restrict(seen)

    def in_namespace(self, namespace: str) -> Picture:
        """The namespace's objects and, recursively, their owners (``-n``)."""
        owners: dict[str, list[str]] = {}
        for e in self.edges:
            owners.setdefault(e.dependent, []).append(e.owner)
        keep: set[str] = set()
        stack = [u for u, n in self.nodes.items() if n.namespace == namespace]
        while stack:
            uid = stack.pop()
            if uid not in keep and uid in self.nodes:
                keep.add(uid)
                stack.extend(owners.get(uid, ()))
        return self.restrict(keep)

    def restrict(self, uids: Collection[str], *, absent_owners: bool = False) -> Picture:
        """Only ``uids`` (and, with ``absent_owners``, the absent owners they reference)."""
        keep = {u for u in uids if u in self.nodes}
        if absent_owners:
            keep |= {
                e.owner for e in self.edges if e.dependent in keep and self.nodes[e.owner].absent
            }
        return replace(
            self,
            nodes={u: n for u, n in self.nodes.items() if u in keep},
            edges=tuple(e for e in self.edges if e.dependent in keep and e.owner in keep),
            waits=tuple(w for w in self.waits if w.holder in keep and w.held in keep),
        )

    def related_only(self) -> Picture:
        """Leave out objects with neither owners nor dependents, as the debug graph does."""
        return self.restrict([u for u, n in self.nodes.items() if n.related])

    def with_root_cause(self, uid: str, text: str) -> Picture:
        node = self.nodes.get(uid)
        if node is None:
            return self
        nodes = dict(self.nodes)
        nodes[uid] = replace(node, root_cause=text)
        return replace(self, nodes=nodes)

    def with_waits(self, waits: Iterable[WaitEdge], title: str = "") -> Picture:
        """Add "waits for" edges (between drawn nodes, and not already an ownerReference)."""
        owned = {(e.dependent, e.owner) for e in self.edges} | {
            (e.owner, e.dependent) for e in self.edges
        }
        extra = tuple(
            w
            for w in dict.fromkeys(waits)
            if w.holder in self.nodes
            and w.held in self.nodes
            and w.holder != w.held
            and (w.holder, w.held) not in owned
        )
        return replace(self, waits=self.waits + extra, title=title or self.title)


def _mentions(text: str, name: str) -> bool:
    """``name`` appears in ``text`` as a whole name (``web`` is not in ``web-2``)."""
    return re.search(re.escape(name) + r"(?![A-Za-z0-9.\-])", text) is not None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def build_picture(
    objects: Iterable[Mapping[str, Any]],
    *,
    problems: Mapping[str, Sequence[str]] | None = None,
    cluster_scoped: Collection[tuple[str, str]] = CLUSTER_SCOPED_KINDS,
) -> Picture:
    """Every object with a uid, its ownerReferences, and a node per absent owner.

    ``problems`` maps a dependent's uid to its lint findings (``rule: message``);
    a reference is marked when a finding of its dependent names the owner's uid,
    or the owner is absent. ``cluster_scoped`` says which (group, kind) an absent
    owner is drawn outside the namespace boxes for.
    """
    problems = problems or {}
    nodes: dict[str, PictureNode] = {}
    refs: list[tuple[str, str | None, Mapping[str, Any]]] = []
    for obj in objects:
        meta = _meta(obj)
        uid = meta.get("uid")
        if not isinstance(uid, str) or not uid:
            continue
        fins = tuple(f for f in meta.get("finalizers") or () if isinstance(f, str))
        if obj.get("kind") == "Namespace" and isinstance(obj.get("spec"), Mapping):
            spec_fins = obj["spec"].get("finalizers") or ()
            fins += tuple(f for f in spec_fins if isinstance(f, str) and f not in fins)
        ns = meta.get("namespace") or None
        nodes[uid] = PictureNode(
            uid=uid,
            api_version=str(obj.get("apiVersion") or ""),
            kind=str(obj.get("kind") or ""),
            name=str(meta.get("name") or ""),
            namespace=ns,
            being_deleted=bool(meta.get("deletionTimestamp")),
            finalizers=fins,
            problems=tuple(problems.get(uid, ())),
        )
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, Mapping) and isinstance(ref.get("uid"), str) and ref["uid"]:
                refs.append((uid, ns, ref))
    edges: dict[tuple[str, str], PictureEdge] = {}
    related: set[str] = set()
    for dep, ns, ref in refs:
        owner_uid = str(ref["uid"])
        api_version = str(ref.get("apiVersion") or "")
        kind = str(ref.get("kind") or "")
        name = str(ref.get("name") or "")
        if owner_uid not in nodes:
            scoped = (api_version.rpartition("/")[0], kind) in cluster_scoped
            nodes[owner_uid] = PictureNode(
                uid=owner_uid,
                api_version=api_version,
                kind=kind,
                name=name,
                namespace=None if scoped else ns,
                absent=True,
            )
        owner_ns = nodes[owner_uid].namespace
        names = (
            owner_uid,
            f"{kind} {name}",
            f"{kind} {owner_ns}/{name}" if owner_ns else f"{kind} {name}",
        )
        flagged = [p for p in problems.get(dep, ()) if any(_mentions(p, n) for n in names)]
        if nodes[owner_uid].absent and not flagged:
            flagged = list(problems.get(dep, ()))[:1] or ["owner not found"]
        edges[(dep, owner_uid)] = PictureEdge(
            dependent=dep,
            owner=owner_uid,
            controller=ref.get("controller") is True,
            block_owner_deletion=ref.get("blockOwnerDeletion") is True,
            problem=flagged[0] if flagged else None,
        )
        related |= {dep, owner_uid}
    for uid in related:
        nodes[uid] = replace(nodes[uid], related=True)
    ordered = tuple(edges[k] for k in sorted(edges))
    return Picture(nodes=nodes, edges=ordered)


def picture_from_debug_graph(doc: Mapping[str, Any]) -> Picture:
    """A picture of kube-controller-manager's debug graph (as ``dot_to_json`` reads it).

    That format has no finalizers and no reference flags: states are drawn from
    its beingDeleted / deletingDependents / virtual / missing attributes.
    """
    nodes: dict[str, PictureNode] = {}
    for v in doc.get("nodes") or ():
        group, version = str(v.get("group") or ""), str(v.get("version") or "")
        fins = (_FOREGROUND,) if v.get("deletingDependents") else ()
        nodes[str(v["id"])] = PictureNode(
            uid=str(v.get("uid") or v["id"]),
            api_version=f"{group}/{version}" if group else version,
            kind=str(v.get("kind") or ""),
            name=str(v.get("name") or ""),
            namespace=str(v.get("namespace") or "") or None,
            being_deleted=bool(v.get("beingDeleted") or v.get("deletingDependents")),
            finalizers=fins,
            absent=bool(v.get("virtual") or v.get("missing")),
            related=True,
        )
    edges = tuple(
        PictureEdge(dependent=str(e["from"]), owner=str(e["to"]))
        for e in doc.get("edges") or ()
        if e["from"] in nodes and e["to"] in nodes
    )
    return Picture(nodes=nodes, edges=edges)


# -- DOT ------------------------------------------------------------------------


def _q(text: str) -> str:
    """A DOT double-quoted string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _html(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def _node_classes(n: PictureNode) -> list[str]:
    classes = ["object", n.state]
    if n.being_deleted and n.state != "deleting":
        classes.append("deleting")
    if n.problems:
        classes.append("invalid")
    if n.root_cause:
        classes.append("rootcause")
    return classes


def _node_lines(n: PictureNode) -> tuple[str, str]:
    """The label (Kind name, then the state in words) and the tooltip."""
    label = [n.label]
    shown = [f for f in n.finalizers if f not in (_FOREGROUND, _ORPHAN)]
    if n.absent:
        label.append("(absent)")
    elif n.foreground:
        label.append("deleting: waits for dependents")
    elif n.orphaning:
        label.append("deleting: orphaning dependents")
    elif n.being_deleted:
        label.append("deleting")
    if n.being_deleted and shown:
        label.append("held by " + ", ".join(shown[:3]) + (" …" if len(shown) > 3 else ""))
    if n.root_cause:
        label.append("ROOT CAUSE")
    tip = [f"{n.kind} {n.namespace + '/' if n.namespace else ''}{n.name}"]
    tip.append(f"apiVersion {n.api_version or '?'}")
    tip.append(f"uid {n.uid}")
    if n.absent:
        tip.append("not found: no object with this uid was read")
    if n.being_deleted:
        tip.append("being deleted; finalizers: " + (", ".join(n.finalizers) or "none"))
    elif n.finalizers:
        tip.append("finalizers: " + ", ".join(n.finalizers))
    tip += [f"lint {p}" for p in n.problems]
    if n.root_cause:
        tip.append("root cause: " + n.root_cause)
    return "\n".join(label), "\n".join(tip)


def _node_dot(n: PictureNode, indent: str) -> str:
    label, tip = _node_lines(n)
    fill = _STATES[n.state][0]
    style = ["rounded", "filled"]
    color, width = _BORDER, "1"
    if n.absent:
        style.append("dashed")
        color = "#7a8595"
    if n.problems:
        color, width = _RED, "2.5"
    attrs = [
        ("id", "obj_" + n.uid),
        ("class", " ".join(_node_classes(n))),
        ("label", label),
        ("tooltip", tip),
        ("fillcolor", fill),
        ("style", ",".join(style)),
        ("color", color),
        ("penwidth", width),
    ]
    if n.absent:
        attrs.append(("fontcolor", "#56606e"))
    if n.problems:
        attrs.append(("fontcolor", _RED))
    if n.root_cause:
        attrs += [("color", _ROOT), ("penwidth", "4"), ("peripheries", "2")]
    body = ", ".join(f"{k}={_q(v)}" for k, v in attrs)
    return f"{indent}{_q(n.uid)} [{body}];\n"


def _edge_dot(e: PictureEdge, nodes: Mapping[str, PictureNode]) -> str:
    classes = ["ownerref"]
    attrs: list[tuple[str, str]] = []
    tip = [f"{nodes[e.dependent].label} is owned by {nodes[e.owner].label}"]
    if e.controller:
        classes.append("controller")
        attrs.append(("penwidth", "2.2"))
        tip.append("controller: true")
    else:
        attrs.append(("penwidth", "1"))
    if e.block_owner_deletion:
        classes.append("block")
        attrs.append(("arrowhead", "box"))
        tip.append("blockOwnerDeletion: true (the owner's foreground deletion waits for it)")
    else:
        attrs.append(("arrowhead", "vee"))
    if e.problem:
        classes.append("invalid")
        attrs += [("color", _RED), ("fontcolor", _RED)]
        tip.append("lint " + e.problem)
    else:
        attrs.append(("color", "#44505f"))
    if nodes[e.owner].absent:
        attrs.append(("style", "dashed"))
    attrs = [("class", " ".join(classes)), ("tooltip", "\n".join(tip)), *attrs]
    body = ", ".join(f"{k}={_q(v)}" for k, v in attrs)
    return f"  {_q(e.dependent)} -> {_q(e.owner)} [{body}];\n"


def _wait_dot(w: WaitEdge, nodes: Mapping[str, PictureNode]) -> str:
    tip = f"{nodes[w.holder].label} waits for {nodes[w.held].label}"
    if w.via:
        tip += f" ({w.via})"
    attrs = [
        ("class", "waits"),
        ("tooltip", tip),
        ("label", "waits for"),
        ("style", "dotted"),
        ("color", _ROOT),
        ("fontcolor", _ROOT),
        ("fontsize", "9"),
        ("penwidth", "1.6"),
        ("arrowhead", "open"),
        ("constraint", "false"),
    ]
    body = ", ".join(f"{k}={_q(v)}" for k, v in attrs)
    return f"  {_q(w.holder)} -> {_q(w.held)} [{body}];\n"


def _legend(pic: Picture) -> str:
    """An HTML-like table naming only what is drawn."""
    states = {n.state for n in pic.nodes.values()}
    rows: list[str] = []

    def row(swatch: str, text: str) -> None:
        rows.append(f'<tr>{swatch}<td align="left">{_html(text)}</td></tr>')

    for state, (fill, text) in _STATES.items():
        if state in states:
            border = ' style="dashed"' if state == "absent" else ""
            row(f'<td bgcolor="{fill}" width="18" border="1"{border}> </td>', text)
    if any(n.problems for n in pic.nodes.values()) or any(e.problem for e in pic.edges):
        row(
            f'<td border="1" color="{_RED}" width="18"><font color="{_RED}">!</font></td>',
            "invalid or dangling reference (lint rule in the tooltip)",
        )
    if any(n.root_cause for n in pic.nodes.values()):
        row(f'<td border="3" color="{_ROOT}" width="18"> </td>', "root cause")
    if any(e.controller for e in pic.edges):
        row("<td><b>━▶</b></td>", "owner reference, controller: true")
    if any(not e.controller for e in pic.edges):
        row("<td>─▶</td>", "owner reference")
    if any(e.block_owner_deletion for e in pic.edges):
        row("<td>─■</td>", "blockOwnerDeletion: true")
    if pic.waits:
        row(f'<td><font color="{_ROOT}">┈▶</font></td>', "waits for (why)")
    table = (
        '<table border="1" cellborder="0" cellspacing="2" cellpadding="2" color="#9aa4b1">'
        '<tr><td colspan="2"><b>legend</b></td></tr>' + "".join(rows) + "</table>"
    )
    return (
        '  subgraph "cluster_legend" {\n    id="legend_box"; class="legend"; label=""; '
        'style="invis";\n'
        f'    "legend" [id="legend", class="legend", shape=plaintext, label=<{table}>];\n'
        "  }\n"
    )


def picture_to_dot(pic: Picture, *, legend: bool = True) -> str:
    """DOT text for ``pic``: namespaces as boxes, states as colours, a legend."""
    out = ["digraph ownergc {\n"]
    title = pic.title or "ownerReferences (edges go from dependent to owner)"
    out.append(
        f'  graph [rankdir=BT, fontname="Helvetica", fontsize=11, labelloc=t, '
        f"label={_q(title)}, tooltip={_q(title)}, nodesep=0.3, ranksep=0.5];\n"
    )
    out.append('  node [shape=box, fontname="Helvetica", fontsize=11, margin="0.15,0.06"];\n')
    out.append('  edge [fontname="Helvetica", fontsize=9];\n')
    by_ns: dict[str | None, list[PictureNode]] = {}
    for uid in sorted(pic.nodes):
        n = pic.nodes[uid]
        by_ns.setdefault(n.namespace, []).append(n)
    ns_objects = {
        n.name: n for n in pic.nodes.values() if n.kind == "Namespace" and not n.namespace
    }
    for n in by_ns.pop(None, []):
        out.append(_node_dot(n, "  "))
    for ns in sorted(by_ns, key=str):
        nso = ns_objects.get(str(ns))
        terminating = nso is not None and nso.being_deleted
        cls = "namespace terminating" if terminating else "namespace"
        label = f"namespace {ns}" + (" (terminating)" if terminating else "")
        out.append(
            f"  subgraph {_q('cluster_ns_' + str(ns))} {{\n"
            f"    id={_q('ns_' + str(ns))}; class={_q(cls)}; label={_q(label)}; labelloc=b;\n"
            f'    style="rounded,dashed"; color="{"#e08a00" if terminating else "#8a94a3"}"; '
            f'bgcolor="{"#fff6ea" if terminating else "#f7f9fc"}"; fontcolor="#3a4452";\n'
        )
        for n in by_ns[ns]:
            out.append(_node_dot(n, "    "))
        out.append("  }\n")
    for e in pic.edges:
        out.append(_edge_dot(e, pic.nodes))
    for w in pic.waits:
        out.append(_wait_dot(w, pic.nodes))
    if legend and pic.nodes:
        out.append(_legend(pic))
    out.append("}\n")
    return "".join(out)
