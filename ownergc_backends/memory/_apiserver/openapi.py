"""The OpenAPI seam: ``/openapi/v2`` and ``/openapi/v3`` paths.

The non-resource routes ask an :class:`OpenAPIService` first for every
``/openapi/...`` path; None means "not served" (404). Today's service answers
``/openapi/v2`` with an empty schema document (kubectl then skips client-side
validation instead of failing) and nothing else.
"""

from __future__ import annotations

from typing import Protocol

from ownergc._kit.http import Request

from .._negotiation import _json_response, _Response
from .._printing import _OPENAPI_V2_JSON, _openapi_v2_protobuf

__all__ = ["EmptyOpenAPI", "OpenAPIService"]


class OpenAPIService(Protocol):
    def serve(self, request: Request, path: str) -> _Response | None:
        """The response for ``path`` (under ``/openapi``), or None for a 404."""
        ...


class EmptyOpenAPI:
    """``/openapi/v2``: an empty document, in protobuf or JSON; ``/openapi/v3``: 404."""

    def serve(self, request: Request, path: str) -> _Response | None:
        if path != "/openapi/v2":
            return None
        if "protobuf" in request.headers.get("accept", ""):
            # Go's mime parser rejects the "@" of the requested type: answer octet-stream.
            headers = [("Content-Type", "application/octet-stream")]
            return _Response(200, _openapi_v2_protobuf(), headers)
        return _json_response(200, _OPENAPI_V2_JSON)
