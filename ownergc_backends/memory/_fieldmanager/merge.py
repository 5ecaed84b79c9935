"""Typed walks over JSON values: field sets, apply merge, comparison, removal.

Every function here is pure and follows the schema :class:`~.schema.Node`
given to it: granular maps and structs go key by key, atomic maps/lists and
scalars are single fields, map lists are matched by their key fields and set
lists by value. Inputs are never mutated.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .fieldpath import FieldSet, Path, field_element, key_element, value_element
from .schema import Node

__all__ = [
    "MergeError",
    "compare",
    "drop_under",
    "json_equal",
    "merge",
    "remove_fields",
    "to_field_set",
]


class MergeError(ValueError):
    """A value does not fit its schema (e.g. a map-list item without its key)."""


_MISSING: Any = object()


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values that keeps ``1``, ``1.0`` and ``true`` apart as the server does."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(json_equal(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(json_equal, a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _is_map_node(node: Node, value: Any) -> bool:
    return node.kind in ("struct", "map", "untyped") and not node.atomic and isinstance(value, dict)


def _is_keyed_list(node: Node, value: Any) -> bool:
    return node.kind == "list" and node.list_type in ("set", "map") and isinstance(value, list)


def item_element(node: Node, item: Any) -> str:
    """The path element of one item of a set or map list."""
    if node.list_type == "set":
        return value_element(item)
    if not isinstance(item, dict):
        raise MergeError("an item of a map list must be an object")
    keys: dict[str, Any] = {}
    for key in node.keys:
        if key in item:
            keys[key] = item[key]
        elif key in node.key_defaults:
            keys[key] = node.key_defaults[key]
        else:
            raise MergeError(
                f'associative list with keys has an element that omits key field "{key}"'
            )
    return key_element(keys)


def _index(node: Node, items: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        element = item_element(node, item)
        if element in out:
            raise MergeError(f"duplicate entries for key {element[2:]}")
        out[element] = item
    return out


def to_field_set(value: Any, node: Node, prefix: Path = ()) -> set[Path]:
    """The fields a value sets: its leaves, atomic values and list items.

    Maps and structs are not members themselves (only what they hold), which
    is what an applied configuration claims; an empty one (``spec: {}``) is a
    member, claimed as such.
    """
    out: set[Path] = set()
    _collect(value, node, prefix, out)
    return out


def _collect(value: Any, node: Node, path: Path, out: set[Path]) -> None:
    if _is_map_node(node, value) and value:
        for key, child in value.items():
            _collect(child, node.child(key), (*path, field_element(key)), out)
        return
    if _is_keyed_list(node, value) and value:
        items = node.items()
        for element, item in _index(node, value).items():
            item_path = (*path, element)
            out.add(item_path)
            if node.list_type == "map":
                _collect(item, items, item_path, out)
        return
    if node.kind == "list" and node.list_type != "atomic" and value is None:
        return
    if path:
        out.add(path)


def merge(live: Any, applied: Any, node: Node) -> Any:
    """``applied`` merged into ``live``: applied values win, granular containers combine."""
    if _is_map_node(node, live) and _is_map_node(node, applied):
        out = dict(live)
        for key, value in applied.items():
            out[key] = merge(live[key], value, node.child(key)) if key in live else value
        return out
    if _is_keyed_list(node, live) and _is_keyed_list(node, applied):
        items = node.items()
        right = _index(node, applied)
        left = _index(node, live)
        merged: list[Any] = []
        for element, item in left.items():
            if element in right:
                merged.append(merge(item, right[element], items))
            else:
                merged.append(item)
        merged.extend(item for element, item in right.items() if element not in left)
        return merged
    return applied


def _all_paths(value: Any, node: Node, path: Path, out: set[Path]) -> None:
    """Everything a newly present value brings: itself (when a container) and its fields."""
    if path:
        out.add(path)
    if _is_map_node(node, value):
        for key, child in value.items():
            _all_paths(child, node.child(key), (*path, field_element(key)), out)
    elif _is_keyed_list(node, value):
        items = node.items()
        for element, item in _index(node, value).items():
            if node.list_type == "map":
                _all_paths(item, items, (*path, element), out)
            else:
                out.add((*path, element))


def compare(old: Any, new: Any, node: Node) -> tuple[set[Path], set[Path], set[Path]]:
    """``(added, modified, removed)`` between two values of one type.

    Added holds the paths of new containers as members too (the ``"."`` the
    server writes for a map or item that an update created); removed holds
    only the topmost path of what went away.
    """
    added: set[Path] = set()
    modified: set[Path] = set()
    removed: set[Path] = set()
    _compare(old, new, node, (), added, modified, removed)
    return added, modified, removed


def _compare(
    old: Any,
    new: Any,
    node: Node,
    path: Path,
    added: set[Path],
    modified: set[Path],
    removed: set[Path],
) -> None:
    if old is _MISSING and new is _MISSING:
        return
    if old is _MISSING:
        _all_paths(new, node, path, added)
        return
    if new is _MISSING:
        if path:
            removed.add(path)
        return
    if _is_map_node(node, old) and _is_map_node(node, new):
        for key in {**old, **new}:
            _compare(
                old.get(key, _MISSING),
                new.get(key, _MISSING),
                node.child(key),
                (*path, field_element(key)),
                added,
                modified,
                removed,
            )
        return
    if _is_keyed_list(node, old) and _is_keyed_list(node, new):
        items = node.items()
        left = _index(node, old)
        right = _index(node, new)
        for element in {**left, **right}:
            item_path = (*path, element)
            if element not in right:
                removed.add(item_path)
            elif element not in left:
                _all_paths(right[element], items, item_path, added)
            elif node.list_type == "map":
                _compare(left[element], right[element], items, item_path, added, modified, removed)
        return
    if not json_equal(old, new) and path:
        modified.add(path)


def drop_under(fields: Iterable[Path], roots: Iterable[Path]) -> FieldSet:
    """``fields`` without any path at or below one of ``roots``."""
    root_set = set(roots)
    if not root_set:
        return frozenset(fields)
    lengths = sorted({len(r) for r in root_set})
    return frozenset(
        p for p in fields if not any(p[:n] in root_set for n in lengths if n <= len(p))
    )


def remove_fields(value: Any, node: Node, paths: Iterable[Path]) -> Any:
    """``value`` without the fields at ``paths`` (each with everything below it).

    A map left empty by a removal disappears from its parent; a list left
    empty becomes ``null``, as the server leaves it.
    """
    targets = set(paths)
    if not targets:
        return value
    result, _ = _remove(value, node, (), targets)
    return result


def _remove(value: Any, node: Node, path: Path, targets: set[Path]) -> tuple[Any, bool]:
    depth = len(path) + 1
    below = {t for t in targets if len(t) >= depth and t[: depth - 1] == path}
    if not below:
        return value, False
    if _is_map_node(node, value):
        out: dict[str, Any] = {}
        changed = False
        for key, child in value.items():
            child_path = (*path, field_element(key))
            if child_path in below:
                changed = True
                continue
            new_child, child_changed = _remove(child, node.child(key), child_path, below)
            if child_changed:
                changed = True
                if isinstance(new_child, dict) and not new_child:
                    continue
                if isinstance(new_child, list) and not new_child:
                    new_child = None
            out[key] = new_child
        return out, changed
    if _is_keyed_list(node, value):
        items = node.items()
        kept: list[Any] = []
        changed = False
        for item in value:
            item_path = (*path, item_element(node, item))
            if item_path in below:
                changed = True
                continue
            if node.list_type == "map":
                new_item, item_changed = _remove(item, items, item_path, below)
                changed = changed or item_changed
                kept.append(new_item)
            else:
                kept.append(item)
        return kept, changed
    return value, False


def with_named_fields(fields: Iterable[Path], node: Node) -> set[Path]:
    """``fields`` plus every declared struct field on the way to one of them.

    A field set names leaves; for pruning, the server also counts each named
    field above them as owned, so a struct field or list whose every owned
    leaf goes away goes away whole (``spec.tags`` disappears rather than
    staying as an empty list), while a field someone else still owns
    something under stays.
    """
    out = set(fields)
    for path in list(out):
        current = node
        for depth, element in enumerate(path[:-1], start=1):
            if element.startswith("f:"):
                name = element[2:]
                if current.kind == "struct" and current.is_named_field(name):
                    out.add(path[:depth])
                current = current.child(name)
            else:
                current = current.items()
    return out
