"""The body of a create-only subresource (a Binding, an Eviction), decoded as
kube-apiserver decodes it: another kind or version is an "unknown conversion", a field
of the wrong JSON type Go's decoder's 400."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ownergc.errors import BadRequest
from ownergc.protocols import JSONDict

from .._patch import go_json_type

__all__ = ["subresource_body"]


def subresource_body(
    body: Any,
    *,
    kind: str,
    versions: Collection[str],
    internal: str,
    objects: tuple[tuple[str, str], ...],
) -> tuple[JSONDict, str]:
    """``body`` as the ``kind`` the subresource takes (in one of ``versions``, the first when
    it says none; its ``internal`` type, ``core.Binding``, named in the refusal) and the
    version it was read in. Each ``(field, Go type)`` of ``objects`` must be an object
    when given."""
    if not isinstance(body, dict):
        raise BadRequest(f"the {kind} must be a JSON object", reason="BadRequest")
    api_version, sent_kind = body.get("apiVersion"), body.get("kind")
    default = next(iter(versions))
    version = str(api_version or default).rpartition("/")[2]
    sent_kind = sent_kind or kind
    if api_version not in (None, "", *versions) or sent_kind != kind:
        raise BadRequest(
            f'{sent_kind} in version "{version}" cannot be handled as a {kind}: converting '
            f"({version}.{sent_kind}) to ({internal}): unknown conversion",
            reason="BadRequest",
        )
    for field, go_type in objects:
        value = body.get(field)
        if value is not None and not isinstance(value, dict):
            raise undecodable(kind, version, f"{kind}.{field}", go_type, value)
    return body, version


def undecodable(kind: str, version: str, field: str, go_type: str, value: Any) -> BadRequest:
    """The 400 of a ``kind`` body whose ``field`` has the wrong JSON type, as Go's decoder
    words it."""
    return BadRequest(
        f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot '
        f"unmarshal {go_json_type(value)} into Go struct field {field} of type {go_type}",
        reason="BadRequest",
    )
