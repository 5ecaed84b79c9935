"""kubectl's protobuf request bodies, decoded from the upstream schema to what kubectl means.

tests/data/kubectl-protobuf/ holds, for every ``kubectl create`` generator of
kubectl 1.37, the body it sent (``.pb``) and the same object as kubectl itself
prints it with ``--dry-run=client -o json`` (``.json``), both recorded by
tools/record_kubectl_protobuf.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory._protobuf import (
    MAGIC,
    ProtobufError,
    decode_message,
    decode_object,
    go_duration,
    supported_kinds,
)
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import request

DATA = Path(__file__).resolve().parents[1] / "data" / "kubectl-protobuf"
INDEX = json.loads((DATA / "index.json").read_text())
DISCOVERY = Path(__file__).resolve().parents[1] / "data/real-apiserver-1.24/discovery.json"
PROTOBUF = {"Content-Type": "application/vnd.kubernetes.protobuf"}
CORE = "k8s.io.api.core.v1."
META = "k8s.io.apimachinery.pkg.apis.meta.v1."


def _without_null_creation_timestamps(value: Any) -> Any:
    """kubectl 1.37 prints ``creationTimestamp: null``; the schema's ObjectMeta (upstream
    since 1.37, apimachinery 503b9897) has ``omitzero`` there, as the server's JSON does."""
    if isinstance(value, dict):
        return {
            k: _without_null_creation_timestamps(v)
            for k, v in value.items()
            if not (k == "creationTimestamp" and v is None)
        }
    if isinstance(value, list):
        return [_without_null_creation_timestamps(v) for v in value]
    return value


@pytest.mark.parametrize(
    "name", sorted(n for n in INDEX["bodies"] if (DATA / f"{n}.json").exists())
)
def test_every_create_generator_decodes_to_kubectls_own_json(name: str) -> None:
    warnings: list[str] = []
    decoded = decode_object((DATA / f"{name}.pb").read_bytes(), warnings)
    expected = json.loads((DATA / f"{name}.json").read_text())
    assert decoded == _without_null_creation_timestamps(expected)
    assert warnings == []


def test_the_recording_covers_every_generator_kubectl_has() -> None:
    generators = {argv[2] for argv in (b["argv"] for b in INDEX["bodies"].values())}
    assert generators >= {
        "clusterrole",
        "clusterrolebinding",
        "configmap",
        "cronjob",
        "deployment",
        "ingress",
        "job",
        "namespace",
        "poddisruptionbudget",
        "priorityclass",
        "quota",
        "role",
        "rolebinding",
        "secret",
        "service",
        "serviceaccount",
        "token",
    }
    assert INDEX["kubectl"].startswith("v1.37")


def test_a_token_request_decodes_with_its_pointer_fields() -> None:
    decoded = decode_object((DATA / "token.pb").read_bytes())
    assert decoded["kind"] == "TokenRequest"
    assert decoded["spec"] == {"audiences": ["https://example.com"], "expirationSeconds": 600}


def test_a_zero_pointer_is_kept_and_a_zero_plain_field_is_omitted() -> None:
    decoded = decode_object((DATA / "deployment-zero.pb").read_bytes())
    assert decoded["spec"]["replicas"] == 0  # *int32 set to 0: JSON keeps it
    assert "minReadySeconds" not in decoded["spec"]  # int32 omitempty, written as 0 by Go
    assert decoded["spec"]["strategy"] == {}  # a struct: never omitted


def test_every_builtin_kind_the_real_server_serves_is_decoded() -> None:
    """Every kind of the recorded 1.24 discovery, apart from the two groups that live outside
    k8s.io/api and the versions upstream has since removed (neither has a kubectl generator)."""
    outside = {
        "apiextensions.k8s.io/v1",
        "apiregistration.k8s.io/v1",
        "autoscaling/v2beta1",
        "autoscaling/v2beta2",
        "policy/v1beta1",
    }
    served = {
        f"{doc['groupVersion']}/{r['kind']}"
        for doc in json.loads(DISCOVERY.read_text()).values()
        if doc.get("kind") == "APIResourceList" and doc["groupVersion"] not in outside
        for r in doc["resources"]
        if "/" not in r["name"]
    }
    assert served - set(supported_kinds()) == set()


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _envelope(api_version: str, kind: str, message: bytes) -> bytes:
    type_meta = _field(1, api_version.encode()) + _field(2, kind.encode())
    return MAGIC + _field(1, type_meta) + _field(2, message)


def test_inline_structs_int_or_string_quantities_and_times() -> None:
    volume = _field(1, b"data") + _field(2, _field(2, b""))  # VolumeSource{emptyDir: {}}
    port = _field(1, b"http") + _field(3, 8080) + _field(4, b"TCP")
    probe = _field(
        1, _field(3, _field(1, _field(1, 1) + _field(3, b"http")))
    )  # handler.tcpSocket.port
    container = (
        _field(1, b"c")
        + _field(2, b"img")
        + _field(6, port)
        + _field(8, _field(1, _field(1, b"cpu") + _field(2, _field(1, b"250m"))))
        + _field(10, probe)
    )
    pod_spec = _field(1, volume) + _field(2, container) + _field(4, 2**64 - 5)
    meta = _field(1, b"p") + _field(8, _field(1, 1_700_000_000))
    body = _envelope("v1", "Pod", _field(1, meta) + _field(2, pod_spec))
    pod = decode_object(body)
    assert pod["metadata"] == {"name": "p", "creationTimestamp": "2023-11-14T22:13:20Z"}
    assert pod["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]
    (c,) = pod["spec"]["containers"]
    assert c["resources"] == {"limits": {"cpu": "250m"}}
    assert c["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert c["livenessProbe"]["tcpSocket"] == {"port": "http"}
    assert pod["spec"]["terminationGracePeriodSeconds"] == -5  # a negative int64


def test_packed_and_unpacked_repeated_scalars() -> None:
    context = _field(4, 1000) + _field(4, 2000)  # PodSecurityContext.supplementalGroups
    packed = _field(4, _varint(1000) + _varint(2000))
    for sc in (context, packed):
        spec = decode_message(CORE + "PodSpec", _field(14, sc))
        assert spec["securityContext"]["supplementalGroups"] == [1000, 2000]


@pytest.mark.parametrize(
    ("nanoseconds", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1500, "1.5µs"),
        (250_000_000, "250ms"),
        (1_500_000_000, "1.5s"),
        (90_000_000_000, "1m30s"),
        (3_600_000_000_000, "1h0m0s"),
        (-2_000_000_000, "-2s"),
    ],
)
def test_durations_read_as_go_writes_them(nanoseconds: int, text: str) -> None:
    assert go_duration(nanoseconds) == text
    assert decode_message(META + "Duration", _field(1, nanoseconds)) == text


def test_micro_time_and_the_zero_time() -> None:
    assert decode_message(
        META + "MicroTime", _field(1, 1_700_000_000) + _field(2, 123_456_000)
    ) == ("2023-11-14T22:13:20.123456Z")
    assert decode_message(META + "Time", b"") is None
    assert decode_message(META + "Time", _field(1, 0)) == "1970-01-01T00:00:00Z"


def test_an_unknown_field_is_dropped_as_the_apiserver_drops_it_and_reported() -> None:
    body = (DATA / "configmap.pb").read_bytes()
    tampered = _envelope("v1", "ConfigMap", _typed(body) + _field(99, 1))
    warnings: list[str] = []
    assert decode_object(tampered, warnings) == decode_object(body)
    assert warnings == [f"unknown field number 99 of {CORE}ConfigMap dropped"]


def _typed(body: bytes) -> bytes:
    """The typed message of an envelope (field 2 of runtime.Unknown)."""
    i = len(MAGIC)
    while i < len(body):
        key = body[i]
        length, j = 0, i + 1
        shift = 0
        while True:
            b = body[j]
            length |= (b & 0x7F) << shift
            j += 1
            shift += 7
            if not b & 0x80:
                break
        if key >> 3 == 2:
            return body[j : j + length]
        i = j + length
    raise AssertionError("no typed message")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"junk", "magic"),
        (MAGIC + b"\x0a\x05ab", "truncated"),
        (_envelope("example.com/v1", "Widget", b""), "example.com/v1/Widget are not supported"),
        (_envelope("v1", "ConfigMap", _field(2, 7)), "not length-delimited"),
        (MAGIC + _field(3, b"gzip"), "compressed"),
    ],
)
def test_bodies_it_cannot_decode_exactly_are_refused(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=message):
        decode_object(body)


def test_every_message_of_the_schema_decodes_from_no_bytes() -> None:
    from ownergc_backends.memory._protobuf import _schema

    for name in _schema()["messages"]:
        decode_message(name, b"")


def test_the_facade_creates_from_protobuf(server: KubeAPIServer) -> None:
    body = (DATA / "configmap.pb").read_bytes()
    request(
        server,
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}},
    )
    reply = request(
        server, "POST", "/api/v1/namespaces/demo/configmaps", raw=body, headers=PROTOBUF
    )
    assert reply.status == 201, reply.text
    created = reply.json()
    assert created["data"] == {"a": "1", "b": ""} and created["metadata"]["uid"]


def test_the_facade_answers_415_to_what_it_cannot_decode(server: KubeAPIServer) -> None:
    reply = request(
        server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        raw=_envelope("example.com/v1", "Widget", b""),
        headers=PROTOBUF,
    )
    assert reply.status == 415 and "send JSON" in reply.json()["message"]
    junk = request(
        server, "POST", "/api/v1/namespaces/default/configmaps", raw=b"junk", headers=PROTOBUF
    )
    assert junk.status == 415
