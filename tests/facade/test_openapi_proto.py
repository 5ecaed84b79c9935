"""The OpenAPI v2 document in gnostic's protobuf (what kubectl ≤ 1.26 reads), checked by
reading the bytes back with a minimal wire-format reader written here."""

from __future__ import annotations

import json
import struct
from typing import Any

from ownergc_backends.memory._fieldmanager.schema import openapi_document
from ownergc_backends.memory._openapi_proto import encode_openapi_v2

Fields = list[tuple[int, Any]]


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def fields(data: bytes) -> Fields:
    """(field number, value) pairs: ints for varints, floats for fixed64, bytes otherwise."""
    out: Fields = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, value))
        elif wire == 1:
            out.append((number, struct.unpack("<d", data[i : i + 8])[0]))
            i += 8
        elif wire == 2:
            size, i = _varint(data, i)
            out.append((number, data[i : i + size]))
            i += size
        else:  # pragma: no cover - the encoder writes no other wire type
            raise AssertionError(f"wire type {wire}")
    return out


def one(data: bytes, number: int) -> Any:
    values = [v for n, v in fields(data) if n == number]
    assert len(values) == 1, (number, values)
    return values[0]


def named(data: bytes, number: int) -> dict[str, bytes]:
    """A gnostic map: repeated Named* (name = 1, value = 2) under ``number``."""
    return {one(entry, 1).decode(): one(entry, 2) for n, entry in fields(data) if n == number}


DOC = openapi_document()
ENCODED = encode_openapi_v2(DOC)


def test_the_document_header_and_every_definition_are_there() -> None:
    assert one(ENCODED, 1) == DOC["swagger"].encode()
    definitions = named(one(ENCODED, 9), 1)
    assert set(definitions) == set(DOC["definitions"])


def test_a_schema_keeps_description_type_properties_required_and_extensions() -> None:
    name = "io.k8s.api.apps.v1.Deployment"
    schema = named(one(ENCODED, 9), 1)[name]
    spec = DOC["definitions"][name]
    assert one(schema, 4).decode() == spec["description"]
    assert fields(one(schema, 22)) == [(1, b"object")]  # TypeItem
    props = named(one(schema, 25), 1)
    assert list(props) == list(spec["properties"])
    # Any values travel as YAML text (JSON here): the group-version-kind extension.
    extensions = named(schema, 31)
    gvk = json.loads(one(extensions["x-kubernetes-group-version-kind"], 2))
    assert gvk == spec["x-kubernetes-group-version-kind"]
    # A $ref property and an integer with a format.
    assert one(props["spec"], 1).decode() == spec["properties"]["spec"]["$ref"]
    replicas = named(one(named(one(ENCODED, 9), 1)["io.k8s.api.apps.v1.DeploymentSpec"], 25), 1)[
        "replicas"
    ]
    assert one(replicas, 2) == b"int32"


def test_list_items_and_patch_strategy_extensions() -> None:
    pod_spec = named(one(ENCODED, 9), 1)["io.k8s.api.core.v1.PodSpec"]
    containers = named(one(pod_spec, 25), 1)["containers"]
    assert fields(one(containers, 22)) == [(1, b"array")]
    item = one(one(containers, 23), 1)  # ItemsItem.schema[0]
    assert one(item, 1) == b"#/definitions/io.k8s.api.core.v1.Container"
    extensions = named(containers, 31)
    assert json.loads(one(extensions["x-kubernetes-patch-merge-key"], 2)) == "name"


def test_paths_carry_operations_and_query_parameters() -> None:
    """kubectl 1.20 decides whether a kind supports server dry run from its PATCH
    operation's ``dryRun`` parameter: paths, operations and parameters must be there."""
    path = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    paths = named(one(ENCODED, 8), 2)
    item = paths[path]
    patch = one(item, 8)
    assert one(patch, 5).decode() == DOC["paths"][path]["patch"]["operationId"]
    names = []
    for parameters_item in [v for n, v in fields(patch) if n == 8]:
        ((kind, value),) = fields(parameters_item)
        if kind == 1:  # a Parameter
            ((which, sub),) = fields(value)
            if which == 2:  # NonBodyParameter
                ((_, sub_schema),) = fields(sub)
                names.append(one(sub_schema, 4).decode())
    assert "dryRun" in names
    extensions = named(patch, 13)
    assert json.loads(one(extensions["x-kubernetes-group-version-kind"], 2))["kind"] == (
        "Deployment"
    )
