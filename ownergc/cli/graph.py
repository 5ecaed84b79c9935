"""ownergc graph: the ownerReference dependency graph, as kube-controller-manager draws it.

From manifests (-f), a live cluster (read-only), or a running controller
(--controller URL: `ownergc controller`'s debug port, or kube-controller-manager's
/debug/controllers/garbagecollector/graph). Output:

  -o dot   Graphviz DOT with kube-controller-manager's vertex attributes (default)
  -o json  {"nodes": [...], "edges": [{"from": dependent, "to": owner}]}
  -o svg   rendered by Graphviz `dot` (Debian package graphviz), which must be on PATH

Edges go from dependent to owner. --uid (repeatable) keeps only the objects
connected to those uids through owners and dependents, like ?uid= on the
debug endpoint. Objects with neither owners nor dependents are not drawn.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import anyio

from ownergc.cli._output import emit
from ownergc.cli._sources import SourceError, add_source_arguments, inventory_from_args
from ownergc.errors import OwnerGCError

GRAPH_PATH = "/debug/controllers/garbagecollector/graph"


HELP = "draw the ownerReference graph (DOT, JSON or SVG)"


def add_parser(parser: argparse.ArgumentParser) -> None:
    """The ``graph`` command's arguments."""
    add_source_arguments(parser, controller=True)
    parser.add_argument("-o", "--output", choices=("dot", "json", "svg"), default="dot")
    parser.add_argument(
        "--uid",
        action="append",
        default=[],
        help="only the objects connected to this uid (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        if args.controller:
            if args.filename or args.kubeconfig or args.cluster:
                raise SourceError("give --controller alone, without -f or a cluster")
            dot = fetch_controller_graph(args.controller, args.uid)
        else:
            dot = anyio.run(_dot_from_inventory, args)
        if args.output == "dot":
            emit(dot)
        elif args.output == "json":
            emit(json.dumps(dot_to_json(dot), indent=2) + "\n")
        else:
            emit(render_svg(dot))
    except (SourceError, OwnerGCError) as exc:
        print(f"ownergc graph: {exc}", file=sys.stderr)
        return 2
    return 0


async def _dot_from_inventory(args: argparse.Namespace) -> str:
    from ownergc._core.dump import graph_to_dot
    from ownergc._core.graph_builder import GraphBuilder

    inv = await inventory_from_args(args)
    builder = GraphBuilder()
    for obj in inv.objects:
        try:
            builder.process_upsert(obj, str(obj["apiVersion"]), str(obj["kind"]), None)
        except OwnerGCError as exc:
            meta = obj.get("metadata") or {}
            where = inv.sources.get(str(meta.get("uid"))) or f"{obj['kind']} {meta.get('name')}"
            raise SourceError(f"{where}: {exc}") from None
    return graph_to_dot(builder.uid_to_node, args.uid or None)


def fetch_controller_graph(url: str, uids: list[str], timeout: float = 30.0) -> str:
    """GET the debug graph of a running controller (base URL or the full graph URL)."""
    parts = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
    path = parts.path.rstrip("/")
    if not path.endswith(GRAPH_PATH):
        path += GRAPH_PATH
    query = urllib.parse.urlencode([("uid", u) for u in uids])
    full = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, query, ""))
    try:
        with urllib.request.urlopen(full, timeout=timeout) as resp:
            body: bytes = resp.read()
    except urllib.error.HTTPError as exc:
        raise SourceError(f"{full}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SourceError(f"cannot fetch {full}: {reason}") from None
    text = body.decode("utf-8", "replace")
    if not text.startswith("strict digraph"):
        raise SourceError(f"{full} did not answer with a DOT graph")
    return text


_VERTEX = re.compile(r'^\s*"((?:[^"\\]|\\.)*)" \[$')
_ATTR = re.compile(r'^\s*(\w+)="((?:[^"\\]|\\.)*)"$')
_EDGE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)";$')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"'}


def _unquote(text: str) -> str:
    """Undo Go's %q quoting (as written by ownergc._core.dump and kube-controller-manager)."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if nxt in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[nxt]
                out.append(chr(int(text[i + 2 : i + 2 + width], 16)))
                i += 2 + width
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def dot_to_json(dot: str) -> dict[str, Any]:
    """Nodes (their DOT attributes, booleans as booleans) and edges of a debug graph."""
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, str]] = []
    current: dict[str, Any] | None = None
    for line in dot.splitlines():
        if current is not None:
            if line.strip() == "];":
                nodes.append(current)
                current = None
                continue
            m = _ATTR.match(line)
            if m:
                value: Any = _unquote(m.group(2))
                if m.group(1) in ("missing", "beingDeleted", "deletingDependents", "virtual"):
                    value = value == "true"
                current[m.group(1)] = value
            continue
        m = _VERTEX.match(line)
        if m:
            current = {"id": _unquote(m.group(1))}
            continue
        m = _EDGE.match(line)
        if m:
            edges.append({"from": _unquote(m.group(1)), "to": _unquote(m.group(2))})
    return {"nodes": nodes, "edges": edges}


def render_svg(dot: str) -> str:
    """``dot -Tsvg``; raises :class:`SourceError` when Graphviz is missing or fails."""
    binary = shutil.which("dot")
    if binary is None:
        raise SourceError(
            "-o svg needs Graphviz's `dot` on PATH (Debian/Ubuntu: apt-get install graphviz); "
            "-o dot writes the graph for rendering elsewhere"
        )
    result = subprocess.run(
        [binary, "-Tsvg"], input=dot, capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode != 0:
        raise SourceError(f"dot -Tsvg failed: {result.stderr.strip()}")
    return result.stdout
