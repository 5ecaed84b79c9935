"""Routing by request info: non-resource paths, discovery, and resource requests.

The :class:`Router` is the last stage of the handler chain. It never parses a
path itself (the :class:`~.requestinfo.RequestInfo` did); it picks the part
that serves the request: :class:`NonResourceRoutes`, :class:`~.discovery.Discovery`,
or, once :class:`ResourceResolver` found the resource in the registry and the
fault gate let the request through, the :class:`RESTDispatcher` that calls the
verb's REST handler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ownergc.errors import MethodNotAllowed, NotFound, RESTMappingError

from .._cr_schema import rule_warnings
from .._negotiation import _HTTPError, _json_response, _Response, negotiate, query_flag
from .._printing import SERVER_VERSION
from .._reviews import is_review
from ..store import InMemoryStore
from .connect import CONNECT_SUBRESOURCES
from .context import Reply, RequestContext, ResourceRoute, no_route
from .discovery import Discovery
from .faults import RequestGate
from .fieldvalidation import FieldValidation
from .openapi import OpenAPIService
from .requestinfo import RequestInfo
from .rest import RESTHandler

__all__ = [
    "NonResourceRoutes",
    "RESTDispatcher",
    "ResourceResolver",
    "Router",
]

_ROOT_PATHS = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]
#: The health checks kube-apiserver (1.27+) runs at each endpoint, in its order (its
#: post-start hooks left out: this server has none). The in-memory store stands in
#: for etcd, and nothing here can fail, so every check passes.
_HEALTH_CHECKS: dict[str, tuple[str, ...]] = {
    "healthz": ("ping", "log", "etcd"),
    "livez": ("ping", "log", "etcd"),
    "readyz": ("ping", "log", "etcd", "etcd-readiness", "informer-sync", "shutdown"),
}
_TEXT = [("Content-Type", "text/plain; charset=utf-8"), ("X-Content-Type-Options", "nosniff")]
_SUBRESOURCES = (
    "status",
    "scale",
    "token",
    "eviction",
    "binding",
    "ephemeralcontainers",
    "finalize",
)
#: Create-only subresources whose other methods get a 405 worded as kube-apiserver
#: words it there (``namespaces/finalize``, update only, too).
_CREATE_ONLY_SUBRESOURCES = frozenset({"eviction", "binding"})
#: With the connect subresources: pods/log, exec, ..., the proxies (connect.py).
_SERVED_SUBRESOURCES = frozenset(_SUBRESOURCES).union(CONNECT_SUBRESOURCES)


class NonResourceRoutes:
    """``/``, the health checks, ``/version`` and, through the OpenAPI service, ``/openapi``."""

    def __init__(self, openapi: OpenAPIService) -> None:
        self.openapi = openapi

    async def __call__(self, ctx: RequestContext) -> Reply:
        info = ctx.info
        if not info.segments:
            return _json_response(200, {"paths": _ROOT_PATHS})
        head = info.segments[0]
        if head in _HEALTH_CHECKS:
            return _health(head, info.segments[1:], ctx.request.query)
        if head == "version" and len(info.segments) == 1:
            return _json_response(200, SERVER_VERSION)
        if head == "openapi":
            response = self.openapi.serve(ctx.request, info.path)
            if response is not None:
                return response
        raise no_route()


def _health(endpoint: str, rest: tuple[str, ...], query: Mapping[str, Sequence[str]]) -> _Response:
    """``/healthz``, ``/livez``, ``/readyz`` (``?verbose``, ``?exclude=NAME``) and one
    check alone (``/readyz/etcd``), answered as kube-apiserver's health handler does."""
    checks = _HEALTH_CHECKS[endpoint]
    if rest:
        if "/".join(rest) not in checks:
            raise no_route()
        return _Response(200, b"ok", [("Content-Type", "text/plain; charset=utf-8")])
    if "verbose" not in query:
        return _Response(200, b"ok", _TEXT)
    excluded = list(dict.fromkeys(query.get("exclude", ())))
    lines = []
    for name in checks:
        if name in excluded:
            excluded.remove(name)
            lines.append(f"[+]{name} excluded: ok")
        else:
            lines.append(f"[+]{name} ok")
    if excluded:
        quoted = ",".join(f'"{name}"' for name in sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
    lines.append(f"{endpoint} check passed")
    return _Response(200, ("\n".join(lines) + "\n").encode(), _TEXT)


class ResourceResolver:
    """A resource request's :class:`ResourceRoute`, or the 404 kube-apiserver answers."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store

    def resolve(self, info: RequestInfo) -> ResourceRoute:
        rest = info.resource_parts
        sub = info.subresource
        proxied = sub == "proxy"  # (/proxy/any/path/below)
        if (len(rest) > 3 and not proxied) or (sub is not None and sub not in _SERVED_SUBRESOURCES):
            raise NotFound(
                f"subresource {rest[2]!r} is not served by this server (path {info.path})",
                reason="NotFound",
            )
        qualified = f"{info.resource}.{info.version}" + (f".{info.group}" if info.group else "")
        try:
            resource = self.store.resource_by_name(qualified)
        except RESTMappingError:
            raise no_route() from None
        if resource.group != info.group or resource.version != info.version:
            raise no_route()
        if info.namespace is not None and not resource.namespaced:
            raise no_route()
        if info.namespace is None and info.name is not None and resource.namespaced:
            raise no_route()
        if info.subresource is not None and info.subresource not in self.store.subresources_of(
            resource
        ):
            raise NotFound(
                f"subresource {info.subresource!r} is not served by this server (path {info.path})",
                reason="NotFound",
            )
        return ResourceRoute(resource, info.namespace, info.name, info.subresource)


def _not_allowed(method: str) -> MethodNotAllowed:
    return MethodNotAllowed(
        f"the server does not allow this method on the requested resource ({method})",
        reason="MethodNotAllowed",
    )


async def _create_only(ctx: RequestContext, route: ResourceRoute) -> Reply:
    """Another method than the one a subresource takes (POST on ``pods/eviction`` and
    ``pods/binding``, PUT on ``namespaces/finalize``), or than POST on ``bindings``."""
    return _json_response(
        405,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "the server does not allow this method on the requested resource",
            "reason": "MethodNotAllowed",
            "details": {},
            "code": 405,
        },
    )


@dataclass(frozen=True, slots=True)
class RESTDispatcher:
    """Which REST handler serves a method on a route (a table of the handlers).

    ``review`` answers the POSTs of the review kinds (never stored) and
    ``token`` the ``serviceaccounts/token`` subresource, ``eviction``
    ``pods/eviction``, ``binding`` ``pods/binding`` and ``bindings``; without them
    those routes are 405s and 404s.
    """

    get: RESTHandler
    list: RESTHandler
    watch: RESTHandler
    create: RESTHandler
    update: RESTHandler
    patch: RESTHandler
    delete: RESTHandler
    deletecollection: RESTHandler
    scale: RESTHandler
    review: RESTHandler | None = None
    token: RESTHandler | None = None
    eviction: RESTHandler | None = None
    binding: RESTHandler | None = None
    #: The connect subresources (``pods/log``, ``exec``, …, the proxies): connect.py.
    connect: RESTHandler | None = None
    #: ``authentication.k8s.io`` TokenReviews: tokenreview.py.
    tokenreview: RESTHandler | None = None

    def handler_for(self, ctx: RequestContext, route: ResourceRoute) -> RESTHandler:
        method = ctx.request.method
        read = method in ("GET", "HEAD")
        if route.subresource in CONNECT_SUBRESOURCES:
            if self.connect is None:
                raise no_route()
            return self.connect
        if route.subresource in ("token", "eviction", "binding"):
            handler = {"token": self.token, "eviction": self.eviction}.get(
                route.subresource, self.binding
            )
            if handler is None:
                raise no_route()
            if method != "POST":
                if route.subresource in _CREATE_ONLY_SUBRESOURCES:
                    return _create_only  # (worded as kube-apiserver words it there)
                raise _not_allowed(method)
            return handler
        if route.subresource == "finalize" and method != "PUT":
            return _create_only
        if route.subresource is None and _is_bindings(route):
            if self.binding is None:
                raise no_route()
            if method != "POST" or route.name is not None:
                return _create_only
            return self.binding
        if route.subresource is not None and method not in ("GET", "HEAD", "PUT", "PATCH"):
            raise _not_allowed(method)
        if route.subresource == "scale":
            return self.scale
        if route.resource.group == "authentication.k8s.io" and (
            route.resource.resource == "tokenreviews"
        ):
            if self.tokenreview is None or route.name is not None:
                raise no_route()  # (GET, PUT, DELETE of a named one: 404, as real)
            return self.tokenreview if method == "POST" else _create_only
        if self.review is not None and is_review(route.resource.group, route.resource.resource):
            if method != "POST" or route.name is not None:
                raise _not_allowed(method)
            return self.review
        if route.name is None:
            if read:
                return self.watch if query_flag(ctx.request, "watch") else self.list
            if method == "POST":
                return self.create
            if method == "DELETE":
                return self.deletecollection
        else:
            if read:
                return self.get
            if method == "PUT":
                return self.update
            if method == "PATCH":
                return self.patch
            if method == "DELETE":
                return self.delete
        raise _not_allowed(method)


def _is_bindings(route: ResourceRoute) -> bool:
    """The core group's ``bindings`` (create only: a Pod's binding, never stored)."""
    return route.resource.group == "" and route.resource.resource == "bindings"


class Router:
    """The end of the handler chain: serves the request by what its request info names."""

    def __init__(
        self,
        nonresource: NonResourceRoutes,
        discovery: Discovery,
        resolver: ResourceResolver,
        gate: RequestGate,
        rest: RESTDispatcher,
        fields: FieldValidation | None = None,
    ) -> None:
        self.nonresource = nonresource
        self.discovery = discovery
        self.resolver = resolver
        self.gate = gate
        self.rest = rest
        self.fields = fields

    async def __call__(self, ctx: RequestContext) -> Reply:
        request, info = ctx.request, ctx.info
        if not info.api_prefix:
            if request.method not in ("GET", "HEAD"):
                raise _HTTPError(
                    405, "MethodNotAllowed", f"{request.method} is not allowed on {info.path}"
                )
            return await self.nonresource(ctx)
        segments = info.segments
        accept = request.headers.get("accept")
        if info.api_prefix == "api":
            if len(segments) == 1:
                negotiate(accept, conversions=False)
                return self.discovery.api_versions()
            if segments[1] != "v1":
                raise no_route()
        else:
            if len(segments) == 1:
                negotiate(accept, conversions=False)
                return _json_response(200, await self.discovery.group_list())
            if len(segments) == 2:
                negotiate(accept, conversions=False)
                group = await self.discovery.group(info.group)
                if group is None:
                    raise no_route()
                return _json_response(200, group)
        if not info.is_resource_request:
            negotiate(accept, conversions=False)
            await self.gate.admit("discover", None, info.group_version)
            return await self.discovery.resource_list(info.group, info.version)
        route = self.resolver.resolve(info)
        await self.gate.admit(info.verb, route.resource, route.name)
        handler = self.rest.handler_for(ctx, route)
        if (
            self.fields is not None
            and route.subresource is None
            and handler is not self.rest.review
            and handler is not self.rest.binding
            and handler is not _create_only
        ):
            # Unknown-field warnings join the request's warnings, sent as Warning headers
            # with admission's (responses.warning_headers).
            self.fields.check(ctx, route.resource)
        # (validation rules ratcheted on an update warn, as 1.30's do)
        token = rule_warnings.set(ctx.warnings)
        try:
            return await handler(ctx, route)
        finally:
            rule_warnings.reset(token)
