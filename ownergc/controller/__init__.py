"""The anyio runtime: monitors, queues and workers that execute the core's plans.

The controller depends only on :mod:`ownergc.protocols`; pass it any backend.
"""

from __future__ import annotations

from ownergc.controller._collector import DEFAULT_IGNORED_RESOURCES, GarbageCollector, GCMetrics
from ownergc.controller._leader import LeaderElector, LeadershipLost
from ownergc.controller._namespace import NamespaceController
from ownergc.controller._queue import WorkQueue
from ownergc.controller.nodegc import NodeGarbageCollector

__all__ = [
    "DEFAULT_IGNORED_RESOURCES",
    "GCMetrics",
    "GarbageCollector",
    "LeaderElector",
    "LeadershipLost",
    "NamespaceController",
    "NodeGarbageCollector",
    "WorkQueue",
]
