"""GCMetrics: the collector's counters, shared by its parts.

The graph builder, the operations and the workers each receive this one
object and only increment it; the CLI renders it as Prometheus text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["GCMetrics"]


@dataclass
class GCMetrics:
    """Counters the controller keeps; rendered as Prometheus text by the CLI."""

    deletions: dict[str, int] = field(default_factory=dict)
    patches: int = 0
    finalizers_removed: int = 0
    errors: int = 0
    resources_sync_errors: int = 0
    events_processed: int = 0
    invalid_namespace_events: int = 0
    cache_decisions: int = 0
    cache_fallbacks: int = 0

    def count_deletion(self, policy: str) -> None:
        self.deletions[policy] = self.deletions.get(policy, 0) + 1
