"""fieldsV1 encoding and decoding against every managedFields entry the server wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ownergc_backends.memory._fieldmanager import (
    FieldsV1Error,
    decode_fields_v1,
    decode_managed_fields,
    encode_fields_v1,
    encode_managed_fields,
    manager_from_user_agent,
    path_string,
)
from tests.ssa.replay import load_exchanges, load_sequences


def _objects() -> Iterator[dict[str, Any]]:
    for exchange in load_exchanges():
        body = exchange["response"]["body"]
        if isinstance(body, dict):
            yield body
    for sequence in load_sequences()["sequences"]:
        for step in sequence["steps"]:
            for body in (step["response"], step["after"]):
                if isinstance(body, dict):
                    yield body


def _managed_fields() -> list[list[dict[str, Any]]]:
    out = []
    for body in _objects():
        entries = (body.get("metadata") or {}).get("managedFields")
        if entries:
            out.append(entries)
    return out


MANAGED = _managed_fields()


def test_every_recorded_fields_v1_round_trips_byte_for_byte() -> None:
    assert len(MANAGED) > 1000
    for entries in MANAGED:
        for entry in entries:
            fields = entry["fieldsV1"]
            again = encode_fields_v1(decode_fields_v1(fields))
            # Same keys in the same order the server wrote them ("." first, sorted).
            assert json.dumps(again) == json.dumps(fields)


def _by_identity(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda e: (e["operation"], e["manager"], e["apiVersion"]))


def test_every_recorded_managed_fields_list_round_trips() -> None:
    # Times are "<time>" placeholders in the recordings, so entries the server
    # ordered by distinct seconds are compared by identity, not position.
    for entries in MANAGED:
        again = encode_managed_fields(decode_managed_fields(entries).values())
        assert _by_identity(again) == _by_identity(entries)


def test_members_and_parents() -> None:
    fields = decode_fields_v1(
        {
            "f:spec": {
                "f:ports": {'k:{"name":"a"}': {".": {}, "f:port": {}}},
                "f:tags": {'v:"x"': {}},
            }
        }
    )
    assert fields == {
        ("f:spec", "f:ports", 'k:{"name":"a"}'),
        ("f:spec", "f:ports", 'k:{"name":"a"}', "f:port"),
        ("f:spec", "f:tags", 'v:"x"'),
    }


@pytest.mark.parametrize(
    "doc",
    [[], {"f:a": []}, {"x:a": {}}, {'k:{"a"': {}}, {"k:[1]": {}}, {".": {"f:a": {}}}, {"i:x": {}}],
)
def test_bad_documents_are_refused_clearly(doc: Any) -> None:
    with pytest.raises(FieldsV1Error):
        decode_fields_v1(doc)


def test_paths_print_as_the_server_prints_them() -> None:
    assert path_string(("f:data", "f:k2")) == ".data.k2"
    assert (
        path_string(("f:spec", "f:ports", 'k:{"name":"metrics"}', "f:proto"))
        == '.spec.ports[name="metrics"].proto'
    )
    assert path_string(("f:spec", "f:tags", 'v:"blue"')) == '.spec.tags[="blue"]'


@pytest.mark.parametrize(
    ("agent", "manager"),
    [
        ("gamma-client/1.0", "gamma-client"),
        ("kubectl/v1.24.0 (linux/amd64) kubernetes/abc", "kubectl"),
        ("Python-urllib/3.11", "Python-urllib"),
        ("", ""),
        (None, ""),
    ],
)
def test_manager_from_user_agent(agent: str | None, manager: str) -> None:
    assert manager_from_user_agent(agent) == manager
