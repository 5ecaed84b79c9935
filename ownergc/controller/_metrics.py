"""Prometheus text exposition of the controller's metrics, without a client library.

Names follow client-go's workqueue metrics (label ``name`` = the upstream
queue names) and kube-controller-manager's GC counter, so existing
dashboards work; ownergc-only metrics carry the ``ownergc_`` prefix.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ownergc._kit.prometheus import TextWriter
from ownergc.controller._queue import FIFOQueue, Histogram, WorkQueue

if TYPE_CHECKING:
    from ownergc.controller._collector import GarbageCollector

__all__ = ["render_gc_metrics", "render_queue_metrics"]


def _histogram(w: TextWriter, name: str, hist: Histogram, queue: str) -> None:
    w.histogram(name, hist.cumulative(), hist.count, hist.sum, {"name": queue})


def render_queue_metrics(
    queues: Iterable[WorkQueue[Any] | FIFOQueue[Any]], out: TextWriter | None = None
) -> str:
    """client-go workqueue metrics for ``queues``."""
    w = out or TextWriter()
    queues = list(queues)
    specs = [
        ("workqueue_depth", "gauge", "Current depth of workqueue"),
        ("workqueue_adds_total", "counter", "Total number of adds handled by workqueue"),
        ("workqueue_retries_total", "counter", "Total number of retries handled by workqueue"),
        (
            "workqueue_unfinished_work_seconds",
            "gauge",
            "How many seconds of work has been done that is in progress",
        ),
        (
            "workqueue_longest_running_processor_seconds",
            "gauge",
            "How many seconds has the longest running processor for workqueue been running",
        ),
    ]
    for name, kind, help_text in specs:
        w.declare(name, kind, help_text)
        for q in queues:
            labels = {"name": q.name}
            if name == "workqueue_depth":
                w.sample(name, len(q), labels)
            elif name == "workqueue_adds_total":
                w.sample(name, q.metrics.adds_total, labels)
            elif name == "workqueue_retries_total":
                w.sample(name, q.metrics.retries_total, labels)
            else:
                total, longest = q.unfinished_work()
                w.sample(
                    name, total if name.endswith("unfinished_work_seconds") else longest, labels
                )
    for family, help_text, field in (
        (
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            "queue_duration",
        ),
        (
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            "work_duration",
        ),
    ):
        w.declare(family, "histogram", help_text)
        for q in queues:
            _histogram(w, family, getattr(q.metrics, field), q.name)
    return w.text()


def render_gc_metrics(gc: GarbageCollector, *, extra: dict[str, float] | None = None) -> str:
    """Everything ``/metrics`` serves for an object garbage collector."""
    w = TextWriter()
    m = gc.metrics
    w.declare(
        "garbagecollector_controller_resources_sync_error_total",
        "counter",
        "Number of garbage collector resources sync errors",
    )
    w.sample("garbagecollector_controller_resources_sync_error_total", m.resources_sync_errors)
    w.declare("ownergc_deletions_total", "counter", "Objects the collector deleted, by policy")
    for policy in ("Background", "Foreground", "Orphan"):
        w.sample("ownergc_deletions_total", m.deletions.get(policy, 0), {"policy": policy})
    counters: list[tuple[str, float, str]] = [
        ("ownergc_patches_total", m.patches, "Owner-reference patches sent"),
        (
            "ownergc_finalizers_removed_total",
            m.finalizers_removed,
            "orphan/foregroundDeletion finalizers removed",
        ),
        ("ownergc_errors_total", m.errors, "Errors while processing items (each is retried)"),
        ("ownergc_graph_events_total", m.events_processed, "Watch events applied to the graph"),
        (
            "ownergc_invalid_owner_references_total",
            m.invalid_namespace_events,
            "OwnerRefInvalidNamespace events reported",
        ),
        (
            "ownergc_cache_decisions_total",
            m.cache_decisions,
            "Items decided from the watch cache without a GET",
        ),
        (
            "ownergc_cache_fallbacks_total",
            m.cache_fallbacks,
            "Cache-based decisions redone from live reads after a failed precondition",
        ),
    ]
    for name, value, help_text in counters:
        w.declare(name, "counter", help_text)
        w.sample(name, value)
    graph = gc.uid_to_node
    virtual = sum(1 for n in graph.values() if n.virtual)
    gauges: list[tuple[str, float, str]] = [
        ("ownergc_graph_nodes", len(graph) - virtual, "Observed objects in the dependency graph"),
        ("ownergc_graph_virtual_nodes", virtual, "Owners referenced but not (yet) observed"),
        (
            "ownergc_absent_owner_cache_entries",
            len(gc.builder.absent_owner_cache),
            "Owners verified absent (LRU)",
        ),
        ("ownergc_monitors", len(gc.monitored_resources()), "Resources watched"),
        ("ownergc_synced", 1.0 if gc.is_synced() else 0.0, "1 when every monitor has synced"),
    ]
    for name, value, help_text in gauges:
        w.declare(name, "gauge", help_text)
        w.sample(name, value)
    for extra_name, extra_value in (extra or {}).items():
        w.declare(extra_name, "gauge", extra_name)
        w.sample(extra_name, extra_value)
    render_queue_metrics(gc.queues, w)
    return w.text()
