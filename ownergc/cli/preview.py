"""ownergc preview: what a cascading delete would remove, orphan or block — before you run it.

Copies the objects (from manifests, or read-only from a live cluster) into an
in-memory apiserver, runs kube-controller-manager's real garbage collector
(and namespace controller) on the copy, performs the delete there and
reports what the collector did: every object that would be deleted (in
order), orphaned, kept by another owner, or blocked — by which finalizer or
which blocking dependent. Nothing is ever written to a cluster.

Examples:
  ownergc preview -f dump.yaml --delete deployment/web -n shop --cascade foreground
  ownergc preview --kubeconfig ~/.kube/config --delete ns/shop -o json

Objects whose owners are already absent are collected before the delete
(as the real collector would); they are listed separately. With manifests
that are only part of a cluster, that can mean owners missing from the input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from ownergc.cli._output import emit
from ownergc.cli._sources import (
    SourceError,
    add_source_arguments,
    inventory_from_args,
    load_into_store,
)
from ownergc.errors import OwnerGCError
from ownergc.protocols import APIResource

CASCADES = ("background", "foreground", "orphan")

#: kubectl's short names of the built-in kinds ownergc serves.
SHORT_NAMES: dict[str, str] = {
    "ns": "namespaces",
    "no": "nodes",
    "po": "pods",
    "cm": "configmaps",
    "svc": "services",
    "sa": "serviceaccounts",
    "rc": "replicationcontrollers",
    "pvc": "persistentvolumeclaims",
    "pv": "persistentvolumes",
    "deploy": "deployments",
    "rs": "replicasets",
    "ds": "daemonsets",
    "sts": "statefulsets",
    "cj": "cronjobs",
    "crd": "customresourcedefinitions",
    "crds": "customresourcedefinitions",
}


HELP = "show what a cascading delete would delete, orphan or block (never writes)"


def add_parser(parser: argparse.ArgumentParser) -> None:
    """The ``preview`` command's arguments."""
    add_source_arguments(parser)
    parser.add_argument(
        "--delete",
        required=True,
        metavar="KIND/NAME",
        help="the object to delete: deployment/web, deploy/web, cm/x, widgets.example.com/w",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        default="default",
        help="namespace of a namespaced object (default: default)",
    )
    parser.add_argument(
        "--cascade",
        choices=CASCADES,
        default="background",
        help="propagation policy, as kubectl delete --cascade (default: background)",
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds to let the collector settle (default: 30)",
    )


def run(args: argparse.Namespace) -> int:
    if "/" not in args.delete or not all(args.delete.split("/", 1)):
        print(f"ownergc preview: --delete wants KIND/NAME, got {args.delete!r}", file=sys.stderr)
        return 2
    try:
        return anyio.run(_preview, args)
    except (SourceError, OwnerGCError) as exc:
        print(f"ownergc preview: {exc}", file=sys.stderr)
        return 2


def resolve_kind(resources: list[APIResource], text: str) -> APIResource:
    """kubectl's resource names: plural, singular (kind), short name, each optionally
    ``.group`` qualified; case-insensitive. Raises :class:`SourceError`."""
    wanted = text.lower()
    wanted = SHORT_NAMES.get(wanted, wanted)
    name, _, group = wanted.partition(".")
    matches = []
    for res in resources:
        if not res.preferred or "/" in res.resource:
            continue
        if group and res.group.lower() != group:
            continue
        if name in (res.resource, res.kind.lower()):
            matches.append(res)
    if not matches:
        raise SourceError(f'the server doesn\'t have a resource type "{text}"')
    # Core and built-in groups win over custom ones with the same name, as in kubectl.
    matches.sort(
        key=lambda r: (r.group != "", "." in r.group and not r.group.endswith("k8s.io"), r.group)
    )
    return matches[0]


def _scope(resources: Sequence[APIResource], args: argparse.Namespace) -> str | None:
    """The namespace whose content is all a delete of the target can reach, or None.

    A namespaced object's dependents live in its namespace (a reference from
    elsewhere is invalid, and the collector deletes such a dependent whatever
    happens to the owner), and a namespace's deletion reaches only its content;
    a cluster-scoped owner's dependents can be anywhere.
    """
    kind_text, _, name = str(args.delete).partition("/")
    try:
        resource = resolve_kind(list(resources), kind_text)
    except SourceError:
        return None  # reported after reading, with the cluster's own discovery
    if resource.group == "" and resource.resource == "namespaces":
        return name
    return str(args.namespace) if resource.namespaced else None


async def _preview(args: argparse.Namespace) -> int:
    from ownergc._core.preview import build_report, render_text, report_to_json
    from ownergc.protocols import PropagationPolicy
    from ownergc.testing._cluster import EmbeddedCluster, new_store

    inv = await inventory_from_args(args, scope=lambda resources: _scope(resources, args))
    store = new_store()
    load_into_store(store, inv)
    initial = [o for o in store.snapshot() if o["kind"] != "Event"]

    kind_text, _, name = args.delete.partition("/")
    resource = resolve_kind(list((await store.discover()).resources), kind_text)
    namespace = args.namespace if resource.namespaced else None
    target = store.get_object(resource.api_version, resource.kind, name, namespace)
    if target is None:
        where = f' in namespace "{namespace}"' if namespace else ""
        raise SourceError(f'{resource.group_resource} "{name}" not found{where}')

    actions: list[dict[str, Any]] = []

    def on_action(what: str, details: Any) -> None:
        actions.append({"action": what, **{k: v for k, v in details.items() if k != "patch"}})

    cluster = EmbeddedCluster(store, serve_http=False, discovery_period=0.5, on_action=on_action)
    removals: list[tuple[int, str]] = []
    complete = True
    async with anyio.create_task_group() as tg:
        await tg.start(cluster.run)
        try:
            await cluster.wait_idle(args.timeout)
        except TimeoutError:
            complete = False
        baseline = [o for o in store.snapshot() if o["kind"] != "Event"]
        present = {o["metadata"]["uid"] for o in baseline}
        pre_existing = [o for o in initial if o["metadata"]["uid"] not in present]
        actions.clear()
        rv = store.resource_version
        async with anyio.create_task_group() as wtg:
            for res in (await store.discover()).resources:
                if res.preferred and "/" not in res.resource and res.kind != "Event":
                    wtg.start_soon(_record, store, res, rv, removals)
            await anyio.sleep(0)
            await store.delete(
                resource,
                name,
                namespace=namespace,
                propagation_policy=PropagationPolicy(args.cascade.capitalize()),
            )
            try:
                await cluster.wait_idle(args.timeout)
            except TimeoutError:
                complete = False
            await anyio.sleep(0.05)
            wtg.cancel_scope.cancel()
        after = [o for o in store.snapshot() if o["kind"] != "Event"]
        tg.cancel_scope.cancel()

    order = [uid for _, uid in sorted(removals)]
    report = build_report(
        target_uid=target["metadata"]["uid"],
        cascade=args.cascade,
        before=baseline,
        after=after,
        removal_order=order,
        pre_existing=pre_existing,
        actions=actions,
        complete=complete,
    )
    if args.output == "json":
        emit(json.dumps(report_to_json(report), indent=2) + "\n")
    else:
        emit(render_text(report))
    return 0


async def _record(store: Any, res: APIResource, rv: str, removals: list[tuple[int, str]]) -> None:
    """Collect (resourceVersion, uid) of every removal of ``res`` after ``rv``."""
    try:
        async for event in store.watch(res, resource_version=rv, metadata_only=True):
            if event.type == "DELETED":
                meta = event.object["metadata"]
                removals.append((int(meta["resourceVersion"]), meta["uid"]))
    except OwnerGCError:
        return
