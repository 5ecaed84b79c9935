"""NamespaceDefaults: the objects kube-controller-manager puts in every namespace.

Two of kube-controller-manager's controllers fill each namespace on a real
cluster: the *serviceaccount* controller creates the ServiceAccount
``default`` (the one Pods run as unless they name another), and the
*root-ca-cert-publisher* creates the ConfigMap ``kube-root-ca.crt`` whose
``ca.crt`` holds the cluster's CA bundle (what the ``kube-api-access-*``
volume of every Pod projects), annotated with ``kubernetes.io/description``.
Both act when a namespace appears or is updated and when their object is
deleted or (the ConfigMap) changed, and both leave terminating namespaces
alone: the objects are ordinary namespaced content, which namespace deletion
removes.

This controller does both, on anyio, with only the
:class:`~ownergc.protocols.ObjectStore` Protocol: it watches namespaces,
serviceaccounts and configmaps and re-checks the namespace an event
concerns. ``ownergc serve`` runs it (see
:class:`ownergc.testing.EmbeddedCluster`'s ``service_accounts``).

Deviations: there is no real CA; ``ca.crt`` defaults to :data:`FAKE_ROOT_CA`,
a well-formed self-signed certificate whose private key was thrown away; the
ConfigMap is repaired with a merge patch rather than an update; no periodic
resync.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

import anyio

from ownergc.controller._listwatch import list_and_watch
from ownergc.controller._queue import ItemExponentialRateLimiter, WorkQueue, wait_quiet
from ownergc.errors import AlreadyExists, Conflict, Forbidden, NotFound
from ownergc.protocols import APIResource, JSONDict, ObjectStore, PatchType, WatchEventType

__all__ = [
    "DEFAULT_SERVICE_ACCOUNT",
    "FAKE_ROOT_CA",
    "ROOT_CA_CONFIGMAP",
    "ROOT_CA_DESCRIPTION",
    "NamespaceDefaults",
]

log = logging.getLogger("ownergc.namespacedefaults")

#: The ServiceAccount the serviceaccount controller keeps in every namespace.
DEFAULT_SERVICE_ACCOUNT: Final = "default"
#: The ConfigMap the root-ca-cert-publisher keeps in every namespace, and its key.
ROOT_CA_CONFIGMAP: Final = "kube-root-ca.crt"
ROOT_CA_KEY: Final = "ca.crt"
DESCRIPTION_ANNOTATION: Final = "kubernetes.io/description"
#: The publisher's ``kubernetes.io/description`` annotation (Kubernetes 1.24+).
ROOT_CA_DESCRIPTION: Final = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)
#: A self-signed EC certificate (CN ``ownergc-serve-fake-ca``) made for this
#: purpose; its private key was never stored, so nothing can be verified with it.
FAKE_ROOT_CA: Final = """\
-----BEGIN CERTIFICATE-----
MIIBnDCCAUKgAwIBAgIBATAKBggqhkjOPQQDAjBMMSowKAYDVQQKDCFvd25lcmdj
IHNlcnZlIChmYWtlLCBubyBrZXkga2VwdCkxHjAcBgNVBAMMFW93bmVyZ2Mtc2Vy
dmUtZmFrZS1jYTAgFw0yNjAxMDEwMDAwMDBaGA8yMTI1MTIwODAwMDAwMFowTDEq
MCgGA1UECgwhb3duZXJnYyBzZXJ2ZSAoZmFrZSwgbm8ga2V5IGtlcHQpMR4wHAYD
VQQDDBVvd25lcmdjLXNlcnZlLWZha2UtY2EwWTATBgcqhkjOPQIBBggqhkjOPQMB
BwNCAASY7hpTz+awlVjTydOOoMFkSdX2DKMR6XbYvhUZiQ/P1ZhDJK8yJaa5U5o8
3uVktH5ErAta53+VaKZoCTQZbg6NoxMwETAPBgNVHRMBAf8EBTADAQH/MAoGCCqG
SM49BAMCA0gAMEUCIQDywfFnkAv/Yco0E6pnKT0uK9awqt4P/GWBu3C4zymBnwIg
SgLzLNI/iyo+fQJQoW9jQfVx66HAS7OrdZtvrYLMg10=
-----END CERTIFICATE-----
"""

#: (resource, the object name whose events matter; None: every object).
_WATCHED: Final = (
    ("namespaces", None),
    ("serviceaccounts", DEFAULT_SERVICE_ACCOUNT),
    ("configmaps", ROOT_CA_CONFIGMAP),
)


class NamespaceDefaults:
    """Keeps ServiceAccount ``default`` and ConfigMap ``kube-root-ca.crt`` in every
    active namespace.

    ``await ctl.run()`` runs until cancelled; ``wait_synced()`` returns once the
    three resources have been listed, ``wait_idle()`` when no namespace is
    queued or being worked on.
    """

    def __init__(
        self,
        store: ObjectStore,
        *,
        root_ca: str = FAKE_ROOT_CA,
        workers: int = 2,
        watch_timeout: float | None = 300.0,
        retry_base: float = 0.05,
        retry_cap: float = 5.0,
        logger: logging.Logger | None = None,
        on_action: Callable[[str, Mapping[str, Any]], None] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.store = store
        self.root_ca = root_ca
        self.workers = workers
        self.watch_timeout = watch_timeout
        self.log = logger or log
        self.on_action = on_action
        self.queue: WorkQueue[str] = WorkQueue(
            "namespacedefaults", item_limiter=ItemExponentialRateLimiter(retry_base, retry_cap)
        )
        #: Objects this controller created (``Kind namespace/name``), in order.
        self.created: list[str] = []
        self._listed: set[str] = set()
        self._synced = anyio.Event()
        self._resources: dict[str, APIResource] = {}

    async def run(self) -> None:
        """Run until cancelled."""
        try:
            await self._discover()
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.queue.run_delays)
                for name, only in _WATCHED:
                    tg.start_soon(self._monitor, name, only)
                for _ in range(self.workers):
                    tg.start_soon(self.queue.work, self._sync, self._sync_failed)
        finally:
            self.queue.shutdown()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    async def wait_idle(self, *, settle: float = 0.05) -> None:
        """Return when nothing is queued or processing, and that has held for
        ``settle`` seconds (a namespace in backoff is not waited for)."""
        await self._synced.wait()
        await wait_quiet(lambda: self.queue.is_idle(0.0), settle)

    # -- watching ------------------------------------------------------------

    async def _discover(self) -> None:
        backoff = 0.1
        wanted = {name for name, _ in _WATCHED}
        while True:
            try:
                result = await self.store.discover()
            except Exception as exc:
                self.log.warning("discovery failed; retrying in %.1fs: %s", backoff, exc)
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            for res in result.resources:
                if res.group == "" and res.resource in wanted and res.preferred:
                    self._resources[res.resource] = res
            missing = wanted - set(self._resources)
            if not missing:
                return
            raise NotFound(f"the server does not serve {', '.join(sorted(missing))}")

    async def _monitor(self, name: str, only: str | None) -> None:
        """List and watch one resource, queueing the namespaces its events concern."""

        async def resource() -> APIResource:
            return self._resources[name]

        def listed(items: list[JSONDict]) -> None:
            for obj in items:
                self._observe(name, only, obj)
            self._listed.add(name)
            if len(self._listed) == len(_WATCHED):
                self._synced.set()

        def event(kind: WatchEventType, obj: Mapping[str, Any]) -> None:
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self._observe(name, only, obj)

        await list_and_watch(
            self.store,
            resource,
            metadata_only=True,
            watch_timeout=self.watch_timeout,
            on_list=listed,
            on_event=event,
            log=self.log,
            what=name,
        )

    def _observe(self, resource: str, only: str | None, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if only is not None and meta.get("name") != only:
            return
        namespace = meta.get("name") if resource == "namespaces" else meta.get("namespace")
        if isinstance(namespace, str) and namespace:
            self.queue.add(namespace)

    # -- keeping a namespace's objects ---------------------------------------

    def _sync_failed(self, namespace: str, exc: Exception) -> None:
        self.log.warning("namespace %s: %s; will retry", namespace, exc)

    async def _sync(self, namespace: str) -> bool:
        """Create or repair both objects in ``namespace``; True when done."""
        try:
            ns = await self.store.get(self._resources["namespaces"], namespace, metadata_only=False)
        except NotFound:
            return True
        phase = (ns.get("status") or {}).get("phase")
        if (ns.get("metadata") or {}).get("deletionTimestamp") or phase == "Terminating":
            return True
        try:
            await self._ensure_service_account(namespace)
            await self._ensure_root_ca(namespace)
        except Forbidden as exc:
            # Terminating meanwhile: its content is being deleted, not ours to keep.
            self.log.info("namespace %s: %s", namespace, exc)
            return True
        except NotFound:
            return True  # the namespace is gone
        except Conflict:
            return False  # changed meanwhile: look again
        return True

    async def _ensure_service_account(self, namespace: str) -> None:
        resource = self._resources["serviceaccounts"]
        try:
            await self.store.get(resource, DEFAULT_SERVICE_ACCOUNT, namespace=namespace)
            return
        except NotFound:
            pass
        obj = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace},
        }
        await self._create(resource, obj, namespace)

    async def _ensure_root_ca(self, namespace: str) -> None:
        resource = self._resources["configmaps"]
        try:
            cm = await self.store.get(
                resource, ROOT_CA_CONFIGMAP, namespace=namespace, metadata_only=False
            )
        except NotFound:
            obj = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": ROOT_CA_CONFIGMAP,
                    "namespace": namespace,
                    "annotations": {DESCRIPTION_ANNOTATION: ROOT_CA_DESCRIPTION},
                },
                "data": {ROOT_CA_KEY: self.root_ca},
            }
            await self._create(resource, obj, namespace)
            return
        meta = cm.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        if (
            cm.get("data") == {ROOT_CA_KEY: self.root_ca}
            and annotations.get(DESCRIPTION_ANNOTATION) == ROOT_CA_DESCRIPTION
        ):
            return
        # The publisher puts its data back (other keys removed) and its annotation.
        data: dict[str, Any] = {k: None for k in cm.get("data") or {}}
        data[ROOT_CA_KEY] = self.root_ca
        patch = {
            "metadata": {
                "resourceVersion": meta.get("resourceVersion"),
                "annotations": {DESCRIPTION_ANNOTATION: ROOT_CA_DESCRIPTION},
            },
            "data": data,
        }
        self._action("update", {"target": f"ConfigMap {namespace}/{ROOT_CA_CONFIGMAP}"})
        await self.store.patch(
            resource, ROOT_CA_CONFIGMAP, patch, patch_type=PatchType.MERGE, namespace=namespace
        )

    async def _create(self, resource: APIResource, obj: dict[str, Any], namespace: str) -> None:
        target = f"{obj['kind']} {namespace}/{obj['metadata']['name']}"
        try:
            await self.store.create(resource, obj, namespace=namespace)
        except AlreadyExists:
            return
        self.created.append(target)
        self._action("create", {"target": target})

    def _action(self, what: str, details: Mapping[str, Any]) -> None:
        self.log.info("%s %s", what, details.get("target"))
        if self.on_action is not None:
            self.on_action(what, details)
