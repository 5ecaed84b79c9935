"""Where ``preview``, ``lint`` and ``graph`` read objects from: manifests or a live cluster.

A live cluster is only ever *read* (discovery, then a metadata-only list of
every listable resource through :class:`~ownergc_backends.kube.KubeStore`);
nothing here can write to it. ``preview`` and ``why`` read consistent lists
(kubectl's); ``graph`` and ``lint`` of a whole cluster read what the
apiserver's watch cache holds (``resourceVersion=0``, one answer per
resource, only the fields a graph reads), as the controller's monitors do.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from ownergc._kit.backends import load_backend
from ownergc._kit.manifests import ManifestError, read_manifests
from ownergc.cli._progress import Progress
from ownergc.controller import is_monitored
from ownergc.errors import BackendUnavailable, OwnerGCError
from ownergc.protocols import APIResource, DiscoveryResult, JSONDict

if TYPE_CHECKING:
    from ownergc_backends.memory import InMemoryStore

__all__ = [
    "Inventory",
    "SourceError",
    "add_source_arguments",
    "inventory_from_args",
    "list_resources",
    "load_into_store",
    "object_label",
    "open_cluster",
]


class SourceError(OwnerGCError):
    """The objects could not be read (bad manifests, unreachable cluster, no extra)."""


@dataclass
class Inventory:
    """Objects (full JSON, apiVersion/kind set) and what served them."""

    objects: list[dict[str, Any]]
    #: Discovery of the live cluster; None for manifests.
    resources: list[APIResource] | None = None
    #: uid or "Kind ns/name" -> file#document, for messages (manifests only).
    sources: dict[str, str] = field(default_factory=dict)
    origin: str = "manifests"
    #: The one namespace read from a cluster (with every cluster-scoped object), or None.
    namespace: str | None = None

    def __repr__(self) -> str:
        # Short: asyncio formats the main task of anyio.run (and so its result)
        # when it puts SIGINT's handler back; a whole cluster took seconds.
        return f"Inventory({len(self.objects)} objects from {self.origin})"


def object_label(obj: dict[str, Any]) -> str:
    """``Kind namespace/name`` (or ``Kind name`` when cluster-scoped)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{obj.get('kind')} {ns + '/' if ns else ''}{meta.get('name')}"


def add_source_arguments(parser: Any, *, controller: bool = False) -> None:
    """``-f PATH`` (repeatable) or ``--kubeconfig`` / ``--context``."""
    group = parser.add_argument_group("where the objects come from (one of)")
    group.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="PATH",
        help="manifests: a YAML/JSON file, a directory of them, or - for stdin (repeatable)",
    )
    group.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="read a live cluster (read-only) through this kubeconfig",
    )
    group.add_argument("--context", help="kubeconfig context (default: the current one)")
    group.add_argument(
        "--cluster",
        action="store_true",
        help="read the live cluster found the kubectl way (KUBECONFIG, ~/.kube/config, "
        "in-cluster) without naming a kubeconfig",
    )
    if controller:
        group.add_argument(
            "--controller",
            metavar="URL",
            help="a running `ownergc controller` (or kube-controller-manager) whose "
            "/debug/controllers/garbagecollector/graph to fetch",
        )


#: Given a cluster's resources, the one namespace a question is about (None: all of them).
Scope = Callable[[Sequence[APIResource]], "str | None"]


async def inventory_from_args(
    args: Any, *, scope: Scope | None = None, cached: bool = False
) -> Inventory:
    """Read the objects the command line names; raises :class:`SourceError`.

    ``scope``: from a live cluster, read only the namespace it names plus the
    cluster-scoped objects — all a question about that namespace can depend on,
    as a namespaced object's owners and dependents live in its namespace or at
    cluster scope.

    ``cached``: from a live cluster, list from the apiserver's watch cache
    (``resourceVersion=0``: one answer per resource instead of pages of a
    consistent snapshot, possibly a moment behind the newest writes) and keep
    only the metadata a graph reads (uid, name, namespace, resourceVersion,
    ownerReferences, finalizers, deletionTimestamp; absent ones None).
    """
    live = bool(args.kubeconfig or args.context or args.cluster)
    if args.filename and live:
        raise SourceError(
            "give either -f manifests or a cluster (--kubeconfig/--cluster), not both"
        )
    if args.filename:
        return inventory_from_manifests(args.filename)
    if live:
        return await inventory_from_cluster(
            args.kubeconfig, args.context, scope=scope, cached=cached
        )
    raise SourceError(
        "nothing to read: give manifests with -f PATH, or a cluster with --kubeconfig PATH "
        "(or --cluster for KUBECONFIG / ~/.kube/config)"
    )


def inventory_from_manifests(paths: Sequence[str | os.PathLike[str]]) -> Inventory:
    try:
        manifests = read_manifests(paths)
    except ManifestError as exc:
        raise SourceError(str(exc)) from None
    inv = Inventory([m.obj for m in manifests])
    for m in manifests:
        meta = m.obj.get("metadata") or {}
        uid = meta.get("uid")
        inv.sources[uid if isinstance(uid, str) and uid else object_label(m.obj)] = m.source
    return inv


async def open_cluster(
    kubeconfig: str | None, context: str | None, **options: Any
) -> tuple[Any, DiscoveryResult]:
    """A KubeStore for the cluster (the caller enters it) and its discovery, read-only.

    Every way a cluster cannot be read becomes a :class:`SourceError`.
    """
    try:
        kube = load_backend("kube")
    except BackendUnavailable as exc:
        raise SourceError(f"reading a cluster: {exc}") from None
    try:
        store = await kube.KubeStore.from_config(kubeconfig, context, **options)
    except kube.KubeConfigError as exc:
        raise SourceError(str(exc)) from None
    try:
        discovery = await store.discover()
    except (OwnerGCError, OSError) as exc:
        await store.aclose()
        what = "discovery failed" if isinstance(exc, OwnerGCError) else "cannot reach the cluster"
        raise SourceError(f"{what}: {exc}") from None
    return store, discovery


#: Resources listed at once: enough to overlap round trips, few enough not to crowd a server.
LIST_CONCURRENCY = 4


async def list_resources(
    store: Any,
    resources: Sequence[APIResource],
    *,
    namespace: str | None = None,
    metadata_only: bool | Sequence[bool] = True,
    progress: Progress | None = None,
    consistent: bool = True,
) -> list[tuple[APIResource, list[JSONDict] | OwnerGCError]]:
    """Each resource's items (or the error listing it gave), read concurrently, in order.

    With ``namespace``, namespaced resources are read in that namespace only and
    cluster-scoped ones whole. ``consistent=False``: from the watch cache (see
    :meth:`~ownergc.protocols.ObjectStore.list`).
    """
    results: list[tuple[APIResource, list[JSONDict] | OwnerGCError]] = [
        (res, []) for res in resources
    ]
    full = [metadata_only] * len(resources) if isinstance(metadata_only, bool) else metadata_only
    limiter = anyio.CapacityLimiter(LIST_CONCURRENCY)

    async def one(index: int, res: APIResource) -> None:
        async with limiter:
            if progress is not None:
                progress.reading(res.group_resource)
            try:
                listed = await store.list(
                    res,
                    namespace=namespace if res.namespaced else None,
                    metadata_only=full[index],
                    consistent=consistent,
                )
            except OwnerGCError as exc:
                results[index] = (res, exc)
                return
            results[index] = (res, listed.items)
            if progress is not None:
                progress.read(res.group_resource, len(listed.items))

    async with anyio.create_task_group() as tg:
        for index, res in enumerate(resources):
            tg.start_soon(one, index, res)
    return results


async def inventory_from_cluster(
    kubeconfig: str | None,
    context: str | None,
    *,
    scope: Scope | None = None,
    cached: bool = False,
) -> Inventory:
    store, discovery = await open_cluster(kubeconfig, context)
    objects: list[dict[str, Any]] = []
    async with store:
        resources = list(discovery.resources)
        namespace = scope(resources) if scope is not None else None
        # What kube-controller-manager's GC reads: deletable resources only
        # (ComponentStatuses, for one, are listable but not deletable and
        # carry no uid), events left out.
        monitored = [res for res in resources if is_monitored(res)]
        with Progress("reading", len(monitored)) as progress:
            listed = await list_resources(
                store, monitored, namespace=namespace, progress=progress, consistent=not cached
            )
        for res, items in listed:
            if isinstance(items, OwnerGCError):
                raise SourceError(f"listing {res.group_resource} failed: {items}") from None
            for item in items:
                objects.append(
                    {"apiVersion": res.api_version, "kind": res.kind, "metadata": item["metadata"]}
                )
    return Inventory(objects, resources=resources, origin="cluster", namespace=namespace)


def load_into_store(store: InMemoryStore, inv: Inventory) -> None:
    """Copy an inventory into an InMemoryStore, uids and deletion state included.

    Kinds the store does not serve are registered from the cluster's
    discovery; with manifests, CRDs among them serve their kinds.
    """
    from ownergc._kit.manifests import Manifest
    from ownergc.testing._cluster import load_manifests

    if inv.resources is not None:
        served: dict[tuple[str, str], list[APIResource]] = {}
        for res in inv.resources:
            if "/" not in res.resource:
                served.setdefault((res.group, res.resource), []).append(res)
        for (group, resource), versions in served.items():
            known = [v for v in versions if _serves(store, v)]
            if known:
                continue
            preferred = next((v.version for v in versions if v.preferred), versions[0].version)
            try:
                store.register_resource(
                    group=group,
                    versions=[v.version for v in versions],
                    resource=resource,
                    kind=versions[0].kind,
                    namespaced=versions[0].namespaced,
                    preferred_version=preferred,
                    verbs=versions[0].verbs,
                )
            except OwnerGCError:
                continue  # e.g. a second resource for one kind: objects map to the first
        objects = [o for o in inv.objects if o.get("kind") != "CustomResourceDefinition"]
    else:
        objects = inv.objects
    manifests = [
        Manifest(o, inv.sources.get(str((o.get("metadata") or {}).get("uid")), object_label(o)))
        for o in objects
    ]
    try:
        load_manifests(store, manifests)
    except ManifestError as exc:
        raise SourceError(str(exc)) from None


def _serves(store: InMemoryStore, res: APIResource) -> bool:
    try:
        store.resource_for(res.api_version, res.kind)
    except OwnerGCError:
        return False
    return True
