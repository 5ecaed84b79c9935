"""Request bodies in Kubernetes' protobuf encoding, decoded to the JSON the apiserver stores.

kubectl 1.32 and newer send ``application/vnd.kubernetes.protobuf`` bodies for
the objects its ``create`` generators build, and do not retry in JSON. The
envelope is the magic ``k8s\\x00`` and a ``runtime.Unknown`` (typeMeta, raw,
contentEncoding, contentType) whose ``raw`` is the typed message.

Every built-in kind is decoded from one schema (``_protobuf_schema.json.gz``), read off
upstream's ``generated.proto`` files and Go types by
``tools/gen_protobuf_schema.py``: field numbers and types from the former, and
from the latter what the JSON form of each field is (its name, pointer or not,
``omitempty`` / ``omitzero``, inlined embedded structs). That second half is
what makes the result the JSON the real server would store and answer with:
Go's encoder writes every non-pointer field, zero or not, while the JSON of
the same struct omits zero ``omitempty`` fields, keeps zero pointer fields
(``replicas: 0``), keeps non-``omitempty`` zeros and shows empty structs.
"""

from __future__ import annotations

import base64
import gzip
import json
import struct
from datetime import datetime, timedelta, timezone
from functools import cache
from importlib import resources
from typing import Any, Final

from ownergc.errors import UnsupportedPatchType

__all__ = [
    "MAGIC",
    "PROTOBUF",
    "ProtobufError",
    "decode_message",
    "decode_object",
    "supported_kinds",
]

MAGIC: Final = b"k8s\x00"
PROTOBUF: Final = "application/vnd.kubernetes.protobuf"
_MEDIA: Final = "UnsupportedMediaType"
_META: Final = "k8s.io.apimachinery.pkg.apis.meta.v1."
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)


class ProtobufError(UnsupportedPatchType):
    """A protobuf body this server cannot decode exactly (answered with 415)."""


@cache
def _schema() -> dict[str, Any]:
    data = (
        resources.files("ownergc_backends.memory").joinpath("_protobuf_schema.json.gz").read_bytes()
    )
    schema: dict[str, Any] = json.loads(gzip.decompress(data))
    return schema


def supported_kinds() -> list[str]:
    """``apiVersion/kind`` of every kind this decoder reads."""
    return list(_schema()["kinds"])


# -- the wire -------------------------------------------------------------------------


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(data):
            raise ProtobufError("truncated protobuf varint", reason=_MEDIA)
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ProtobufError("protobuf varint longer than 64 bits", reason=_MEDIA)


def _fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) in wire order; fixed-width values as raw bytes."""
    out: list[tuple[int, int, int | bytes]] = []
    i, end = 0, len(data)
    while i < end:
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, wire, value))
            continue
        if wire == 2:
            length, i = _varint(data, i)
        elif wire == 1:
            length = 8
        elif wire == 5:
            length = 4
        else:
            raise ProtobufError(
                f"unsupported protobuf wire type {wire} (field {number})", reason=_MEDIA
            )
        if i + length > end:
            raise ProtobufError(f"truncated protobuf field {number}", reason=_MEDIA)
        out.append((number, wire, data[i : i + length]))
        i += length
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(typ: str, wire: int, raw: int | bytes, where: str) -> Any:
    if typ == "string":
        if not isinstance(raw, bytes):
            raise ProtobufError(f"{where}: a string was not length-delimited", reason=_MEDIA)
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise ProtobufError(f"{where}: a string is not UTF-8", reason=_MEDIA) from None
    if typ == "bytes":
        if not isinstance(raw, bytes):
            raise ProtobufError(f"{where}: bytes were not length-delimited", reason=_MEDIA)
        return base64.b64encode(raw).decode()
    if typ in ("double", "float"):
        if not isinstance(raw, bytes) or len(raw) != (8 if typ == "double" else 4):
            raise ProtobufError(f"{where}: a {typ} had the wrong wire type", reason=_MEDIA)
        number = struct.unpack("<d" if typ == "double" else "<f", raw)[0]
        return int(number) if number.is_integer() else number
    if not isinstance(raw, int):
        raise ProtobufError(f"{where}: a {typ} was not a varint", reason=_MEDIA)
    if typ == "bool":
        return raw != 0
    if typ in ("int32", "int64"):
        return _signed(raw)
    return raw  # uint32, uint64


def _packed(typ: str, raw: bytes, where: str) -> list[Any]:
    """A packed repeated scalar: varints (or fixed-width numbers) back to back."""
    if typ in ("double", "float"):
        size = 8 if typ == "double" else 4
        return [_scalar(typ, 1, raw[i : i + size], where) for i in range(0, len(raw), size)]
    values: list[Any] = []
    i = 0
    while i < len(raw):
        value, i = _varint(raw, i)
        values.append(_scalar(typ, 0, value, where))
    return values


_ZERO_SCALAR: Final[dict[str, Any]] = {
    "string": "",
    "bytes": None,  # a nil []byte is JSON null
    "bool": False,
}


# -- the types whose JSON is not their message's fields -------------------------------------


def _time(data: bytes, micro: bool) -> str | None:
    """``metav1.Time`` / ``MicroTime``: no bytes is the zero time (JSON null)."""
    if not data:
        return None
    seconds = nanos = 0
    for number, _wire, raw in _fields(data):
        if number == 1 and isinstance(raw, int):
            seconds = _signed(raw)
        elif number == 2 and isinstance(raw, int):
            nanos = _signed(raw)
    moment = _EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000)
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def go_duration(nanoseconds: int) -> str:
    """A duration as Go's ``time.Duration.String`` writes it (``1h2m3.5s``, ``250ms``)."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    n = abs(nanoseconds)
    if n < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if n >= size:
                return sign + _trim(n, size) + unit
    hours, rest = divmod(n, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _trim(rest, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _trim(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _only(data: bytes, number: int) -> int | bytes | None:
    found: int | bytes | None = None
    for field, _wire, raw in _fields(data):
        if field == number:
            found = raw
    return found


def _raw_json(data: bytes, what: str) -> Any:
    raw = _only(data, 1)
    if not raw:
        return None
    if not isinstance(raw, bytes):
        raise ProtobufError(f"{what}: raw was not length-delimited", reason=_MEDIA)
    if raw.startswith(MAGIC):
        return decode_object(raw)
    try:
        return json.loads(raw)
    except ValueError:
        raise ProtobufError(
            f"{what} holds bytes that are neither JSON nor protobuf", reason=_MEDIA
        ) from None


def _int_or_string(data: bytes) -> int | str:
    kind = int_val = 0
    str_val = ""
    for number, _wire, raw in _fields(data):
        if number == 1 and isinstance(raw, int):
            kind = raw
        elif number == 2 and isinstance(raw, int):
            int_val = _signed(raw)
        elif number == 3 and isinstance(raw, bytes):
            str_val = raw.decode()
    return str_val if kind == 1 else int_val


def _quantity(data: bytes) -> str:
    raw = _only(data, 1)
    return raw.decode() if isinstance(raw, bytes) and raw else "0"


def _duration(data: bytes) -> str:
    raw = _only(data, 1)
    return go_duration(_signed(raw) if isinstance(raw, int) else 0)


_SPECIAL: Final[dict[str, Any]] = {
    _META + "Time": lambda data: _time(data, micro=False),
    _META + "MicroTime": lambda data: _time(data, micro=True),
    _META + "Duration": _duration,
    _META + "FieldsV1": lambda data: _raw_json(data, "FieldsV1"),
    "k8s.io.apimachinery.pkg.runtime.RawExtension": lambda data: _raw_json(data, "RawExtension"),
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity,
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue": _quantity,
}


# -- messages ---------------------------------------------------------------------------


def _empty(value: Any) -> bool:
    """Go's ``omitempty``: false, 0, "", and nil or empty slices and maps (never a struct)."""
    return value is None or value is False or value == 0 or value in ("", [], {})


def _value(typ: str, wire: int, raw: int | bytes, where: str) -> Any:
    if typ in _SPECIAL or "." in typ:
        if not isinstance(raw, bytes):
            raise ProtobufError(f"{where}: a message was not length-delimited", reason=_MEDIA)
        return decode_message(typ, raw)
    return _scalar(typ, wire, raw, where)


def decode_message(name: str, data: bytes, warnings: list[str] | None = None) -> Any:
    """The JSON value of message ``name`` encoded as ``data``.

    Unknown field numbers are dropped, as the apiserver's decoder drops them,
    and reported in ``warnings`` so a client newer than this schema hears of it.
    """
    special = _SPECIAL.get(name)
    if special is not None:
        return special(data)
    try:
        entry = _schema()["messages"][name]
    except KeyError:
        raise ProtobufError(
            f"protobuf message {name} is not known to this server", reason=_MEDIA
        ) from None
    fields: dict[str, list[Any]] = entry["fields"]
    seen: dict[str, Any] = {}
    for number, wire, raw in _fields(data):
        spec = fields.get(str(number))
        if spec is None:
            if warnings is not None:
                warnings.append(f"unknown field number {number} of {name} dropped")
            continue
        json_name, typ, arity, _flags = spec
        where = f"{name}.{json_name}"
        if arity == "map":
            key, item = "", None
            item_seen = False
            if not isinstance(raw, bytes):
                raise ProtobufError(f"{where}: a map entry was not length-delimited", reason=_MEDIA)
            for entry_number, entry_wire, entry_raw in _fields(raw):
                if entry_number == 1:
                    key = _scalar("string", entry_wire, entry_raw, where)
                elif entry_number == 2:
                    item, item_seen = _value(typ, entry_wire, entry_raw, where), True
            if not item_seen:
                item = _zero(typ, "")
            seen.setdefault(json_name, {})[key] = item
        elif arity == "many":
            items = seen.setdefault(json_name, [])
            if wire == 2 and typ not in ("string", "bytes") and "." not in typ:
                assert isinstance(raw, bytes)
                items.extend(_packed(typ, raw, where))
            else:
                items.append(_value(typ, wire, raw, where))
        else:
            seen[json_name] = _value(typ, wire, raw, where)
    if entry.get("list"):
        return next(iter(seen.values()), None)  # a named slice type: nil is JSON null
    out: dict[str, Any] = {}
    for json_name, typ, arity, flags in fields.values():
        if json_name in seen:
            value = seen[json_name]
        elif "p" in flags or "?" in flags:
            continue  # a nil pointer: not in JSON
        else:
            value = None if arity != "one" else _zero(typ, flags)
        if "i" in flags:
            if isinstance(value, dict):
                out.update(value)
            continue
        if "p" in flags or "?" in flags:
            out[json_name] = value
        elif "z" in flags and (value is None or _is_zero_struct(typ, value) or _empty(value)):
            continue
        elif "e" in flags and _omittable(typ, arity) and _empty(value):
            continue
        else:
            out[json_name] = value
    return out


def _omittable(typ: str, arity: str) -> bool:
    """Whether ``omitempty`` can drop the field: never a struct, only scalars, slices, maps."""
    if arity != "one" or "." not in typ:
        return True
    return typ not in _SPECIAL and bool(_schema()["messages"].get(typ, {}).get("list"))


def _zero(typ: str, flags: str) -> Any:
    """What JSON shows for a non-pointer field the body did not carry (Go's zero value)."""
    if typ in _ZERO_SCALAR:
        return _ZERO_SCALAR[typ]
    if "." not in typ:
        return 0
    return decode_message(typ, b"")


def _is_zero_struct(typ: str, value: Any) -> bool:
    return "." in typ and value == _zero(typ, "")


def decode_object(body: bytes, warnings: list[str] | None = None) -> dict[str, Any]:
    """The JSON object of a ``k8s\\x00`` + ``runtime.Unknown`` protobuf body."""
    if not body.startswith(MAGIC):
        raise ProtobufError("a protobuf body must start with the k8s\\x00 magic", reason=_MEDIA)
    api_version = kind = ""
    raw = b""
    for number, _wire, value in _fields(body[len(MAGIC) :]):
        if number == 1 and isinstance(value, bytes):
            for tm_number, _tm_wire, tm_value in _fields(value):
                if tm_number == 1 and isinstance(tm_value, bytes):
                    api_version = tm_value.decode()
                elif tm_number == 2 and isinstance(tm_value, bytes):
                    kind = tm_value.decode()
        elif number == 2 and isinstance(value, bytes):
            raw = value
        elif number == 3 and value:
            raise ProtobufError("compressed protobuf bodies are not supported", reason=_MEDIA)
    message = _schema()["kinds"].get(f"{api_version}/{kind}")
    if message is None:
        raise ProtobufError(
            f"protobuf bodies of {api_version or '?'}/{kind or '?'} are not supported by this "
            "server (it reads the built-in kinds of Kubernetes; custom resources are always "
            "sent as JSON): send JSON, e.g. with kubectl apply -f",
            reason=_MEDIA,
        )
    obj: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    decoded = decode_message(message, raw, warnings)
    assert isinstance(decoded, dict)
    obj.update(decoded)
    return obj
