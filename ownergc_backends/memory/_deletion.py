"""The DELETE rules of kube-apiserver's generic registry store: which GC finalizers a delete adds,
when an object is marked deleting, when an update that empties the finalizers removes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ownergc.protocols import (
    JSONDict,
    PropagationPolicy,
)

from ._objects import (
    format_time,
    parse_time,
)
from ._resources import GCPolicy
from ._validation import (
    FINALIZER_FOREGROUND,
    FINALIZER_ORPHAN,
)

__all__ = [
    "deletion_finalizers_for_garbage_collection",
    "mark_as_deleting",
    "should_delete_during_update",
]


def _requested_gc(
    finalizers: Sequence[str],
    default: GCPolicy,
    policy: PropagationPolicy | None,
    orphan_dependents: bool | None,
) -> PropagationPolicy | None:
    """Which GC finalizer a DELETE asks for (item 83): ORPHAN, FOREGROUND or None.

    The first that says anything decides: the deprecated
    ``orphanDependents``, then ``propagationPolicy``, then the first of the
    object's own ``orphan`` / ``foregroundDeletion`` finalizers, then the
    resource's default (which may orphan, never foreground). Resources the
    GC does not support get neither.
    """
    if default is GCPolicy.UNSUPPORTED:
        return None
    if orphan_dependents is not None:
        return PropagationPolicy.ORPHAN if orphan_dependents else None
    if policy is not None:
        return policy if policy is not PropagationPolicy.BACKGROUND else None
    for f in finalizers:
        if f == FINALIZER_ORPHAN:
            return PropagationPolicy.ORPHAN
        if f == FINALIZER_FOREGROUND:
            return PropagationPolicy.FOREGROUND
    return PropagationPolicy.ORPHAN if default is GCPolicy.ORPHAN else None


def deletion_finalizers_for_garbage_collection(
    finalizers: Sequence[str],
    default_policy: GCPolicy,
    propagation_policy: PropagationPolicy | None = None,
    orphan_dependents: bool | None = None,
) -> tuple[bool, list[str]]:
    """The finalizers a DELETE leaves on an object (item 83) and whether they changed.

    Existing ``orphan`` / ``foregroundDeletion`` entries are dropped (order of
    the others kept), then ``orphan`` and/or ``foregroundDeletion`` appended
    as the options, the existing finalizers or the resource default decide.
    When the resulting *set* equals the old one the old list is kept as is.
    """
    requested = _requested_gc(finalizers, default_policy, propagation_policy, orphan_dependents)
    new = [f for f in finalizers if f not in (FINALIZER_ORPHAN, FINALIZER_FOREGROUND)]
    if requested is PropagationPolicy.ORPHAN:
        new.append(FINALIZER_ORPHAN)
    elif requested is PropagationPolicy.FOREGROUND:
        new.append(FINALIZER_FOREGROUND)
    if set(new) == set(finalizers):
        return False, list(finalizers)
    return True, new


def mark_as_deleting(obj: JSONDict, now: datetime) -> JSONDict:
    """Return ``obj`` marked as deleting (§14.4), without touching the argument.

    deletionTimestamp becomes ``now`` when unset or later than now (never
    moved later); generation is bumped only on the first marking;
    deletionGracePeriodSeconds is always 0.
    """
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    existing = meta.get("deletionTimestamp")
    if existing is None and isinstance(meta.get("generation"), int) and meta["generation"] > 0:
        meta["generation"] += 1
    existing_time = parse_time(existing) if isinstance(existing, str) else None
    if existing is None or (existing_time is not None and existing_time > now):
        meta["deletionTimestamp"] = format_time(now)
    meta["deletionGracePeriodSeconds"] = 0
    out["metadata"] = meta
    return out


def should_delete_during_update(new_finalizers: Sequence[str], existing_meta: JSONDict) -> bool:
    """An update leaving no finalizers removes a deleting object (item 88, §14.5).

    Only when the stored object has a deletionTimestamp and no pending
    graceful deletion (deletionGracePeriodSeconds unset or 0).
    """
    if new_finalizers or existing_meta.get("deletionTimestamp") is None:
        return False
    return existing_meta.get("deletionGracePeriodSeconds") in (None, 0)
