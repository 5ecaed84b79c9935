"""The node collector's counters and gauges (the kubelet's image GC counter and ownergc's own)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ownergc._kit.prometheus import TextWriter

__all__ = [
    "NodeGCMetrics",
]

log = logging.getLogger("ownergc.nodegc")


@dataclass
class _Family:
    name: str
    kind: str  # "counter" | "gauge"
    help: str
    label_names: tuple[str, ...] = ()
    values: dict[tuple[str, ...], float] = field(default_factory=dict)


class NodeGCMetrics:
    """In-process counters and gauges, rendered in the Prometheus text format.

    ``kubelet_image_garbage_collected_total{reason}`` is the kubelet's own
    metric; the others are ownergc's (the kubelet has no counter for
    containers or sandboxes it removes).
    """

    def __init__(self) -> None:
        self._families: dict[str, _Family] = {}
        specs: list[tuple[str, str, str, tuple[str, ...]]] = [
            (
                "kubelet_image_garbage_collected_total",
                "counter",
                "Total number of images garbage collected by the kubelet, whether through disk "
                "usage or image age.",
                ("reason",),
            ),
            (
                "ownergc_nodegc_image_bytes_freed_total",
                "counter",
                "Bytes of images removed, by reason.",
                ("reason",),
            ),
            (
                "ownergc_nodegc_containers_removed_total",
                "counter",
                "Dead containers removed, by reason.",
                ("reason",),
            ),
            (
                "ownergc_nodegc_sandboxes_removed_total",
                "counter",
                "Pod sandboxes removed, by reason.",
                ("reason",),
            ),
            (
                "ownergc_nodegc_pod_log_dirs_removed_total",
                "counter",
                "Pod log directories removed.",
                (),
            ),
            (
                "ownergc_nodegc_log_symlinks_removed_total",
                "counter",
                "Dangling legacy container log symlinks removed.",
                (),
            ),
            (
                "ownergc_nodegc_removal_errors_total",
                "counter",
                "Failed stop or remove calls, by object kind.",
                ("kind",),
            ),
            (
                "ownergc_nodegc_runs_total",
                "counter",
                "GC passes, by loop and result.",
                ("loop", "result"),
            ),
            (
                "ownergc_nodegc_planned_removals",
                "gauge",
                "Objects the last pass planned to remove (dry runs remove nothing).",
                ("kind",),
            ),
            (
                "ownergc_nodegc_last_run_duration_seconds",
                "gauge",
                "Wall time of the last pass, by loop.",
                ("loop",),
            ),
            (
                "ownergc_nodegc_last_run_timestamp_seconds",
                "gauge",
                "When the last pass of each loop finished (Unix seconds).",
                ("loop",),
            ),
            (
                "ownergc_nodegc_image_fs_usage_percent",
                "gauge",
                "Image filesystem usage as the image GC computes it (rounded up).",
                (),
            ),
            ("ownergc_nodegc_image_fs_capacity_bytes", "gauge", "Image filesystem capacity.", ()),
            (
                "ownergc_nodegc_image_fs_available_bytes",
                "gauge",
                "Image filesystem available bytes.",
                (),
            ),
        ]
        for name, kind, text, labels in specs:
            self._families[name] = _Family(name, kind, text, labels)

    def inc(self, name: str, amount: float = 1, **labels: str) -> None:
        fam = self._families[name]
        key = tuple(labels[n] for n in fam.label_names)
        fam.values[key] = fam.values.get(key, 0) + amount

    def set(self, name: str, value: float, **labels: str) -> None:
        fam = self._families[name]
        fam.values[tuple(labels[n] for n in fam.label_names)] = value

    def get(self, name: str, **labels: str) -> float:
        """Current value (0 when never touched), for tests and callers."""
        fam = self._families[name]
        return fam.values.get(tuple(labels[n] for n in fam.label_names), 0)

    def render(self) -> str:
        """The Prometheus text exposition format (version 0.0.4)."""
        w = TextWriter()
        for fam in self._families.values():
            w.declare(fam.name, fam.kind, fam.help)
            for key in sorted(fam.values):
                w.sample(fam.name, fam.values[key], dict(zip(fam.label_names, key, strict=True)))
        return w.text()
