"""The custom-resource schema checks' Go semantics that the recorded answers do not
pin down: how Go prints a float64, how an enum compares numbers (a schema's numbers
decode as float64), how a set tells values apart (Go's interface keys keep 1, 1.0
and true apart), and ratcheting of unchanged values on an update."""

from __future__ import annotations

import pytest

from ownergc_backends.memory._cr_schema import (
    apply_defaults,
    go_float,
    go_json,
    prune_nulls,
    schema_errors,
)


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (2.0, "2"),
        (0.5, "0.5"),
        (1.2, "1.2"),
        (-3.25, "-3.25"),
        (1e21, "1e+21"),
        (123456789.0, "1.23456789e+08"),
        (100000.0, "100000"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (float("inf"), "+Inf"),
    ],
)
def test_floats_are_printed_as_go_prints_them(value: float, printed: str) -> None:
    assert go_float(value) == printed


@pytest.mark.parametrize(
    ("value", "written"),
    [(1.0, "1"), (2.5, "2.5"), (1234567.5, "1234567.5"), (1e21, "1e+21"), (1.5e-7, "1.5e-7")],
)
def test_floats_are_written_as_go_json_writes_them(value: float, written: str) -> None:
    """(an enum's supported values are listed as JSON)"""
    assert go_json(value) == written


def _messages(schema: dict[str, object], obj: object, old: object = None) -> list[str]:
    return [e.message() for e in schema_errors(schema, obj, old)]


ENUM = {"type": "object", "properties": {"level": {"type": "number", "enum": [1, 2, 3]}}}


@pytest.mark.parametrize(("value", "ok"), [(2, True), (2.0, True), (2.5, False), (4, False)])
def test_an_enum_compares_numbers_as_float64(value: float, ok: bool) -> None:
    assert (_messages(ENUM, {"level": value}) == []) is ok


def test_a_bool_is_not_the_number_one() -> None:
    assert _messages(ENUM, {"level": True}) == [
        'level: Invalid value: "boolean": level in body must be of type number: "boolean"',
        'level: Unsupported value: true: supported values: "1", "2", "3"',
    ]


SET = {
    "type": "object",
    "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {}},
    },
}


def test_a_set_tells_one_one_point_oh_and_true_apart() -> None:
    assert _messages(SET, {"tags": [1, 1.5, True, "1"]}) == []
    assert _messages(SET, {"tags": ["a", "a", "a", "b", "b"]}) == [
        'tags[1]: Duplicate value: "a"',
        'tags[4]: Duplicate value: "b"',
    ]


def test_a_set_compares_objects_and_lists_by_their_json() -> None:
    """(Go marshals compound items: 1 and 1.0 are the same ``1`` inside them)"""
    assert _messages(SET, {"tags": [{"a": 1}, {"a": 1.0}, [1], [1.0]]}) == [
        'tags[1]: Duplicate value: map[string]interface {}{"a":1}',
        "tags[3]: Duplicate value: []interface {}{1}",
    ]


BOUNDED = {
    "type": "object",
    "properties": {
        "replicas": {"type": "integer", "maximum": 10},
        "name": {"type": "string"},
    },
}


def test_an_update_is_refused_only_for_what_it_changes() -> None:
    stored = {"replicas": 50, "name": "a"}
    assert _messages(BOUNDED, {"replicas": 50, "name": "b"}, stored) == []
    assert _messages(BOUNDED, {"replicas": 60, "name": "a"}, stored) == [
        "replicas: Invalid value: 60: replicas in body should be less than or equal to 10"
    ]
    assert _messages(BOUNDED, {"replicas": 50, "name": "a"}) != []  # a create: no ratchet


DEFAULTED = {
    "type": "object",
    "properties": {
        "a": {"type": "integer", "default": 1},
        "b": {"type": "string"},
        "c": {"type": "string", "nullable": True, "default": "c"},
        "m": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "default": {"x": 1},
                "properties": {"y": {"type": "integer", "default": 2}},
            },
        },
    },
}


def test_nulls_are_dropped_then_defaults_filled_in() -> None:
    obj: dict[str, object] = {"a": None, "b": None, "c": None, "m": {"k": None, "j": {}}}
    prune_nulls(obj, DEFAULTED)
    apply_defaults(obj, DEFAULTED)
    assert obj == {"a": 1, "c": None, "m": {"k": {"x": 1, "y": 2}, "j": {"y": 2}}}
