"""The ownerReference rules, once: ``ownergc lint``, ``ownergc.ownerrefs`` and the webhook.

Each check is a pure function of a reference and what is known about the
dependent and the owner; it returns a :class:`Violation` (rule name, what
the garbage collector will do, how to fix it) or ``None``. Callers decide
what a violation means to them: a lint finding, a typed exception, an
admission warning or denial.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ownergc._core.builtin_kinds import BUILTIN_KINDS, REMOVED_VERSIONS

__all__ = [
    "KindInfo",
    "Violation",
    "builtin_kinds",
    "check_controllers",
    "check_owner_kind",
    "check_owner_namespace",
    "check_owner_scope",
    "check_owner_uid",
    "check_reference_fields",
    "dangling_owner",
    "group_of",
    "ref_label",
]


@dataclass(frozen=True, slots=True)
class KindInfo:
    """How an apiVersion/kind is served: its scope and its resource (plural) name."""

    namespaced: bool
    resource: str


@dataclass(frozen=True, slots=True)
class Violation:
    """A broken rule: its name (as ``ownergc lint`` prints it), what happens, the fix.

    ``detail`` tells cases of one rule apart for callers that raise a
    different error for each (``missing-uid``, ``event-owner``).
    """

    rule: str
    message: str
    fix: str
    detail: str = ""


def builtin_kinds() -> dict[tuple[str, str], KindInfo]:
    """(apiVersion, kind) → KindInfo for every kind a stock kube-apiserver serves."""
    return {
        (f"{group}/{version}" if group else version, kind): KindInfo(namespaced, resource)
        for group, version, kind, resource, namespaced in BUILTIN_KINDS
    }


def group_of(api_version: str) -> str:
    """The API group of an apiVersion (``""`` for the core group)."""
    return api_version.rpartition("/")[0]


def ref_label(ref: Mapping[str, Any]) -> str:
    return f"{ref.get('kind')} {ref.get('name')} ({ref.get('apiVersion')}, uid {ref.get('uid')})"


def check_controllers(refs: Sequence[Any]) -> Violation | None:
    """At most one reference may say ``controller: true`` (the apiserver answers 422)."""
    if len(refs) <= 1:
        return None
    controllers = [r for r in refs if isinstance(r, Mapping) and r.get("controller") is True]
    if len(controllers) <= 1:
        return None
    return Violation(
        "multiple-controllers",
        f"{len(controllers)} ownerReferences have controller: true "
        f"({', '.join(ref_label(r) for r in controllers)}); the apiserver rejects this (422)",
        "keep controller: true on one reference only (the managing controller)",
    )


def check_reference_fields(ref: object) -> Violation | None:
    """The fields the apiserver requires, and no core Event as an owner."""
    # The usual case, tested at once: a dict with every field, not an Event.
    if (
        type(ref) is dict
        and ref.get("apiVersion")
        and ref.get("kind")
        and ref.get("kind") != "Event"
        and ref.get("name")
        and ref.get("uid")
    ):
        return None
    if not isinstance(ref, Mapping):
        return Violation(
            "invalid-owner-reference", f"ownerReference {ref!r} is not an object", "remove it"
        )
    missing = [k for k in ("apiVersion", "kind", "name", "uid") if not ref.get(k)]
    if missing:
        return Violation(
            "invalid-owner-reference",
            f"ownerReference {ref_label(ref)} lacks {', '.join(missing)}; the apiserver rejects it",
            "set apiVersion, kind, name and the owner's metadata.uid (read it from the live owner)",
            "missing-uid" if missing == ["uid"] else "missing",
        )
    if ref.get("kind") == "Event" and ref.get("apiVersion") == "v1":
        return Violation(
            "invalid-owner-reference",
            "a core v1 Event cannot be an owner; the apiserver rejects this",
            "remove the reference",
            "event-owner",
        )
    return None


def check_owner_kind(ref: Mapping[str, Any], owner_kind: KindInfo | None) -> Violation | None:
    """The owner's apiVersion/kind must be served, or the GC can never resolve it."""
    if owner_kind is not None:
        return None
    kind, api_version = ref.get("kind"), ref.get("apiVersion")
    removed = REMOVED_VERSIONS.get((str(api_version), str(kind)))
    if removed is not None:
        release, instead = removed
        return Violation(
            "unknown-owner-kind",
            f"owner kind {kind} in {api_version} is not served since Kubernetes {release}; "
            "the GC cannot map it and never collects this object",
            f"use apiVersion {instead} (the owner's uid is the same in every version)"
            if instead
            else f"Kubernetes has no {kind} since {release}: remove the reference",
        )
    return Violation(
        "unknown-owner-kind",
        f"owner kind {kind} in {api_version} is not served; the GC cannot map it and "
        "never collects this object",
        "fix apiVersion/kind, or install the owner's CRD (with that version served)",
    )


def check_owner_scope(
    ref: Mapping[str, Any], owner_namespaced: bool, dependent_namespaced: bool
) -> Violation | None:
    """A cluster-scoped dependent cannot name a namespaced owner (unresolvable)."""
    if not owner_namespaced or dependent_namespaced:
        return None
    return Violation(
        "namespaced-owner-of-cluster-scoped",
        f"cluster-scoped object owned by namespaced {ref_label(ref)}; the reference "
        "cannot be resolved and the GC never collects it",
        "make the owner cluster-scoped, or drop the reference and clean up with a finalizer",
    )


def check_owner_namespace(
    owner_label: str, owner_namespace: str | None, namespace: str | None
) -> Violation | None:
    """A namespaced owner must be in the dependent's namespace: the GC looks only there.

    ``namespace`` None is a cluster-scoped dependent: that case is
    :func:`check_owner_scope`'s, so it is not reported here.
    """
    if owner_namespace is None or namespace is None or owner_namespace == namespace:
        return None
    return Violation(
        "cross-namespace-owner",
        f'owner {owner_label} is in namespace "{owner_namespace}"; the GC looks for it in '
        f'"{namespace}", finds nothing and deletes this object '
        "(event OwnerRefInvalidNamespace)",
        "owners must be in the same namespace or cluster-scoped: move the object, "
        "or replace the reference with a label and a finalizer",
    )


def check_owner_uid(owner_label: str, actual_uid: str, ref: Mapping[str, Any]) -> Violation | None:
    """The owner found under the reference's kind/name must have the reference's uid."""
    if actual_uid == ref.get("uid"):
        return None
    return Violation(
        "owner-uid-mismatch",
        f"{owner_label} exists with uid {actual_uid}, not {ref.get('uid')} (recreated?); the GC "
        "treats the owner as gone and deletes this object",
        f"set the reference's uid to {actual_uid}, or recreate this object from its owner",
    )


def dangling_owner(ref: Mapping[str, Any], *, complete: bool) -> Violation:
    """No owner with the reference's uid where the GC looks (``complete``: a whole cluster)."""
    if complete:
        return Violation(
            "dangling-owner",
            f"owner {ref_label(ref)} does not exist; the GC deletes this object unless "
            "another owner exists",
            "remove the reference if the object must stay",
        )
    return Violation(
        "dangling-owner",
        f"owner {ref_label(ref)} is not among the inputs; if it is not in the "
        "cluster either, the GC deletes this object",
        "include the owner, or check it exists with that uid",
    )
