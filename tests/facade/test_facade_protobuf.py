"""kubectl ≥ 1.32's protobuf request bodies, decoded to what kubectl means.

tests/data/kubectl-1.37/ holds bodies kubectl 1.37 sent (recorded) and the
same objects as kubectl prints them with --dry-run=client -o json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ownergc_backends.memory._protobuf import ProtobufError, decode_object
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import request

DATA = Path(__file__).resolve().parents[1] / "data" / "kubectl-1.37"
PROTOBUF = {"Content-Type": "application/vnd.kubernetes.protobuf"}
CMS = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(
    "name",
    [
        "create-configmap",
        "create-secret-generic",
        "create-namespace",
        "create-serviceaccount",
        "create-deployment",
    ],
)
def test_decodes_what_kubectl_means(name: str) -> None:
    decoded = decode_object((DATA / f"{name}.bin").read_bytes())
    assert decoded == json.loads((DATA / f"{name}.json").read_text())


def test_the_facade_creates_from_protobuf(server: KubeAPIServer) -> None:
    body = (DATA / "create-configmap.bin").read_bytes()
    reply = request(
        server, "POST", "/api/v1/namespaces/default/configmaps", raw=body, headers=PROTOBUF
    )
    assert reply.status == 201, reply.text
    created = reply.json()
    assert created["data"] == {"a": "1", "b": "two"} and created["metadata"]["uid"]


def test_an_unknown_kind_or_field_is_refused_not_half_decoded(server: KubeAPIServer) -> None:
    body = bytearray((DATA / "create-configmap.bin").read_bytes())
    tampered = bytes(body).replace(b"ConfigMap", b"Deploymnt")
    reply = request(
        server, "POST", "/api/v1/namespaces/default/configmaps", raw=tampered, headers=PROTOBUF
    )
    assert reply.status == 415 and "send JSON" in reply.json()["message"]
    with pytest.raises(ProtobufError, match="field 9 of ConfigMap"):
        # field 9 (varint 1) appended to the ConfigMap message: unknown to this schema
        raw = (DATA / "create-configmap.bin").read_bytes()
        decode_object(_with_extra_configmap_field(raw))
    assert (
        request(
            server, "POST", "/api/v1/namespaces/default/configmaps", raw=b"junk", headers=PROTOBUF
        ).status
        == 415
    )


def _with_extra_configmap_field(body: bytes) -> bytes:
    """The envelope with field 9 = 1 added to the typed message (field 2 of Unknown)."""
    from ownergc_backends.memory._protobuf import MAGIC, _fields

    out = bytearray(MAGIC)
    for number, value in _fields(body[len(MAGIC) :]):
        if number == 2 and isinstance(value, bytes):
            value = value + bytes([9 << 3 | 0, 1])
        assert isinstance(value, bytes)
        out += bytes([number << 3 | 2]) + _len(len(value)) + value
    return bytes(out)


def _len(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)
