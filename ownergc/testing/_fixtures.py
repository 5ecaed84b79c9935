"""What the pytest plugin's fixtures hand out; usable without pytest too.

* :class:`OwnerGCStore` — an :class:`~ownergc_backends.memory.InMemoryStore`
  (held, and passed every call) with a GarbageCollector and a
  NamespaceController running on it, in the test's own event loop
  (``async with running_store() as store``).
* :func:`~ownergc.testing._cluster.start_in_thread` — the same served over HTTP from
  a background thread, for sync tests, kubectl and the official client.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from ownergc.protocols import (
    APIResource,
    DiscoveryResult,
    JSONDict,
    ObjectList,
    PatchType,
    Preconditions,
    PropagationPolicy,
    WatchEvent,
)
from ownergc.testing._cluster import ClusterThread, EmbeddedCluster, start_in_thread
from ownergc_backends.memory import GCPolicy, InMemoryStore, RequestRecord

if TYPE_CHECKING:
    from ownergc.controller import GarbageCollector
    from ownergc.controller._namespace import NamespaceController

__all__ = ["ClusterThread", "OwnerGCStore", "running_store", "start_in_thread"]


class OwnerGCStore:
    """An InMemoryStore that garbage-collects: a GC and a namespace controller run on it.

    Use it like the store (``create_object``, ``delete``, ``get_object``,
    ``exists``, ...), then ``await store.wait_idle()`` before asserting on
    what the collector did. ``gc`` and ``namespaces`` are the controllers
    (``store.gc.recorded_events`` holds the OwnerRefInvalidNamespace events).

    It holds the :class:`InMemoryStore` (``store``) and the cluster running
    the controllers on it, and passes every store call on to ``store``: the
    same methods, with the same signatures. ``inner`` and :meth:`admit` make
    it a wrapper that a ``KubeAPIServer`` can serve (the store behind it).
    """

    gc: GarbageCollector
    namespaces: NamespaceController
    _cluster: EmbeddedCluster

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("terminating_namespaces", True)
        #: The store the controllers run on.
        self.store = InMemoryStore(**kwargs)

    @property
    def inner(self) -> InMemoryStore:
        """The store behind (what a ``KubeAPIServer`` serving this wrapper serves)."""
        return self.store

    async def admit(
        self, verb: str, resource: APIResource | None = None, *, name: str | None = None
    ) -> None:
        """Every request is admitted (a ``KubeAPIServer`` asks its wrapper)."""
        await anyio.lowlevel.checkpoint()

    async def wait_idle(self, timeout: float | None = 30.0) -> None:
        """Return once both controllers have nothing left to do (TimeoutError after
        ``timeout`` seconds, e.g. when an object is stuck on a finalizer you set)."""
        await self._cluster.wait_idle(timeout)

    async def delete_object(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
    ) -> dict[str, Any] | None:
        """DELETE by apiVersion/kind (``propagation_policy``: Background, Foreground,
        Orphan or None for the kind's default); returns the object if it remains."""
        resource = self.store.resource_for(api_version, kind)
        return await self.store.delete(
            resource,
            name,
            namespace=namespace if resource.namespaced else None,
            propagation_policy=propagation_policy,
        )

    # -- ObjectStore, passed on

    async def discover(self) -> DiscoveryResult:
        return await self.store.discover()

    async def list(
        self,
        resource: APIResource,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
        consistent: bool = True,
    ) -> ObjectList:
        return await self.store.list(
            resource, namespace=namespace, metadata_only=metadata_only, consistent=consistent
        )

    async def list_shared(
        self, resource: APIResource, *, namespace: str | None = None
    ) -> ObjectList:
        return await self.store.list_shared(resource, namespace=namespace)

    def watch(
        self,
        resource: APIResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        metadata_only: bool = True,
        timeout_seconds: float | None = None,
    ) -> AsyncGenerator[WatchEvent, None]:
        return self.store.watch(
            resource,
            resource_version=resource_version,
            namespace=namespace,
            metadata_only=metadata_only,
            timeout_seconds=timeout_seconds,
        )

    def watch_batches(
        self,
        resource: APIResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        metadata_only: bool = True,
        timeout_seconds: float | None = None,
    ) -> AsyncGenerator[builtins.list[WatchEvent], None]:
        return self.store.watch_batches(
            resource,
            resource_version=resource_version,
            namespace=namespace,
            metadata_only=metadata_only,
            timeout_seconds=timeout_seconds,
        )

    async def get(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
    ) -> JSONDict:
        return await self.store.get(
            resource, name, namespace=namespace, metadata_only=metadata_only
        )

    async def get_shared(
        self, resource: APIResource, name: str, *, namespace: str | None = None
    ) -> JSONDict:
        return await self.store.get_shared(resource, name, namespace=namespace)

    async def create(
        self,
        resource: APIResource,
        obj: JSONDict,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        applied: bool = False,
    ) -> JSONDict:
        return await self.store.create(
            resource, obj, namespace=namespace, dry_run=dry_run, applied=applied
        )

    async def update(
        self,
        resource: APIResource,
        obj: JSONDict,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        patched_from: str | None = None,
        dry_run: bool = False,
        applied: bool = False,
    ) -> JSONDict:
        return await self.store.update(
            resource,
            obj,
            namespace=namespace,
            subresource=subresource,
            patched_from=patched_from,
            dry_run=dry_run,
            applied=applied,
        )

    async def patch(
        self,
        resource: APIResource,
        name: str,
        patch: JSONDict | builtins.list[JSONDict],
        *,
        patch_type: PatchType,
        namespace: str | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSONDict:
        return await self.store.patch(
            resource,
            name,
            patch,
            patch_type=patch_type,
            namespace=namespace,
            subresource=subresource,
            dry_run=dry_run,
        )

    async def patched(
        self,
        resource: APIResource,
        name: str,
        patch: JSONDict | builtins.list[JSONDict],
        *,
        patch_type: PatchType,
        namespace: str | None = None,
    ) -> tuple[JSONDict, JSONDict]:
        return await self.store.patched(
            resource, name, patch, patch_type=patch_type, namespace=namespace
        )

    async def delete(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | str | None = None,
        preconditions: Preconditions | None = None,
        orphan_dependents: bool | None = None,
        dry_run: bool = False,
    ) -> JSONDict | None:
        return await self.store.delete(
            resource,
            name,
            namespace=namespace,
            propagation_policy=propagation_policy,
            preconditions=preconditions,
            orphan_dependents=orphan_dependents,
            dry_run=dry_run,
        )

    async def delete_and_report(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | str | None = None,
        preconditions: Preconditions | None = None,
        orphan_dependents: bool | None = None,
        dry_run: bool = False,
        shared: bool = False,
    ) -> tuple[JSONDict, bool]:
        return await self.store.delete_and_report(
            resource,
            name,
            namespace=namespace,
            propagation_policy=propagation_policy,
            preconditions=preconditions,
            orphan_dependents=orphan_dependents,
            dry_run=dry_run,
            shared=shared,
        )

    # -- the store's extras, passed on

    async def create_object(self, obj: JSONDict) -> JSONDict:
        return await self.store.create_object(obj)

    def load_objects(self, objects: Iterable[JSONDict]) -> builtins.list[JSONDict]:
        return self.store.load_objects(objects)

    def get_object(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> JSONDict | None:
        return self.store.get_object(api_version, kind, name, namespace)

    def exists(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> bool:
        return self.store.exists(api_version, kind, name, namespace)

    def snapshot(self) -> builtins.list[JSONDict]:
        return self.store.snapshot()

    def object_count(self, resource: APIResource | None = None) -> int:
        return self.store.object_count(resource)

    def objects_of(self, resource: APIResource) -> builtins.list[JSONDict]:
        return self.store.objects_of(resource)

    @property
    def resource_version(self) -> str:
        return self.store.resource_version

    def register_resource(
        self,
        *,
        group: str,
        versions: str | Sequence[str],
        resource: str,
        kind: str,
        namespaced: bool = True,
        preferred_version: str | None = None,
        verbs: Iterable[str] | None = None,
        default_gc_policy: GCPolicy | str | Mapping[str, GCPolicy | str] = GCPolicy.BACKGROUND,
        strategic_merge_patch: bool = False,
        allow_unconditional_update: bool | None = None,
    ) -> APIResource:
        return self.store.register_resource(
            group=group,
            versions=versions,
            resource=resource,
            kind=kind,
            namespaced=namespaced,
            preferred_version=preferred_version,
            verbs=verbs,
            default_gc_policy=default_gc_policy,
            strategic_merge_patch=strategic_merge_patch,
            allow_unconditional_update=allow_unconditional_update,
        )

    def unregister_resource(self, group: str, resource: str) -> bool:
        return self.store.unregister_resource(group, resource)

    def set_discovery_failure(self, group_version: str, message: str | None) -> None:
        self.store.set_discovery_failure(group_version, message)

    def resource_for(self, api_version: str, kind: str) -> APIResource:
        return self.store.resource_for(api_version, kind)

    def resource_by_name(self, name: str) -> APIResource:
        return self.store.resource_by_name(name)

    def crd_for(self, resource: APIResource) -> JSONDict | None:
        return self.store.crd_for(resource)

    def now(self) -> datetime:
        return self.store.now()

    def subresources_of(self, resource: APIResource) -> frozenset[str]:
        return self.store.subresources_of(resource)

    def scale_paths_of(self, resource: APIResource) -> tuple[str, str, str | None] | None:
        return self.store.scale_paths_of(resource)

    @property
    def requests(self) -> tuple[RequestRecord, ...]:
        return self.store.requests

    def request_count(
        self, verb: str | None = None, resource: APIResource | str | None = None
    ) -> int:
        return self.store.request_count(verb, resource)

    def clear_requests(self) -> None:
        self.store.clear_requests()


@asynccontextmanager
async def running_store(*, workers: int = 20, **store_options: Any) -> AsyncIterator[OwnerGCStore]:
    """An :class:`OwnerGCStore` whose controllers run (and have synced) inside the block."""
    store = OwnerGCStore(**store_options)
    cluster = EmbeddedCluster(store.store, serve_http=False, workers=workers, discovery_period=0.2)
    store.gc = cluster.gc
    store.namespaces = cluster.namespaces
    store._cluster = cluster
    async with anyio.create_task_group() as tg:
        await tg.start(cluster.run)
        try:
            yield store
        finally:
            tg.cancel_scope.cancel()
