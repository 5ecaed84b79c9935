"""The OpenAPI seam: ``/openapi/v2`` and ``/openapi/v3`` paths.

The non-resource routes ask an :class:`OpenAPIService` first for every
``/openapi/...`` path; None means "not served" (404).
:class:`PublishedOpenAPI` (serve's default) publishes what kube-apiserver
does: the built-in kinds' schemas and every established CRD's, as
``/openapi/v2`` (JSON, or gnostic protobuf for kubectl <= 1.26) and
``/openapi/v3`` (an index, then one document per group version), so
``kubectl explain`` and kubectl's validation work. :class:`EmptyOpenAPI`
answers ``/openapi/v2`` with an empty document (kubectl then skips
client-side validation) and nothing else.
"""

from __future__ import annotations

from typing import Protocol

from ownergc._kit.http import Request

from .._negotiation import _json_response, _Response
from .._openapi import OpenAPIDocuments
from .._printing import _OPENAPI_V2_JSON, _openapi_v2_protobuf
from ..store import InMemoryStore

__all__ = ["EmptyOpenAPI", "OpenAPIService", "PublishedOpenAPI"]

#: Go's mime parser rejects the "@" of the protobuf OpenAPI type: kube-apiserver's
#: answer is read as octet-stream by kubectl either way.
_PROTOBUF_HEADERS = [("Content-Type", "application/octet-stream")]
_JSON_HEADERS = [("Content-Type", "application/json")]


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


class PublishedOpenAPI:
    """The built-in and CRD schemas, as kube-apiserver publishes them (v2 and v3)."""

    def __init__(self, store: InMemoryStore) -> None:
        crds = store.resource_for("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        self.documents = OpenAPIDocuments(lambda: store.objects_of(crds))

    def serve(self, request: Request, path: str) -> _Response | None:
        if path == "/openapi/v2":
            if "protobuf" in request.headers.get("accept", ""):
                return _Response(200, self.documents.v2_protobuf(), _PROTOBUF_HEADERS)
            return _Response(200, self.documents.v2_json(), _JSON_HEADERS)
        if path == "/openapi/v3":
            return _json_response(200, self.documents.v3_index())
        if path.startswith("/openapi/v3/"):
            document = self.documents.v3(path[len("/openapi/v3/") :])
            return _json_response(200, document) if document is not None else None
        return None
