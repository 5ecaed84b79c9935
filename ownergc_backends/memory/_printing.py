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
from ._tables import Printer, human_duration, parse_time

__all__ = [
    "SERVER_VERSION",
    "_OPENAPI_V2_JSON",
    "_age",
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


def _age(meta: JSONDict) -> str:
    """How long ago the object was created, on this process's clock: the one clock every
    duration ``_tables`` prints since a timestamp is read from."""
    when = parse_time(meta.get("creationTimestamp"))
    if when is None:
        return "<unknown>"
    return human_duration((datetime.now(timezone.utc) - when).total_seconds())


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
