"""A CRD's ``scale`` subresource: the object seen as an ``autoscaling/v1`` Scale.

The CRD names where the replicas live (``specReplicasPath``,
``statusReplicasPath``, ``labelSelectorPath``: simple ``.a.b`` paths); reading
``/scale`` builds the Scale from those fields, writing it sets the spec path.
"""

from __future__ import annotations

from typing import Any

from ownergc.errors import Invalid
from ownergc.protocols import JSONDict

__all__ = ["BUILTIN_SCALE_PATHS", "replicas_patch", "selector_string", "to_scale"]

ScalePaths = tuple[str, str, str | None]

#: Where the built-in workloads (Deployment, ReplicaSet, StatefulSet,
#: ReplicationController) keep their replicas and selector.
BUILTIN_SCALE_PATHS: ScalePaths = (".spec.replicas", ".status.replicas", ".spec.selector")


def _segments(path: str) -> list[str]:
    return [p for p in path.split(".") if p]


def _at(obj: Any, path: str | None) -> Any:
    for key in _segments(path or ""):
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def to_scale(obj: JSONDict, paths: ScalePaths) -> JSONDict:
    """The Scale a read of ``/scale`` answers with."""
    spec_path, status_path, selector_path = paths
    meta = obj.get("metadata") or {}
    scale: JSONDict = {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {},
        "status": {"replicas": _at(obj, status_path) or 0},
    }
    wanted = _at(obj, spec_path)
    if wanted is not None:
        scale["spec"]["replicas"] = wanted
    selector = _at(obj, selector_path)
    if isinstance(selector, dict):
        selector = selector_string(selector)
    if isinstance(selector, str) and selector:
        scale["status"]["selector"] = selector
    return scale


def selector_string(selector: JSONDict) -> str:
    """A built-in workload's ``spec.selector`` as the Scale's ``status.selector`` string.

    Deployments, ReplicaSets and StatefulSets hold a LabelSelector
    (``matchLabels`` / ``matchExpressions``); a ReplicationController a plain
    label map. The apiserver prints the requirements sorted by key, values
    sorted: ``app=d``, ``tier in (a,b)``, ``tier notin (a)``, ``tier``, ``!tier``.
    """
    if set(selector) <= {"matchLabels", "matchExpressions"}:
        labels = selector.get("matchLabels") or {}
        expressions = selector.get("matchExpressions") or []
    else:
        labels, expressions = selector, []
    parts: list[tuple[str, str]] = [(str(k), f"{k}={v}") for k, v in labels.items()]
    for req in expressions:
        if not isinstance(req, dict):
            continue
        key, op = str(req.get("key", "")), req.get("operator")
        values = ",".join(sorted(str(v) for v in req.get("values") or []))
        if op == "In":
            parts.append((key, f"{key} in ({values})"))
        elif op == "NotIn":
            parts.append((key, f"{key} notin ({values})"))
        elif op == "Exists":
            parts.append((key, key))
        elif op == "DoesNotExist":
            parts.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(parts))


def replicas_patch(scale: Any, paths: ScalePaths) -> JSONDict:
    """The JSON merge patch that writes a Scale's ``spec.replicas`` into the object."""
    replicas = _at(scale, ".spec.replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise Invalid(
            f"spec.replicas: Invalid value: {replicas!r}: must be a non-negative integer",
            reason="Invalid",
        )
    patch: JSONDict = {}
    node = patch
    segments = _segments(paths[0])
    for key in segments[:-1]:
        node = node.setdefault(key, {})
    node[segments[-1]] = replicas
    rv = _at(scale, ".metadata.resourceVersion")
    if rv:
        patch["metadata"] = {"resourceVersion": rv}
    return patch
