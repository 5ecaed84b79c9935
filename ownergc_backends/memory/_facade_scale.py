"""The ``scale`` subresource of the REST facade (a CRD's objects as autoscaling/v1 Scales)."""

from __future__ import annotations

from ownergc._kit.http import Request
from ownergc.protocols import PatchType

from ._facade_base import _PATCH_TYPES, _ResourceRoute
from ._facade_watch import WatchRoutes
from ._negotiation import _json_body, _json_response, _Response
from ._patch import apply_json_merge_patch, apply_json_patch
from ._scale import replicas_patch, to_scale

__all__ = ["ScaleRoutes"]


class ScaleRoutes(WatchRoutes):
    """Serving ``/scale``."""

    async def _scale(self, request: Request, route: _ResourceRoute) -> _Response:
        """``/scale`` of a custom resource: read or write it as an autoscaling/v1 Scale."""
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
            if _PATCH_TYPES.get(content_type) is PatchType.JSON:
                document = apply_json_patch(scale, document)
            else:
                document = apply_json_merge_patch(scale, document)
        patched = await self.store.patch(
            route.resource,
            route.name,
            replicas_patch(document, paths),
            patch_type=PatchType.MERGE,
            namespace=route.namespace,
        )
        return _json_response(200, to_scale(patched, paths))
