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


_OWNER_REFERENCE = _message(
    {
        1: ("kind", _string, "one"),
        3: ("name", _string, "one"),
        4: ("uid", _string, "one"),
        5: ("apiVersion", _string, "one"),
        6: ("controller", _bool, "one"),
        7: ("blockOwnerDeletion", _bool, "one"),
    },
    "OwnerReference",
    frozenset({"controller", "blockOwnerDeletion"}),
)
_OBJECT_META = _message(
    {
        1: ("name", _string, "one"),
        2: ("generateName", _string, "one"),
        3: ("namespace", _string, "one"),
        4: ("selfLink", _string, "one"),
        5: ("uid", _string, "one"),
        6: ("resourceVersion", _string, "one"),
        7: ("generation", _int, "one"),
        8: ("creationTimestamp", _time, "one"),
        9: ("deletionTimestamp", _time, "one"),
        10: ("deletionGracePeriodSeconds", _int, "one"),
        11: ("labels", _map(_string), "map"),
        12: ("annotations", _map(_string), "map"),
        13: ("ownerReferences", _OWNER_REFERENCE, "many"),
        14: ("finalizers", _string, "many"),
    },
    "ObjectMeta",
    frozenset({"deletionGracePeriodSeconds"}),
)
_LOCAL_OBJECT_REFERENCE = _message({1: ("name", _string, "one")}, "LocalObjectReference")

_LABEL_SELECTOR = _message({1: ("matchLabels", _map(_string), "map")}, "LabelSelector")
_RESOURCES = _message(
    {1: ("limits", _map(_string), "map"), 2: ("requests", _map(_string), "map")},
    "ResourceRequirements",
)
_CONTAINER = _message(
    {
        1: ("name", _string, "one"),
        2: ("image", _string, "one"),
        3: ("command", _string, "many"),
        4: ("args", _string, "many"),
        5: ("workingDir", _string, "one"),
        6: (
            "ports",
            _message(
                {
                    1: ("name", _string, "one"),
                    2: ("hostPort", _int, "one"),
                    3: ("containerPort", _int, "one"),
                    4: ("protocol", _string, "one"),
                    5: ("hostIP", _string, "one"),
                },
                "ContainerPort",
            ),
            "many",
        ),
        7: (
            "env",
            _message({1: ("name", _string, "one"), 2: ("value", _string, "one")}, "EnvVar"),
            "many",
        ),
        8: ("resources", _RESOURCES, "one"),
        14: ("imagePullPolicy", _string, "one"),
    },
    "Container",
)
_POD_TEMPLATE = _message(
    {
        1: ("metadata", _OBJECT_META, "one"),
        2: (
            "spec",
            _message(
                {
                    2: ("containers", _CONTAINER, "many"),
                    3: ("restartPolicy", _string, "one"),
                    7: ("nodeSelector", _map(_string), "map"),
                    8: ("serviceAccountName", _string, "one"),
                },
                "PodSpec",
            ),
            "one",
        ),
    },
    "PodTemplateSpec",
)
_DEPLOYMENT_STATUS = _message(
    {
        n: (f, _int, "one")
        for n, f in enumerate(
            (
                "observedGeneration",
                "replicas",
                "updatedReplicas",
                "availableReplicas",
                "unavailableReplicas",
            ),
            start=1,
        )
    },
    "DeploymentStatus",
)

#: (apiVersion, kind) -> the schema of the typed message.
_KINDS: Final[dict[tuple[str, str], Decoder]] = {
    ("v1", "ConfigMap"): _message(
        {
            1: ("metadata", _OBJECT_META, "one"),
            2: ("data", _map(_string), "map"),
            3: ("binaryData", _map(_bytes), "map"),
            4: ("immutable", _bool, "one"),
        },
        "ConfigMap",
        frozenset({"immutable"}),
    ),
    ("v1", "Secret"): _message(
        {
            1: ("metadata", _OBJECT_META, "one"),
            2: ("data", _map(_bytes), "map"),
            3: ("type", _string, "one"),
            4: ("stringData", _map(_string), "map"),
            5: ("immutable", _bool, "one"),
        },
        "Secret",
        frozenset({"immutable"}),
    ),
    ("v1", "Namespace"): _message(
        {
            1: ("metadata", _OBJECT_META, "one"),
            2: ("spec", _message({1: ("finalizers", _string, "many")}, "NamespaceSpec"), "one"),
            3: ("status", _message({1: ("phase", _string, "one")}, "NamespaceStatus"), "one"),
        },
        "Namespace",
        frozenset({"spec", "status"}),
    ),
    ("apps/v1", "Deployment"): _message(
        {
            1: ("metadata", _OBJECT_META, "one"),
            2: (
                "spec",
                _message(
                    {
                        1: ("replicas", _int, "one"),
                        2: ("selector", _LABEL_SELECTOR, "one"),
                        3: ("template", _POD_TEMPLATE, "one"),
                        4: (
                            "strategy",
                            _message({1: ("type", _string, "one")}, "DeploymentStrategy"),
                            "one",
                        ),
                        5: ("minReadySeconds", _int, "one"),
                        7: ("paused", _bool, "one"),
                    },
                    "DeploymentSpec",
                    frozenset({"replicas"}),
                ),
                "one",
            ),
            3: ("status", _DEPLOYMENT_STATUS, "one"),
        },
        "Deployment",
        frozenset({"spec", "status"}),
    ),
    ("v1", "ServiceAccount"): _message(
        {
            1: ("metadata", _OBJECT_META, "one"),
            3: ("imagePullSecrets", _LOCAL_OBJECT_REFERENCE, "many"),
            4: ("automountServiceAccountToken", _bool, "one"),
        },
        "ServiceAccount",
        frozenset({"automountServiceAccountToken"}),
    ),
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
