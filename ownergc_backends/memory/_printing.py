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


_UNIT_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}
#: (below this many seconds: the unit shown, and the smaller one shown beside it)
_AGE_LADDER: Final = (
    (120, "s", None),
    (10 * 60, "m", "s"),
    (180 * 60, "m", None),
    (8 * 3600, "h", "m"),
    (48 * 3600, "h", None),
    (8 * 86400, "d", "h"),
    (2 * 365 * 86400, "d", None),
    (8 * 365 * 86400, "y", "d"),
)


def _human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``, for the Age column."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    unit, smaller = next(
        ((unit, smaller) for limit, unit, smaller in _AGE_LADDER if s < limit), ("y", None)
    )
    big = s // _UNIT_SECONDS[unit]
    if smaller is None:
        return f"{big}{unit}"
    rest = (s // _UNIT_SECONDS[smaller]) % (_UNIT_SECONDS[unit] // _UNIT_SECONDS[smaller])
    return f"{big}{unit}{rest}{smaller}" if rest else f"{big}{unit}"


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
