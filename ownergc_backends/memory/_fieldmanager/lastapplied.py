"""Server-side apply after client-side apply, as kube-apiserver allows it.

``kubectl apply --server-side`` on an object ``kubectl apply`` (client-side) managed
conflicts with the ``kubectl-client-side-apply`` manager on every field the new
configuration changes. kube-apiserver lets that apply through when its manager is
``kubectl`` and every conflicting field is one the object's
``kubectl.kubernetes.io/last-applied-configuration`` annotation sets to the value the
object still has: those fields were kubectl's own, applied client-side. Other
conflicts are reported as they are. (kubectl then moves the client-side manager's
fields to its own entry and applies again.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .conflicts import ApplyConflict
from .engine import ApplyResult, apply, without_managed_fields
from .fieldpath import FieldSet
from .merge import MergeError, compare, to_field_set
from .schema import Node

__all__ = ["LAST_APPLIED", "apply_after_client_side"]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
#: The one manager whose conflicts the annotation may lift (others opt out by name).
_KUBECTL = "kubectl"


def _kept_from_last_applied(
    live: Mapping[str, Any], api_version: str, schema: Node
) -> FieldSet | None:
    """The fields the last-applied annotation sets to what ``live`` still holds; None
    without a usable annotation (none, not JSON, another version)."""
    annotations = (live.get("metadata") or {}).get("annotations")
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, Mapping) else None
    if not isinstance(text, str) or not text:
        return None
    try:
        last_applied = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last_applied, dict) or last_applied.get("apiVersion") != api_version:
        return None
    try:
        fields = to_field_set(last_applied, schema)
        added, modified, removed = compare(last_applied, without_managed_fields(live), schema)
    except MergeError:
        return None
    return frozenset(fields - added - modified - removed)


def apply_after_client_side(
    live: Mapping[str, Any] | None,
    applied: Mapping[str, Any],
    *,
    manager: str,
    force: bool,
    schema: Node,
    now: str,
    subresource: str = "",
    ignored: FieldSet = frozenset(),
) -> ApplyResult | ApplyConflict:
    """:func:`~.engine.apply`, with the conflicts ``kubectl`` may take over from its own
    client-side apply taken over (see the module's docstring)."""

    def attempt(forced: bool) -> ApplyResult | ApplyConflict:
        return apply(
            live,
            applied,
            manager=manager,
            force=forced,
            schema=schema,
            now=now,
            subresource=subresource,
            ignored=ignored,
        )

    result = attempt(force)
    if manager != _KUBECTL or live is None or not isinstance(result, ApplyConflict):
        return result
    kept = _kept_from_last_applied(live, str(applied.get("apiVersion", "")), schema)
    if kept is None:
        return result
    left = {key: fields - kept for key, fields in result.conflicts.items()}
    left = {key: fields for key, fields in left.items() if fields}
    return ApplyConflict(left) if left else attempt(True)
