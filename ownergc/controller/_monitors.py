"""What a monitor is and what it says: the records of upstream's graph_builder.go.

One :class:`Monitor` per deletable resource (:func:`is_monitored`) lists, then
watches; what it sees becomes a :data:`GraphChange` for the graph builder
(:mod:`ownergc.controller._graph_builder`), which runs the monitors and is
the only writer of the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import anyio

from ownergc import ObjectReference
from ownergc.protocols import APIResource, JSONDict

__all__ = [
    "DEFAULT_IGNORED_RESOURCES",
    "GraphChange",
    "Monitor",
    "MonitorSynced",
    "ObjectChanged",
    "ObjectDeleted",
    "VirtualDeleted",
    "is_monitored",
    "tombstone",
]

#: kube-controller-manager's default ``GCIgnoredResources`` (1.25+): events.
DEFAULT_IGNORED_RESOURCES: frozenset[tuple[str, str]] = frozenset(
    {("", "events"), ("events.k8s.io", "events")}
)

_DELETABLE_VERBS = frozenset({"delete", "list", "watch"})


def is_monitored(
    res: APIResource, ignored: frozenset[tuple[str, str]] = DEFAULT_IGNORED_RESOURCES
) -> bool:
    """Whether the GC watches ``res``: upstream's deletable resources (list, watch and
    delete), preferred versions only, no subresources, minus the ignored ones."""
    return (
        res.preferred
        and "/" not in res.resource
        and res.verbs >= _DELETABLE_VERBS
        and (res.group, res.resource) not in ignored
    )


@dataclass
class Monitor:
    """One resource's list + watch: where it resumes from, and whether its first list is in."""

    resource: APIResource
    scope: anyio.CancelScope
    synced: bool = False
    resource_version: str | None = None
    #: The resource's apiVersion and kind, computed once (read on every event).
    api_version: str = field(init=False)
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        self.api_version = self.resource.api_version
        self.kind = self.resource.kind


class ObjectChanged(NamedTuple):
    """A listed object, or an ADDED / MODIFIED watch event: upsert it into the graph."""

    obj: JSONDict
    resource: APIResource


class ObjectDeleted(NamedTuple):
    """A DELETED watch event, or an object a relist no longer shows."""

    obj: JSONDict
    resource: APIResource


class VirtualDeleted(NamedTuple):
    """A virtual owner verified absent by a live read (upstream's virtual delete event)."""

    identity: ObjectReference


class MonitorSynced(NamedTuple):
    """A monitor's first list has been queued; the graph is synced once all are."""

    monitor: Monitor


#: An item of the graph-changes queue (tuples underneath: cheap on the hot path).
GraphChange = ObjectChanged | ObjectDeleted | VirtualDeleted | MonitorSynced


def tombstone(ident: ObjectReference) -> dict[str, Any]:
    """The smallest object a delete can be applied from (a relist diff's vanished item)."""
    meta: dict[str, Any] = {"name": ident.name, "uid": ident.uid}
    if ident.namespace:
        meta["namespace"] = ident.namespace
    return {"apiVersion": ident.api_version, "kind": ident.kind, "metadata": meta}
