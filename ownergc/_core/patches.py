"""Patch bodies the collector sends, in the exact JSON shapes Kubernetes' GC sends.

Strategic merge patches (SMP) merge ``ownerReferences`` by ``uid``, so they
touch only the named entries, and carry ``metadata.uid`` as a precondition:
the apiserver rejects a uid change as immutable (422), so a same-named
replacement object is never modified. Resources without SMP support (custom
resources) answer 415, and the JSON merge patch (JMP) fallback is used: it
rewrites the whole list and carries ``metadata.resourceVersion`` instead, so
a stale view answers 409 rather than clobbering a concurrent change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ownergc._core.refs import OwnerReference, metadata_of, owner_references_of

__all__ = [
    "delete_owner_refs_json_merge_patch",
    "delete_owner_refs_strategic_merge_patch",
    "remove_finalizer_json_merge_patch",
    "unblock_owner_refs_json_merge_patch",
    "unblock_owner_refs_strategic_merge_patch",
]


def _uid_of(obj: Mapping[str, Any]) -> str:
    uid = metadata_of(obj).get("uid")
    return uid if isinstance(uid, str) else ""


def _owners_of(obj: Mapping[str, Any] | Sequence[OwnerReference]) -> Sequence[OwnerReference]:
    if isinstance(obj, Mapping):
        return owner_references_of(obj)
    return obj


def delete_owner_refs_strategic_merge_patch(dependent_uid: str, *owner_uids: str) -> dict[str, Any]:
    """SMP removing the refs to ``owner_uids`` (a missing uid is ignored by the server)."""
    refs: list[dict[str, Any]] | None = [{"$patch": "delete", "uid": uid} for uid in owner_uids]
    return {"metadata": {"uid": dependent_uid, "ownerReferences": refs or None}}


def delete_owner_refs_json_merge_patch(obj: Mapping[str, Any], *owner_uids: str) -> dict[str, Any]:
    """JMP keeping every ref of the latest ``obj`` except those to ``owner_uids``."""
    return owner_refs_merge_patch(
        metadata_of(obj).get("resourceVersion"), owner_references_of(obj), *owner_uids
    )


def owner_refs_merge_patch(
    resource_version: str | None, refs: Iterable[OwnerReference], *owner_uids: str
) -> dict[str, Any]:
    """The delete-owner-refs JMP from a known resourceVersion and ref list (e.g. the cache)."""
    drop = set(owner_uids)
    remaining = [ref.to_dict() for ref in refs if ref.uid not in drop]
    return {
        "metadata": {
            "resourceVersion": resource_version,
            "ownerReferences": remaining or None,
        }
    }


def unblock_owner_refs_strategic_merge_patch(
    obj: Mapping[str, Any], owners: Sequence[OwnerReference] | None = None
) -> dict[str, Any]:
    """SMP setting ``blockOwnerDeletion: false`` on every ref that blocks.

    ``owners`` defaults to the refs of ``obj``; the collector passes the refs
    it has cached for the node, as upstream does. Non-blocking refs are left
    untouched (the server merges list entries by uid).
    """
    refs = owner_references_of(obj) if owners is None else owners
    meta: dict[str, Any] = {"uid": _uid_of(obj), "creationTimestamp": None}
    blocking = [_unblocked(ref) for ref in refs if ref.block_owner_deletion is True]
    if blocking:
        meta["ownerReferences"] = blocking
    return {"metadata": meta}


def unblock_owner_refs_json_merge_patch(
    obj: Mapping[str, Any], owners: Sequence[OwnerReference] | None = None
) -> dict[str, Any]:
    """JMP rewriting every ref with ``blockOwnerDeletion: false`` (upstream's fallback)."""
    refs = owner_references_of(obj) if owners is None else owners
    return {
        "metadata": {
            "resourceVersion": metadata_of(obj).get("resourceVersion"),
            # Go marshals the nil slice of an empty list as null.
            "ownerReferences": [_unblocked(ref) for ref in refs] or None,
        }
    }


def remove_finalizer_json_merge_patch(obj: Mapping[str, Any], finalizer: str) -> dict[str, Any]:
    """JMP dropping ``finalizer`` (all occurrences) with a resourceVersion precondition."""
    meta = metadata_of(obj)
    return finalizers_merge_patch(
        meta.get("resourceVersion"), meta.get("finalizers") or (), finalizer
    )


def finalizers_merge_patch(
    resource_version: str | None, finalizers: Iterable[str], finalizer: str
) -> dict[str, Any]:
    """The finalizer-removal JMP from a known resourceVersion and finalizer list."""
    remaining = [f for f in finalizers if f != finalizer]
    return {
        "metadata": {
            "resourceVersion": resource_version,
            "finalizers": remaining or None,
        }
    }


def _unblocked(ref: OwnerReference) -> dict[str, Any]:
    out = ref.to_dict()
    out["blockOwnerDeletion"] = False
    return out
