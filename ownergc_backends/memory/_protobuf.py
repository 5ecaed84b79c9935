"""Request bodies in Kubernetes' protobuf encoding, decoded to the JSON the apiserver stores.

kubectl 1.32 and newer send ``application/vnd.kubernetes.protobuf`` bodies for
the objects its ``create`` generators build, and do not retry in JSON. The
envelope is the magic ``k8s\\x00`` followed by a ``runtime.Unknown``
(typeMeta, raw, contentEncoding, contentType) whose ``raw`` is the typed
message. The field numbers below are those of k8s.io/api and
k8s.io/apimachinery's ``generated.proto`` (facts of the wire format, not
code), for the kinds kubectl's generators produce most: ConfigMap, Secret,
Namespace, ServiceAccount, Deployment. Anything else (another kind, a field this schema
does not know) is refused with a clear 415, never decoded half-way.

Go's protobuf encoder writes zero values of non-pointer fields; JSON omits
them (``omitempty``), and so does this decoder.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any, Final, TypeAlias

from ownergc.errors import UnsupportedPatchType

__all__ = ["MAGIC", "PROTOBUF", "ProtobufError", "decode_object", "supported_kinds"]

MAGIC: Final = b"k8s\x00"
PROTOBUF: Final = "application/vnd.kubernetes.protobuf"
_MEDIA: Final = "UnsupportedMediaType"

#: A field: (JSON name, how to decode it, "one" / "many" (repeated) / "map").
Field: TypeAlias = tuple[str, "Decoder", str]
Schema: TypeAlias = Mapping[int, Field]
Decoder: TypeAlias = Callable[[Any], Any]


class ProtobufError(UnsupportedPatchType):
    """A protobuf body this server cannot decode exactly (answered with 415)."""


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


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, varint or length-delimited bytes) in wire order."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, value))
        elif wire == 2:
            length, i = _varint(data, i)
            out.append((number, data[i : i + length]))
            i += length
        else:
            raise ProtobufError(
                f"unsupported protobuf wire type {wire} (field {number})",
                reason=_MEDIA,
            )
    return out


def _string(value: Any) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("a string field was not length-delimited", reason=_MEDIA)
    return value.decode()


def _bytes(value: Any) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("a bytes field was not length-delimited", reason=_MEDIA)
    return base64.b64encode(value).decode()


def _int(value: Any) -> int:
    if not isinstance(value, int):
        raise ProtobufError("an integer field was not a varint", reason=_MEDIA)
    return value - (1 << 64) if value >= 1 << 63 else value


def _bool(value: Any) -> bool:
    return bool(_int(value))


def _time(value: Any) -> str | None:
    """``metav1.Time``: seconds (1) and nanos (2); the zero time is JSON null."""
    seconds = nanos = 0
    for number, raw in _fields(value):
        if number == 1:
            seconds = _int(raw)
        elif number == 2:
            nanos = _int(raw)
    if seconds == 0 and nanos == 0:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _map(value_decoder: Decoder) -> Decoder:
    def decode(value: Any) -> tuple[str, Any]:
        key = ""
        item: Any = ""
        for number, raw in _fields(value):
            if number == 1:
                key = _string(raw)
            elif number == 2:
                item = value_decoder(raw)
        return key, item

    return decode


def _message(schema: Schema, name: str, keep: frozenset[str] = frozenset()) -> Decoder:
    """A message decoder; ``keep``: its fields JSON shows even when zero (pointer
    fields, which Go writes only when set, and sub-objects shown empty)."""

    def decode(value: Any) -> dict[str, Any]:
        if not isinstance(value, bytes):
            raise ProtobufError(f"{name} was not length-delimited", reason=_MEDIA)
        out: dict[str, Any] = {}
        for number, raw in _fields(value):
            try:
                key, decoder, arity = schema[number]
            except KeyError:
                if raw in (b"", 0):
                    # Go writes zero values of plain fields; JSON omits them (omitempty).
                    continue
                raise ProtobufError(
                    f"field {number} of {name} is not known to this server: send JSON",
                    reason=_MEDIA,
                ) from None
            item = decoder(raw)
            if arity == "map":  # one entry (key 1, value 2) per occurrence
                out.setdefault(key, {})[item[0]] = item[1]
            elif arity == "many":
                out.setdefault(key, []).append(item)
            else:
                out[key] = item
        return {k: v for k, v in out.items() if v not in ("", 0, None, False) or k in keep}

    return decode


#: The messages kubectl's generators send, one per paragraph: ``Name`` then
#: ``number jsonName type`` per field, numbers from k8s.io/api's and
#: apimachinery's ``generated.proto``. Types: string, bytes, int, bool, time,
#: ``map<string>`` / ``map<bytes>``, another message's name; ``[]`` before a
#: type repeats it; ``!`` after it keeps the field in JSON even when zero (Go
#: pointer fields, written only when set, and sub-objects shown empty).
_SCHEMA: Final = """
OwnerReference
  1 kind string; 3 name string; 4 uid string; 5 apiVersion string
  6 controller bool!; 7 blockOwnerDeletion bool!

ObjectMeta
  1 name string; 2 generateName string; 3 namespace string; 4 selfLink string
  5 uid string; 6 resourceVersion string; 7 generation int
  8 creationTimestamp time; 9 deletionTimestamp time; 10 deletionGracePeriodSeconds int!
  11 labels map<string>; 12 annotations map<string>
  13 ownerReferences []OwnerReference; 14 finalizers []string

LocalObjectReference
  1 name string

LabelSelector
  1 matchLabels map<string>

ResourceRequirements
  1 limits map<string>; 2 requests map<string>

ContainerPort
  1 name string; 2 hostPort int; 3 containerPort int; 4 protocol string; 5 hostIP string

EnvVar
  1 name string; 2 value string

Container
  1 name string; 2 image string; 3 command []string; 4 args []string; 5 workingDir string
  6 ports []ContainerPort; 7 env []EnvVar; 8 resources ResourceRequirements
  14 imagePullPolicy string

PodSpec
  2 containers []Container; 3 restartPolicy string; 7 nodeSelector map<string>
  8 serviceAccountName string

PodTemplateSpec
  1 metadata ObjectMeta; 2 spec PodSpec

DeploymentStrategy
  1 type string

DeploymentSpec
  1 replicas int!; 2 selector LabelSelector; 3 template PodTemplateSpec
  4 strategy DeploymentStrategy; 5 minReadySeconds int; 7 paused bool

DeploymentStatus
  1 observedGeneration int; 2 replicas int; 3 updatedReplicas int
  4 availableReplicas int; 5 unavailableReplicas int

Deployment
  1 metadata ObjectMeta; 2 spec DeploymentSpec!; 3 status DeploymentStatus!

ConfigMap
  1 metadata ObjectMeta; 2 data map<string>; 3 binaryData map<bytes>; 4 immutable bool!

Secret
  1 metadata ObjectMeta; 2 data map<bytes>; 3 type string; 4 stringData map<string>
  5 immutable bool!

NamespaceSpec
  1 finalizers []string

NamespaceStatus
  1 phase string

Namespace
  1 metadata ObjectMeta; 2 spec NamespaceSpec!; 3 status NamespaceStatus!

ServiceAccount
  1 metadata ObjectMeta; 3 imagePullSecrets []LocalObjectReference
  4 automountServiceAccountToken bool!
"""

_SCALARS: Final[dict[str, Decoder]] = {
    "string": _string,
    "bytes": _bytes,
    "int": _int,
    "bool": _bool,
    "time": _time,
}


def _compile(schema: str) -> dict[str, Decoder]:
    """Decoders for every message of ``schema`` (each may use the ones above it)."""
    decoders: dict[str, Decoder] = {}
    for paragraph in schema.strip().split("\n\n"):
        name, *lines = paragraph.splitlines()
        fields: dict[int, Field] = {}
        keep: set[str] = set()
        for spec in (item for line in lines for item in line.split(";")):
            number, json_name, kind = spec.split()
            if kind.endswith("!"):
                kind = kind[:-1]
                keep.add(json_name)
            arity = "one"
            if kind.startswith("[]"):
                kind, arity = kind[2:], "many"
            if kind.startswith("map<"):
                decoder, arity = _map(_SCALARS[kind[4:-1]]), "map"
            else:
                decoder = _SCALARS.get(kind) or decoders[kind]
            fields[int(number)] = (json_name, decoder, arity)
        decoders[name.strip()] = _message(fields, name.strip(), frozenset(keep))
    return decoders


_MESSAGES: Final = _compile(_SCHEMA)

#: (apiVersion, kind) -> the decoder of the typed message.
_KINDS: Final[dict[tuple[str, str], Decoder]] = {
    (api_version, kind): _MESSAGES[kind]
    for api_version, kind in (
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Namespace"),
        ("apps/v1", "Deployment"),
        ("v1", "ServiceAccount"),
    )
}


def supported_kinds() -> list[str]:
    """``apiVersion/kind`` of every kind this decoder reads."""
    return sorted(f"{av}/{kind}" for av, kind in _KINDS)


def decode_object(body: bytes) -> dict[str, Any]:
    """The JSON object of a ``k8s\\x00`` + ``runtime.Unknown`` protobuf body."""
    if not body.startswith(MAGIC):
        raise ProtobufError("a protobuf body must start with the k8s\\x00 magic", reason=_MEDIA)
    api_version = kind = ""
    raw = b""
    for number, value in _fields(body[len(MAGIC) :]):
        if number == 1 and isinstance(value, bytes):
            for tm_number, tm_value in _fields(value):
                if tm_number == 1:
                    api_version = _string(tm_value)
                elif tm_number == 2:
                    kind = _string(tm_value)
        elif number == 2 and isinstance(value, bytes):
            raw = value
        elif number == 3 and value:
            raise ProtobufError("compressed protobuf bodies are not supported", reason=_MEDIA)
    decoder = _KINDS.get((api_version, kind))
    if decoder is None:
        raise ProtobufError(
            f"protobuf bodies of {api_version or '?'}/{kind or '?'} are not supported by "
            f"this server (it reads {', '.join(supported_kinds())}): send JSON, e.g. with "
            "kubectl apply -f, or kubectl create ... --dry-run=client -o json | kubectl apply -f -",
            reason=_MEDIA,
        )
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    obj.update(decoder(raw))
    return obj
