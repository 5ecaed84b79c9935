"""The OpenAPI seam: ``/openapi/v2`` and ``/openapi/v3`` paths.

The non-resource routes ask an :class:`OpenAPIService` first for every
``/openapi/...`` path; None means "not served" (404).
:class:`PublishedOpenAPI` (what ``KubeAPIServer`` serves) answers with the
documents of :mod:`.._openapi`: the recorded built-in kinds plus every
established CRD, read from the store on each request so definitions created or
removed at runtime show at once. :class:`EmptyOpenAPI` is the bare minimum
(an empty ``/openapi/v2``) for pipelines assembled without a store.

``/openapi/v2`` asked for in protobuf only (what kubectl's client-side
validation and 1.20's ``explain`` ask for) is the same document in gnostic's
protobuf (:mod:`.._openapi_proto`), encoded once per set of CRDs.
"""

from __future__ import annotations

from typing import Protocol

from ownergc._kit.http import Request
from ownergc.protocols import JSONDict

from .._negotiation import _json_response, _Response
from .._openapi import OpenAPIDocuments
from .._openapi_proto import document_to_protobuf
from .._printing import _OPENAPI_V2_JSON, _openapi_v2_protobuf
from ..store import InMemoryStore

__all__ = ["EmptyOpenAPI", "OpenAPIService", "PublishedOpenAPI"]

_CRDS = "customresourcedefinitions.v1.apiextensions.k8s.io"


class OpenAPIService(Protocol):
    async def serve(self, request: Request, path: str) -> _Response | None:
        """The response for ``path`` (under ``/openapi``), or None for a 404."""
        ...


def _empty_v2_protobuf() -> _Response:
    # Go's mime parser rejects the "@" of the requested type: answer octet-stream.
    headers = [("Content-Type", "application/octet-stream")]
    return _Response(200, _openapi_v2_protobuf(), headers)


def _wants_protobuf(request: Request) -> bool:
    return "protobuf" in request.headers.get("accept", "")


class EmptyOpenAPI:
    """``/openapi/v2``: an empty document, in protobuf or JSON; ``/openapi/v3``: 404."""

    async def serve(self, request: Request, path: str) -> _Response | None:
        if path != "/openapi/v2":
            return None
        if _wants_protobuf(request):
            return _empty_v2_protobuf()
        return _json_response(200, _OPENAPI_V2_JSON)


class PublishedOpenAPI:
    """``/openapi/v2`` (JSON or protobuf), ``/openapi/v3`` and ``/openapi/v3/<group-version>``."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store
        self._crds: list[JSONDict] = []
        self.documents = OpenAPIDocuments(lambda: self._crds)
        self._proto: tuple[JSONDict, bytes] | None = None

    async def _read_crds(self) -> None:
        resource = self.store.resource_by_name(_CRDS)
        listing = await self.store.list(resource, metadata_only=False)
        self._crds = list(listing.items)

    async def serve(self, request: Request, path: str) -> _Response | None:
        path = path.rstrip("/")
        if path == "/openapi/v2":
            await self._read_crds()
            document = self.documents.v2()
            if _wants_protobuf(request) and "json" not in request.headers.get("accept", ""):
                if self._proto is None or self._proto[0] is not document:
                    self._proto = (document, document_to_protobuf(document))
                # Go's mime parser rejects the "@" of the requested type: octet-stream.
                headers = [("Content-Type", "application/octet-stream")]
                return _Response(200, self._proto[1], headers)
            return _json_response(200, document)
        if path == "/openapi/v3":
            await self._read_crds()
            return _json_response(200, self.documents.v3_index())
        if path.startswith("/openapi/v3/"):
            await self._read_crds()
            published = self.documents.v3(path.removeprefix("/openapi/v3/"))
            return None if published is None else _json_response(200, published)
        return None
