"""One object's subtree: being deleted (its finalizers) or not (its owners)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ownergc import FINALIZER_DELETE_DEPENDENTS, FINALIZER_KUBERNETES, FINALIZER_ORPHAN_DEPENDENTS
from ownergc.protocols import JSONDict
from ownergc.why._finalizers import (
    Walk,
    custom_finalizer,
    explain_finalizer,
)
from ownergc.why._namespace import namespace_finalizer
from ownergc.why._snapshot import (
    OwnerVerdict,
    Snapshot,
    classify_owners,
    meta_of,
    owner_reason,
    ref_label,
)
from ownergc.why._tree import NextStep, ObjectRef, Reason

__all__ = ["explain_object"]

_CONTROLLER_LABELS = (
    "pod-template-hash",
    "controller-revision-hash",
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "statefulset.kubernetes.io/pod-name",
)


def explain_object(w: Walk, obj: JSONDict, depth: int = 0) -> Reason:
    """The subtree of one object: its state, then what holds it."""
    me = ObjectRef.of(obj)
    meta = meta_of(obj)
    uid = str(meta.get("uid") or str(me))
    if uid in w.seen:
        return Reason("object.cycle", f"{me}: already explained above", me)
    if depth > w.max_depth:
        return Reason(
            "object.depthLimit",
            f"{me}: not expanded (depth limit)",
            me,
            (f"run ownergc why on it: {w.snap.kubectl_resource(obj)}/{me.name}",),
        )
    w.seen.add(uid)
    try:
        if meta.get("deletionTimestamp"):
            return _explain_deleting(w, obj, depth)
        return _explain_present(w, obj)
    finally:
        w.seen.discard(uid)


def _explain_deleting(w: Walk, obj: JSONDict, depth: int) -> Reason:
    me = ObjectRef.of(obj)
    meta = meta_of(obj)
    finalizers = [f for f in meta.get("finalizers") or () if isinstance(f, str)]
    children = [explain_finalizer(w, obj, f, depth) for f in finalizers]
    if obj.get("kind") == "Namespace" and obj.get("apiVersion") == "v1":
        spec_fins = (obj.get("spec") or {}).get("finalizers") or []
        if FINALIZER_KUBERNETES in spec_fins:
            children.append(namespace_finalizer(w, obj, depth))
        for f in spec_fins:
            if f != FINALIZER_KUBERNETES:
                node = custom_finalizer(w, obj, f)
                children.append(
                    Reason(node.code, node.summary + " (spec.finalizers)", None, node.details)
                )
    since = meta.get("deletionTimestamp")
    details: list[str] = []
    steps: tuple[NextStep, ...] = ()
    if not children:
        grace = meta.get("deletionGracePeriodSeconds")
        if obj.get("kind") == "Pod" and grace:
            node_name = (obj.get("spec") or {}).get("nodeName")
            details.append(
                f"graceful termination: the kubelet{' on ' + node_name if node_name else ''} "
                f"stops its containers (grace period {grace}s), then the pod goes"
            )
            steps = (
                NextStep(
                    f"kubectl delete {w.snap.kubectl_target(obj)} --grace-period=0 --force",
                    "the pod object goes at once; if the node is unreachable its containers may "
                    "still be running there",
                ),
            )
        else:
            details.append(
                "no finalizer holds it: the apiserver removes it as soon as the last one goes"
            )
    held = len(children)
    if depth == 0 and meta.get("ownerReferences"):
        # Why it is being deleted may be one of its owners (a collected dependent).
        children += [owner_reason(w.snap, obj, v) for v in classify_owners(w.snap, obj)]
    return Reason(
        "object.deleting",
        f"{me}: being deleted since {since}, held by {held} finalizer(s)",
        me,
        tuple(details),
        steps,
        tuple(children),
    )


def _explain_present(w: Walk, obj: JSONDict) -> Reason:
    me = ObjectRef.of(obj)
    verdicts = classify_owners(w.snap, obj)
    children = tuple(owner_reason(w.snap, obj, v) for v in verdicts)
    code, summary, details = _collector_verdict(w.snap, obj, verdicts)
    return Reason(code, f"{me}: {summary}", me, tuple(details), (), children)


def _collector_verdict(
    snap: Snapshot, obj: JSONDict, verdicts: list[OwnerVerdict]
) -> tuple[str, str, list[str]]:
    """What attemptToDeleteItem would do with this object, in its words."""
    states = [v.state for v in verdicts]
    stuck = {"unknownKind", "namespacedOwnerOfClusterScoped", "malformed"}
    if not verdicts:
        details = ["the garbage collector never deletes an object that has no ownerReferences"]
        evidence = _orphan_evidence(obj)
        if evidence:
            return (
                "object.orphaned",
                "kept — no owners; looks orphaned",
                [
                    *details,
                    f"evidence that a controller created it: {evidence}",
                    "its owner was deleted with propagationPolicy=Orphan (the collector removed "
                    "the reference), or the reference was removed by hand",
                ],
            )
        return ("object.noOwners", "kept — no owners", details)
    if any(s in stuck for s in states):
        return (
            "object.neverCollected",
            "kept — the garbage collector cannot classify its owners",
            ["one reference makes the whole classification fail, so it is never collected"],
        )
    solid = [v for v in verdicts if v.state == "solid"]
    gone = [v for v in verdicts if v.state in ("dangling", "invalidNamespace")]
    waiting = [v for v in verdicts if v.state == "waitingForDependentsDeletion"]
    if solid:
        details = []
        if gone or waiting:
            details.append(
                "held by another owner: the collector keeps it and only removes its "
                "references to " + ", ".join(ref_label(v.ref) for v in gone + waiting)
            )
        return (
            "object.heldByOwner",
            f"kept — {len(solid)} solid owner(s): " + ", ".join(ref_label(v.ref) for v in solid),
            details,
        )
    fins = meta_of(obj).get("finalizers") or ()
    if waiting:
        return (
            "object.collectable",
            "to be deleted — its owner is deleted in the foreground",
            ["the collector deletes it (Foreground if it has dependents itself)"],
        )
    policy = (
        "Orphan"
        if FINALIZER_ORPHAN_DEPENDENTS in fins
        else "Foreground"
        if FINALIZER_DELETE_DEPENDENTS in fins
        else "Background"
    )
    return (
        "object.collectable",
        "to be deleted — every owner is gone",
        [
            f"the garbage collector deletes it ({policy}); if it stays, the collector is not "
            "running or has not seen it yet",
        ],
    )


def _orphan_evidence(obj: Mapping[str, Any]) -> str:
    meta = meta_of(obj)
    found = []
    if meta.get("generateName"):
        found.append(f"metadata.generateName {meta['generateName']!r}")
    labels = meta.get("labels") or {}
    found += [f"label {k}" for k in _CONTROLLER_LABELS if k in labels]
    return ", ".join(found)
