"""Field paths and field sets, and their ``FieldsV1`` wire form.

A *path* is a tuple of path elements, each kept in the exact string form the
apiserver writes as a ``fieldsV1`` key, so encoding is a tree walk and two
paths compare equal exactly when the server would consider them equal:

- ``f:NAME``: a field of a struct or a key of a map;
- ``k:{"key":value,...}``: an item of a map list, named by its key fields
  (compact JSON, keys sorted);
- ``v:VALUE``: an item of a set list, named by its value (compact JSON);
- ``i:N``: an item of a list by position (only read, never produced here).

A *field set* is a ``frozenset`` of paths: each path in it is a *member*
(owned). A path's parents are implied and not members unless listed. In
``fieldsV1`` a member that also has members below it carries a ``"."`` key;
a member with nothing below is ``{}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "FieldSet",
    "FieldsV1Error",
    "Path",
    "decode_fields_v1",
    "encode_fields_v1",
    "field_element",
    "key_element",
    "path_string",
    "value_element",
    "with_prefix",
]

Path = tuple[str, ...]
FieldSet = frozenset[Path]

_MEMBER = "."


class FieldsV1Error(ValueError):
    """A ``fieldsV1`` document that is not a tree of path elements."""


def _compact_json(value: Any) -> str:
    """JSON as the apiserver writes it inside a path element.

    Compact, keys sorted, non-ASCII kept, and ``<``, ``>``, ``&`` escaped as
    Go's encoder escapes them.
    """
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def field_element(name: str) -> str:
    """The element for a struct field or a map key."""
    return "f:" + name


def key_element(keys: Mapping[str, Any]) -> str:
    """The element for a map-list item with these key field values."""
    return "k:" + _compact_json(dict(keys))


def value_element(value: Any) -> str:
    """The element for a set-list item."""
    return "v:" + _compact_json(value)


def _check_element(element: str) -> None:
    prefix = element[:2]
    if prefix == "f:":
        return
    if prefix in ("k:", "v:"):
        try:
            parsed = json.loads(element[2:])
        except ValueError as exc:
            raise FieldsV1Error(f"invalid JSON in path element {element!r}") from exc
        if prefix == "k:" and not isinstance(parsed, dict):
            raise FieldsV1Error(f"key path element {element!r} is not a JSON object")
        return
    if prefix == "i:":
        if not element[2:].lstrip("-").isdigit():
            raise FieldsV1Error(f"index path element {element!r} is not an integer")
        return
    raise FieldsV1Error(f"unknown path element {element!r}")


def decode_fields_v1(doc: Any) -> FieldSet:
    """The field set a ``fieldsV1`` document describes.

    A document that is not a tree of path elements raises :class:`FieldsV1Error`.
    """
    if not isinstance(doc, dict):
        raise FieldsV1Error("fieldsV1 must be a JSON object")
    out: set[Path] = set()
    stack: list[tuple[Path, dict[str, Any]]] = [((), doc)]
    while stack:
        prefix, node = stack.pop()
        for element, child in node.items():
            if element == _MEMBER:
                if child != {}:
                    raise FieldsV1Error('the "." entry of fieldsV1 must be {}')
                if prefix:
                    out.add(prefix)
                continue
            _check_element(element)
            if not isinstance(child, dict):
                raise FieldsV1Error(f"fieldsV1 entry {element!r} must be a JSON object")
            path = (*prefix, element)
            if not child:
                out.add(path)
            else:
                stack.append((path, child))
    return frozenset(out)


def encode_fields_v1(fields: Iterable[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` document for a field set, keys in the server's order."""
    members = set(fields)
    tree: dict[str, Any] = {}
    for path in members:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    return _finish(tree, (), members)


def _finish(node: dict[str, Any], prefix: Path, members: set[Path]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if node and prefix and prefix in members:
        out[_MEMBER] = {}
    for element in sorted(node):
        out[element] = _finish(node[element], (*prefix, element), members)
    return out


def with_prefix(fields: Iterable[Path], prefix: Path) -> FieldSet:
    """The members of ``fields`` at or below ``prefix``."""
    n = len(prefix)
    return frozenset(p for p in fields if p[:n] == prefix)


def _element_string(element: str) -> str:
    kind, body = element[:2], element[2:]
    if kind == "f:":
        return "." + body
    if kind == "k:":
        keys = json.loads(body)
        inner = ",".join(f"{name}={_compact_json(keys[name])}" for name in sorted(keys))
        return f"[{inner}]"
    if kind == "v:":
        return f"[={body}]"
    return f"[{body}]"


def path_string(path: Path) -> str:
    """A path as the server prints it in conflict messages (``.spec.ports[name="http"].port``)."""
    return "".join(_element_string(e) for e in path)
