"""Patch application for the in-memory apiserver: JSON merge, JSON patch, strategic merge.

Everything here is pure: inputs are never mutated, results are fresh JSON
values. Failures raise :class:`PatchError` carrying the HTTP status the
apiserver would answer with (400 for a malformed patch document, 422 for a
JSON patch operation that cannot be applied); the store turns it into the
matching ownergc error.

Strategic merge patch needs per-field metadata (which lists merge, and by
which key). Kubernetes reads it from Go struct tags; here it is read from the
same schema facts server-side apply uses (``_fieldmanager/schema.py``: the
recorded OpenAPI document's ``x-kubernetes-patch-strategy`` and
``x-kubernetes-patch-merge-key``), so there is no second hand-kept table.
Lists without a merge strategy are replaced by the patch value, as
Kubernetes does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Literal

from ._fieldmanager.schema import Node, builtin_schema, crd_schema, strategic_merge_keys

__all__ = [
    "JSONPatchNotApplied",
    "PatchError",
    "apply_json_merge_patch",
    "apply_json_patch",
    "apply_strategic_merge_patch",
    "check_json",
    "copy_json",
    "fallback_schema",
    "go_json_type",
    "json_equal",
    "strategic_schema",
]

PatchStatus = Literal[400, 409, 413, 422]

_DIRECTIVE = "$patch"
_DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"
_SET_ELEMENT_ORDER = "$setElementOrder/"
_RETAIN_KEYS = "$retainKeys"


class PatchError(Exception):
    """A patch could not be applied; ``status`` is the HTTP code the apiserver answers."""

    def __init__(self, message: str, status: PatchStatus = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status: PatchStatus = status


# ---------------------------------------------------------------------------
# JSON helpers


def copy_json(value: Any) -> Any:
    """Deep copy of a JSON value; several times faster than ``copy.deepcopy``."""
    t = type(value)
    if t is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if t is list:
        return [copy_json(v) for v in value]
    return value


class _NotJSON(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.where: list[str] = []  # innermost first


def check_json(value: Any) -> Any:
    """Deep copy of ``value`` that must be JSON (dict/list/str/int/float/bool/None).

    Raises :class:`PatchError` (400) naming the offending path otherwise, so
    bad input never becomes a crash deeper in the store. Tuples are accepted
    as lists and str/int subclasses (enums) as their plain values; NaN and
    infinities are rejected (not JSON). The path is only built on failure,
    because this runs on every write.
    """
    try:
        return _check(value)
    except _NotJSON as exc:
        path = "".join(reversed(exc.where)).lstrip(".") or "<root>"
        raise PatchError(f"{path}: {exc.reason}") from None


def _check(value: Any) -> Any:
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is dict:
        out: dict[str, Any] = {}
        for k, v in value.items():
            if type(k) is not str:
                exc = _NotJSON(f"object key {k!r} is not a string")
                raise exc
            tv = type(v)
            if tv is str or tv is int or tv is bool or v is None:
                out[k] = v
                continue
            try:
                out[k] = _check(v)
            except _NotJSON as exc:
                exc.where.append(f".{k}")
                raise
        return out
    if t is list or t is tuple:
        items: list[Any] = []
        for i, v in enumerate(value):
            try:
                items.append(_check(v))
            except _NotJSON as exc:
                exc.where.append(f"[{i}]")
                raise
        return items
    if t is float:
        if math.isnan(value) or math.isinf(value):
            raise _NotJSON(f"{value!r} is not a JSON number")
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _check(float(value))
    if isinstance(value, Mapping):
        return _check(dict(value))
    raise _NotJSON(f"{type(value).__name__} is not a JSON value")


def _kind(value: Any) -> str:
    """JSON type name; bool is not a number (Python's ``True == 1`` must not leak)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but ``True != 1``; objects unordered, arrays ordered."""
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return False
    if ka == "object":
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if ka == "array":
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _scalar_key(value: Any) -> tuple[str, Any]:
    """A hashable identity for a scalar that keeps ``True`` and ``1`` apart."""
    k = _kind(value)
    if k in ("object", "array"):
        return (k, id(value))
    return (k, value)


# ---------------------------------------------------------------------------
# JSON merge patch (RFC 7386)


def apply_json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    result: dict[str, Any] = copy_json(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_json_merge_patch(result.get(key), value)
    return result


# ---------------------------------------------------------------------------
# JSON patch (RFC 6902), read as kube-apiserver reads it
#
# kube-apiserver applies JSON patches with evanphx/json-patch v4 (1.30: v4.12), whose
# reading of RFC 6902 is looser than the RFC: a missing ``value`` is null; ``replace``
# and ``copy`` of an absent object member act on null (a replace adds it); an array
# index is whatever Go's strconv.Atoi reads (``+1``, ``01``) and may be negative,
# counted from the end; a ``~`` not followed by ``0`` or ``1`` stays as it is; only the
# last segment of a path that does not start with ``/`` is kept, under the root; the
# empty path names the whole document for ``replace`` and ``test`` only. This module
# follows that reading (tests/data/real-apiserver-1.20/json-patch.json is what a
# real server answered), so a patch that works on a cluster works on serve.


class JSONPatchNotApplied(PatchError):
    """A JSON patch operation that cannot be applied: 422. kube-apiserver's answer does not
    say which or why (a generic "the server rejected our request"); ``message`` does."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 422)


_POINTER_ESCAPE = re.compile("~[01]")
_GO_INT = re.compile("[+-]?[0-9]+")
#: What a JSON patch document decodes into (the types Go names in its errors).
_PATCH_TYPE = "jsonpatch.Patch"
_OPERATION_TYPE = "jsonpatch.Operation"
#: kube-apiserver's cap on the operations of one JSON patch.
MAX_JSON_PATCH_OPERATIONS = 10_000


def go_json_type(value: Any) -> str:
    """How Go's JSON decoder names the type of a decoded value in its errors ("cannot
    unmarshal number into ...")."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null" if value is None else "value"


def _unescape(token: str) -> str:
    return _POINTER_ESCAPE.sub(lambda m: "/" if m.group() == "~1" else "~", token)


def _index(token: str, size: int, where: str) -> int:
    """The position ``token`` names among ``size`` places: an integer as Go's Atoi reads
    it, a negative one counted from the end; an error past either end."""
    if not _GO_INT.fullmatch(token):
        raise JSONPatchNotApplied(f"{where}: {token!r} is not an array index")
    index = int(token)
    if index < 0:
        index += size
    if not 0 <= index < size:
        raise JSONPatchNotApplied(f"{where}: index {token} is out of range")
    return index


def _member(container: Any, key: str, where: str) -> Any:
    """What ``key`` names in ``container``: an absent object member reads as null; an
    array index out of range (past either end) is an error."""
    if type(container) is dict:
        return container.get(key)
    return container[_index(key, len(container), where)]


def _parent(doc: Any, path: Any, where: str) -> tuple[Any, str]:
    """The object or array holding what ``path`` names, and its (unescaped) last token."""
    if type(path) is not str:
        raise JSONPatchNotApplied(f"{where}: no string path")
    tokens = path.split("/")
    if len(tokens) < 2:
        raise JSONPatchNotApplied(f"{where}: path {path!r} names no member")
    node = doc
    for token in tokens[1:-1]:
        try:
            node = _member(node, _unescape(token), where)
        except JSONPatchNotApplied:
            node = None
        if type(node) is not dict and type(node) is not list:
            raise JSONPatchNotApplied(f"{where}: the document has no path {path!r}")
    return node, _unescape(tokens[-1])


def _insert(container: Any, key: str, value: Any, where: str) -> None:
    if type(container) is dict:
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    container.insert(_index(key, len(container) + 1, where), value)


def _delete(container: Any, key: str, where: str) -> Any:
    if type(container) is dict:
        if key not in container:
            raise JSONPatchNotApplied(f"{where}: no member {key!r} to remove")
        return container.pop(key)
    return container.pop(_index(key, len(container), where))


def _same(current: Any, value: Any) -> bool:
    """``test``'s equality: JSON equality, but a number equals only a number written the
    same way (3 is not 3.0), as json-patch compares scalars by their text."""
    if type(current) is dict:
        return (
            type(value) is dict
            and current.keys() == value.keys()
            and all(_same(current[k], value[k]) for k in current)
        )
    if type(current) is list:
        return (
            type(value) is list
            and len(current) == len(value)
            and all(_same(a, b) for a, b in zip(current, value, strict=True))
        )
    return type(current) is type(value) and current == value


def _decode_patch(operations: Any) -> list[Any]:
    """The operations of a decoded patch document, or the 400 kube-apiserver answers
    (its Go decoder's words); ``null`` is a patch of no operations."""
    if operations is None:
        return []
    if type(operations) is not list:
        raise PatchError(
            f"json: cannot unmarshal {go_json_type(operations)} into Go value of type {_PATCH_TYPE}"
        )
    for op in operations:
        if op is not None and type(op) is not dict:
            raise PatchError(
                f"json: cannot unmarshal {go_json_type(op)} into Go value of type {_OPERATION_TYPE}"
            )
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(operations)}",
            413,
        )
    return operations


def apply_json_patch(doc: Any, operations: Any) -> Any:
    """``operations`` (a decoded JSON patch document) applied to a copy of ``doc``, as
    kube-apiserver applies them (see above).

    A patch document that is not a list of objects is a :class:`PatchError` (400); an
    operation that cannot be applied, a failed ``test`` included, a
    :class:`JSONPatchNotApplied` (422), and nothing is changed.
    """
    result = copy_json(doc)
    for number, op in enumerate(_decode_patch(operations)):
        op = op or {}
        name = op.get("op")
        where = f"operation {number} ({name})"
        path = op.get("path")
        value = copy_json(op.get("value"))
        if name == "add":
            container, key = _parent(result, path, where)
            _insert(container, key, value, where)
        elif name == "remove":
            container, key = _parent(result, path, where)
            _delete(container, key, where)
        elif name == "replace":
            if path == "":
                if type(value) is not dict and type(value) is not list:
                    raise JSONPatchNotApplied(
                        f"{where}: the document can only be an object or an array"
                    )
                result = value
                continue
            container, key = _parent(result, path, where)
            if type(container) is dict:
                container[key] = value
            else:
                container[_index(key, len(container), where)] = value
        elif name == "move" or name == "copy":
            container, key = _parent(result, op.get("from"), where)
            if name == "move":
                moved = _delete(container, key, where)
            else:
                moved = copy_json(_member(container, key, where))
            container, key = _parent(result, path, where)
            _insert(container, key, moved, where)
        elif name == "test":
            if path == "":
                current = result
            else:
                container, key = _parent(result, path, where)
                current = _member(container, key, where)
            if current is None and path != "":
                if "value" not in op:
                    raise JSONPatchNotApplied(f"{where}: test of an absent value without a value")
                if value is not None:
                    raise JSONPatchNotApplied(f"{where}: testing value {path} failed")
            elif not _same(current, value) or "value" not in op:
                raise JSONPatchNotApplied(f"{where}: testing value {path} failed")
        else:
            raise JSONPatchNotApplied(f"{where}: unknown operation {name!r}")
    return result


# ---------------------------------------------------------------------------
# Strategic merge patch


@lru_cache(maxsize=256)
def strategic_schema(group: str, version: str, kind: str) -> Node:
    """The merge facts strategic merge patch reads for a kind, cached per (group, version, kind).

    A built-in kind gets its type from the recorded OpenAPI document, so every
    list with ``x-kubernetes-patch-strategy: merge`` merges by its
    ``x-kubernetes-patch-merge-key`` at any depth, as kube-apiserver merges
    it from its Go struct tags. A kind the document does not list gets the
    fallback :func:`fallback_schema` (only ``metadata`` is typed).
    """
    return builtin_schema(group, version, kind) or fallback_schema()


@lru_cache(maxsize=1)
def fallback_schema() -> Node:
    """An object of unknown kind: ObjectMeta under ``metadata``, everything else untyped.

    Derived from the same document (no hand-kept table): ``ownerReferences``
    merges by ``uid`` and ``finalizers`` as a set, every other list is replaced.
    Custom resources never get here through the store, which refuses strategic
    merge for them with 415 as the apiserver does.
    """
    return crd_schema(None)


def __getattr__(name: str) -> Any:
    """``METADATA_LIST_STRATEGIES``: ``path -> merge key`` of the fallback, derived on first use."""
    if name == "METADATA_LIST_STRATEGIES":
        return {
            path: key
            for path, key in strategic_merge_keys(fallback_schema()).items()
            if path[:1] == ("metadata",)
        }
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def apply_strategic_merge_patch(
    original: dict[str, Any],
    patch: Any,
    schema: Node | None = None,
) -> dict[str, Any]:
    """Apply a strategic merge patch the way kube-apiserver does for built-in types.

    ``schema`` is the kind's type (:func:`strategic_schema`); ``None`` means
    :func:`fallback_schema`. Maps merge recursively and ``null`` deletes a
    key. A list whose schema has patch strategy ``merge`` merges, at any
    depth, list elements included: lists of maps by the schema's merge key
    (an entry with ``"$patch": "delete"`` removes the entries with that key,
    an entry with ``"$patch": "replace"`` replaces the whole list, other
    entries merge into the entry with the same key, with the item type's own
    facts, or are added), lists of scalars as a set
    (``$deleteFromPrimitiveList/<field>`` removes values, from any list of
    scalars, merging or not, as the apiserver does). Merged lists are
    ordered like Kubernetes orders them (patch order for patched entries,
    server order for the rest, ``$setElementOrder/<field>`` when given).
    Every other list is replaced. ``$patch: replace|delete`` on a map and
    ``$retainKeys`` are honoured wherever they appear (the apiserver applies
    ``$retainKeys`` whatever the field's strategy; the schema's ``retainKeys``
    only tells clients when to send it).

    Two consciously kept Kubernetes (v1.24) behaviours: a key absent from the
    original takes the patch value as-is, minus its ``null`` map values
    (so a ``$patch: delete`` entry sent for an object that has no
    ``ownerReferences`` at all is stored as an entry with only ``uid`` and
    then fails validation with 422, as on a real apiserver); a removed
    ``uid`` that is not present is silently ignored.
    One deliberate deviation: ``$deleteFromPrimitiveList`` against an absent
    list is a no-op (Kubernetes would store the deletion list as the value).
    """
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch must be a JSON object")
    node = schema if schema is not None else fallback_schema()
    return _merge_map(copy_json(original), copy_json(patch), node, ())


def _list_merge_key(node: Node) -> str | None:
    """The merge key of a merging list (``""``: a set of scalars); None: the list is replaced."""
    if node.kind == "list" and "merge" in node.patch_strategy.split(","):
        return node.patch_merge_key
    return None


def _where(path: tuple[str, ...]) -> str:
    return ".".join(path) or "<root>"


def _merge_map(
    original: dict[str, Any],
    patch: dict[str, Any],
    node: Node,
    path: tuple[str, ...],
) -> dict[str, Any]:
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        if directive == "replace":
            del patch[_DIRECTIVE]
            return patch
        if directive == "delete":
            return {}
        raise PatchError(f"unknown patch type {directive!r} in {patch!r}")

    _apply_retain_keys(original, patch)
    _apply_set_element_order(original, patch, node, path)

    for key, patch_value in list(patch.items()):
        is_delete_list = False
        if key.startswith(_DELETE_FROM_PRIMITIVE_LIST):
            key = key[len(_DELETE_FROM_PRIMITIVE_LIST) :]
            if not key:
                raise PatchError("invalid $deleteFromPrimitiveList directive")
            is_delete_list = True
        elif key.startswith("$"):
            # Unknown directive: the typed decoder of a built-in drops it.
            continue
        if patch_value is None:
            original.pop(key, None)
            continue
        if key not in original:
            if not is_delete_list:
                original[key] = _discard_nulls(patch_value)
            continue
        current = original[key]
        child = node.child(key)
        where = (*path, key)
        if isinstance(current, dict) and isinstance(patch_value, dict):
            original[key] = _merge_map(current, patch_value, child, where)
        elif isinstance(current, list) and isinstance(patch_value, list):
            merge_key = _list_merge_key(child)
            if merge_key is not None or is_delete_list:
                # A deletion list removes values whatever the list's strategy.
                original[key] = _merge_list(
                    current, patch_value, merge_key or "", is_delete_list, child.items(), where
                )
            else:
                original[key] = patch_value
        elif not is_delete_list:
            original[key] = _discard_nulls(patch_value)
    return original


def _discard_nulls(value: Any) -> Any:
    """Drop ``null`` map values from a patch value taken as-is (it has nothing to delete).

    The apiserver merges with unmatched nulls ignored, so
    ``{"metadata": {"annotations": {"a": null}}}`` on an object without
    annotations stores ``annotations: {}``, not an ``a: null`` entry.
    """
    if isinstance(value, dict):
        return {k: _discard_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_discard_nulls(v) for v in value]
    return value


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if _RETAIN_KEYS not in patch:
        return
    retain = patch.pop(_RETAIN_KEYS)
    if not isinstance(retain, list) or not all(isinstance(k, str) for k in retain):
        raise PatchError("$retainKeys must be a list of field names")
    keep = set(retain)
    for key, value in patch.items():
        if value is None or key.startswith(("$deleteFromPrimitiveList/", "$setElementOrder/")):
            continue
        if key not in keep:
            raise PatchError(f"$retainKeys does not list the patched field {key!r}")
    for key in list(original):
        if key not in keep:
            del original[key]


def _apply_set_element_order(
    original: dict[str, Any],
    patch: dict[str, Any],
    node: Node,
    path: tuple[str, ...],
) -> None:
    for directive in [k for k in patch if k.startswith(_SET_ELEMENT_ORDER)]:
        order = patch.pop(directive)
        key = directive[len(_SET_ELEMENT_ORDER) :]
        if not key or not isinstance(order, list):
            raise PatchError(f"invalid {directive} directive")
        child = node.child(key)
        merge_key = _list_merge_key(child)
        if merge_key is None:
            continue  # ordering a replaced list means nothing
        where = (*path, key)
        in_original, in_patch = key in original, key in patch
        if in_original and not isinstance(original[key], list):
            raise PatchError(f"{_where(where)} is not a list")
        if in_patch and not isinstance(patch[key], list):
            raise PatchError(f"{_where(where)} in the patch is not a list")
        if in_original and in_patch:
            merged = _merge_list(
                original[key], patch.pop(key), merge_key, False, child.items(), where
            )
        elif in_original:
            merged = original[key]
        elif in_patch:
            merged = patch.pop(key)
        else:
            continue
        patch_items, server_only = _partition(merged, order, merge_key)
        original[key] = _normalize_order(
            patch_items, server_only, order, original.get(key) or [], merge_key
        )


def _merge_value(item: Any, merge_key: str) -> tuple[str, Any]:
    if merge_key:
        if not isinstance(item, dict):
            raise PatchError(f"list element {item!r} is not an object")
        if merge_key not in item:
            raise PatchError(f"map: {item!r} does not contain declared merge key: {merge_key}")
        return _scalar_key(item[merge_key])
    return _scalar_key(item)


def _merge_list(
    original: list[Any],
    patch: list[Any],
    merge_key: str,
    is_delete_list: bool,
    items: Node,
    path: tuple[str, ...],
) -> list[Any]:
    if not original and not patch:
        return original
    kinds = {_kind(v) for v in (*original, *patch)}
    if "array" in kinds:
        raise PatchError(f"{_where(path)}: lists of lists cannot be merged")
    if len(kinds) > 1:
        raise PatchError(
            f"{_where(path)}: list element types are not identical: {original!r}, {patch!r}"
        )
    is_map = kinds == {"object"}
    if not is_map:
        if is_delete_list:
            drop = {_scalar_key(v) for v in patch}
            return [v for v in original if _scalar_key(v) not in drop]
        merged: list[Any] = []
        seen: set[tuple[str, Any]] = set()
        for v in (*original, *patch):
            k = _scalar_key(v)
            if k not in seen:
                seen.add(k)
                merged.append(v)
        merge_key = ""
    else:
        if not merge_key:
            raise PatchError(f"{_where(path)}: cannot merge lists of objects without a merge key")
        original, patch = _special_elements(original, patch, merge_key)
        merged = list(original)
        for entry in patch:
            value = _merge_value(entry, merge_key)
            for i, existing in enumerate(merged):
                if _merge_value(existing, merge_key) == value:
                    merged[i] = _merge_map(existing, entry, items, path)
                    break
            else:
                merged.append(entry)
    patch_items, server_only = _partition(merged, patch, merge_key)
    return _normalize_order(patch_items, server_only, patch, original, merge_key)


def _special_elements(
    original: list[Any], patch: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    """Apply ``$patch`` entries of a merging list; return (original, plain patch entries)."""
    plain: list[Any] = []
    replace = False
    for entry in patch:
        if _DIRECTIVE not in entry:
            plain.append(entry)
            continue
        directive = entry[_DIRECTIVE]
        if directive == "delete":
            value = _merge_value(entry, merge_key)
            for existing in original:
                _merge_value(existing, merge_key)  # every entry must carry the key
            original = [e for e in original if _merge_value(e, merge_key) != value]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"unknown patch type {directive!r} in {entry!r}")
    if replace:
        return plain, []
    return original, plain


def _partition(items: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    wanted = {_merge_value(v, merge_key) for v in by if not _is_delete_entry(v)}
    inside = [v for v in items if _merge_value(v, merge_key) in wanted]
    outside = [v for v in items if _merge_value(v, merge_key) not in wanted]
    return inside, outside


def _is_delete_entry(value: Any) -> bool:
    return isinstance(value, dict) and value.get(_DIRECTIVE) == "delete"


def _normalize_order(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
) -> list[Any]:
    """Patch items in patch order, server-only items in server order, then interleaved.

    The interleaving takes a server-only item first only when both it and
    the next patch item appear in the server order and it comes earlier
    there; otherwise the patch item goes first. This is how Kubernetes
    places merged list entries (a brand-new entry lands before the remaining
    server-only entries).
    """

    def positions(order: list[Any]) -> dict[tuple[str, Any], int]:
        out: dict[tuple[str, Any], int] = {}
        for i, v in enumerate(order):
            if _is_delete_entry(v):
                continue
            out.setdefault(_merge_value(v, merge_key), i)
        return out

    patch_pos = positions(patch_order)
    server_pos = positions(server_order)
    big = len(patch_order) + len(server_order) + 1
    patch_sorted = sorted(patch_items, key=lambda v: patch_pos.get(_merge_value(v, merge_key), big))
    server_sorted = sorted(
        server_only, key=lambda v: server_pos.get(_merge_value(v, merge_key), big)
    )
    result: list[Any] = []
    i = j = 0
    while i < len(server_sorted) or j < len(patch_sorted):
        if j >= len(patch_sorted):
            result.append(server_sorted[i])
            i += 1
        elif i >= len(server_sorted):
            result.append(patch_sorted[j])
            j += 1
        else:
            li = server_pos.get(_merge_value(server_sorted[i], merge_key))
            ri = server_pos.get(_merge_value(patch_sorted[j], merge_key))
            if li is not None and ri is not None and li < ri:
                result.append(server_sorted[i])
                i += 1
            else:
                result.append(patch_sorted[j])
                j += 1
    return result
