"""ownergc why: say why an object is stuck deleting, or why it was not garbage-collected.

  ownergc why namespace/shop --kubeconfig ~/.kube/config
  ownergc why pvc data -n shop -f dump.yaml
  kubectl ownergc why deploy/web -o json

For an object being deleted: every finalizer it carries, who removes it and
what it waits for (dependents in foreground deletion, the namespace's
content and an unavailable aggregated API, the pods using a claim, ...),
recursively. For an object that is not being deleted: each owner reference
classified as the garbage collector does (solid, dangling, waiting, invalid)
and whether the collector would delete it.

Read-only: a live cluster is only listed (metadata only, except the kinds
whose spec or status the answer needs). Every "next:" line is a command for
you to run, with its consequence; ownergc never runs it. The text starts
with the root cause in one line; -o svg (or png, or dot) draws the objects
of the answer as `ownergc graph` does, with "waits for" edges and the root
cause highlighted (Graphviz `dot` on PATH). Exit status: 0 when
explained, 1 when the object is not found, 2 when the objects could not be
read. See docs/why.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from typing import Any

import anyio

from ownergc._core.picture import Picture, WaitEdge, picture_to_dot
from ownergc.cli._output import emit
from ownergc.cli._progress import Progress
from ownergc.cli._sources import (
    Inventory,
    SourceError,
    add_source_arguments,
    inventory_from_args,
    list_resources,
    open_cluster,
)
from ownergc.errors import OwnerGCError
from ownergc.protocols import APIResource
from ownergc.why import Explanation, TargetNotResolved, explain

#: Read in full from a cluster: the answer needs their spec or status.
_FULL = frozenset(
    {
        ("", "namespaces"),
        ("", "pods"),
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("", "services"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("apiregistration.k8s.io", "apiservices"),
    }
)
_SKIPPED = frozenset({("", "events"), ("events.k8s.io", "events")})


HELP = "why an object is stuck deleting, or why it was not garbage-collected"


def add_parser(parser: argparse.ArgumentParser) -> None:
    """The ``why`` command's arguments."""
    parser.add_argument("target", metavar="KIND/NAME", help="e.g. namespace/shop, pvc/data")
    parser.add_argument("name", nargs="?", help="NAME when KIND is given alone (kubectl style)")
    parser.add_argument("-n", "--namespace", help="namespace of the object (default: default)")
    add_source_arguments(parser)
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "svg", "png", "dot"),
        default="text",
        help="text (a tree), json, or a picture of the chain of blockers: svg, png, dot",
    )
    parser.add_argument(
        "--depth", type=int, default=8, help="how deep to follow what holds what (default: 8)"
    )


def _split_target(args: argparse.Namespace) -> tuple[str, str]:
    if args.name:
        return args.target, args.name
    kind, sep, name = args.target.partition("/")
    if not sep or not kind or not name:
        raise SourceError(f"give KIND/NAME or KIND NAME, got {args.target!r}")
    return kind, name


def run(args: argparse.Namespace) -> int:
    try:
        kind, name = _split_target(args)
        inv, failures = anyio.run(_read, args)
        if args.output in ("svg", "png") and shutil.which("dot") is None:
            raise SourceError(
                f"-o {args.output} needs Graphviz's `dot` on PATH (Debian/Ubuntu: apt-get "
                "install graphviz); -o dot writes the picture for rendering elsewhere"
            )
        resources = inv.resources if inv.resources is not None else _manifest_resources(inv)
        result = explain(
            inv.objects,
            resources,
            kind=kind,
            name=name,
            namespace=args.namespace,
            discovery_failures=failures,
            max_depth=args.depth,
        )
    except (SourceError, OwnerGCError, TargetNotResolved) as exc:
        print(f"ownergc why: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    if args.output == "json":
        emit(json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n")
    elif args.output == "text":
        emit(result.render())
    else:
        try:
            _draw(result, inv, args.output)
        except (SourceError, OwnerGCError) as exc:
            print(f"ownergc why: {exc}", file=sys.stderr)
            return 2
    return 1 if result.verdict == "absent" else 0


def picture_of_explanation(result: Explanation, inv: Inventory) -> Picture:
    """``ownergc graph``'s picture cut down to the objects of the answer, root cause marked."""
    from ownergc.cli.graph import picture_of_inventory

    objects, waits = result.chain()
    uids = [r.uid for r in objects if r.uid]
    cause = result.root_cause()
    title = f"why {result.target}: {result.verdict}"
    if cause is not None:
        title += f" — root cause: {cause.line()}"
    pic = (
        picture_of_inventory(inv)
        .restrict(uids, absent_owners=True)
        .with_waits(
            (
                WaitEdge(w.holder.uid, w.held.uid, w.via)
                for w in waits
                if w.holder.uid and w.held.uid
            ),
            title=title,
        )
    )
    if cause is not None and cause.subject is not None and cause.subject.uid:
        pic = pic.with_root_cause(cause.subject.uid, cause.line())
    return pic


def _draw(result: Explanation, inv: Inventory, output: str) -> None:
    from ownergc.cli.graph import emit_bytes, render

    dot = picture_to_dot(picture_of_explanation(result, inv))
    if output == "dot":
        emit(dot)
    elif output == "svg":
        emit(render(dot, "svg").decode("utf-8"))
    else:
        emit_bytes(render(dot, "png"))


async def _read(args: argparse.Namespace) -> tuple[Inventory, dict[str, str]]:
    if args.filename:
        return await inventory_from_args(args), {}
    if not (args.kubeconfig or args.context or args.cluster):
        return await inventory_from_args(args), {}  # raises the usage message
    kind, name = _split_target(args)
    return await _read_cluster(args.kubeconfig, args.context, (kind, name, args.namespace))


async def _read_cluster(
    kubeconfig: str | None, context: str | None, target: tuple[str, str, str | None] | None = None
) -> tuple[Inventory, dict[str, str]]:
    """Discovery and the listable objects the answer can involve; listing failures are
    kept, as they may be the cause.

    For a namespace or a namespaced object only that namespace is read, beside every
    cluster-scoped object: a namespaced object's owners, dependents, pods and claims
    live there, and what a namespace waits for is its content and cluster-scoped
    APIs. An owner chain leading to a cluster-scoped object in foreground deletion
    (whose dependents can be anywhere) widens the read to the whole cluster.
    """
    store, discovery = await open_cluster(kubeconfig, context, strip_managed_fields=False)
    failures: dict[str, str] = dict(discovery.failed)
    async with store:
        resources = list(discovery.resources)
        wanted = [
            res
            for res in resources
            if res.preferred
            and "/" not in res.resource
            and "list" in res.verbs
            and (res.group, res.resource) not in _SKIPPED
        ]
        namespace = _scope(resources, target) if target is not None else None
        objects = await _list(store, wanted, namespace, failures)
        if namespace is not None and _foreground_cluster_owner(objects):
            failures = dict(discovery.failed)
            objects = await _list(store, wanted, None, failures)
        elif namespace is not None:
            # Owner references leaving the namespace: the kinds they name, read
            # everywhere, so an owner in another namespace is told from a missing one.
            elsewhere = _dangling_kinds(objects, wanted)
            if elsewhere:
                more = await _list(store, elsewhere, None, failures)
                objects += [o for o in more if o["metadata"].get("namespace") != namespace]
    return Inventory(objects, resources=resources, origin="cluster"), failures


def _scope(resources: list[APIResource], target: tuple[str, str, str | None]) -> str | None:
    """The one namespace whose content the answer about ``target`` needs, or None (all)."""
    from ownergc.cli.preview import resolve_kind

    kind, name, namespace = target
    try:
        resource = resolve_kind(resources, kind)
    except SourceError:
        return None  # explain() reports the unknown kind with the whole discovery
    if resource.group == "" and resource.resource == "namespaces":
        return name
    return (namespace or "default") if resource.namespaced else None


def _dangling_kinds(objects: list[dict[str, Any]], wanted: list[APIResource]) -> list[APIResource]:
    """The namespaced resources named by owner references whose uid was not read."""
    uids = {obj["metadata"].get("uid") for obj in objects}
    kinds: set[tuple[str, str]] = set()
    for obj in objects:
        for ref in obj["metadata"].get("ownerReferences") or ():
            if isinstance(ref, dict) and ref.get("uid") not in uids:
                group = str(ref.get("apiVersion", "")).rpartition("/")[0]
                kinds.add((group, str(ref.get("kind", ""))))
    return [res for res in wanted if res.namespaced and (res.group, res.kind) in kinds]


def _foreground_cluster_owner(objects: list[dict[str, Any]]) -> bool:
    """A cluster-scoped object waiting for its dependents, which may live anywhere."""
    return any(
        not obj["metadata"].get("namespace")
        and "foregroundDeletion" in (obj["metadata"].get("finalizers") or ())
        for obj in objects
    )


async def _list(
    store: Any, wanted: list[APIResource], namespace: str | None, failures: dict[str, str]
) -> list[dict[str, Any]]:
    full = [(res.group, res.resource) in _FULL for res in wanted]
    with Progress("reading", len(wanted)) as progress:
        listed = await list_resources(
            store,
            wanted,
            namespace=namespace,
            metadata_only=[not f for f in full],
            progress=progress,
        )
    objects: list[dict[str, Any]] = []
    for (res, items), whole in zip(listed, full, strict=True):
        if isinstance(items, OwnerGCError):
            failures[res.api_version] = f"listing {res.group_resource} failed: {items}"
            continue
        for item in items:
            obj = dict(item) if whole else {"metadata": item["metadata"]}
            obj["apiVersion"], obj["kind"] = res.api_version, res.kind
            objects.append(obj)
    return objects


def _manifest_resources(inv: Inventory) -> list[APIResource]:
    """What a cluster would serve for these manifests: built-in kinds plus their CRDs."""
    from ownergc._kit.manifests import is_crd
    from ownergc_backends.memory import InMemoryStore

    store = InMemoryStore()
    for obj in inv.objects:
        if is_crd(obj):
            crd = {k: v for k, v in obj.items() if k != "status"}
            meta = dict(crd.get("metadata") or {})
            for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "finalizers"):
                meta.pop(key, None)
            crd["metadata"] = meta
            try:
                store.load_objects([crd])
            except OwnerGCError:
                continue  # an invalid CRD serves nothing, as on a real server
    resources = list(anyio.run(store.discover).resources)
    resources.append(
        APIResource(
            "apiregistration.k8s.io",
            "v1",
            "apiservices",
            "APIService",
            False,
            frozenset({"get", "list", "watch", "delete"}),
        )
    )
    return resources
