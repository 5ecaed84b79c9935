"""Server-side printing: the meta.k8s.io Table and PartialObjectMetadata renderings, and the
OpenAPI documents kubectl asks for.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Final

from ownergc.protocols import JSONDict

from ._negotiation import (
    _META_GROUP,
)
from ._tables import Printer

__all__ = [
    "SERVER_VERSION",
    "_OPENAPI_V2_JSON",
    "_age",
    "_human_duration",
    "_openapi_v2_protobuf",
    "_partial",
    "_table",
]


#: What ``/version`` claims; kubectl only prints it.
SERVER_VERSION: Final[dict[str, str]] = {
    "major": "1",
    "minor": "30",
    "gitVersion": "v1.30.0+ownergc",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-04-17T00:00:00Z",
    "goVersion": "go1.22.2",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``, for the Age column."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y{rest}d" if rest else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _age(meta: JSONDict) -> str:
    created = meta.get("creationTimestamp")
    if not isinstance(created, str):
        return "<unknown>"
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return _human_duration((datetime.now(timezone.utc) - when).total_seconds())


def _partial(obj: JSONDict, version: str) -> JSONDict:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"{_META_GROUP}/{version}",
        "metadata": obj.get("metadata", {}),
    }


def _table(
    objects: list[JSONDict],
    version: str,
    include: str,
    rv: str | None,
    printer: Printer,
    *,
    headers: bool = True,
) -> JSONDict:
    rows = []
    for obj in objects:
        row: JSONDict = {"cells": printer.cells(obj, _age)}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = _partial(obj, "v1")
        rows.append(row)
    table: JSONDict = {
        "kind": "Table",
        "apiVersion": f"{_META_GROUP}/{version}",
        "metadata": {"resourceVersion": rv} if rv is not None else {},
        "columnDefinitions": list(printer.columns) if headers else [],
        "rows": rows,
    }
    return table


def _openapi_v2_protobuf() -> bytes:
    """An empty OpenAPI v2 ``Document`` in protobuf (gnostic openapi_v2):
    ``swagger = "2.0"`` and ``info {title, version}``. kubectl fetches it for
    validation and skips kinds it does not describe."""

    def string_field(number: int, text: str) -> bytes:
        data = text.encode()
        return bytes([number << 3 | 2, len(data)]) + data

    info = string_field(1, "ownergc") + string_field(2, SERVER_VERSION["gitVersion"])
    return string_field(1, "2.0") + bytes([2 << 3 | 2, len(info)]) + info


_OPENAPI_V2_JSON: Final = {
    "swagger": "2.0",
    "info": {"title": "ownergc", "version": SERVER_VERSION["gitVersion"]},
    "paths": {},
    "definitions": {},
}
