"""Why is this object stuck deleting, or why was it not garbage-collected?

A pure analysis: a snapshot of objects (Kubernetes JSON dicts, spec and status
included where they matter: Pods, PersistentVolumeClaims, PersistentVolumes,
Services, Namespaces, CustomResourceDefinitions, APIServices) plus discovery
in, an explanation tree out. No I/O, no clock, nothing is ever changed: the
next steps it proposes are commands for a person to run.

The tree reads like the question: the object, then what holds it, then what
holds that, recursively::

    explanation = explain(objects, resources, kind="namespace", name="shop")
    print(explanation.render())
    json.dumps(explanation.to_json())

Every node carries a stable ``code`` (``finalizer.custom``,
``owner.invalidNamespace``, ``namespace.apiServiceUnavailable``, ...) so
tools can test for a cause without parsing prose.

The rules are those of kube-controller-manager's garbage collector
(``attemptToDeleteItem``: owners are looked up by name in the dependent's
namespace and compared by uid), its namespace controller, and the
controllers that own Kubernetes' well-known finalizers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ownergc.protocols import APIResource
from ownergc.why._finalizers import Walk
from ownergc.why._objects import explain_object
from ownergc.why._snapshot import Snapshot, TargetNotResolved, group_of, meta_of
from ownergc.why._tree import Explanation, NextStep, ObjectRef, Reason, RootCause, Wait

__all__ = [
    "Explanation",
    "NextStep",
    "ObjectRef",
    "Reason",
    "RootCause",
    "Snapshot",
    "TargetNotResolved",
    "Wait",
    "explain",
]


def explain(
    objects: Iterable[Mapping[str, Any]],
    resources: Sequence[APIResource] | None,
    *,
    kind: str,
    name: str,
    namespace: str | None = None,
    discovery_failures: Mapping[str, str] | None = None,
    max_depth: int = 8,
) -> Explanation:
    """Why ``kind``/``name`` is stuck deleting, or why the collector keeps it.

    ``kind`` is spelled as kubectl takes it (``pvc``, ``deployment``,
    ``widgets.example.com``); ``namespace`` defaults to ``default`` for
    namespaced kinds. Raises :class:`TargetNotResolved` for an unknown kind.
    """
    snap = Snapshot([dict(o) for o in objects], resources, dict(discovery_failures or {}))
    obj = snap.resolve(kind, name, namespace)
    if obj is None:
        ref = snap.resolve_ref(kind, name, namespace)
        return _explain_absent(snap, ref)
    w = Walk(snap, max_depth, explain_object)
    root = explain_object(w, obj)
    verdict = {
        "object.deleting": "deleting",
        "object.collectable": "collectable",
    }.get(root.code, "kept")
    return Explanation(ObjectRef.of(obj), verdict, root)


def _explain_absent(snap: Snapshot, ref: ObjectRef) -> Explanation:
    group = group_of(ref.api_version)
    referrers = [
        o
        for o in snap.objects
        for r in meta_of(o).get("ownerReferences") or ()
        if isinstance(r, Mapping)
        and r.get("kind") == ref.kind
        and r.get("name") == ref.name
        and group_of(str(r.get("apiVersion") or "")) == group
        and (ref.namespace is None or meta_of(o).get("namespace") == ref.namespace)
    ]
    children = tuple(
        Reason(
            "absent.danglingDependent",
            f"{ObjectRef.of(o)} still references it",
            ObjectRef.of(o),
            ("its reference dangles: the collector deletes it unless another owner is solid",),
        )
        for o in referrers
    )
    root = Reason(
        "object.absent",
        f"{ref}: not found — already deleted, or never created",
        ref,
        (),
        (),
        children,
    )
    return Explanation(ref, "absent", root)
