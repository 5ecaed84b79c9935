"""Per-verb REST handlers over the store (k8s ``registry/rest``, read for structure only).

Each handler is one verb on one resolved route: it reads what its verb reads
from the request, calls the store, and renders the answer in the form the
client negotiated. A handler receives in its constructor exactly what it
uses: the store, the :class:`ObjectRenderer`, the continue-token pages (list),
and for writes the :class:`WriteSteps` (dry run, admission, field management,
the write hooks).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ownergc._kit.gcpause import gc_paused
from ownergc._kit.http import Request
from ownergc.errors import BadRequest, NotFound
from ownergc.protocols import APIResource, JSONDict, PatchType, Preconditions

from .._core import name_mismatch
from .._defaults import apply_defaults, defaulted
from .._negotiation import (
    _META_GROUP,
    _HTTPError,
    _json_body,
    _json_response,
    _Response,
    _Target,
    negotiate,
    object_body,
    query_flag,
)
from .._objects import default_namespace_label
from .._pages import ContinuePages, limit_of
from .._printing import _partial, _table
from .._selectors import _filter_from
from .._tables import Printer
from ..store import InMemoryStore, PatchRaced
from .admission import AdmissionAttributes, AdmissionChain
from .context import Reply, RequestContext, ResourceRoute, UserInfo
from .dryrun import DryRunPolicy
from .fieldmanager import APPLY_PATCH, FieldManager, manager_name, unsupported_patch_type
from .fieldvalidation import FieldValidation
from .listcache import CachedLists, from_watch_cache

__all__ = [
    "PATCH_TYPES",
    "CreateHandler",
    "DeleteCollectionHandler",
    "DeleteHandler",
    "GetHandler",
    "ListHandler",
    "ObjectRenderer",
    "PatchHandler",
    "RESTHandler",
    "UpdateHandler",
    "WriteHook",
    "WriteHooks",
    "WriteSteps",
    "delete_options",
]

#: Registries with ``ReturnDeletedObject: true``: a DELETE that removes the object
#: answers with the object; every other resource answers with a Status.
_RETURN_DELETED_OBJECT: Final = frozenset(
    {
        ("", "pods"),
        ("", "services"),
        ("", "serviceaccounts"),
        ("", "namespaces"),
        ("storage.k8s.io", "storageclasses"),
    }
)

#: The patch content types the store applies.
PATCH_TYPES: Final[dict[str, PatchType]] = {p.value: p for p in PatchType}

#: Called after every successful write through the API with the verb
#: (create, update, patch, delete), the resource and the resulting object
#: (for a delete that removed it, its last state), before the response: a seam
#: for servers built on the facade (``ownergc serve``) to react to writes.
WriteHook = Callable[[str, APIResource, JSONDict], Awaitable[None]]


class RESTHandler(Protocol):
    """One verb on a resolved route."""

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply: ...


class ObjectRenderer:
    """Objects and lists in the form negotiated: as they are, PartialObjectMetadata, or a
    Table with ``printers``' columns."""

    def __init__(self, printers: Callable[[APIResource], Printer]) -> None:
        self.printers = printers

    def one(self, request: Request, obj: JSONDict, target: _Target, route: ResourceRoute) -> Any:
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
            return _table([obj], target.version, include, rv, self.printers(route.resource))
        return obj

    def many(
        self,
        request: Request,
        items: list[JSONDict],
        list_meta: JSONDict,
        target: _Target,
        route: ResourceRoute,
    ) -> JSONDict:
        rv = list_meta["resourceVersion"]
        if target.kind == "Table":
            include = request.param("includeObject") or "PartialObjectMetadata"
            table = _table(items, target.version, include, rv, self.printers(route.resource))
            table["metadata"] = {**table.get("metadata", {}), **list_meta}
            return table
        if target.kind == "PartialObjectMetadataList":
            return {
                "kind": "PartialObjectMetadataList",
                "apiVersion": f"{_META_GROUP}/{target.version}",
                "metadata": list_meta,
                "items": [_partial(o, target.version) for o in items],
            }
        return {
            "kind": f"{route.resource.kind}List",
            "apiVersion": route.resource.api_version,
            "metadata": list_meta,
            "items": items,
        }


class WriteHooks:
    """The hooks run after each successful write (the list is shared: append to it)."""

    def __init__(self, hooks: list[WriteHook]) -> None:
        self.hooks = hooks

    async def run(
        self, verb: str, resource: APIResource, obj: JSONDict, *, dry_run: bool = False
    ) -> None:
        """Run the hooks, unless the write was a dry run (nothing was written)."""
        if dry_run:
            return
        for hook in list(self.hooks):
            await hook(verb, resource, obj)


@dataclass(frozen=True, slots=True)
class WriteSteps:
    """What every write handler runs around its store call, in this order: dry run,
    admission, field management, (the store), the write hooks."""

    dry_run: DryRunPolicy
    admission: AdmissionChain
    fields: FieldManager
    hooks: WriteHooks
    #: Unknown-field checks of a patched object (POST and PUT bodies are checked as
    #: they are decoded, by the router); None: none.
    validation: FieldValidation | None = None

    async def admit(
        self,
        ctx: RequestContext,
        operation: str,
        route: ResourceRoute,
        obj: Any,
        *,
        dry_run: bool,
        old: Callable[[], Awaitable[JSONDict | None]] | None = None,
        options: JSONDict | None = None,
        patch: Any = None,
        patch_type: PatchType | None = None,
    ) -> AdmissionAttributes:
        """Run admission for one write; ``old`` is read only when a plugin or the field
        manager wants it (the field manager writes no delete, so it wants none then)."""
        old_obj = None
        if old is not None and (
            (operation != "DELETE" and self.fields.wants_old_object)
            or self.admission.wants_old_object
        ):
            old_obj = await old()
        attrs = self.attributes(
            ctx,
            operation,
            route,
            obj,
            dry_run=dry_run,
            old_obj=old_obj,
            options=options,
            patch=patch,
            patch_type=patch_type,
        )
        return await self.admission.admit(attrs)

    def attributes(
        self,
        ctx: RequestContext,
        operation: str,
        route: ResourceRoute,
        obj: Any,
        *,
        dry_run: bool,
        old_obj: JSONDict | None = None,
        options: JSONDict | None = None,
        patch: Any = None,
        patch_type: PatchType | None = None,
        kind: tuple[str, str, str] | None = None,
        user: UserInfo | None = None,
    ) -> AdmissionAttributes:
        """The attributes admission sees for one write (``user``: who writes, when it is
        the server itself rather than the client; ``kind``: a subresource's own kind)."""
        return AdmissionAttributes(
            operation=operation,
            resource=route.resource,
            namespace=route.namespace,
            name=route.name,
            subresource=route.subresource,
            obj=obj,
            old_obj=old_obj,
            dry_run=dry_run,
            user=user or ctx.user,
            options=options or {},
            patch=patch,
            patch_type=patch_type,
            warnings=ctx.warnings,
            kind=kind,
        )


def decoded(resource: APIResource, obj: Any, *, owned: bool = True) -> Any:
    """The object as the server decodes a write: with its kind's defaults (see
    :mod:`.._defaults`) and a Namespace's name label, before admission and the field
    manager see it, so the writer of an Update owns what was defaulted. ``owned``: the
    object is the handler's own (a decoded body, a patch's result), changed in place;
    otherwise a defaulted copy is returned."""
    if owned:
        apply_defaults(resource.group, resource.version, resource.resource, obj)
    else:
        obj = defaulted(resource.group, resource.version, resource.resource, obj)
    default_namespace_label(resource.group, resource.resource, obj)
    return obj


def _old_object(store: InMemoryStore, route: ResourceRoute) -> Callable[[], Awaitable[Any]]:
    async def read() -> JSONDict | None:
        assert route.name is not None
        try:
            return await store.get(
                route.resource, route.name, namespace=route.namespace, metadata_only=False
            )
        except NotFound:
            return None

    return read


def _known(obj: JSONDict | None) -> Callable[[], Awaitable[JSONDict | None]]:
    async def read() -> JSONDict | None:
        return obj

    return read


def delete_options(request: Request) -> JSONDict:
    """DeleteOptions from the body, or from the query when there is no body
    (kube-apiserver never merges the two)."""
    if request.body.strip():
        options = _json_body(request.body, "the DeleteOptions body")
        if not isinstance(options, dict):
            raise BadRequest("DeleteOptions must be a JSON object", reason="BadRequest")
        kind = options.get("kind")
        if kind not in (None, "", "DeleteOptions"):
            raise BadRequest(
                f"expected DeleteOptions in the request body, got kind {kind!r}",
                reason="BadRequest",
            )
        return options
    options = {}
    if "dryRun" in request.query:
        options["dryRun"] = request.query["dryRun"]
    policy = request.param("propagationPolicy")
    if policy is not None:
        options["propagationPolicy"] = policy
    if "orphanDependents" in request.query:
        options["orphanDependents"] = query_flag(request, "orphanDependents")
    return options


def _body(ctx: RequestContext, what: str) -> Any:
    """The request's object: as field validation decoded it, else decoded here."""
    if ctx.decoded_body is not None:
        return ctx.decoded_body[0]
    return object_body(ctx.request, what)


def _accepts(request: Request) -> _Target:
    return negotiate(request.headers.get("accept"), conversions=True)


class GetHandler:
    def __init__(self, store: InMemoryStore, renderer: ObjectRenderer) -> None:
        self.store = store
        self.renderer = renderer

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        target = _accepts(ctx.request)
        assert route.name is not None
        # Shared, not copied: the answer is encoded before anything else runs.
        obj = await self.store.get_shared(route.resource, route.name, namespace=route.namespace)
        return _json_response(200, self.renderer.one(ctx.request, obj, target, route))


class ListHandler:
    """A list, filtered by selectors, paged by ``limit`` / ``continue``; at
    ``resourceVersion=0`` one response, as the watch cache answers (:mod:`.listcache`)."""

    def __init__(
        self,
        store: InMemoryStore,
        renderer: ObjectRenderer,
        pages: ContinuePages,
        cache: CachedLists | None = None,
    ) -> None:
        self.store = store
        self.renderer = renderer
        self.pages = pages
        #: None: no watch cache (kube-apiserver's ``--watch-cache=false``): lists at
        #: ``resourceVersion=0`` are paged as consistent ones are.
        self.cache = cache

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        request = ctx.request
        target = _accepts(request)
        if target.kind == "PartialObjectMetadata":
            raise _HTTPError(
                406,
                "NotAcceptable",
                "you requested PartialObjectMetadata, but the requested object is a list",
            )
        selector = _filter_from(request, route.resource)
        cache = self.cache
        cached = cache is not None and from_watch_cache(request)
        if cache is not None and cached:
            key = (
                route.key,
                target,
                request.param("labelSelector"),
                request.param("fieldSelector"),
                request.param("includeObject"),
            )
            body = cache.get(key, self.store.resource_version)
            if body is not None:
                return _Response(200, body)
        token = request.param("continue")
        if token:
            items, rv = self.pages.resume(token, route.key)
        else:
            # Shared, not copied: the answer is encoded before anything else runs.
            listed = await self.store.list_shared(route.resource, namespace=route.namespace)
            items = listed.items
            if not selector.empty:
                items = [o for o in items if selector.matches(o)]
            rv = listed.resource_version
        list_meta: JSONDict = {"resourceVersion": rv}
        if cache is not None and cached:
            # The watch cache answers in one response, whatever the limit.
            with gc_paused():
                response = _json_response(
                    200, self.renderer.many(request, items, list_meta, target, route)
                )
            cache.put(key, rv, response.body)
            return response
        limit = limit_of(request.param("limit"))
        if limit and len(items) > limit:
            rest = items[limit:]
            items = items[:limit]
            list_meta["continue"] = self.pages.save(rest, rv, route.key)
            list_meta["remainingItemCount"] = len(rest)
        with gc_paused():
            return _json_response(200, self.renderer.many(request, items, list_meta, target, route))


class CreateHandler:
    def __init__(self, store: InMemoryStore, renderer: ObjectRenderer, writes: WriteSteps) -> None:
        self.store = store
        self.renderer = renderer
        self.writes = writes

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        request = ctx.request
        target = _accepts(request)
        dry_run = self.writes.dry_run.dry_run(
            request.query.get("dryRun"), options_kind="CreateOptions"
        )
        body = decoded(route.resource, _body(ctx, "the object to create"))
        attrs = await self.writes.admit(ctx, "CREATE", route, body, dry_run=dry_run)
        # The body as sent (the store answers a non-object with its own 400/422).
        obj: Any = self.writes.fields.on_write(attrs, manager_name(request))
        created = await self.store.create(
            route.resource, obj, namespace=route.namespace, dry_run=dry_run
        )
        await self.writes.hooks.run("create", route.resource, created, dry_run=dry_run)
        return _json_response(201, self.renderer.one(request, created, target, route))


class UpdateHandler:
    def __init__(self, store: InMemoryStore, renderer: ObjectRenderer, writes: WriteSteps) -> None:
        self.store = store
        self.renderer = renderer
        self.writes = writes

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        request = ctx.request
        target = _accepts(request)
        dry_run = self.writes.dry_run.dry_run(
            request.query.get("dryRun"), options_kind="UpdateOptions"
        )
        body = _body(ctx, "the object to update")
        assert route.name is not None
        if isinstance(body, dict):
            meta = body.get("metadata")
            if meta is None:
                body["metadata"] = meta = {}
            if isinstance(meta, dict):
                name = meta.setdefault("name", route.name)
                if name != route.name:
                    raise name_mismatch(name, route.name)
        body = decoded(route.resource, body)
        attrs = await self.writes.admit(
            ctx, "UPDATE", route, body, dry_run=dry_run, old=_old_object(self.store, route)
        )
        obj: Any = self.writes.fields.on_write(attrs, manager_name(request))
        updated = await self.store.update(
            route.resource,
            obj,
            namespace=route.namespace,
            subresource=route.subresource,
            dry_run=dry_run,
        )
        await self.writes.hooks.run("update", route.resource, updated, dry_run=dry_run)
        return _json_response(200, self.renderer.one(request, updated, target, route))


class PatchHandler:
    """JSON, merge and strategic-merge patches; server-side apply goes to the field
    manager.

    As kube-apiserver's patcher does, the handler computes the patched object
    itself (:meth:`InMemoryStore.patched`), so admission and the field manager
    see the object about to be stored, then writes it as an update guarded by
    the resourceVersion it was computed from; if the object moved meanwhile
    the patch is applied again to the new state.
    """

    #: Attempts before a patch that keeps racing other writers is answered 409.
    attempts: Final = 5

    def __init__(self, store: InMemoryStore, renderer: ObjectRenderer, writes: WriteSteps) -> None:
        self.store = store
        self.renderer = renderer
        self.writes = writes

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        request = ctx.request
        target = _accepts(request)
        dry_run = self.writes.dry_run.dry_run(
            request.query.get("dryRun"), options_kind="PatchOptions"
        )
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type == APPLY_PATCH:

            async def admit(operation: str, obj: JSONDict, live: JSONDict | None) -> JSONDict:
                obj = decoded(route.resource, obj, owned=False)
                attrs = await self.writes.admit(
                    ctx, operation, route, obj, dry_run=dry_run, old=_known(live)
                )
                return attrs.obj if attrs.obj is not None else obj

            applied, created = await self.writes.fields.apply(
                request, route, user=ctx.user, dry_run=dry_run, admit=admit, warnings=ctx.warnings
            )
            verb = "create" if created else "patch"
            await self.writes.hooks.run(verb, route.resource, applied, dry_run=dry_run)
            code = 201 if created else 200
            return _json_response(code, self.renderer.one(request, applied, target, route))
        patch_type = PATCH_TYPES.get(content_type)
        if patch_type is None:
            raise unsupported_patch_type(content_type)
        document = _json_body(request.body, "the patch")
        patched = await self._patch(ctx, route, document, patch_type, dry_run=dry_run)
        await self.writes.hooks.run("patch", route.resource, patched, dry_run=dry_run)
        return _json_response(200, self.renderer.one(request, patched, target, route))

    async def _patch(
        self,
        ctx: RequestContext,
        route: ResourceRoute,
        document: Any,
        patch_type: PatchType,
        *,
        dry_run: bool,
    ) -> JSONDict:
        assert route.name is not None
        for attempt in range(self.attempts):
            current, result = await self.store.patched(
                route.resource,
                route.name,
                document,
                patch_type=patch_type,
                namespace=route.namespace,
            )
            result = decoded(route.resource, result)
            if self.writes.validation is not None and route.subresource is None:
                self.writes.validation.patched(
                    ctx, route.resource, patch_type, document, result, first=attempt == 0
                )
            attrs = await self.writes.admit(
                ctx,
                "UPDATE",
                route,
                result,
                dry_run=dry_run,
                old=_known(current),
                patch=document,
                patch_type=patch_type,
            )
            obj: Any = self.writes.fields.on_write(attrs, manager_name(ctx.request))
            try:
                return await self.store.update(
                    route.resource,
                    obj,
                    namespace=route.namespace,
                    subresource=route.subresource,
                    patched_from=(current.get("metadata") or {}).get("resourceVersion"),
                    dry_run=dry_run,
                )
            except PatchRaced:
                if attempt == self.attempts - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


def _preconditions(options: JSONDict) -> Preconditions | None:
    raw = options.get("preconditions")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise BadRequest("preconditions must be an object", reason="BadRequest")
    return Preconditions(uid=raw.get("uid"), resource_version=raw.get("resourceVersion"))


class DeleteHandler:
    def __init__(self, store: InMemoryStore, renderer: ObjectRenderer, writes: WriteSteps) -> None:
        self.store = store
        self.renderer = renderer
        self.writes = writes

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        request = ctx.request
        target = _accepts(request)
        options = delete_options(request)
        dry_run = self.writes.dry_run.dry_run(
            None, options.get("dryRun"), options_kind="DeleteOptions"
        )
        preconditions = _preconditions(options)
        orphan = options.get("orphanDependents")
        assert route.name is not None
        await self.writes.admit(
            ctx,
            "DELETE",
            route,
            None,
            dry_run=dry_run,
            old=_old_object(self.store, route),
            options=options,
        )
        obj, removed = await self.store.delete_and_report(
            route.resource,
            route.name,
            namespace=route.namespace,
            propagation_policy=options.get("propagationPolicy"),
            preconditions=preconditions,
            orphan_dependents=orphan,
            dry_run=dry_run,
            # Uncopied unless a write hook gets it: the answer is encoded at once.
            shared=not self.writes.hooks.hooks,
        )
        await self.writes.hooks.run("delete", route.resource, obj, dry_run=dry_run)
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
            if not resource.group:  # omitempty, as the real server writes it
                del status["details"]["group"]
            return _json_response(200, status)
        # 202 only when the object remains and the client asked for cascading
        # through the deprecated orphanDependents=false (kube-apiserver's rule).
        code = 202 if not removed and orphan is False else 200
        return _json_response(code, self.renderer.one(request, obj, target, route))


class DeleteCollectionHandler:
    """deletecollection: every matching object is deleted with the same options."""

    def __init__(self, store: InMemoryStore, writes: WriteSteps) -> None:
        self.store = store
        self.writes = writes

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        request = ctx.request
        options = delete_options(request)
        dry_run = self.writes.dry_run.dry_run(
            None, options.get("dryRun"), options_kind="DeleteOptions"
        )
        selector = _filter_from(request, route.resource)
        listed = await self.store.list(route.resource, namespace=route.namespace)
        items = []
        for item in listed.items:
            if not selector.matches(item):
                continue
            meta = item["metadata"]
            item_route = ResourceRoute(route.resource, meta.get("namespace"), meta["name"])
            await self.writes.admit(
                ctx,
                "DELETE",
                item_route,
                None,
                dry_run=dry_run,
                old=_known(item),
                options=options,
            )
            try:
                obj, _ = await self.store.delete_and_report(
                    route.resource,
                    meta["name"],
                    namespace=meta.get("namespace"),
                    propagation_policy=options.get("propagationPolicy"),
                    orphan_dependents=options.get("orphanDependents"),
                    dry_run=dry_run,
                )
            except NotFound:
                continue
            await self.writes.hooks.run("delete", route.resource, obj, dry_run=dry_run)
            items.append(obj)
        body = {
            "kind": f"{route.resource.kind}List",
            "apiVersion": route.resource.api_version,
            "metadata": {"resourceVersion": self.store.resource_version},
            "items": items,
        }
        return _json_response(200, body)
