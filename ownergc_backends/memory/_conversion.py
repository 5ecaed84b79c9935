"""The field conversions of a built-in kind's body on its way to storage and back.

A Pod's ``status.podIP`` and ``status.podIPs`` are made to agree on every write
(:func:`._pod_ips.normalise_pod_ips`), as kube-apiserver's conversion of a v1 Pod to
its internal form (which has ``podIPs`` alone) and back makes them.

The one field conversion between served versions of a built-in kind.

serve stores an object once per group/resource and answers it in the version a
request names by rewriting ``apiVersion`` (see :mod:`._resources`): the versions
it serves of a kind have the same fields. Except in one place, which
kube-apiserver v1.30 handles in its flowcontrol v1beta3 conversion: a v1beta3
PriorityLevelConfiguration reads ``nominalConcurrencyShares: 0`` as "not given"
(and defaults it to 30) unless it carries the annotation
``flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares``, while in v1 a 0
is a value. So, as the server converts:

* writing in v1beta3 (after the defaults, which read the annotation), the
  annotation is dropped: it is not part of the stored object, and a v1 reader
  does not see it;
* reading in v1beta3 a limited level whose shares are 0, the annotation is
  added with an empty value (unless there), so that a client writing back what
  it read keeps the 0.
"""

from __future__ import annotations

from typing import Final

from ownergc.protocols import JSONDict

from ._defaults import PRESERVE_ZERO_SHARES
from ._pod_ips import normalise_pod_ips

__all__ = ["CONVERTED", "defaults_version", "from_storage", "to_storage"]

_FLOWCONTROL: Final = "flowcontrol.apiserver.k8s.io"
#: (resource, version) whose objects are converted; a renderer checks this first.
CONVERTED: Final = frozenset({("prioritylevelconfigurations", "v1beta3")})


#: Kinds whose served versions differ in shape, which serve does not convert: a body
#: has the stored object's shape whatever version the request names.
_UNCONVERTED_SHAPES: Final = frozenset({("autoscaling", "horizontalpodautoscalers")})


def defaults_version(group: str, resource: str, requested: str, stored: str) -> str:
    """The version whose defaults the store gives an update's body: the one the request
    names, as the server decodes the body in it (a v1 PriorityLevelConfiguration keeps
    an explicit 0 that v1beta3 would make 30); for a kind whose versions differ in shape
    (HorizontalPodAutoscaler's autoscaling/v1 and v2), the stored object's, whose shape
    the body has since serve does not convert it. (Over HTTP the facade has already
    defaulted the body in the request's version, before admission.)"""
    return stored if (group, resource) in _UNCONVERTED_SHAPES else requested


def to_storage(group: str, resource: str, version: str, body: JSONDict) -> None:
    """``body`` (written in ``version``, defaulted) as it is stored: in place."""
    if group == "" and resource == "pods":
        status = body.get("status")
        if isinstance(status, dict):
            normalise_pod_ips(status)
        return
    if group != _FLOWCONTROL or (resource, version) not in CONVERTED:
        return
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        return
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and PRESERVE_ZERO_SHARES in annotations:
        rest = {k: v for k, v in annotations.items() if k != PRESERVE_ZERO_SHARES}
        if rest:
            meta["annotations"] = rest
        else:
            del meta["annotations"]


def from_storage(group: str, resource: str, version: str, out: JSONDict) -> None:
    """A rendered object (its top-level dict the renderer's own, the values maybe
    shared with the store: never changed in place) as ``version`` shows it."""
    if group != _FLOWCONTROL or (resource, version) not in CONVERTED:
        return
    spec = out.get("spec")
    limited = spec.get("limited") if isinstance(spec, dict) else None
    if not isinstance(limited, dict) or limited.get("nominalConcurrencyShares", 0) != 0:
        return
    meta = out.get("metadata")
    if not isinstance(meta, dict):
        return
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and PRESERVE_ZERO_SHARES in annotations:
        return
    out["metadata"] = {
        **meta,
        "annotations": {**(annotations or {}), PRESERVE_ZERO_SHARES: ""},
    }
