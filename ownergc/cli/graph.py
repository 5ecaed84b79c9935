"""ownergc graph: the ownerReference dependency graph, drawn for people or as KCM's debug DOT.

From manifests (-f), a live cluster (read-only), or a running controller
(--controller URL: `ownergc controller`'s debug port, or kube-controller-manager's
/debug/controllers/garbagecollector/graph). Output:

  -o svg   a picture for people (ownergc._core.picture), rendered by Graphviz `dot`
           (Debian package graphviz), which must be on PATH
  -o png   the same picture as PNG, where the installed Graphviz renders PNG
  -o dot   Graphviz DOT (default: kube-controller-manager's debug format)
  -o json  {"nodes": [...], "edges": [{"from": dependent, "to": owner}]} (KCM's attributes)

--style people|kcm picks the drawing: `people` (the default for svg and png)
labels boxes `Kind name`, groups namespaces, colours states and marks the
references lint flags; `kcm` (the default for dot) is byte-compatible with
kube-controller-manager's debug graph. Edges go from dependent to owner.
--uid (repeatable) keeps only the objects connected to those uids through owners
and dependents, like ?uid= on the debug endpoint; -n NAMESPACE keeps that
namespace's objects and their owners (and implies the people style). Objects with neither
owners nor dependents are not drawn.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import anyio

from ownergc._core.dump import graph_to_dot, graph_to_json
from ownergc._core.graph import UIDToNode
from ownergc._core.picture import (
    CLUSTER_SCOPED_KINDS,
    READABLE_NODES,
    Picture,
    build_picture,
    picture_from_debug_graph,
    picture_to_dot,
)
from ownergc._kit.gcpause import gc_paused
from ownergc.cli._output import emit
from ownergc.cli._sources import (
    Inventory,
    SourceError,
    add_source_arguments,
    inventory_from_args,
)
from ownergc.errors import OwnerGCError

try:  # the kube extra's encoder: -o json of a big cluster is tens of megabytes
    import orjson as _orjson
except ImportError:  # pragma: no cover - without the kube extra
    _orjson = None  # type: ignore[assignment]

_RBAC_RULES = "block-owner-deletion"
GRAPH_PATH = "/debug/controllers/garbagecollector/graph"


HELP = "draw the ownerReference graph (SVG/PNG for people, KCM's DOT, JSON)"


def add_parser(parser: argparse.ArgumentParser) -> None:
    """The ``graph`` command's arguments."""
    add_source_arguments(parser, controller=True)
    parser.add_argument("-o", "--output", choices=("dot", "json", "svg", "png"), default="dot")
    parser.add_argument(
        "--style",
        choices=("people", "kcm"),
        help="people: a picture to read (default for svg, png); kcm: kube-controller-manager's "
        "debug DOT, byte-compatible (default for dot). -o json is always KCM's attributes",
    )
    parser.add_argument(
        "--uid",
        action="append",
        default=[],
        help="only the objects connected to this uid (repeatable)",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        help="only this namespace's objects and their owners (implies --style people)",
    )


def run(args: argparse.Namespace) -> int:
    # One pass over a whole cluster: hundreds of thousands of acyclic dicts, nodes
    # and strings, which the cyclic collector would otherwise walk again and again
    # (a third of the command's CPU at 100k objects). Nothing else runs meanwhile.
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    people_default = args.output in ("svg", "png") or bool(args.namespace)
    style = args.style or ("people" if people_default else "kcm")
    try:
        if args.controller and (args.filename or args.kubeconfig or args.cluster):
            raise SourceError("give --controller alone, without -f or a cluster")
        if args.output == "json" or style == "kcm":
            if args.namespace:
                raise SourceError(
                    "-n works with the people style (-o svg, -o png, -o dot --style people); "
                    "KCM's graph and -o json are narrowed with --uid"
                )
            if args.controller:
                dot = fetch_controller_graph(args.controller, args.uid)
                if args.output == "json":
                    doc = dot_to_json(dot)
                    write_json_document([("nodes", doc["nodes"]), ("edges", doc["edges"])])
                    return 0
            else:
                graph = anyio.run(_graph_from_inventory, args).nodes
                if args.output == "json":
                    # Built from the graph (no DOT round trip), written as it is encoded.
                    nodes, edges = graph_to_json(graph, args.uid or None)
                    del graph
                    write_json_document([("nodes", nodes), ("edges", edges)])
                    return 0
                dot = graph_to_dot(graph, args.uid or None)
        else:
            pic = _picture(args)
            _warn_if_large(pic, args)
            dot = picture_to_dot(pic)
        if args.output == "dot":
            emit(dot)
        elif args.output == "svg":
            emit(render(dot, "svg").decode("utf-8"))
        else:
            emit_bytes(render(dot, "png"))
    except (SourceError, OwnerGCError) as exc:
        print(f"ownergc graph: {exc}", file=sys.stderr)
        return 2
    return 0


def _picture(args: argparse.Namespace) -> Picture:
    """The people's picture of what the arguments name, narrowed by --uid and -n."""
    if args.controller:
        pic = picture_from_debug_graph(dot_to_json(fetch_controller_graph(args.controller, [])))
    else:
        inv = anyio.run(_read, args)
        pic = picture_of_inventory(inv).related_only()
    if args.uid:
        pic = pic.component(args.uid)
    if args.namespace:
        pic = pic.in_namespace(args.namespace)
    return pic


def picture_of_inventory(inv: Inventory) -> Picture:
    """Every object of ``inv``, with lint's findings on its references (errors, warnings)."""
    from ownergc.cli.lint import _kinds
    from ownergc.lint import lint_objects

    kinds = _kinds(inv)
    findings = lint_objects(
        inv.objects, kinds=kinds, complete=inv.origin == "cluster", sources=inv.sources
    )
    problems: dict[str, list[str]] = {}
    for f in findings:
        # Only what is wrong with the reference itself: the blockOwnerDeletion RBAC
        # heuristic is about who may write it, not about the graph.
        if f.uid and f.severity in ("error", "warning") and not f.rule.startswith(_RBAC_RULES):
            problems.setdefault(f.uid, []).append(f"{f.rule}: {f.message}")
    scoped = set(CLUSTER_SCOPED_KINDS) | {
        (api_version.rpartition("/")[0], kind)
        for (api_version, kind), info in kinds.items()
        if not info.namespaced
    }
    return build_picture(inv.objects, problems=problems, cluster_scoped=scoped)


async def _read(args: argparse.Namespace) -> Inventory:
    # A whole cluster from the watch cache: a graph reads references only.
    return await inventory_from_args(args, cached=True)


def _warn_if_large(pic: Picture, args: argparse.Namespace) -> None:
    """Past what a person can read, say so on stderr with the command that narrows it."""
    count = len(pic.nodes)
    if count == 0:
        print(
            "ownergc graph: nothing to draw: no object here has an owner or a dependent",
            file=sys.stderr,
        )
    if count <= READABLE_NODES:
        return
    namespaces = Counter(n.namespace for n in pic.nodes.values() if n.namespace)
    argv = sys.argv[1:] or ["graph"]
    base = "ownergc " + " ".join(argv)
    hint = ""
    if namespaces and not args.namespace:
        busiest, _ = namespaces.most_common(1)[0]
        hint = f"{base} -n {busiest}"
    else:
        hint = f"{base} --uid <uid of the object you care about>"
    print(
        f"ownergc graph: {count} objects drawn — more than a person can read in one picture "
        f"(about {READABLE_NODES}); narrow it, e.g.: {hint}",
        file=sys.stderr,
    )


def emit_bytes(data: bytes) -> None:
    """Binary output (PNG) to stdout; a reader that went away is not an error."""
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        from ownergc.cli._output import silence_stdout

        silence_stdout()


class _Graph:
    """A graph as anyio.run's result: asyncio formats its main task (and so the
    result) when it puts SIGINT's handler back, and a big graph's repr took seconds."""

    def __init__(self, nodes: UIDToNode) -> None:
        self.nodes = nodes

    def __repr__(self) -> str:
        return f"<graph of {len(self.nodes)} nodes>"


async def _graph_from_inventory(args: argparse.Namespace) -> _Graph:
    """The dependency graph of what the arguments name (the objects themselves are let go)."""
    from ownergc._core.graph_builder import GraphBuilder

    inv = await _read(args)
    builder = GraphBuilder()
    for obj in inv.objects:
        try:
            builder.process_upsert(obj, str(obj["apiVersion"]), str(obj["kind"]), None)
        except OwnerGCError as exc:
            meta = obj.get("metadata") or {}
            where = inv.sources.get(str(meta.get("uid"))) or f"{obj['kind']} {meta.get('name')}"
            raise SourceError(f"{where}: {exc}") from None
    return _Graph(builder.uid_to_node)


#: Items encoded at once: enough for the encoder to run at speed, few enough
#: that the document (tens of megabytes for a big cluster) is never held whole.
JSON_BATCH = 2000


def _encode_indented(items: list[Any]) -> bytes:
    """Exactly ``json.dumps(items, indent=2).encode()`` (non-ASCII escaped), by orjson
    when it is installed and the answer is the same (ASCII without DEL)."""
    if _orjson is not None:
        out: bytes = _orjson.dumps(items, option=_orjson.OPT_INDENT_2)
        if out.isascii() and b"\x7f" not in out:
            return out
    return json.dumps(items, indent=2).encode("ascii")


def json_document_chunks(sections: Sequence[tuple[str, Iterable[Any]]]) -> Iterator[bytes]:
    """``json.dumps(dict(sections), indent=2) + "\\n"``, in pieces of at most
    :data:`JSON_BATCH` items of a section each."""
    yield b"{"
    for index, (key, items) in enumerate(sections):
        yield (b",\n  " if index else b"\n  ") + json.dumps(key).encode("ascii") + b": ["
        first = True
        iterator = iter(items)
        while batch := list(itertools.islice(iterator, JSON_BATCH)):
            body = _encode_indented(batch)  # [\n  item,\n  item\n]
            # One level deeper: JSON strings hold no raw newline, every one is a line break.
            yield (b"\n  " if first else b",\n  ") + body[2:-2].replace(b"\n", b"\n  ")
            first = False
        yield b"]" if first else b"\n  ]"
    yield b"\n}\n" if sections else b"}\n"


def write_json_document(sections: Sequence[tuple[str, Iterable[Any]]]) -> None:
    """The document of :func:`json_document_chunks` to stdout, a piece at a time;
    a reader that went away is not an error."""
    try:
        sys.stdout.flush()
        binary = getattr(sys.stdout, "buffer", None)  # None: a text-only stream (StringIO)
        for chunk in json_document_chunks(sections):
            if binary is not None:
                binary.write(chunk)
            else:
                sys.stdout.write(chunk.decode("ascii"))
        (binary or sys.stdout).flush()
    except BrokenPipeError:
        from ownergc.cli._output import silence_stdout

        silence_stdout()


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
    if "\\" not in text:
        return text  # nothing escaped: most names and uids (this loop was half of -o json)
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


def render(dot: str, fmt: str) -> bytes:
    """``dot -T<fmt>``; raises :class:`SourceError` when Graphviz is missing or cannot."""
    binary = shutil.which("dot")
    if binary is None:
        raise SourceError(
            f"-o {fmt} needs Graphviz's `dot` on PATH (Debian/Ubuntu: apt-get install graphviz); "
            "-o dot writes the graph for rendering elsewhere"
        )
    result = subprocess.run(
        [binary, f"-T{fmt}"],
        input=dot.encode("utf-8"),
        capture_output=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        err = result.stderr.decode("utf-8", "replace").strip()
        if "not recognized" in err:
            raise SourceError(
                f"this Graphviz cannot write {fmt} ({err.splitlines()[0]}); use -o svg, or "
                "-o dot and render it elsewhere"
            )
        raise SourceError(f"dot -T{fmt} failed: {err}")
    return result.stdout
