"""A Kubernetes REST facade over :class:`~ownergc_backends.memory.InMemoryStore`.

``KubeAPIServer`` speaks enough of kube-apiserver's HTTP API for the official
clients (``kubernetes`` for Python, client-go through ``kubectl``) to work
against an in-memory store: discovery, CRUD, list and watch (chunked JSON
events), the three patch content types, DELETE with ``DeleteOptions``,
metadata-only and Table responses, and ``metav1.Status`` errors. It exists so
that the kube backend and the controller can be tested over real HTTP, fast
and deterministically, and so that ``kubectl --server`` can poke at a store.

The HTTP/1.1 server is hand-written on anyio (see :mod:`ownergc._kit.http`) so that the
in-memory backend needs nothing beyond the core's dependencies; it runs under
asyncio and trio.

Deliberate differences from kube-apiserver (``docs/http-facade.md`` has them all):

* No authentication, authorization, admission webhooks, server-side apply
  (``application/apply-patch+yaml`` answers 415), dry run (400), protobuf or
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
import logging
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
from anyio.abc import ByteStream, SocketAttribute

from ownergc._kit.http import (
    HTTPProtocolError,
    Request,
    ServerConnection,
)
from ownergc.errors import (
    APIError,
    BadRequest,
    MethodNotAllowed,
    NotFound,
    RESTMappingError,
    UnsupportedPatchType,
    error_for_status,
)
from ownergc.protocols import APIResource, JSONDict, Preconditions

from ._facade_base import (
    _APPLY_PATCH,
    _PATCH_TYPES,
    _RETURN_DELETED_OBJECT,
    RequestCredentials,
    RequestLogEntry,
    StoreWrapper,
    WriteHook,
    _kube_verb,
    _OpenWatch,
    _ResourceRoute,
    _WatchPlan,
    memory_store_behind,
)
from ._facade_scale import ScaleRoutes
from ._negotiation import (
    _META_GROUP,
    _error_response,
    _HTTPError,
    _json_body,
    _json_response,
    _Response,
    _Target,
    negotiate,
    object_body,
    query_flag,
)
from ._pages import ContinuePages, limit_of
from ._printing import (
    _OPENAPI_V2_JSON,
    SERVER_VERSION,
    _openapi_v2_protobuf,
    _partial,
    _table,
)
from ._selectors import (
    _filter_from,
)
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

log = logging.getLogger("ownergc.memory.http")


class KubeAPIServer(ScaleRoutes):
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
    """

    def __init__(
        self,
        store: InMemoryStore | StoreWrapper,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.served = store
        self.store = memory_store_behind(store)
        self.host = host
        self.port = port
        self.url = ""
        self.requests: list[RequestLogEntry] = []
        self.request_credentials: list[RequestCredentials] = []
        self.verb_counts: Counter[str] = Counter()
        self.write_hooks: list[WriteHook] = []
        self._watches: set[_OpenWatch] = set()
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._loop_thread: int | None = None
        self._pages = ContinuePages()
        self.bookmark_interval = 60.0

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
                    await listener.serve(self._connection, task_group=tg)
            finally:
                self._portal = None
                self._task_group = None
                self._loop_thread = None
                self._watches.clear()

    async def _connection(self, stream: ByteStream) -> None:
        """One client connection: requests in sequence until either side closes it."""
        connection = ServerConnection(stream)
        try:
            async with stream:
                while True:
                    try:
                        request = await connection.next_request()
                    except HTTPProtocolError as exc:
                        error = error_for_status(exc.status, exc.message, reason="BadRequest")
                        response = _error_response(error)
                        await connection.respond_and_close(
                            exc.status, response.headers, response.body
                        )
                        return
                    if request is None:
                        return
                    if not await self._handle(request, connection):
                        return
                    if not connection.next_cycle():
                        return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError, OSError):
            pass  # the client went away; nothing to answer
        except Exception:  # pragma: no cover - a bug here must not stop the server
            log.exception("unexpected error on an HTTP connection")

    async def _handle(self, request: Request, connection: ServerConnection) -> bool:
        """Answer one request; returns whether the connection stays open."""
        started = time.monotonic()
        verb = _kube_verb(request)
        self.verb_counts[verb] += 1
        keep_alive = request.keep_alive
        result: _Response | _WatchPlan
        try:
            result = await self._route(request)
        except APIError as exc:
            result = _error_response(exc)
        except _HTTPError as exc:
            result = _error_response(exc.error)
        except RESTMappingError as exc:
            result = _error_response(NotFound(str(exc), reason="NotFound"))
        except Exception as exc:
            log.exception("internal error answering %s %s", request.method, request.target)
            result = _error_response(
                error_for_status(500, f"internal error: {exc!r}", reason="InternalError")
            )
        if isinstance(result, _WatchPlan):
            self._log(request, 200)
            _log_request(request, 200, started, "watch opened")
            try:
                return await self._stream_watch(result, connection) and keep_alive
            finally:
                _log_request(request, 200, started, "watch closed")
        self._log(request, result.status)
        _log_request(request, result.status, started)
        await connection.respond(result.status, result.headers, result.body, keep_alive=keep_alive)
        return keep_alive

    async def _route(self, request: Request) -> _Response | _WatchPlan:
        path = request.path.rstrip("/") or "/"
        segments = [s for s in path.split("/") if s]
        if request.method not in ("GET", "HEAD") and (
            not segments or segments[0] not in ("api", "apis")
        ):
            raise _HTTPError(405, "MethodNotAllowed", f"{request.method} is not allowed on {path}")
        if not segments:
            paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]
            return _json_response(200, {"paths": paths})
        head = segments[0]
        if head in ("healthz", "livez", "readyz"):
            return _Response(200, b"ok", [("Content-Type", "text/plain; charset=utf-8")])
        if head == "version" and len(segments) == 1:
            return _json_response(200, SERVER_VERSION)
        if path == "/openapi/v2":
            accept = request.headers.get("accept", "")
            if "protobuf" in accept:
                # Go's mime parser rejects the "@" of the requested type: answer octet-stream.
                headers = [("Content-Type", "application/octet-stream")]
                return _Response(200, _openapi_v2_protobuf(), headers)
            return _json_response(200, _OPENAPI_V2_JSON)
        if head == "api":
            if len(segments) == 1:
                negotiate(request.headers.get("accept"), conversions=False)
                return self._api_versions()
            if segments[1] != "v1":
                raise self._no_route(path)
            return await self._group_version(request, "", "v1", segments[2:])
        if head == "apis":
            if len(segments) == 1:
                negotiate(request.headers.get("accept"), conversions=False)
                return _json_response(200, await self._group_list())
            if len(segments) == 2:
                negotiate(request.headers.get("accept"), conversions=False)
                group = await self._group(segments[1])
                if group is None:
                    raise self._no_route(path)
                return _json_response(200, group)
            return await self._group_version(request, segments[1], segments[2], segments[3:])
        raise self._no_route(path)

    # ------------------------------------------------------------------ discovery

    # ------------------------------------------------------------------ resources

    async def _group_version(
        self, request: Request, group: str, version: str, rest: list[str]
    ) -> _Response | _WatchPlan:
        if not rest:
            negotiate(request.headers.get("accept"), conversions=False)
            await self._admit("discover", None, f"{group}/{version}" if group else version)
            return await self._resource_list(group, version)
        route = self._resource_route(group, version, rest, request.path)
        await self._admit(_kube_verb(request), route.resource, route.name)
        method = request.method
        if route.subresource is not None and method not in ("GET", "HEAD", "PUT", "PATCH"):
            raise MethodNotAllowed(
                f"the server does not allow this method on the requested resource ({method})",
                reason="MethodNotAllowed",
            )
        if route.subresource == "scale":
            return await self._scale(request, route)
        if route.name is None:
            if method in ("GET", "HEAD"):
                if query_flag(request, "watch"):
                    return self._watch_plan(request, route)
                return await self._list(request, route)
            if method == "POST":
                return await self._create(request, route)
            if method == "DELETE":
                return await self._delete_collection(request, route)
        else:
            if method in ("GET", "HEAD"):
                return await self._get(request, route)
            if method == "PUT":
                return await self._update(request, route)
            if method == "PATCH":
                return await self._patch(request, route)
            if method == "DELETE":
                return await self._delete(request, route)
        raise MethodNotAllowed(
            f"the server does not allow this method on the requested resource ({method})",
            reason="MethodNotAllowed",
        )

    def _resource_route(
        self, group: str, version: str, rest: list[str], path: str
    ) -> _ResourceRoute:
        namespace: str | None = None
        if (
            rest[0] == "namespaces"
            and len(rest) >= 3
            and not (group == "" and len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            namespace, rest = rest[1], rest[2:]
        subresource = rest[2] if len(rest) == 3 else None
        if len(rest) > 3 or (subresource is not None and subresource not in ("status", "scale")):
            raise NotFound(
                f"subresource {rest[2]!r} is not served by this server (path {path})",
                reason="NotFound",
            )
        name = rest[1] if len(rest) >= 2 else None
        qualified = f"{rest[0]}.{version}" + (f".{group}" if group else "")
        try:
            resource = self.store.resource_by_name(qualified)
        except RESTMappingError:
            raise self._no_route(path) from None
        if resource.group != group or resource.version != version:
            raise self._no_route(path)
        if namespace is not None and not resource.namespaced:
            raise self._no_route(path)
        if namespace is None and name is not None and resource.namespaced:
            raise self._no_route(path)
        if subresource is not None and subresource not in self.store.subresources_of(resource):
            raise NotFound(
                f"subresource {subresource!r} is not served by this server (path {path})",
                reason="NotFound",
            )
        return _ResourceRoute(resource, namespace, name, subresource)

    async def _list(self, request: Request, route: _ResourceRoute) -> _Response:
        target = negotiate(request.headers.get("accept"), conversions=True)
        if target.kind == "PartialObjectMetadata":
            raise _HTTPError(
                406,
                "NotAcceptable",
                "you requested PartialObjectMetadata, but the requested object is a list",
            )
        selector = _filter_from(request)
        include = request.param("includeObject") or "PartialObjectMetadata"
        # A Table's cells come from the whole object (its rows carry what was asked).
        metadata_only = target.kind == "PartialObjectMetadataList"
        token = request.param("continue")
        if token:
            items, rv = self._pages.resume(token, route.key)
        else:
            listed = await self.store.list(
                route.resource, namespace=route.namespace, metadata_only=metadata_only
            )
            items = [o for o in listed.items if selector.matches(o)]
            rv = listed.resource_version
        list_meta: JSONDict = {"resourceVersion": rv}
        limit = limit_of(request.param("limit"))
        if limit and len(items) > limit:
            rest = items[limit:]
            items = items[:limit]
            list_meta["continue"] = self._pages.save(rest, rv, route.key)
            list_meta["remainingItemCount"] = len(rest)
        if target.kind == "Table":
            table = _table(items, target.version, include, rv, self._printer(route.resource))
            table["metadata"] = {**table.get("metadata", {}), **list_meta}
            return _json_response(200, table)
        if target.kind == "PartialObjectMetadataList":
            body: JSONDict = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": f"{_META_GROUP}/{target.version}",
                "metadata": list_meta,
                "items": [_partial(o, target.version) for o in items],
            }
        else:
            body = {
                "kind": f"{route.resource.kind}List",
                "apiVersion": route.resource.api_version,
                "metadata": list_meta,
                "items": items,
            }
        return _json_response(200, body)

    def _render_one(
        self, request: Request, obj: JSONDict, target: _Target, route: _ResourceRoute
    ) -> JSONDict:
        if target.kind == "PartialObjectMetadataList":
            raise _HTTPError(
                406,
                "NotAcceptable",
                "you requested PartialObjectMetadataList, but the requested object is not a list",
            )
        if target.kind == "PartialObjectMetadata":
            return _partial(obj, target.version)
        if target.kind == "Table":
            include = request.param("includeObject") or "PartialObjectMetadata"
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            return _table([obj], target.version, include, rv, self._printer(route.resource))
        return obj

    async def _get(self, request: Request, route: _ResourceRoute) -> _Response:
        target = negotiate(request.headers.get("accept"), conversions=True)
        assert route.name is not None
        obj = await self.store.get(
            route.resource,
            route.name,
            namespace=route.namespace,
            metadata_only=False,
        )
        return _json_response(200, self._render_one(request, obj, target, route))

    def _check_dry_run(self, request: Request, options: JSONDict | None = None) -> None:
        dry_run = request.query.get("dryRun") or (options or {}).get("dryRun")
        if dry_run:
            raise BadRequest("dryRun is not supported by this server", reason="BadRequest")

    async def _run_hooks(self, verb: str, resource: APIResource, obj: JSONDict) -> None:
        for hook in list(self.write_hooks):
            await hook(verb, resource, obj)

    async def _create(self, request: Request, route: _ResourceRoute) -> _Response:
        target = negotiate(request.headers.get("accept"), conversions=True)
        self._check_dry_run(request)
        body = object_body(request, "the object to create")
        created = await self.store.create(route.resource, body, namespace=route.namespace)
        await self._run_hooks("create", route.resource, created)
        return _json_response(201, self._render_one(request, created, target, route))

    async def _update(self, request: Request, route: _ResourceRoute) -> _Response:
        target = negotiate(request.headers.get("accept"), conversions=True)
        self._check_dry_run(request)
        body = object_body(request, "the object to update")
        assert route.name is not None
        if isinstance(body, dict):
            meta = body.get("metadata")
            if meta is None:
                body["metadata"] = meta = {}
            if isinstance(meta, dict):
                name = meta.setdefault("name", route.name)
                if name != route.name:
                    raise BadRequest(
                        f"the name of the object ({name}) does not match the name on the URL "
                        f"({route.name})",
                        reason="BadRequest",
                    )
        updated = await self.store.update(
            route.resource, body, namespace=route.namespace, subresource=route.subresource
        )
        await self._run_hooks("update", route.resource, updated)
        return _json_response(200, self._render_one(request, updated, target, route))

    async def _patch(self, request: Request, route: _ResourceRoute) -> _Response:
        target = negotiate(request.headers.get("accept"), conversions=True)
        self._check_dry_run(request)
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        patch_type = _PATCH_TYPES.get(content_type)
        if patch_type is None:
            extra = (
                " (server-side apply is not supported by this server)"
                if content_type == _APPLY_PATCH
                else ""
            )
            raise UnsupportedPatchType(
                f'the body of the request was in an unknown format "{content_type}"{extra} - '
                "accepted media types include: application/json-patch+json, "
                "application/merge-patch+json, application/strategic-merge-patch+json",
                reason="UnsupportedMediaType",
            )
        document = _json_body(request.body, "the patch")
        assert route.name is not None
        patched = await self.store.patch(
            route.resource,
            route.name,
            document,
            patch_type=patch_type,
            namespace=route.namespace,
            subresource=route.subresource,
        )
        await self._run_hooks("patch", route.resource, patched)
        return _json_response(200, self._render_one(request, patched, target, route))

    async def _delete(self, request: Request, route: _ResourceRoute) -> _Response:
        target = negotiate(request.headers.get("accept"), conversions=True)
        options = self._delete_options(request)
        self._check_dry_run(request, options)
        raw = options.get("preconditions")
        preconditions = None
        if raw is not None:
            if not isinstance(raw, dict):
                raise BadRequest("preconditions must be an object", reason="BadRequest")
            preconditions = Preconditions(
                uid=raw.get("uid"), resource_version=raw.get("resourceVersion")
            )
        orphan = options.get("orphanDependents")
        assert route.name is not None
        obj, removed = await self.store.delete_and_report(
            route.resource,
            route.name,
            namespace=route.namespace,
            propagation_policy=options.get("propagationPolicy"),
            preconditions=preconditions,
            orphan_dependents=orphan,
        )
        await self._run_hooks("delete", route.resource, obj)
        resource = route.resource
        if removed and (resource.group, resource.resource) not in _RETURN_DELETED_OBJECT:
            meta = obj.get("metadata") or {}
            status: JSONDict = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": {
                    "name": route.name,
                    "group": resource.group,
                    "kind": resource.resource,
                    "uid": meta.get("uid", ""),
                },
            }
            return _json_response(200, status)
        # 202 only when the object remains and the client asked for cascading
        # through the deprecated orphanDependents=false (kube-apiserver's rule).
        code = 202 if not removed and orphan is False else 200
        return _json_response(code, self._render_one(request, obj, target, route))

    async def _delete_collection(self, request: Request, route: _ResourceRoute) -> _Response:
        """deletecollection: every matching object is deleted with the same options."""
        options = self._delete_options(request)
        self._check_dry_run(request, options)
        selector = _filter_from(request)
        listed = await self.store.list(route.resource, namespace=route.namespace)
        items = []
        for item in listed.items:
            if not selector.matches(item):
                continue
            meta = item["metadata"]
            try:
                obj, _ = await self.store.delete_and_report(
                    route.resource,
                    meta["name"],
                    namespace=meta.get("namespace"),
                    propagation_policy=options.get("propagationPolicy"),
                    orphan_dependents=options.get("orphanDependents"),
                )
            except NotFound:
                continue
            await self._run_hooks("delete", route.resource, obj)
            items.append(obj)
        body = {
            "kind": f"{route.resource.kind}List",
            "apiVersion": route.resource.api_version,
            "metadata": {"resourceVersion": self.store.resource_version},
            "items": items,
        }
        return _json_response(200, body)

    # ------------------------------------------------------------------ watch

    async def _admit(self, verb: str, resource: APIResource | None, name: str | None) -> None:
        """Let a wrapper of the store (e.g. FaultyStore) fail or delay this request."""
        if not isinstance(self.served, InMemoryStore):
            await self.served.admit(verb, resource, name=name)

    @property
    def open_watches(self) -> int:
        """How many watch streams are being served right now."""
        return len(self._watches)

    def _in_loop(self, func: Callable[[], None]) -> None:
        """Run ``func`` on the server's event loop thread (cancel scopes live there)."""
        portal = self._portal
        if portal is None or self._loop_thread == threading.get_ident():
            func()
        else:
            portal.call(func)

    # ------------------------------------------------------------------ request log

    def _log(self, request: Request, status: int) -> None:
        self.requests.append(RequestLogEntry(request.method, request.path, status))
        headers = request.headers
        self.request_credentials.append(
            RequestCredentials(headers.get("user-agent", ""), headers.get("authorization", ""))
        )

    def request_count(self, verb: str | None = None) -> int:
        """Requests served, of one kube verb (see :meth:`inject`) or in total."""
        if verb is None:
            return sum(self.verb_counts.values())
        return self.verb_counts[verb]

    def clear_requests(self) -> None:
        """Forget :attr:`requests` and :attr:`verb_counts` (e.g. after setup)."""
        self.requests.clear()
        self.request_credentials.clear()
        self.verb_counts.clear()

    # ------------------------------------------------------------------ kubeconfig

    # ------------------------------------------------------------------ sync helpers

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


def _log_request(request: Request, status: int, started: float, note: str = "") -> None:
    """One line per request at INFO (``ownergc serve -v``): what a client really sent."""
    if log.isEnabledFor(logging.INFO):
        ms = (time.monotonic() - started) * 1000
        suffix = f" ({note})" if note else ""
        log.info("%s %s %d %.1fms%s", request.method, request.target, status, ms, suffix)


@asynccontextmanager
async def serve_in_background(
    store: InMemoryStore | StoreWrapper, *, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[KubeAPIServer]:
    """Serve ``store`` in the current event loop for the duration of the block."""
    server = KubeAPIServer(store, host=host, port=port)
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
) -> Iterator[KubeAPIServer]:
    """Serve ``store`` from an event loop in a background thread, for sync clients
    (kubectl subprocesses, the official sync client). Store writes from the test
    thread should go through :meth:`KubeAPIServer.call` to wake watches."""
    server = KubeAPIServer(store, host=host, port=port)
    with anyio.from_thread.start_blocking_portal(backend) as portal:
        future, _url = portal.start_task(server.serve)
        try:
            yield server
        finally:
            future.cancel()
            with contextlib.suppress(BaseException):
                future.result(timeout=10)
