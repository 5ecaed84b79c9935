"""An embedded test cluster: InMemoryStore + REST facade + GC + namespace controller.

What ``ownergc serve`` runs and what the pytest plugin's fixtures start: the
three parts kube-apiserver and kube-controller-manager contribute to the
behaviour of ownerReferences and namespaces, in one anyio event loop (the
store wakes its watchers from that loop, so the GC, the namespace controller
and the HTTP server must share it). Backends are imported lazily so that
``import ownergc`` stays free of them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.from_thread

from ownergc._core.builtin_kinds import REMOVED_VERSIONS
from ownergc._kit.manifests import Manifest, ManifestError, apply_order
from ownergc.errors import APIError, RESTMappingError

if TYPE_CHECKING:
    from ownergc.controller import GarbageCollector
    from ownergc.controller._namespace import NamespaceController
    from ownergc.controller._namespace_defaults import NamespaceDefaults
    from ownergc_backends.memory import InMemoryStore
    from ownergc_backends.memory.http import KubeAPIServer

__all__ = ["ClusterThread", "EmbeddedCluster", "load_manifests", "new_store", "start_in_thread"]

Action = Callable[[str, Mapping[str, Any]], None]


def new_store() -> InMemoryStore:
    """An InMemoryStore whose namespaces terminate as on a real server."""
    from ownergc_backends.memory import InMemoryStore

    return InMemoryStore(terminating_namespaces=True)


def load_manifests(store: InMemoryStore, manifests: Iterable[Manifest]) -> int:
    """Load objects (CRDs first, then namespaces) keeping their uids; raises
    :class:`ManifestError` naming the file of the first object that does not fit."""
    count = 0
    for m in apply_order(manifests):
        meta = m.obj.get("metadata") or {}
        if (
            m.obj.get("kind") == "Namespace"
            and m.obj.get("apiVersion") == "v1"
            and store.exists("v1", "Namespace", str(meta.get("name")))
        ):
            continue  # default, kube-system, ...: every store starts with them
        try:
            store.load_objects([m.obj])
        except RESTMappingError:
            raise ManifestError(f"{m.source}: {_not_served(m.obj)}") from None
        except APIError as exc:
            raise ManifestError(f"{m.source}: {exc}") from None
        count += 1
    return count


def _not_served(obj: Mapping[str, Any]) -> str:
    """Why an object's kind is not served: a version Kubernetes v1.30 no longer serves
    (with the release and the version to use), or an unknown kind."""
    api_version, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
    removed = REMOVED_VERSIONS.get((api_version, kind))
    if removed is not None:
        release, instead = removed
        return (
            f"{kind} in {api_version} is not served: Kubernetes stopped serving "
            f"{api_version} {kind} in {release} (ownergc serve is v1.30); "
            + (f"use {instead}" if instead else f"Kubernetes has no {kind} since then")
        )
    return (
        f"{kind} in {api_version} is not served (a built-in kind ownergc does not know, "
        "or a custom resource whose CustomResourceDefinition is not among the manifests)"
    )


class EmbeddedCluster:
    """The store, its HTTP facade (optional), a GarbageCollector and a NamespaceController.

    ``await tg.start(cluster.run)`` returns once the server listens and both
    controllers have synced; cancel the task group to stop everything.

    ``service_accounts=True`` (``ownergc serve``) also runs
    :class:`~ownergc.controller._namespace_defaults.NamespaceDefaults` (ServiceAccount ``default``
    and ConfigMap ``kube-root-ca.crt`` in every namespace, as
    kube-controller-manager's controllers keep them) and has the server run the
    whole ServiceAccount admission plugin on Pod creates.
    """

    def __init__(
        self,
        store: InMemoryStore | None = None,
        *,
        serve_http: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        workers: int = 20,
        discovery_period: float = 1.0,
        on_action: Action | None = None,
        service_accounts: bool = False,
    ) -> None:
        from ownergc.controller import GarbageCollector
        from ownergc.controller._namespace import NamespaceController
        from ownergc.controller._namespace_defaults import NamespaceDefaults

        self.store = store if store is not None else new_store()
        self.gc: GarbageCollector = GarbageCollector(
            self.store, workers=workers, discovery_period=discovery_period, on_action=on_action
        )
        self.namespaces: NamespaceController = NamespaceController(self.store, on_action=on_action)
        self.defaults: NamespaceDefaults | None = (
            NamespaceDefaults(self.store, on_action=on_action) if service_accounts else None
        )
        self.server: KubeAPIServer | None = None
        if serve_http:
            from ownergc_backends.memory.http import KubeAPIServer

            self.server = KubeAPIServer(
                self.store, host=host, port=port, service_accounts=service_accounts
            )

    @property
    def url(self) -> str:
        if self.server is None or not self.server.url:
            raise RuntimeError("this cluster has no HTTP server running")
        return self.server.url

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[EmbeddedCluster] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve and collect until cancelled."""
        async with anyio.create_task_group() as tg:
            if self.server is not None:
                await tg.start(self.server.serve)
            tg.start_soon(self.gc.run)
            tg.start_soon(self.namespaces.run)
            if self.defaults is not None:
                tg.start_soon(self.defaults.run)
            await self.gc.wait_synced()
            await self.namespaces.wait_synced()
            if self.defaults is not None:
                await self.defaults.wait_synced()
            task_status.started(self)

    async def wait_idle(self, timeout: float | None = 30.0) -> None:
        """Return when the GC and the namespace controller both have nothing left to do.

        The two feed each other (emptying a namespace makes garbage, collecting
        it lets a namespace finish), so they are waited for in turns until a
        whole round finds both quiet. Raises TimeoutError after ``timeout`` s.
        """
        ns = self.namespaces
        with anyio.fail_after(timeout):
            while True:
                await self.gc.wait_idle()
                await ns.wait_idle()
                # Namespaces waiting in backoff are looked at once more, now.
                progress = ns.deleted_objects + len(ns.finalized)
                ns.recheck()
                await ns.wait_idle()
                await self.gc.wait_idle()
                if self.defaults is not None:
                    await self.defaults.wait_idle()
                if ns.deleted_objects + len(ns.finalized) == progress and ns.queue.is_idle(1.0):
                    return


class ClusterThread:
    """An :class:`EmbeddedCluster` served from a background thread, for sync code
    (kubectl subprocesses, the official sync client, sync pytest tests)."""

    def __init__(self, cluster: EmbeddedCluster, portal: anyio.from_thread.BlockingPortal):
        self.cluster = cluster
        self.portal = portal
        self.kubeconfig_path: Path = Path()

    @property
    def store(self) -> InMemoryStore:
        return self.cluster.store

    @property
    def url(self) -> str:
        return self.cluster.url

    def kubeconfig(self, *, context: str = "ownergc", namespace: str = "default") -> dict[str, Any]:
        """The kubeconfig as a dict (e.g. for ``kubernetes.config.new_client_from_config_dict``)."""
        assert self.cluster.server is not None
        return self.cluster.server.kubeconfig(context=context, namespace=namespace)

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Block until the GC and the namespace controller are idle (see
        :meth:`EmbeddedCluster.wait_idle`)."""
        self.portal.call(self.cluster.wait_idle, timeout)

    def call(self, func: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run ``await func(*args)`` in the cluster's event loop (e.g. store writes
        that must wake watchers at once)."""
        return self.portal.call(func, *args)


@contextlib.contextmanager
def start_in_thread(
    *,
    store: InMemoryStore | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    workers: int = 20,
    kubeconfig_path: str | os.PathLike[str] | None = None,
    backend: str = "asyncio",
) -> Iterator[ClusterThread]:
    """Run an :class:`EmbeddedCluster` in a thread for the duration of the block,
    with its kubeconfig written to ``kubeconfig_path`` (default: a temporary file)."""
    cluster = EmbeddedCluster(store, host=host, port=port, workers=workers)
    with contextlib.ExitStack() as stack:
        if kubeconfig_path is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="ownergc-"))
            kubeconfig_path = Path(tmp) / "kubeconfig"
        portal = stack.enter_context(anyio.from_thread.start_blocking_portal(backend))
        future, _ = portal.start_task(cluster.run)
        handle = ClusterThread(cluster, portal)
        assert cluster.server is not None
        cluster.server.write_kubeconfig(kubeconfig_path)
        handle.kubeconfig_path = Path(kubeconfig_path)
        try:
            yield handle
        finally:
            future.cancel()
            with contextlib.suppress(BaseException):
                future.result(timeout=10)
