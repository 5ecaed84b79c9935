"""``/openapi/v2`` in protobuf: the JSON document as a gnostic ``openapi.v2.Document``.

kubectl 1.20 (and any client-go that reads ``discovery.OpenAPISchema``) asks
for the v2 document in protobuf only, for ``explain`` and for client-side
validation. This writes the message by hand from the message layout of
gnostic's ``openapiv2/OpenAPIv2.proto`` (field numbers only): the document's
``swagger``, ``info``, ``paths`` (operations, their parameters and vendor
extensions, which kubectl reads to learn which query parameters a server
takes) and ``definitions`` (every schema, which ``explain`` and validation
read). Values the proto carries as ``Any`` (``default``, ``enum``,
``example``, vendor extensions) are given as YAML text: JSON, which YAML
reads.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from typing import Any

from ownergc.protocols import JSONDict

__all__ = ["document_to_protobuf"]


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _string(number: int, text: Any) -> bytes:
    return _bytes(number, str(text).encode()) if text not in (None, "") else b""


def _bool(number: int, value: Any) -> bytes:
    return _varint(number << 3) + b"\x01" if value else b""


def _int(number: int, value: Any) -> bytes:
    return _varint(number << 3) + _varint(int(value)) if value is not None else b""


def _double(number: int, value: Any) -> bytes:
    if value is None:
        return b""
    return _varint(number << 3 | 1) + struct.pack("<d", float(value))


def _strings(number: int, values: Iterable[Any] | None) -> bytes:
    return b"".join(_bytes(number, str(v).encode()) for v in values or ())


def _any(value: Any) -> bytes:
    """gnostic ``Any``: the value as YAML (field 2)."""
    return _bytes(2, json.dumps(value).encode())


def _vendor(number: int, item: JSONDict) -> bytes:
    """Each ``x-...`` key as a ``NamedAny``."""
    return b"".join(
        _bytes(number, _string(1, key) + _bytes(2, _any(value)))
        for key, value in item.items()
        if key.startswith("x-")
    )


def _schema(schema: JSONDict) -> bytes:
    out = [
        _string(1, schema.get("$ref")),
        _string(2, schema.get("format")),
        _string(3, schema.get("title")),
        _string(4, schema.get("description")),
    ]
    if "default" in schema:
        out.append(_bytes(5, _any(schema["default"])))
    out += [
        _double(6, schema.get("multipleOf")),
        _double(7, schema.get("maximum")),
        _bool(8, schema.get("exclusiveMaximum")),
        _double(9, schema.get("minimum")),
        _bool(10, schema.get("exclusiveMinimum")),
        _int(11, schema.get("maxLength")),
        _int(12, schema.get("minLength")),
        _string(13, schema.get("pattern")),
        _int(14, schema.get("maxItems")),
        _int(15, schema.get("minItems")),
        _bool(16, schema.get("uniqueItems")),
        _int(17, schema.get("maxProperties")),
        _int(18, schema.get("minProperties")),
        _strings(19, schema.get("required")),
    ]
    out += [_bytes(20, _any(v)) for v in schema.get("enum") or ()]
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        out.append(_bytes(21, _bytes(1, _schema(extra))))
    elif isinstance(extra, bool):
        out.append(_bytes(21, _varint(2 << 3) + (b"\x01" if extra else b"\x00")))
    kind = schema.get("type")
    if kind:
        out.append(_bytes(22, _strings(1, kind if isinstance(kind, list) else [kind])))
    items = schema.get("items")
    if isinstance(items, dict):
        items = [items]
    if isinstance(items, list):
        out.append(_bytes(23, b"".join(_bytes(1, _schema(i)) for i in items)))
    out += [_bytes(24, _schema(s)) for s in schema.get("allOf") or ()]
    properties = schema.get("properties")
    if isinstance(properties, dict):
        named = b"".join(
            _bytes(1, _string(1, name) + _bytes(2, _schema(sub)))
            for name, sub in properties.items()
        )
        out.append(_bytes(25, named))
    out += [_string(26, schema.get("discriminator")), _bool(27, schema.get("readOnly"))]
    if "example" in schema:
        out.append(_bytes(30, _any(schema["example"])))
    out.append(_vendor(31, schema))
    return b"".join(out)


def _parameter(parameter: JSONDict) -> bytes:
    """A ``ParametersItem``: a body parameter, or a query / path / header one."""
    if "$ref" in parameter:
        return _bytes(2, _string(1, parameter["$ref"]))
    where = parameter.get("in")
    if where == "body":
        body = (
            _string(1, parameter.get("description"))
            + _string(2, parameter.get("name"))
            + _string(3, where)
            + _bool(4, parameter.get("required"))
            + _bytes(5, _schema(parameter.get("schema") or {}))
            + _vendor(6, parameter)
        )
        return _bytes(1, _bytes(1, body))
    common = (
        _bool(1, parameter.get("required"))
        + _string(2, where)
        + _string(3, parameter.get("description"))
        + _string(4, parameter.get("name"))
    )
    if where == "query":
        sub = (
            common
            + _string(6, parameter.get("type"))
            + _string(7, parameter.get("format"))
            + _bool(20, parameter.get("uniqueItems"))
        )
        choice = 3
    elif where == "path":
        sub = common + _string(5, parameter.get("type")) + _string(6, parameter.get("format"))
        choice = 4
    elif where == "header":
        sub = common + _string(5, parameter.get("type")) + _string(6, parameter.get("format"))
        choice = 1
    else:
        sub = common + _string(6, parameter.get("type"))
        choice = 2
    return _bytes(1, _bytes(2, _bytes(choice, sub)))


def _operation(operation: JSONDict) -> bytes:
    out = [
        _strings(1, operation.get("tags")),
        _string(3, operation.get("description")),
        _string(5, operation.get("operationId")),
        _strings(6, operation.get("produces")),
        _strings(7, operation.get("consumes")),
    ]
    out += [_bytes(8, _parameter(p)) for p in operation.get("parameters") or ()]
    responses = b""
    for code, response in (operation.get("responses") or {}).items():
        body = _string(1, response.get("description"))
        if isinstance(response.get("schema"), dict):
            body += _bytes(2, _bytes(1, _schema(response["schema"])))
        responses += _bytes(1, _string(1, code) + _bytes(2, _bytes(1, body)))
    if responses:
        out.append(_bytes(9, responses))
    out += [_strings(10, operation.get("schemes")), _vendor(13, operation)]
    return b"".join(out)


_VERBS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(item: JSONDict) -> bytes:
    out = [_bytes(n, _operation(item[verb])) for verb, n in _VERBS.items() if verb in item]
    out += [_bytes(9, _parameter(p)) for p in item.get("parameters") or ()]
    out.append(_vendor(10, item))
    return b"".join(out)


def document_to_protobuf(document: JSONDict) -> bytes:
    """The gnostic ``openapi.v2.Document`` bytes of a Swagger 2.0 JSON document."""
    info = document.get("info") or {}
    out = [
        _string(1, document.get("swagger", "2.0")),
        _bytes(2, _string(1, info.get("title")) + _string(2, info.get("version"))),
    ]
    paths = b"".join(
        _bytes(2, _string(1, path) + _bytes(2, _path_item(item)))
        for path, item in (document.get("paths") or {}).items()
    )
    out.append(_bytes(8, paths))
    definitions = b"".join(
        _bytes(1, _string(1, name) + _bytes(2, _schema(schema)))
        for name, schema in (document.get("definitions") or {}).items()
    )
    out.append(_bytes(9, definitions))
    return b"".join(out)
