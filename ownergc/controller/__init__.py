"""The anyio runtime: monitors, queues and workers that execute the core's plans.

The controller depends only on :mod:`ownergc.protocols`; pass it any backend.
Object GC: :class:`GarbageCollector` (kube-controller-manager's collector) and
:class:`NamespaceController`; node GC: :class:`NodeGarbageCollector` (the
kubelet's loops) with a :class:`PodStateSource`.
"""

from __future__ import annotations

from ownergc.controller._collector import GarbageCollector
from ownergc.controller._gc_metrics import GCMetrics
from ownergc.controller._leader import LeaderElector, LeadershipLost
from ownergc.controller._monitors import DEFAULT_IGNORED_RESOURCES, is_monitored
from ownergc.controller._namespace import NamespaceController
from ownergc.controller._node_collector import (
    ContainerGCResult,
    ImageGCResult,
    NodeGarbageCollector,
    NodeGCResult,
)
from ownergc.controller._node_metrics import NodeGCMetrics
from ownergc.controller._node_pods import (
    ObjectStorePodStateSource,
    PodStateSource,
    RuntimePodStateSource,
    StaticPodStateSource,
)
from ownergc.controller._queue import WorkQueue

__all__ = [
    "DEFAULT_IGNORED_RESOURCES",
    "ContainerGCResult",
    "GCMetrics",
    "GarbageCollector",
    "ImageGCResult",
    "LeaderElector",
    "LeadershipLost",
    "NamespaceController",
    "NodeGCMetrics",
    "NodeGCResult",
    "NodeGarbageCollector",
    "ObjectStorePodStateSource",
    "PodStateSource",
    "RuntimePodStateSource",
    "StaticPodStateSource",
    "WorkQueue",
    "is_monitored",
]
