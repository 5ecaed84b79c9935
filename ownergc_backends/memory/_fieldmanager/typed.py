"""Whether an applied configuration fits its kind's type, as the apiserver checks it.

Server-side apply first turns the applied body into a typed value; a field the
type does not declare fails that step, whatever ``fieldValidation`` says, and
the request is refused with every such field named by its path in the
structured-merge-diff form (``.spec.containers[name="app"].imagePullPolicyX``:
fields after a dot, map-list items by their keys, set items by value, other
list items by index). Within one object only the first undeclared field is
reported, as the server stops reading an object at it.
"""

from __future__ import annotations

import json
from typing import Any

from .schema import Node

__all__ = ["typed_patch_error", "undeclared_fields"]


def _item_element(node: Node, index: int, item: Any) -> str:
    if node.list_type == "map" and node.keys and isinstance(item, dict):
        present = [(k, item[k]) for k in node.keys if k in item]
        if present:
            inner = ",".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in present)
            return f"[{inner}]"
    if node.list_type == "set" and not isinstance(item, (dict, list)):
        return f"[={json.dumps(item, separators=(',', ':'))}]"
    return f"[{index}]"


def undeclared_fields(value: Any, node: Node, path: str = "") -> list[str]:
    """``<path>: field not declared in schema`` for each field of ``value`` its type
    ``node`` lacks (an untyped part accepts anything)."""
    errors: list[str] = []
    if node.kind == "untyped" or node.kind == "scalar":
        return errors
    if node.kind == "list":
        if isinstance(value, list):
            items = node.items()
            for index, item in enumerate(value):
                errors += undeclared_fields(item, items, path + _item_element(node, index, item))
        return errors
    if not isinstance(value, dict):
        return errors
    for key, item in value.items():
        where = f"{path}.{key}"
        if node.kind == "struct" and not node.is_named_field(key) and not node.takes_any_key:
            errors.append(f"{where}: field not declared in schema")
            break
        errors += undeclared_fields(item, node.child(key), where)
    return errors


def typed_patch_error(
    errors: list[str], *, namespace: str, name: str, api_version: str, kind: str
) -> str:
    """The server's message for an applied body that is not of its type."""
    group_version = api_version if "/" in api_version else f"/{api_version}"
    detail = errors[0] if len(errors) == 1 else "errors:\n  " + "\n  ".join(errors)
    return (
        f"failed to create typed patch object ({namespace}/{name}; {group_version}, "
        f"Kind={kind}): {detail}"
    )
