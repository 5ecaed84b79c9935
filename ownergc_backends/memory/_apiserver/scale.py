"""The ``scale`` subresource: a custom resource's objects as autoscaling/v1 Scales."""

from __future__ import annotations

from ownergc.protocols import PatchType

from .._negotiation import _json_body, _json_response
from .._patch import apply_json_merge_patch, apply_json_patch
from .._scale import replicas_patch, to_scale
from ..store import InMemoryStore
from .context import Reply, RequestContext, ResourceRoute
from .dryrun import AcceptDryRun, DryRunPolicy
from .rest import PATCH_TYPES

__all__ = ["ScaleHandler"]


class ScaleHandler:
    """GET, PUT and PATCH of ``/scale``, read and written through the store's object."""

    def __init__(self, store: InMemoryStore, dry_run: DryRunPolicy | None = None) -> None:
        self.store = store
        self.dry_run = dry_run or AcceptDryRun()

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        request = ctx.request
        writing = request.method not in ("GET", "HEAD")
        dry_run = writing and self.dry_run.dry_run(
            request.query.get("dryRun"),
            options_kind="PatchOptions" if request.method == "PATCH" else "UpdateOptions",
        )
        paths = self.store.scale_paths_of(route.resource)
        assert paths is not None and route.name is not None
        obj = await self.store.get(
            route.resource, route.name, namespace=route.namespace, metadata_only=False
        )
        scale = to_scale(obj, paths)
        if request.method in ("GET", "HEAD"):
            return _json_response(200, scale)
        document = _json_body(request.body, "the scale")
        if request.method == "PATCH":
            content_type = request.headers.get("content-type", "").split(";")[0].strip()
            if PATCH_TYPES.get(content_type) is PatchType.JSON:
                document = apply_json_patch(scale, document)
            else:
                document = apply_json_merge_patch(scale, document)
        patched = await self.store.patch(
            route.resource,
            route.name,
            replicas_patch(document, paths),
            patch_type=PatchType.MERGE,
            namespace=route.namespace,
            dry_run=dry_run,
        )
        return _json_response(200, to_scale(patched, paths))
