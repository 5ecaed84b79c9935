"""Content negotiation of the REST facade: Accept media ranges (JSON, Table, PartialObjectMetadata),
request bodies, and the JSON / Status responses.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from ownergc._kit.http import (
    Request,
)
from ownergc._kit.jsonio import dumps
from ownergc.errors import (
    APIError,
    BadRequest,
    UnsupportedPatchType,
    error_for_status,
)

from ._protobuf import PROTOBUF, decode_object, supported_kinds

#: Compact JSON, through orjson where installed (one encoder with the webhooks').
_encode = dumps

__all__ = [
    "_JSON",
    "_JSON_HEADERS",
    "_META_GROUP",
    "_PLAIN",
    "_HTTPError",
    "_Response",
    "_Target",
    "_encode",
    "_error_response",
    "_json_body",
    "_json_response",
    "_media_ranges",
    "_retry_after_header",
    "negotiate",
    "object_body",
    "query_flag",
]


_META_GROUP: Final = "meta.k8s.io"


_JSON: Final = "application/json"


_JSON_HEADERS: Final = (("Content-Type", _JSON), ("Cache-Control", "no-cache, private"))


class _HTTPError(Exception):
    """A non-API error answered with a Status (406, 405 on non-resource paths, …)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.error = error_for_status(code, message, reason=reason)


class _Target(NamedTuple):
    """What the client asked the response to be converted to."""

    kind: str | None  # None: the object itself; else PartialObjectMetadata[List] / Table
    version: str = "v1"


_PLAIN = _Target(None)


@functools.lru_cache(maxsize=256)
def _media_ranges(accept: str) -> tuple[tuple[str, Mapping[str, str]], ...]:
    """The Accept header's media ranges, highest q first (stable for ties).

    Cached: a client sends the same few Accept headers on every request."""
    ranges: list[tuple[float, int, str, dict[str, str]]] = []
    for index, item in enumerate(accept.split(",")):
        parts = [p.strip() for p in item.split(";")]
        media = parts[0].lower()
        if not media:
            continue
        params: dict[str, str] = {}
        for p in parts[1:]:
            key, _, value = p.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        if q > 0:
            ranges.append((-q, index, media, params))
    ranges.sort()
    return tuple((media, MappingProxyType(params)) for _, _, media, params in ranges)


def negotiate(accept: str | None, *, conversions: bool) -> _Target:
    """Pick the response form as kube-apiserver does: the first acceptable media range.

    Only JSON is served. ``as=`` conversions are acceptable on resource
    endpoints (``conversions``); a range asking for a conversion this
    server does not do (aggregated discovery, say) is skipped, so that the
    client's plain ``application/json`` fallback is chosen.
    """
    if not accept:
        return _PLAIN
    target = _negotiated(accept, conversions)
    if target is None:
        raise _HTTPError(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json "
            "(with as=PartialObjectMetadata, PartialObjectMetadataList or Table;g=meta.k8s.io)",
        )
    return target


@functools.lru_cache(maxsize=256)
def _negotiated(accept: str, conversions: bool) -> _Target | None:
    """:func:`negotiate`'s answer for one Accept header (None: nothing acceptable).

    Cached: a client sends the same few Accept headers on every request."""
    for media, params in _media_ranges(accept):
        if media not in (_JSON, "application/*", "*/*"):
            continue
        as_kind = params.get("as")
        if as_kind is None:
            return _PLAIN
        if not conversions or params.get("g") != _META_GROUP:
            continue
        version = params.get("v", "")
        if as_kind in ("PartialObjectMetadata", "PartialObjectMetadataList", "Table") and (
            version in ("v1", "v1beta1")
        ):
            return _Target(as_kind, version)
    return None


def _json_body(data: bytes, what: str) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"{what} is not valid JSON: {exc}", reason="BadRequest") from None


def object_body(request: Request, what: str) -> Any:
    """The object a create or update sends: JSON, or protobuf (kubectl's generators) for
    every built-in kind :mod:`._protobuf` reads."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == PROTOBUF:
        return decode_object(request.body)
    if content_type not in ("", _JSON, "*/*"):
        raise UnsupportedPatchType(
            f'the body of the request was in an unknown format "{content_type}": this server '
            f"accepts application/json and {PROTOBUF} (for the {len(supported_kinds())} "
            "built-in kinds)",
            reason="UnsupportedMediaType",
        )
    return _json_body(request.body, what)


def _retry_after_header(seconds: float) -> str:
    """Whole seconds, rounded up: the only form HTTP (and urllib3, client-go) accept."""
    return str(max(0, math.ceil(seconds)))


@dataclass(slots=True)
class _Response:
    status: int
    body: bytes
    headers: list[tuple[str, str]] = field(default_factory=lambda: list(_JSON_HEADERS))


def _json_response(status: int, body: Any) -> _Response:
    return _Response(status, _encode(body))


def failure_without_reason(code: int, message: str) -> _Response:
    """A failure Status without a ``reason``, as kube-apiserver answers an error it has no
    reason for (a plain Go error: a Binding to a missing node, an eviction's dry-run
    mismatch)."""
    return _json_response(
        code,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "code": code,
        },
    )


def _error_response(error: APIError) -> _Response:
    response = _json_response(error.code, error.to_status())
    if error.retry_after is not None:
        response.headers.append(("Retry-After", _retry_after_header(error.retry_after)))
    return response


def query_flag(request: Request, name: str) -> bool:
    """A boolean query parameter read as kube-apiserver reads one.

    Absent is false; present, every value but ``0`` and ``false`` (any case)
    is true, the empty one included (``watch=True``, ``watch=yes``, ``watch=``).
    """
    values = request.query.get(name)
    if not values:
        return False
    return not (values[0] == "0" or values[0].lower() == "false")
