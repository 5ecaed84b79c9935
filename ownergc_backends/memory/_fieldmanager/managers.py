"""The ``metadata.managedFields`` list: one entry per manager, operation, version.

An entry is identified by ``(manager, operation, apiVersion, subresource)``;
the server keeps at most one per identity, drops the ones that own nothing,
and writes them sorted: ``Apply`` before ``Update``, then by time, manager
name, apiVersion and subresource.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .fieldpath import FieldSet, FieldsV1Error, decode_fields_v1, encode_fields_v1

__all__ = [
    "Entry",
    "EntryKey",
    "ManagedFieldsError",
    "decode_managed_fields",
    "encode_managed_fields",
    "manager_from_user_agent",
    "wants_reset",
]

Operation = Literal["Apply", "Update"]


class ManagedFieldsError(ValueError):
    """A ``managedFields`` list the server would refuse to read."""


@dataclass(frozen=True, order=True)
class EntryKey:
    """Who owns a field set: the identity of a managedFields entry."""

    manager: str
    operation: str
    api_version: str
    subresource: str = ""

    def identifier(self) -> str:
        """The compact JSON naming this entry inside the server (conflicts sort by it)."""
        doc: dict[str, str] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.subresource:
            doc["subresource"] = self.subresource
        return json.dumps(doc, separators=(",", ":"))

    def describe(self) -> str:
        """The manager as conflict messages print it."""
        text = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text


@dataclass(frozen=True)
class Entry:
    """One managedFields entry, its fields decoded."""

    key: EntryKey
    time: str | None
    fields: FieldSet


def manager_from_user_agent(user_agent: str | None) -> str:
    """The manager name the server derives for a write without ``fieldManager``.

    It is the User-Agent up to its first ``/`` (``kubectl/v1.24.0 (...)`` ->
    ``kubectl``); the server caps it at 128 characters.
    """
    name = (user_agent or "").split("/", 1)[0]
    return name[:128]


def wants_reset(managed_fields: Any) -> bool:
    """True for the two forms a client uses to clear managedFields: ``[]`` and ``[{}]``."""
    if not isinstance(managed_fields, list):
        return False
    return len(managed_fields) == 0 or (len(managed_fields) == 1 and managed_fields[0] == {})


def decode_managed_fields(managed_fields: Any) -> dict[EntryKey, Entry]:
    """The entries of a ``metadata.managedFields`` value (``None`` means none)."""
    if managed_fields is None:
        return {}
    if not isinstance(managed_fields, list):
        raise ManagedFieldsError("metadata.managedFields must be a list")
    out: dict[EntryKey, Entry] = {}
    for index, raw in enumerate(managed_fields):
        if not isinstance(raw, Mapping):
            raise ManagedFieldsError(f"metadata.managedFields[{index}] must be an object")
        operation = raw.get("operation")
        if operation not in ("Apply", "Update"):
            raise ManagedFieldsError(
                f"metadata.managedFields[{index}].operation must be Apply or Update"
            )
        fields_type = raw.get("fieldsType", "FieldsV1")
        if fields_type != "FieldsV1":
            raise ManagedFieldsError(f"metadata.managedFields[{index}].fieldsType must be FieldsV1")
        try:
            fields = decode_fields_v1(raw.get("fieldsV1", {}))
        except FieldsV1Error as exc:
            raise ManagedFieldsError(f"metadata.managedFields[{index}]: {exc}") from exc
        key = EntryKey(
            manager=str(raw.get("manager", "")),
            operation=str(operation),
            api_version=str(raw.get("apiVersion", "")),
            subresource=str(raw.get("subresource", "")),
        )
        time = raw.get("time")
        if key in out:
            fields = fields | out[key].fields
        out[key] = Entry(key=key, time=str(time) if time is not None else None, fields=fields)
    return out


def _sort_key(entry: Entry) -> tuple[str, str, str, str, str]:
    return (
        entry.key.operation,
        entry.time or "",
        entry.key.manager,
        entry.key.api_version,
        entry.key.subresource,
    )


def encode_managed_fields(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """The ``metadata.managedFields`` value for these entries, empty ones left out."""
    out: list[dict[str, Any]] = []
    for entry in sorted((e for e in entries if e.fields), key=_sort_key):
        doc: dict[str, Any] = {
            "manager": entry.key.manager,
            "operation": entry.key.operation,
            "apiVersion": entry.key.api_version,
        }
        if entry.time is not None:
            doc["time"] = entry.time
        doc["fieldsType"] = "FieldsV1"
        doc["fieldsV1"] = encode_fields_v1(entry.fields)
        if entry.key.subresource:
            doc["subresource"] = entry.key.subresource
        out.append(doc)
    return out
