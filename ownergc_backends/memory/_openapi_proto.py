"""An OpenAPI v2 document in protobuf, as kube-apiserver serves ``/openapi/v2`` to
``Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf``.

kubectl up to 1.26 reads the OpenAPI document only in this form (gnostic's
``openapi.v2.Document`` message): ``kubectl explain``, client-side validation
and the check whether a kind supports server dry run (a ``dryRun`` parameter
on its PATCH operation) all depend on it. The message layout below is the
field numbering of gnostic's ``openapiv2/OpenAPIv2.proto`` (facts of the wire
format, written out here as tables); values that the message holds as
``Any`` (defaults, examples, enums, vendor extensions) travel as YAML text,
for which JSON, a subset of YAML, is used.

Only the encoder exists: the server never reads such a document.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["PROTO_OPENAPI_V2", "encode_openapi_v2"]

#: The media type of the protobuf OpenAPI v2 document.
PROTO_OPENAPI_V2: Final = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

_VARINT, _FIXED64, _BYTES = 0, 1, 2


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class _Message:
    """A message being written: fields appended in order."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def bytes_field(self, number: int, data: bytes) -> None:
        self.parts.append(_varint(number << 3 | _BYTES) + _varint(len(data)) + data)

    def string(self, number: int, value: Any) -> None:
        if isinstance(value, str) and value:
            self.bytes_field(number, value.encode())

    def strings(self, number: int, values: Any) -> None:
        if isinstance(values, list):
            for value in values:
                if isinstance(value, str):
                    self.bytes_field(number, value.encode())

    def boolean(self, number: int, value: Any) -> None:
        if value is True:
            self.parts.append(_varint(number << 3 | _VARINT) + b"\x01")

    def int64(self, number: int, value: Any) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and value:
            self.parts.append(_varint(number << 3 | _VARINT) + _varint(value))

    def double(self, number: int, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value:
            self.parts.append(_varint(number << 3 | _FIXED64) + struct.pack("<d", float(value)))

    def message(self, number: int, data: bytes | None) -> None:
        if data is not None:
            self.bytes_field(number, data)

    def done(self) -> bytes:
        return b"".join(self.parts)


def _any(value: Any) -> bytes:
    """``Any``: the value as YAML text (field 2)."""
    m = _Message()
    m.bytes_field(2, json.dumps(value, sort_keys=False).encode())
    return m.done()


def _named(name: str, value: bytes) -> bytes:
    m = _Message()
    m.string(1, name)
    m.bytes_field(2, value)
    return m.done()


def _extensions(m: _Message, number: int, spec: Mapping[str, Any]) -> None:
    """``repeated NamedAny vendor_extension``: every ``x-`` key, in order."""
    for key, value in spec.items():
        if key.startswith("x-"):
            m.bytes_field(number, _named(key, _any(value)))


def _anys(m: _Message, number: int, values: Any) -> None:
    if isinstance(values, list):
        for value in values:
            m.bytes_field(number, _any(value))


def _external_docs(spec: Any) -> bytes | None:
    if not isinstance(spec, dict):
        return None
    m = _Message()
    m.string(1, spec.get("description"))
    m.string(2, spec.get("url"))
    _extensions(m, 3, spec)
    return m.done()


def _schema(spec: Any) -> bytes:
    """``Schema`` (a JSON Schema object as Swagger 2.0 restricts it)."""
    if not isinstance(spec, dict):
        return b""
    m = _Message()
    m.string(1, spec.get("$ref"))
    m.string(2, spec.get("format"))
    m.string(3, spec.get("title"))
    m.string(4, spec.get("description"))
    if "default" in spec:
        m.bytes_field(5, _any(spec["default"]))
    m.double(6, spec.get("multipleOf"))
    m.double(7, spec.get("maximum"))
    m.boolean(8, spec.get("exclusiveMaximum"))
    m.double(9, spec.get("minimum"))
    m.boolean(10, spec.get("exclusiveMinimum"))
    m.int64(11, spec.get("maxLength"))
    m.int64(12, spec.get("minLength"))
    m.string(13, spec.get("pattern"))
    m.int64(14, spec.get("maxItems"))
    m.int64(15, spec.get("minItems"))
    m.boolean(16, spec.get("uniqueItems"))
    m.int64(17, spec.get("maxProperties"))
    m.int64(18, spec.get("minProperties"))
    m.strings(19, spec.get("required"))
    _anys(m, 20, spec.get("enum"))
    extra = spec.get("additionalProperties")
    if isinstance(extra, dict):
        item = _Message()
        item.bytes_field(1, _schema(extra))
        m.bytes_field(21, item.done())
    elif isinstance(extra, bool):
        item = _Message()
        item.parts.append(_varint(2 << 3 | _VARINT) + (b"\x01" if extra else b"\x00"))
        m.bytes_field(21, item.done())
    kind = spec.get("type")
    if kind is not None:
        types = _Message()
        types.strings(1, kind if isinstance(kind, list) else [kind])
        m.bytes_field(22, types.done())
    items = spec.get("items")
    if items is not None:
        holder = _Message()
        for item_spec in items if isinstance(items, list) else [items]:
            holder.bytes_field(1, _schema(item_spec))
        m.bytes_field(23, holder.done())
    for part in spec.get("allOf") or []:
        m.bytes_field(24, _schema(part))
    properties = spec.get("properties")
    if isinstance(properties, dict):
        props = _Message()
        for name, sub in properties.items():
            props.bytes_field(1, _named(name, _schema(sub)))
        m.bytes_field(25, props.done())
    m.string(26, spec.get("discriminator"))
    m.boolean(27, spec.get("readOnly"))
    m.message(29, _external_docs(spec.get("externalDocs")))
    if "example" in spec:
        m.bytes_field(30, _any(spec["example"]))
    _extensions(m, 31, spec)
    return m.done()


def _primitive_fields(m: _Message, spec: Mapping[str, Any], first: int) -> None:
    """The fields ``PrimitivesItems`` and the non-body parameter sub-schemas share, in the
    same order from ``type`` (numbered from ``first``) to the vendor extensions."""
    m.string(first, spec.get("type"))
    m.string(first + 1, spec.get("format"))
    if isinstance(spec.get("items"), dict):
        m.bytes_field(first + 2, _primitives(spec["items"]))
    m.string(first + 3, spec.get("collectionFormat"))
    if "default" in spec:
        m.bytes_field(first + 4, _any(spec["default"]))
    m.double(first + 5, spec.get("maximum"))
    m.boolean(first + 6, spec.get("exclusiveMaximum"))
    m.double(first + 7, spec.get("minimum"))
    m.boolean(first + 8, spec.get("exclusiveMinimum"))
    m.int64(first + 9, spec.get("maxLength"))
    m.int64(first + 10, spec.get("minLength"))
    m.string(first + 11, spec.get("pattern"))
    m.int64(first + 12, spec.get("maxItems"))
    m.int64(first + 13, spec.get("minItems"))
    m.boolean(first + 14, spec.get("uniqueItems"))
    _anys(m, first + 15, spec.get("enum"))
    m.double(first + 16, spec.get("multipleOf"))
    _extensions(m, first + 17, spec)


def _primitives(spec: Any) -> bytes:
    """``PrimitivesItems`` (a non-body parameter's ``items``)."""
    if not isinstance(spec, dict):
        return b""
    m = _Message()
    _primitive_fields(m, spec, 1)
    return m.done()


def _sub_schema(spec: Mapping[str, Any], *, allow_empty: bool) -> bytes:
    """The header / formData / query / path parameter sub-schemas: required, in,
    description, name, then (query and formData only) ``allowEmptyValue``, then the
    primitive fields."""
    m = _Message()
    m.boolean(1, spec.get("required"))
    m.string(2, spec.get("in"))
    m.string(3, spec.get("description"))
    m.string(4, spec.get("name"))
    if allow_empty:
        m.boolean(5, spec.get("allowEmptyValue"))
    _primitive_fields(m, spec, 6 if allow_empty else 5)
    return m.done()


#: NonBodyParameter's oneof field per ``in``, and whether its layout has allowEmptyValue.
_NON_BODY: Final[dict[str, tuple[int, bool]]] = {
    "header": (1, False),
    "formData": (2, True),
    "query": (3, True),
    "path": (4, False),
}


def _parameter(spec: Any) -> bytes:
    """``Parameter``: a body parameter, or a non-body one by where it goes."""
    m = _Message()
    if not isinstance(spec, dict):
        return b""
    where = spec.get("in")
    if where == "body":
        body = _Message()
        body.string(1, spec.get("description"))
        body.string(2, spec.get("name"))
        body.string(3, where)
        body.boolean(4, spec.get("required"))
        if isinstance(spec.get("schema"), dict):
            body.bytes_field(5, _schema(spec["schema"]))
        _extensions(body, 6, spec)
        m.bytes_field(1, body.done())
    elif where in _NON_BODY:
        number, allow_empty = _NON_BODY[where]
        non_body = _Message()
        non_body.bytes_field(number, _sub_schema(spec, allow_empty=allow_empty))
        m.bytes_field(2, non_body.done())
    return m.done()


def _parameters_item(spec: Any) -> bytes:
    """``ParametersItem``: a ``$ref`` to a shared parameter, or the parameter itself."""
    m = _Message()
    if isinstance(spec, dict) and "$ref" in spec:
        ref = _Message()
        ref.string(1, spec["$ref"])
        ref.string(2, spec.get("description"))
        m.bytes_field(2, ref.done())
    else:
        m.bytes_field(1, _parameter(spec))
    return m.done()


def _response(spec: Any) -> bytes:
    m = _Message()
    if not isinstance(spec, dict):
        return b""
    m.string(1, spec.get("description"))
    if isinstance(spec.get("schema"), dict):
        item = _Message()
        item.bytes_field(1, _schema(spec["schema"]))
        m.bytes_field(2, item.done())
    _extensions(m, 5, spec)
    return m.done()


def _responses(spec: Any) -> bytes:
    m = _Message()
    if not isinstance(spec, dict):
        return b""
    for code, value in spec.items():
        if code.startswith("x-"):
            continue
        holder = _Message()
        if isinstance(value, dict) and "$ref" in value:
            ref = _Message()
            ref.string(1, value["$ref"])
            holder.bytes_field(2, ref.done())
        else:
            holder.bytes_field(1, _response(value))
        m.bytes_field(1, _named(code, holder.done()))
    _extensions(m, 2, spec)
    return m.done()


def _security(requirements: Any) -> list[bytes]:
    out = []
    for requirement in requirements if isinstance(requirements, list) else []:
        m = _Message()
        for name, scopes in (requirement or {}).items():
            array = _Message()
            array.strings(1, scopes)
            m.bytes_field(1, _named(name, array.done()))
        out.append(m.done())
    return out


def _operation(spec: Any) -> bytes:
    m = _Message()
    if not isinstance(spec, dict):
        return b""
    m.strings(1, spec.get("tags"))
    m.string(2, spec.get("summary"))
    m.string(3, spec.get("description"))
    m.message(4, _external_docs(spec.get("externalDocs")))
    m.string(5, spec.get("operationId"))
    m.strings(6, spec.get("produces"))
    m.strings(7, spec.get("consumes"))
    for parameter in spec.get("parameters") or []:
        m.bytes_field(8, _parameters_item(parameter))
    if "responses" in spec:
        m.bytes_field(9, _responses(spec["responses"]))
    m.strings(10, spec.get("schemes"))
    m.boolean(11, spec.get("deprecated"))
    for requirement in _security(spec.get("security")):
        m.bytes_field(12, requirement)
    _extensions(m, 13, spec)
    return m.done()


_OPERATIONS: Final = (
    ("get", 2),
    ("put", 3),
    ("post", 4),
    ("delete", 5),
    ("options", 6),
    ("head", 7),
    ("patch", 8),
)


def _path_item(spec: Any) -> bytes:
    m = _Message()
    if not isinstance(spec, dict):
        return b""
    m.string(1, spec.get("$ref"))
    for verb, number in _OPERATIONS:
        if verb in spec:
            m.bytes_field(number, _operation(spec[verb]))
    for parameter in spec.get("parameters") or []:
        m.bytes_field(9, _parameters_item(parameter))
    _extensions(m, 10, spec)
    return m.done()


def _map_of(spec: Any, encode: Callable[[Any], bytes]) -> bytes:
    """The gnostic ``additional_properties`` map of named values (field 1)."""
    m = _Message()
    for name, value in (spec or {}).items():
        m.bytes_field(1, _named(name, encode(value)))
    return m.done()


def _security_definition(spec: Any) -> bytes:
    """Only API keys and basic auth are described by kube-apiserver (BearerToken)."""
    m = _Message()
    if not isinstance(spec, dict):
        return b""
    item = _Message()
    item.string(1, spec.get("type"))
    if spec.get("type") == "apiKey":
        item.string(2, spec.get("name"))
        item.string(3, spec.get("in"))
        item.string(4, spec.get("description"))
        _extensions(item, 5, spec)
        m.bytes_field(2, item.done())
    else:
        item.string(2, spec.get("description"))
        _extensions(item, 3, spec)
        m.bytes_field(1, item.done())
    return m.done()


def encode_openapi_v2(document: Mapping[str, Any]) -> bytes:
    """``document`` (Swagger 2.0 as JSON) as a gnostic ``openapi.v2.Document``."""
    m = _Message()
    m.string(1, document.get("swagger"))
    info = document.get("info")
    if isinstance(info, dict):
        i = _Message()
        i.string(1, info.get("title"))
        i.string(2, info.get("version"))
        i.string(3, info.get("description"))
        i.string(4, info.get("termsOfService"))
        _extensions(i, 7, info)
        m.bytes_field(2, i.done())
    m.string(3, document.get("host"))
    m.string(4, document.get("basePath"))
    m.strings(5, document.get("schemes"))
    m.strings(6, document.get("consumes"))
    m.strings(7, document.get("produces"))
    paths = document.get("paths")
    if isinstance(paths, dict):
        p = _Message()
        for path, item in paths.items():
            if path.startswith("x-"):
                p.bytes_field(1, _named(path, _any(item)))
            else:
                p.bytes_field(2, _named(path, _path_item(item)))
        m.bytes_field(8, p.done())
    if isinstance(document.get("definitions"), dict):
        m.bytes_field(9, _map_of(document["definitions"], _schema))
    if isinstance(document.get("parameters"), dict):
        m.bytes_field(10, _map_of(document["parameters"], _parameter))
    if isinstance(document.get("responses"), dict):
        m.bytes_field(11, _map_of(document["responses"], _response))
    for requirement in _security(document.get("security")):
        m.bytes_field(12, requirement)
    if isinstance(document.get("securityDefinitions"), dict):
        m.bytes_field(13, _map_of(document["securityDefinitions"], _security_definition))
    m.message(15, _external_docs(document.get("externalDocs")))
    _extensions(m, 16, document)
    return m.done()
