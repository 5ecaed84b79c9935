"""The anyio runtime: monitors, queues and workers that execute the core's plans.

The controller depends only on :mod:`ownergc.protocols`; pass it any backend.
"""

from __future__ import annotations

from ownergc.controller._gc import DEFAULT_IGNORED_RESOURCES, GarbageCollector, GCMetrics
from ownergc.controller._queue import WorkQueue
from ownergc.controller.nodegc import NodeGarbageCollector

__all__ = [
    "DEFAULT_IGNORED_RESOURCES",
    "GCMetrics",
    "GarbageCollector",
    "NodeGarbageCollector",
    "WorkQueue",
]
