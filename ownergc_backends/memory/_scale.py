"""The ``scale`` subresource: an object seen as an ``autoscaling/v1`` Scale.

A CRD names where the replicas live (``specReplicasPath``,
``statusReplicasPath``, ``labelSelectorPath``: simple ``.a.b`` paths); the
built-in workloads (Deployments, ReplicaSets, StatefulSets,
ReplicationControllers) keep them in ``spec.replicas`` / ``status.replicas``,
and their Scale's ``status.selector`` is ``spec.selector`` written as a
selector string (``app=web,tier in (a,b)``), as kube-apiserver renders it.
Reading ``/scale`` builds the Scale from those fields, writing it sets the
spec path.
"""

from __future__ import annotations

from typing import Any

from ownergc.errors import Invalid
from ownergc.protocols import JSONDict

from ._selectors import selector_string

__all__ = ["replicas_patch", "to_scale"]

ScalePaths = tuple[str, str, str | None]


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
    selector = (
        _at(obj, selector_path) if selector_path else selector_string(_at(obj, ".spec.selector"))
    )
    if isinstance(selector, str) and selector:
        scale["status"]["selector"] = selector
    return scale


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
