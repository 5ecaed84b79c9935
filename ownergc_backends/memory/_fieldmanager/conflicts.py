"""Apply conflicts and the 409 ``Status`` the server answers them with.

Wording, as a v1.24 apiserver writes it (recorded in the fixtures):

- one conflict: ``Apply failed with 1 conflict: conflict with "mgr1": .data.k2``;
- several: ``Apply failed with N conflicts: `` then, per manager (sorted by
  the manager's internal identifier), ``conflicts with "alpha":`` and one
  ``- PATH`` line per field, all joined by newlines;
- one cause per field, ``reason: FieldManagerConflict``, ``message:
  conflict with MANAGER``, ``field: PATH``; an ``Update`` manager is printed
  ``"name" using apiVersion``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .fieldpath import FieldSet, Path, path_string
from .managers import EntryKey

__all__ = ["ApplyConflict", "element_sort_key", "reported_paths"]

_ELEMENT_ORDER = {"f:": 0, "k:": 1, "v:": 2, "i:": 3}


def _value_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if value is None:
        return (3, 0)
    return (4, json.dumps(value, sort_keys=True))


def element_sort_key(element: str) -> tuple[Any, ...]:
    """The server's order of path elements: fields, then keys, values, indexes."""
    kind, body = element[:2], element[2:]
    rank = _ELEMENT_ORDER.get(kind, 4)
    if kind == "k:":
        keys = json.loads(body)
        return (rank, tuple((name, _value_key(keys[name])) for name in sorted(keys)))
    if kind == "v:":
        return (rank, _value_key(json.loads(body)))
    if kind == "i:":
        return (rank, int(body))
    return (rank, body)


class _Slice:
    """A Go slice header over a shared, fixed-capacity backing array."""

    __slots__ = ("array", "length")

    def __init__(self, array: list[str], length: int) -> None:
        self.array = array
        self.length = length

    def append(self, element: str) -> _Slice:
        if self.length < len(self.array):
            self.array[self.length] = element
            return _Slice(self.array, self.length + 1)
        capacity = max(1, 2 * len(self.array))
        array = [*self.array[: self.length], element] + [""] * (capacity - self.length - 1)
        return _Slice(array, self.length + 1)

    def read(self) -> Path:
        return tuple(self.array[: self.length])


def reported_paths(fields: FieldSet) -> list[Path]:
    """The paths of a conflicting field set as a v1.24 server reports them.

    The server walks the set (members before children, each level in element
    order) building every path by appending to its parent's path, and keeps
    the results without copying them. Where the parent path has spare
    capacity (Go slices double: 1, 2, 4, 8...), siblings share one backing
    array, so they read back as the last element written there: two
    conflicts under ``.spec.ports[name="https"]`` both print as ``...proto``.
    This reproduces that, so messages match the server's word for word.
    """
    members: dict[Path, set[str]] = {}
    children: dict[Path, set[str]] = {}
    for path in fields:
        for depth in range(1, len(path)):
            children.setdefault(path[: depth - 1], set()).add(path[depth - 1])
        members.setdefault(path[:-1], set()).add(path[-1])
    out: list[_Slice] = []

    def walk(logical: Path, prefix: _Slice) -> None:
        for element in sorted(members.get(logical, ()), key=element_sort_key):
            out.append(prefix.append(element))
        for element in sorted(children.get(logical, ()), key=element_sort_key):
            walk((*logical, element), prefix.append(element))

    walk((), _Slice([], 0))
    return [s.read() for s in out]


@dataclass(frozen=True)
class ApplyConflict:
    """An apply refused because other managers own fields it would change."""

    conflicts: Mapping[EntryKey, FieldSet]

    def _ordered(self) -> list[tuple[EntryKey, list[Path]]]:
        return [
            (key, reported_paths(self.conflicts[key]))
            for key in sorted(self.conflicts, key=EntryKey.identifier)
        ]

    @property
    def count(self) -> int:
        """How many field conflicts (one cause each)."""
        return sum(len(paths) for paths in self.conflicts.values())

    @property
    def message(self) -> str:
        """The Status message, worded as the server words it."""
        ordered = self._ordered()
        if self.count == 1:
            key, paths = ordered[0]
            return (
                f"Apply failed with 1 conflict: conflict with {key.describe()}: "
                f"{path_string(paths[0])}"
            )
        lines: list[str] = []
        for key, paths in ordered:
            lines.append(f"conflicts with {key.describe()}:")
            lines.extend(f"- {path_string(p)}" for p in paths)
        return f"Apply failed with {self.count} conflicts: " + "\n".join(lines)

    def causes(self) -> list[dict[str, str]]:
        """One ``StatusCause`` per conflicting field."""
        return [
            {
                "reason": "FieldManagerConflict",
                "message": f"conflict with {key.describe()}",
                "field": path_string(path),
            }
            for key, paths in self._ordered()
            for path in paths
        ]

    def status(self) -> dict[str, Any]:
        """The 409 ``Status`` body."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": "Conflict",
            "details": {"causes": self.causes()},
            "code": 409,
        }
