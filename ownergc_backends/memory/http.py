"""A Kubernetes REST facade over :class:`~ownergc_backends.memory.InMemoryStore`.

``KubeAPIServer`` speaks enough of kube-apiserver's HTTP API for the official
clients (``kubernetes`` for Python, client-go through ``kubectl``) to work
against an in-memory store: discovery, CRUD, list and watch (chunked JSON
events), the three patch content types, DELETE with ``DeleteOptions``,
metadata-only and Table responses, and ``metav1.Status`` errors. It exists so
that the kube backend and the controller can be tested over real HTTP, fast
and deterministically, and so that ``kubectl --server`` can poke at a store.

The HTTP/1.1 wire is h11 on anyio (see :mod:`ownergc._kit.http`); it runs under
asyncio and trio. Requests go down a pipeline of small parts (request info,
a handler chain, a router, per-verb REST handlers), built here and described
in :mod:`._apiserver`.

Deliberate differences from kube-apiserver (``docs/http-facade.md`` has them all):

* No authentication, authorization, server-side apply
  (``application/apply-patch+yaml`` answers 415), protobuf or
  YAML bodies (JSON only), subresources (404), ``limit``/``continue``
  (lists are never paginated, which clients accept), list ``resourceVersion``
  semantics (always the latest), or BOOKMARK events.
* ``/openapi/v2`` serves an empty schema document (protobuf or JSON): kubectl
  then skips client-side validation instead of failing; ``/openapi/v3`` is 404.
* Label selectors support equality, inequality, existence and set-based
  requirements; field selectors only ``metadata.name`` and
  ``metadata.namespace``.
* Tables (``kubectl get``) have two columns, Name and Age.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, cast

import anyio
import anyio.abc
import anyio.from_thread
from anyio.abc import SocketAttribute

from ownergc.protocols import APIResource, JSONDict

from ._apiserver.admission import AdmissionChain
from ._apiserver.binding import BindingHandler
from ._apiserver.connect import ConnectHandler
from ._apiserver.context import Handler
from ._apiserver.discovery import Discovery
from ._apiserver.dryrun import AcceptDryRun, DryRunPolicy
from ._apiserver.eviction import EvictionHandler
from ._apiserver.faults import StoreWrapper, gate_for, memory_store_behind
from ._apiserver.fieldmanager import FieldManager
from ._apiserver.fieldvalidation import FieldValidation
from ._apiserver.filters import (
    AnonymousAuthenticator,
    Authentication,
    Authenticator,
    RequestCredentials,
    RequestLog,
    RequestLogEntry,
    RequestRecorder,
    StatusErrors,
)
from ._apiserver.listcache import CachedLists
from ._apiserver.managedfields import ManagedFields
from ._apiserver.openapi import OpenAPIService, PublishedOpenAPI
from ._apiserver.responses import ConnectionServer
from ._apiserver.rest import (
    CreateHandler,
    DeleteCollectionHandler,
    DeleteHandler,
    GetHandler,
    ListHandler,
    ObjectRenderer,
    PatchHandler,
    UpdateHandler,
    WriteHook,
    WriteHooks,
    WriteSteps,
)
from ._apiserver.reviews import ReviewHandler
from ._apiserver.router import NonResourceRoutes, ResourceResolver, RESTDispatcher, Router
from ._apiserver.scale import ScaleHandler
from ._apiserver.token import TokenRequestHandler
from ._apiserver.tokenreview import TokenReviewHandler
from ._apiserver.watch import OpenWatches, WatchHandler, WatchStreamer
from ._apiserver.webhookadmission import webhook_admission
from ._negotiation import negotiate as negotiate  # the tests' Accept checks import it here
from ._pages import ContinuePages
from ._tables import Printer, printer_for
from ._webhooks import KeptConnections
from .store import InMemoryStore

__all__ = [
    "KubeAPIServer",
    "RequestCredentials",
    "RequestLogEntry",
    "StoreWrapper",
    "WriteHook",
    "run_in_thread",
    "serve_in_background",
]


class KubeAPIServer:
    """kube-apiserver's REST API over an :class:`InMemoryStore`, on a local TCP port.

    Start it with ``await task_group.start(server.serve)`` (or
    :func:`serve_in_background`, or :func:`run_in_thread` for sync clients);
    :attr:`url` is then the base URL. Serving again after ``serve`` returned
    reuses the same port, which lets tests restart a server under a client.

    Every request is recorded in :attr:`requests` and counted per kube verb in
    :attr:`verb_counts`.

    ``store`` may be a wrapper of the in-memory store (a :class:`StoreWrapper`
    such as ``ownergc.testing.faults.FaultyStore``): requests are then admitted
    by it and watches read through it, so the faults it scripts (a 429 with
    Retry-After, a slow answer, a dropped or expired watch) reach clients as
    kube-apiserver would send them. The facade has no fault hooks of its own.

    The keyword-only seams (``authenticator``, ``admission``, ``field_manager``,
    ``dry_run``, ``openapi``) default to today's behaviour: anonymous requests,
    the admission webhooks of the stored Mutating/ValidatingWebhookConfigurations
    (``admission=AdmissionChain()`` turns admission off), managedFields and
    server-side apply (:class:`ManagedFields`; pass ``NoFieldManagement()`` for
    none and a 415 for apply), ``dryRun=All`` served as kube-apiserver serves it
    (:class:`AcceptDryRun`; pass ``RefuseDryRun()`` for the old 400), and the
    published OpenAPI documents (:class:`PublishedOpenAPI`). ``watch_cache=False``
    serves lists at ``resourceVersion=0`` paged by ``limit``, as kube-apiserver with
    ``--watch-cache=false`` does; by default they are answered in one response, as
    its watch cache answers them (see :mod:`._apiserver.listcache`).
    ``service_accounts=True`` runs the whole ServiceAccount admission plugin on
    Pod creates (a missing service account is refused, the token volume is
    mounted; see :mod:`._apiserver.podadmission`): for a store whose namespaces
    get their ``default`` ServiceAccount, as ``ownergc serve``'s do.
    """

    def __init__(
        self,
        store: InMemoryStore | StoreWrapper,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        authenticator: Authenticator | None = None,
        admission: AdmissionChain | None = None,
        field_manager: FieldManager | None = None,
        dry_run: DryRunPolicy | None = None,
        openapi: OpenAPIService | None = None,
        watch_cache: bool = True,
        service_accounts: bool = False,
    ) -> None:
        self.served = store
        self.store = memory_store_behind(store)
        self.host = host
        self.port = port
        self.url = ""
        self.recorder = RequestRecorder()
        self.write_hooks: list[WriteHook] = []
        self._pages = ContinuePages()
        self._watches = OpenWatches()
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._loop_thread: int | None = None

        #: Kept-alive connections to admission webhooks, closed when serving ends.
        self._webhook_connections = KeptConnections()
        renderer = ObjectRenderer(self._printer)
        validation = FieldValidation(self.store)
        writes = WriteSteps(
            dry_run=dry_run or AcceptDryRun(),
            admission=(
                admission
                if admission is not None
                else webhook_admission(
                    self.store,
                    caller=self._webhook_connections,
                    service_accounts=service_accounts,
                )
            ),
            fields=field_manager or ManagedFields(self.store),
            hooks=WriteHooks(self.write_hooks),
            validation=validation,
        )
        tokens = TokenRequestHandler(self.store)
        self.streamer = WatchStreamer(self.store, self.served, self._printer, self._watches)
        router = Router(
            NonResourceRoutes(openapi or PublishedOpenAPI(self.store)),
            Discovery(self.store, lambda: self.url),
            ResourceResolver(self.store),
            gate_for(store),
            RESTDispatcher(
                get=GetHandler(self.store, renderer),
                list=ListHandler(
                    self.store, renderer, self._pages, CachedLists() if watch_cache else None
                ),
                watch=WatchHandler(),
                create=CreateHandler(self.store, renderer, writes),
                update=UpdateHandler(self.store, renderer, writes),
                patch=PatchHandler(self.store, renderer, writes),
                delete=DeleteHandler(self.store, renderer, writes),
                deletecollection=DeleteCollectionHandler(self.store, writes),
                scale=ScaleHandler(self.store, writes.dry_run),
                review=ReviewHandler(writes.fields),
                token=tokens,
                eviction=EvictionHandler(self.store, writes),
                binding=BindingHandler(self.store, writes),
                connect=ConnectHandler(self.store),
                tokenreview=TokenReviewHandler(
                    self.store, tokens.signer, dry_run=writes.dry_run, fields=writes.fields
                ),
            ),
            validation,
        )
        chain: Handler = RequestLog(
            StatusErrors(Authentication(router, authenticator or AnonymousAuthenticator())),
            self.recorder,
        )
        self.connections = ConnectionServer(chain, self.streamer)

    def _printer(self, resource: APIResource) -> Printer:
        """How ``kubectl get`` shows ``resource`` (a CRD's printer columns for its kinds)."""
        return printer_for(resource, self.store.crd_for(resource))

    # ------------------------------------------------------------------ serving

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Bind, report :attr:`url` through ``task_status``, and serve until cancelled."""
        listener = await anyio.create_tcp_listener(local_host=self.host, local_port=self.port)
        async with listener, anyio.from_thread.BlockingPortal() as portal:
            self.port = int(listener.listeners[0].extra(SocketAttribute.local_port))
            host = f"[{self.host}]" if ":" in self.host else self.host
            self.url = f"http://{host}:{self.port}"
            self._portal = portal
            self._loop_thread = threading.get_ident()
            try:
                async with anyio.create_task_group() as tg:
                    self._task_group = tg
                    task_status.started(self.url)
                    for each in listener.listeners:
                        tg.start_soon(
                            self.connections.accept_from, cast(anyio.abc.SocketListener, each), tg
                        )
            finally:
                self._portal = None
                self._task_group = None
                self._loop_thread = None
                self._watches.clear()
                with anyio.CancelScope(shield=True):
                    await self.connections.close_waiting()
                    await self._webhook_connections.aclose()

    # ------------------------------------------------------------------ state

    @property
    def requests(self) -> list[RequestLogEntry]:
        """Every request served, in order, with the status answered."""
        return self.recorder.requests

    @property
    def request_credentials(self) -> list[RequestCredentials]:
        return self.recorder.request_credentials

    @property
    def verb_counts(self) -> Counter[str]:
        return self.recorder.verb_counts

    @property
    def bookmark_interval(self) -> float:
        """Seconds between BOOKMARK events on an idle watch that allows them."""
        return self.streamer.bookmark_interval

    @bookmark_interval.setter
    def bookmark_interval(self, seconds: float) -> None:
        self.streamer.bookmark_interval = seconds

    @property
    def open_watches(self) -> int:
        """How many watch streams are being served right now."""
        return len(self._watches)

    def request_count(self, verb: str | None = None) -> int:
        """Requests served, of one kube verb or in total."""
        return self.recorder.count(verb)

    def clear_requests(self) -> None:
        """Forget :attr:`requests` and :attr:`verb_counts` (e.g. after setup)."""
        self.recorder.clear()

    # ------------------------------------------------------------------ kubeconfig

    def kubeconfig(self, *, context: str = "ownergc", namespace: str = "default") -> JSONDict:
        """A kubeconfig for :attr:`url` with no credentials (the server has no auth)."""
        if not self.url:
            raise RuntimeError("the server is not serving yet: no URL for a kubeconfig")
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": {}}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": namespace},
                }
            ],
            "current-context": context,
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | os.PathLike[str], **kw: str) -> None:
        """Write :meth:`kubeconfig` as JSON (which every YAML reader accepts)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.kubeconfig(**kw), f, indent=2)
            f.write("\n")

    # ------------------------------------------------------------------ sync helpers

    def _in_loop(self, func: Callable[[], None]) -> None:
        """Run ``func`` on the server's event loop thread (cancel scopes live there)."""
        portal = self._portal
        if portal is None or self._loop_thread == threading.get_ident():
            func()
        else:
            portal.call(func)

    def call(self, func: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run ``await func(*args)`` on the server's loop from another thread.

        For tests using :func:`run_in_thread`: store writes made on the loop
        thread wake the server's watches at once (the store's rule).
        """
        portal = self._portal
        if portal is None:
            raise RuntimeError("the server is not serving")
        return portal.call(func, *args)

    def spawn(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run ``func(*args)`` as a task beside the server (e.g. a GarbageCollector
        over the same store, whose watches must share the server's loop); it is
        cancelled when the server stops. Callable from any thread."""
        tg = self._task_group
        if tg is None:
            raise RuntimeError("the server is not serving")

        def start() -> None:
            tg.start_soon(func, *args)

        self._in_loop(start)


@asynccontextmanager
async def serve_in_background(
    store: InMemoryStore | StoreWrapper,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    watch_cache: bool = True,
) -> AsyncIterator[KubeAPIServer]:
    """Serve ``store`` in the current event loop for the duration of the block."""
    server = KubeAPIServer(store, host=host, port=port, watch_cache=watch_cache)
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()


@contextmanager
def run_in_thread(
    store: InMemoryStore | StoreWrapper,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    backend: str = "asyncio",
    watch_cache: bool = True,
    service_accounts: bool = False,
) -> Iterator[KubeAPIServer]:
    """Serve ``store`` from an event loop in a background thread, for sync clients
    (kubectl subprocesses, the official sync client). Store writes from the test
    thread should go through :meth:`KubeAPIServer.call` to wake watches."""
    server = KubeAPIServer(
        store, host=host, port=port, watch_cache=watch_cache, service_accounts=service_accounts
    )
    with anyio.from_thread.start_blocking_portal(backend) as portal:
        future, _url = portal.start_task(server.serve)
        try:
            yield server
        finally:
            future.cancel()
            with contextlib.suppress(BaseException):
                future.result(timeout=10)
