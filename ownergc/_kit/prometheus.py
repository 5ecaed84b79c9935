"""The Prometheus text exposition format (0.0.4), written without a client library.

One writer for every ``/metrics`` and metrics file ownergc produces (the
object collector's, the node collector's), so escaping and number formatting
exist once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["CONTENT_TYPE", "TextWriter"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


class TextWriter:
    """Families in the order declared; a family's HELP/TYPE lines are written once."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._declared: set[str] = set()

    def declare(self, name: str, kind: str, help_text: str) -> None:
        if name in self._declared:
            return
        self._declared.add(name)
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        self.lines.append(f"{name}{_labels(labels or {})} {_number(value)}")

    def histogram(
        self,
        name: str,
        cumulative: Iterable[tuple[float, int]],
        count: int,
        total: float,
        labels: Mapping[str, str],
    ) -> None:
        """``_bucket`` lines for each upper bound, then ``+Inf``, ``_sum`` and ``_count``."""
        for bound, seen in cumulative:
            self.sample(f"{name}_bucket", seen, {**labels, "le": repr(bound)})
        self.sample(f"{name}_bucket", count, {**labels, "le": "+Inf"})
        self.sample(f"{name}_sum", total, labels)
        self.sample(f"{name}_count", count, labels)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
