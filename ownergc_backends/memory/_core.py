"""What every part of the store shares and that holds no state: rendering a stored
object in a requested version, the API errors naming a resource, and the checks
of a request body before any rule looks at it.
"""

from __future__ import annotations

from typing import Any

from ownergc.errors import (
    BadRequest,
    Conflict,
    Invalid,
    NotFound,
)
from ownergc.protocols import JSONDict

from ._conversion import CONVERTED, from_storage
from ._networking_validation import ERROR_GROUPS
from ._objects import (
    _PARTIAL_API_VERSION,
    _PARTIAL_KIND,
    _invalid,
    _Storage,
)
from ._patch import (
    PatchError,
    check_json,
    copy_json,
)
from ._validation import (
    FieldError,
    MetadataTypeError,
    decode_metadata,
)

__all__ = [
    "check_type",
    "conflict",
    "decode_meta",
    "invalid",
    "json_body",
    "json_value",
    "not_found",
    "render",
    "render_shared",
]


def render(bucket: _Storage, obj: JSONDict, version: str, metadata_only: bool) -> JSONDict:
    """A copy of a stored object as a client sees it in ``version`` (or its metadata only)."""
    if metadata_only:
        return {
            "apiVersion": _PARTIAL_API_VERSION,
            "kind": _PARTIAL_KIND,
            "metadata": copy_json(obj["metadata"]),
        }
    spec = bucket.spec
    out: JSONDict = {
        "apiVersion": f"{spec.group}/{version}" if spec.group else version,
        "kind": spec.kind,
    }
    for key, value in obj.items():
        if key not in ("apiVersion", "kind"):
            out[key] = copy_json(value)
    if (spec.resource, version) in CONVERTED:
        from_storage(spec.group, spec.resource, version, out)
    return out


def render_shared(bucket: _Storage, obj: JSONDict, version: str, metadata_only: bool) -> JSONDict:
    """:func:`render` without the copy: a new top-level dict whose values are the stored
    ones, for a reader that encodes it at once and never changes it."""
    if metadata_only:
        return {
            "apiVersion": _PARTIAL_API_VERSION,
            "kind": _PARTIAL_KIND,
            "metadata": obj["metadata"],
        }
    spec = bucket.spec
    out: JSONDict = {
        "apiVersion": f"{spec.group}/{version}" if spec.group else version,
        "kind": spec.kind,
    }
    for key, value in obj.items():
        if key not in ("apiVersion", "kind"):
            out[key] = value
    if (spec.resource, version) in CONVERTED:
        from_storage(spec.group, spec.resource, version, out)
    return out


def not_found(bucket: _Storage, name: str) -> NotFound:
    return NotFound(
        f'{bucket.group_resource} "{name}" not found',
        reason="NotFound",
        details={"name": name, "group": bucket.spec.group, "kind": bucket.spec.resource},
    )


def name_mismatch(name: object, url_name: str) -> BadRequest:
    """The 400 for an object whose ``metadata.name`` is not the one its URL names."""
    return BadRequest(
        f"the name of the object ({name}) does not match the name on the URL ({url_name})",
        reason="BadRequest",
    )


def conflict(bucket: _Storage, name: str, why: str) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {bucket.group_resource} "{name}": {why}',
        reason="Conflict",
        details={"name": name, "group": bucket.spec.group, "kind": bucket.spec.resource},
    )


def invalid(bucket: _Storage, name: str, errors: list[FieldError]) -> Invalid:
    spec = bucket.spec
    # (an Ingress's and a NetworkPolicy's refusals are qualified by ``extensions``)
    group = ERROR_GROUPS.get((spec.group, spec.kind), spec.group)
    return _invalid(spec.kind, name, errors, group)


def json_value(value: Any, what: str) -> Any:
    """``value`` if it is plain JSON, else the 400 the apiserver answers."""
    try:
        return check_json(value)
    except PatchError as exc:
        raise BadRequest(f"{what} is not valid JSON: {exc.message}", reason="BadRequest") from None


def json_body(value: Any, what: str) -> JSONDict:
    """``value`` if it is a JSON object, else a 400."""
    body = json_value(value, what)
    if not isinstance(body, dict):
        raise BadRequest(f"{what} must be a JSON object, got {value!r}", reason="BadRequest")
    return body


def decode_meta(raw: Any) -> JSONDict:
    """Decoded ObjectMeta, or the 400 for metadata of the wrong types."""
    try:
        return decode_metadata(raw)
    except MetadataTypeError as exc:
        raise BadRequest(f"unable to decode metadata: {exc}", reason="BadRequest") from None


def check_type(bucket: _Storage, body: JSONDict) -> None:
    """A body's kind and apiVersion, when given, must be the resource's."""
    spec = bucket.spec
    kind = body.get("kind")
    if kind not in (None, "", spec.kind):
        raise BadRequest(
            f"the object kind {kind!r} does not match the resource "
            f"{bucket.group_resource} (kind {spec.kind!r})",
            reason="BadRequest",
        )
    api_version = body.get("apiVersion")
    served = {f"{spec.group}/{v}" if spec.group else v for v in spec.versions}
    if api_version not in (None, "") and api_version not in served:
        raise BadRequest(
            f"apiVersion {api_version!r} is not served for {bucket.group_resource} "
            f"(served: {sorted(served)})",
            reason="BadRequest",
        )
