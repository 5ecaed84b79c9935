"""Server-side apply and the managedFields bookkeeping of every other write.

Two entry points, both pure (the time is passed in, nothing is stored):

- :func:`apply` merges an applied configuration into the live object for
  one manager: the manager now owns exactly the fields it applied; fields it
  applied last time and no longer does are removed unless someone else owns
  them; fields owned by other managers that the apply would change are
  conflicts (an :class:`~.conflicts.ApplyConflict`), or, with ``force``, are
  taken from them. A value equal to the live one changes nothing and so is
  shared, not taken.
- :func:`update_managed_fields` records a create, update or patch: the
  writer's ``Update`` entry gains every field the write added or changed,
  other managers lose those, and everyone loses the fields it removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .conflicts import ApplyConflict
from .fieldpath import FieldSet, Path
from .managers import (
    Entry,
    EntryKey,
    ManagedFieldsError,
    decode_managed_fields,
    encode_managed_fields,
    wants_reset,
)
from .merge import (
    MergeError,
    compare,
    drop_under,
    json_equal,
    merge,
    remove_fields,
    to_field_set,
    with_named_fields,
)
from .schema import Node

__all__ = [
    "ANCIENT_CHANGES",
    "BEFORE_FIRST_APPLY",
    "MAX_UPDATE_ENTRIES",
    "STRIPPED_FIELDS",
    "ApplyError",
    "ApplyResult",
    "apply",
    "update_managed_fields",
    "without_managed_fields",
]

#: Fields no manager ever owns: identity and bookkeeping the server sets.
STRIPPED_FIELDS: FieldSet = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        *(
            ("f:metadata", "f:" + name)
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        ),
    }
)


class ApplyError(ValueError):
    """An apply or write the server refuses before merging; ``status`` is its HTTP code."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class ApplyResult:
    """The object an apply produces (managedFields included) and whether it differs from live."""

    object: dict[str, Any]
    changed: bool


def without_managed_fields(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """The object without its managedFields (what the merge works on)."""
    if obj is None:
        return {}
    out = dict(obj)
    metadata = out.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        metadata = dict(metadata)
        del metadata["managedFields"]
        out["metadata"] = metadata
    return out


def _with_managed(body: dict[str, Any], entries: Mapping[EntryKey, Entry]) -> dict[str, Any]:
    out = dict(body)
    metadata = dict(out.get("metadata") or {})
    encoded = encode_managed_fields(entries.values())
    if encoded:
        metadata["managedFields"] = encoded
    else:
        metadata.pop("managedFields", None)
    out["metadata"] = metadata
    return out


def _zero_object(schema: Node) -> dict[str, Any]:
    """What a new, empty object of this kind holds before any write."""
    return {name: {} for name in schema.zero_fields}


def _owned(fields: FieldSet | set[Path], ignored: FieldSet) -> FieldSet:
    return drop_under(frozenset(fields) - STRIPPED_FIELDS, ignored)


def _live_entries(live: Mapping[str, Any] | None) -> dict[EntryKey, Entry]:
    if live is None:
        return {}
    metadata = live.get("metadata")
    raw = metadata.get("managedFields") if isinstance(metadata, Mapping) else None
    try:
        return decode_managed_fields(raw)
    except ManagedFieldsError:
        # The server treats unreadable stored managedFields as none at all.
        return {}


#: Metadata the server never lets a write remove (it restores them from the stored object).
_KEPT_METADATA = frozenset({"deletionTimestamp", "deletionGracePeriodSeconds"})


def _stale(
    live: Mapping[str, Any], schema: Node, last: FieldSet, managed: set[Path] | FieldSet
) -> set[Path]:
    """What an apply removes: what the manager owned last time and nobody owns now.

    Named fields above owned leaves count as owned (see
    :func:`~.merge.with_named_fields`). ``metadata`` itself is never removed
    whole: the server keeps the object's identity, so its other fields are
    removed one by one instead.
    """
    stale = with_named_fields(last, schema) - with_named_fields(managed, schema)
    if ("f:metadata",) in stale:
        stale.discard(("f:metadata",))
        metadata = live.get("metadata")
        if isinstance(metadata, Mapping):
            stale.update(
                ("f:metadata", "f:" + name)
                for name in metadata
                if ("f:metadata", "f:" + name) not in STRIPPED_FIELDS and name not in _KEPT_METADATA
            )
    return stale


#: The manager the server records, on the first apply to an object nobody
#: manages, as having set everything the object already holds.
BEFORE_FIRST_APPLY = "before-first-apply"


def _before_first_apply(
    live_body: Mapping[str, Any],
    api_version: str,
    schema: Node,
    now: str,
    subresource: str,
    ignored: FieldSet,
) -> dict[EntryKey, Entry]:
    try:
        added, modified, _ = compare(_zero_object(schema), dict(live_body), schema)
    except MergeError:
        return {}
    fields = _owned(added | modified, ignored)
    if not fields:
        return {}
    key = EntryKey(BEFORE_FIRST_APPLY, "Update", api_version, subresource)
    return {key: Entry(key, now, fields)}


def apply(
    live: Mapping[str, Any] | None,
    applied: Mapping[str, Any],
    *,
    manager: str,
    force: bool,
    schema: Node,
    now: str,
    subresource: str = "",
    ignored: FieldSet = frozenset(),
) -> ApplyResult | ApplyConflict:
    """Apply ``applied`` as ``manager`` to ``live`` (``None`` when the apply creates).

    ``ignored`` holds subtrees no manager owns on this endpoint (e.g.
    ``("f:status",)`` on a main resource with a status subresource).
    Raises :class:`ApplyError` for input the server refuses outright.
    """
    if not manager:
        raise ApplyError("fieldManager: Required value: is required for apply patch", 422)
    if not isinstance(applied, Mapping):
        raise ApplyError("the applied configuration must be a JSON object")
    applied_meta = applied.get("metadata")
    if isinstance(applied_meta, Mapping) and applied_meta.get("managedFields") is not None:
        raise ApplyError("metadata.managedFields must be nil")
    api_version = str(applied.get("apiVersion", ""))
    entries = _live_entries(live)
    live_body = without_managed_fields(live)
    applied_body = dict(applied)
    key = EntryKey(manager, "Apply", api_version, subresource)
    if live is not None and not entries:
        entries = _before_first_apply(live_body, api_version, schema, now, subresource, ignored)
    try:
        merged = merge(live_body, applied_body, schema) if live is not None else applied_body
        new_set = _owned(to_field_set(applied_body, schema), ignored)
        previous = entries.get(key)
        last_set = previous.fields if previous is not None else frozenset()
        managed_by_others: set[Path] = set()
        for other_key, entry in entries.items():
            if other_key != key:
                managed_by_others |= entry.fields
        stale = _stale(live_body, schema, last_set, new_set | managed_by_others)
        result = remove_fields(merged, schema, stale)
        added, modified, removed = compare(live_body, result, schema)
    except MergeError as exc:
        raise ApplyError(f"failed to create typed patch object: {exc}", 500) from exc
    changed_fields = _owned(added | modified, ignored)
    conflicts: dict[EntryKey, FieldSet] = {}
    for other_key, entry in entries.items():
        if other_key == key:
            continue
        clash = entry.fields & changed_fields
        if clash:
            conflicts[other_key] = clash
    if conflicts and not force:
        return ApplyConflict(conflicts)
    updated: dict[EntryKey, Entry] = {}
    for other_key, entry in entries.items():
        if other_key == key:
            continue
        fields = drop_under(entry.fields - changed_fields, removed)
        if fields:
            updated[other_key] = Entry(other_key, entry.time, fields)
    if new_set:
        updated[key] = Entry(key, now, new_set)
    out = _with_managed(result, updated)
    changed = not json_equal(out, dict(live)) if live is not None else True
    if not changed and live is not None:
        return ApplyResult(object=dict(live), changed=False)
    return ApplyResult(object=out, changed=changed)


def update_managed_fields(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    manager: str,
    schema: Node,
    now: str,
    subresource: str = "",
    ignored: FieldSet = frozenset(),
) -> dict[str, Any]:
    """``new`` with the managedFields a create/update/patch by ``manager`` leaves.

    ``old`` is the stored object (``None`` on create). A write that sets
    ``metadata.managedFields`` to ``[]`` (or ``[{}]``) clears them; one that
    carries other managedFields has them taken as written; one without keeps
    the stored ones. An update of an object with no managedFields at all
    is not tracked (only creates and applies start tracking).
    """
    api_version = str(new.get("apiVersion", ""))
    new_meta = new.get("metadata")
    requested = new_meta.get("managedFields") if isinstance(new_meta, Mapping) else None
    entries: dict[EntryKey, Entry]
    if wants_reset(requested):
        entries = {}
    else:
        try:
            entries = decode_managed_fields(requested)
        except ManagedFieldsError:
            entries = {}
        if not entries:
            entries = _live_entries(old)
    old_body = without_managed_fields(old) if old is not None else _zero_object(schema)
    new_body = without_managed_fields(new)
    if old is not None and not entries:
        # An object nobody manages stays untracked until the next apply: the
        # server only starts tracking non-apply writes on create.
        return _with_managed(new_body, {})
    try:
        added, modified, removed = compare(old_body, new_body, schema)
    except MergeError as exc:
        raise ApplyError(str(exc), 500) from exc
    changed_fields = _owned(added | modified, ignored)
    key = EntryKey(manager, "Update", api_version, subresource)
    updated: dict[EntryKey, Entry] = {}
    for other_key, entry in entries.items():
        fields = drop_under(entry.fields - changed_fields, removed)
        if other_key == key:
            continue
        if fields:
            updated[other_key] = Entry(other_key, entry.time, fields)
    previous = entries.get(key)
    if changed_fields:
        base = drop_under(previous.fields, removed) if previous is not None else frozenset()
        updated[key] = Entry(key, now, base | changed_fields)
    elif previous is not None:
        kept = drop_under(previous.fields, removed)
        if kept:
            updated[key] = Entry(key, previous.time, kept)
    return _with_managed(new_body, _cap_update_entries(updated))


#: How many ``Update`` entries an object keeps before the oldest are merged.
MAX_UPDATE_ENTRIES = 10
#: The manager the merged oldest ``Update`` entries are recorded under.
ANCIENT_CHANGES = "ancient-changes"


def _cap_update_entries(entries: dict[EntryKey, Entry]) -> dict[EntryKey, Entry]:
    """Keep at most :data:`MAX_UPDATE_ENTRIES` ``Update`` entries, as the server does.

    Oldest first (by time, then identity), each entry whose apiVersion was
    already seen among the older ones is folded into that version's
    ``ancient-changes`` entry (created from the first one seen), until the
    count is under the cap. The bucket takes the time of the last entry
    folded in. Apply entries are never capped.
    """
    updaters = [key for key in entries if key.operation == "Update"]
    if len(updaters) <= MAX_UPDATE_ENTRIES:
        return entries
    out = dict(entries)
    updaters.sort(key=lambda k: (entries[k].time or "", k.identifier()))
    first_by_version: dict[str, EntryKey] = {}
    remaining = len(updaters)
    for key in updaters:
        if remaining <= MAX_UPDATE_ENTRIES:
            break
        entry = out[key]
        first = first_by_version.get(key.api_version)
        if first is None:
            first_by_version[key.api_version] = key
            continue
        bucket = EntryKey(ANCIENT_CHANGES, "Update", key.api_version, key.subresource)
        if bucket not in out:
            out[bucket] = Entry(bucket, out[first].time, out.pop(first).fields)
        out[bucket] = Entry(bucket, entry.time, out[bucket].fields | entry.fields)
        if key != bucket:
            del out[key]
        remaining -= 1
    return out
