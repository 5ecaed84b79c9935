"""The CEL interpreter of CRD validation rules (ownergc_backends/memory/_cel.py) and its
typing of custom resources' values (_cr_schema.rule_errors).

No real kube-apiserver 1.30 runs here. The cases are facts from two sources, named on
each:

* ``v0.30.0 validation_test.go``: kubernetes/apiextensions-apiserver v0.30.0,
  pkg/apiserver/schema/cel/validation_test.go, ``TestValidationExpressions``: an
  object, its schema, rules that hold for it, and rules whose evaluation fails with an
  error containing a given text (or that a real server refuses to compile: those
  must be skipped here, never refuse the object);
* ``CEL spec``: the CEL language definition (github.com/google/cel-spec,
  doc/langdef.md): literals, operators, error absorption, int64 overflow.

A rule ``R`` that holds is checked as ``!(R)`` failing: so a rule skipped for a gap of
the interpreter does not pass unnoticed.
"""

from __future__ import annotations

from typing import Any

import pytest

from ownergc_backends.memory._cel import CelError, Unsupported, compile_rule
from ownergc_backends.memory._cr_schema import rule_errors, rule_warnings

I = {"type": "integer"}  # noqa: E741 - the Go test's integerType
I32 = {"type": "integer", "format": "int32"}
I64 = {"type": "integer", "format": "int64"}
N = {"type": "number"}
F = {"type": "number", "format": "float"}
D = {"type": "number", "format": "double"}
S = {"type": "string"}
B = {"type": "boolean"}
BYTE = {"type": "string", "format": "byte"}
DUR = {"type": "string", "format": "duration"}
DATE = {"type": "string", "format": "date"}
DT = {"type": "string", "format": "date-time"}
IOS = {"x-kubernetes-int-or-string": True}


def obj_type(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def list_type(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def map_type(values: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": values}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "nullable": True}


def vals(*values: Any) -> dict[str, Any]:
    return {f"val{i + 1}": v for i, v in enumerate(values)}


def val_schemas(*schemas: dict[str, Any]) -> dict[str, Any]:
    return obj_type({f"val{i + 1}": s for i, s in enumerate(schemas)})


def equal_themselves(a: str, b: str, literal: str) -> str:
    """The Go test's ValsEqualThemselvesAndDataLiteral."""
    return f"{a} == {literal} && {literal} == {a} && {a} == {b}"


_MAX_INT64 = 2**63 - 1
_MAX_INT32 = 2**31 - 1
_SRC = "v0.30.0 validation_test.go"

#: (name, schema, object, rules that hold, {rule: error text or None for a compile error})
CASES: list[tuple[str, dict[str, Any], Any, list[str], dict[str, str | None]]] = [
    (
        "integers",
        val_schemas(I, I, I32, I32, I64, I64),
        vals(_MAX_INT64, _MAX_INT64, _MAX_INT32, _MAX_INT32, _MAX_INT64, _MAX_INT64),
        [
            equal_themselves("self.val1", "self.val2", str(_MAX_INT64)),
            equal_themselves("self.val3", "self.val4", str(_MAX_INT32)),
            equal_themselves("self.val5", "self.val6", str(_MAX_INT64)),
            "self.val1 == self.val6",
            "type(self.val1) == int",
            f"self.val3 + 1 == {_MAX_INT32} + 1",
            "type(self.val3) == int",
            "type(self.val5) == int",
        ],
        {
            "self.val1 + 1 == 0": "integer overflow",
            "self.val5 + 1 == 0": "integer overflow",
            "1 / 0 == 1 / 0": "division by zero",
        },
    ),
    (
        "numbers",
        val_schemas(N, N, F, F, D, D, D),
        vals(1.5, 1.5, 2.5, 2.5, 3.25, 3.25, 1),
        [
            equal_themselves("self.val1", "self.val2", "1.5"),
            "type(self.val1) == double",
            "type(self.val3) == double",
            "type(self.val5) == double",
            "type(self.val7) == double",
            "self.val7 == 1.0",
        ],
        {},
    ),
    (
        "numeric comparisons",
        val_schemas(I, I, I, N, F, D, N, F, D),
        vals(5, 10, 15, 10.0, 10.0, 10.0, 10, 10, 10),
        [
            "double(self.val1) < self.val4",
            "double(self.val2) == self.val4",
            "double(self.val3) >= self.val4",
            "self.val1 < int(self.val4)",
            "self.val2 == int(self.val5)",
            "self.val3 > int(self.val6)",
            "double(self.val2) == self.val7",
            "self.val2 == int(self.val8)",
            "double(self.val3) > self.val9",
            "double(5) < 10.0",
            "10 == int(10.0)",
            "self.val1 < self.val4",
            "self.val2 <= self.val4",
            "self.val3 > self.val7",
            "self.val1 < self.val9",
            "5 < 10.0",
            "15 > 10.0",
            "self.val1 < 10.0",
            "self.val3 > 10.0",
        ],
        {},
    ),
    (
        "unicode strings",
        val_schemas(S, S),
        vals("Rook takes 👑", "Rook takes 👑"),
        [
            equal_themselves("self.val1", "self.val2", "'Rook takes 👑'"),
            "self.val1.startsWith('Rook')",
            "!self.val1.startsWith('knight')",
            "self.val1.contains('takes')",
            "!self.val1.contains('gives')",
            "self.val1.endsWith('👑')",
            "!self.val1.endsWith('pawn')",
            "self.val1.matches('^[^0-9]*$')",
            "!self.val1.matches('^[0-9]*$')",
            "type(self.val1) == string",
            "size(self.val1) == 12",
            "self.val1.charAt(3) == 'k'",
            "self.val1.indexOf('o') == 1",
            "self.val1.indexOf('o', 2) == 2",
            "self.val1.replace(' ', 'x') == 'Rookxtakesx👑'",
            "self.val1.replace(' ', 'x', 1) == 'Rookxtakes 👑'",
            "self.val1.split(' ') == ['Rook', 'takes', '👑']",
            "self.val1.split(' ', 2) == ['Rook', 'takes 👑']",
            "self.val1.substring(5) == 'takes 👑'",
            "self.val1.substring(0, 4) == 'Rook'",
            "self.val1.substring(4, 10).trim() == 'takes'",
            "self.val1.upperAscii() == 'ROOK TAKES 👑'",
            "self.val1.lowerAscii() == 'rook takes 👑'",
            "'%d %s %f %s %s'.format([1, 'abc', 1.0, duration('1m'), "
            "timestamp('2000-01-01T00:00:00.000Z')]) == '1 abc 1.000000 60s 2000-01-01T00:00:00Z'",
            "'%o %o %o'.format([7, 8, 9]) == '7 10 11'",
            "'%b %b %b'.format([7, 8, 9]) == '111 1000 1001'",
        ],
        {"self.val1.matches(')')": None},
    ),
    (
        "escaped strings",
        val_schemas(S, S),
        vals("l1\nl2", "l1\nl2"),
        [
            equal_themselves("self.val1", "self.val2", "'l1\\nl2'"),
            "self.val1 == '''l1\nl2'''",
        ],
        {},
    ),
    (
        "bytes",
        val_schemas(BYTE, BYTE),
        vals("QUI=", "QUI="),
        [
            "self.val1 == self.val2",
            "self.val1 == b'AB'",
            "self.val1 == bytes('AB')",
            "self.val1 == b'\\x41\\x42'",
            "type(self.val1) == bytes",
            "size(self.val1) == 2",
        ],
        {},
    ),
    (
        "booleans",
        val_schemas(B, B, B, B),
        vals(True, True, False, False),
        [
            equal_themselves("self.val1", "self.val2", "true"),
            equal_themselves("self.val3", "self.val4", "false"),
            "self.val1 != self.val4",
            "type(self.val1) == bool",
        ],
        {},
    ),
    (
        "duration format",
        val_schemas(DUR, DUR),
        vals("1h2m3s4ms", "1h2m3s4ms"),
        [
            equal_themselves("self.val1", "self.val2", "duration('1h2m3s4ms')"),
            "self.val1 == duration('1h2m') + duration('3s4ms')",
            "self.val1.getHours() == 1",
            "self.val1.getMinutes() == 62",
            "self.val1.getSeconds() == 3723",
            "self.val1.getMilliseconds() == 3723004",
            "type(self.val1) == google.protobuf.Duration",
        ],
        {"duration('1')": None, "duration('1d')": None},
    ),
    (
        "date format",
        val_schemas(DATE, DATE),
        vals("1997-07-16", "1997-07-16"),
        [
            equal_themselves("self.val1", "self.val2", "timestamp('1997-07-16T00:00:00.000Z')"),
            "self.val1.getDate() == 16",
            "self.val1.getMonth() == 06",
            "self.val1.getFullYear() == 1997",
            "type(self.val1) == google.protobuf.Timestamp",
        ],
        {},
    ),
    (
        "date-time format",
        val_schemas(DT, DT),
        vals("2011-08-18T19:03:37.010000000+01:00", "2011-08-18T19:03:37.010000000+01:00"),
        [
            equal_themselves(
                "self.val1", "self.val2", "timestamp('2011-08-18T19:03:37.010+01:00')"
            ),
            "self.val1 == timestamp('2011-08-18T00:00:00.000+01:00') + duration('19h3m37s10ms')",
            "self.val1.getDate('01:00') == 18",
            "self.val1.getMonth('01:00') == 7",
            "self.val1.getFullYear('01:00') == 2011",
            "self.val1.getHours('01:00') == 19",
            "self.val1.getMinutes('01:00') == 03",
            "self.val1.getSeconds('01:00') == 37",
            "self.val1.getMilliseconds('01:00') == 10",
            "self.val1.getHours('UTC') == 18",
            "type(self.val1) == google.protobuf.Timestamp",
        ],
        {"timestamp('1000-00-00T00:00:00Z')": None, "timestamp('1000-01-01T00:00:00ZZ')": None},
    ),
    (
        "enums",
        obj_type({"enumStr": {"type": "string", "enum": ["Pending", "Available", "Bound"]}}),
        {"enumStr": "Pending"},
        ["self.enumStr == 'Pending'", "self.enumStr in ['Pending', 'Available']"],
        {},
    ),
    (
        "conversions",
        val_schemas(I, N, N, N, B, S, BYTE, S, DUR, S, DT, S, DATE),
        vals(
            10,
            10.0,
            10.49,
            10.5,
            True,
            "10",
            "MTA=",
            "3723.004s",
            "1h2m3s4ms",
            "2011-08-18T19:03:37.01+01:00",
            "2011-08-18T19:03:37.01+01:00",
            "2011-08-18T00:00:00Z",
            "2011-08-18",
        ),
        [
            "int(self.val2) == self.val1",
            "int(self.val3) == self.val1",
            "int(self.val4) == self.val1",
            "int(self.val6) == self.val1",
            "double(self.val1) == self.val2",
            "double(self.val6) == self.val2",
            "bytes(self.val6) == self.val7",
            "string(self.val1) == self.val6",
            "string(self.val2) == '10'",
            "string(self.val3) == '10.49'",
            "string(self.val4) == '10.5'",
            "string(self.val5) == 'true'",
            "string(self.val7) == self.val6",
            "duration(self.val8) == self.val9",
            "string(self.val9) == self.val8",
            "timestamp(self.val10) == self.val11",
            "timestamp(self.val12) == self.val13",
            "string(self.val13) == self.val12",
        ],
        {},
    ),
    (
        "lists",
        val_schemas(list_type(I), list_type(I)),
        vals([1, 2, 3], [1, 2, 3]),
        [
            equal_themselves("self.val1", "self.val2", "[1, 2, 3]"),
            "1 in self.val1",
            "self.val2[0] in self.val1",
            "!(0 in self.val1)",
            "self.val1 + self.val2 == [1, 2, 3, 1, 2, 3]",
            "self.val1 + [4, 5] == [1, 2, 3, 4, 5]",
        ],
        {},
    ),
    (
        "string lists",
        val_schemas(list_type(S)),
        vals(["a", "b", "c"]),
        [
            "self.val1.join('-') == 'a-b-c'",
            "['a', 'b', 'c'].join('-') == 'a-b-c'",
            "self.val1.join() == 'abc'",
            "['a', 'b', 'c'].join() == 'abc'",
            "sets.contains(['a', 'b'], [])",
            "sets.contains(['a', 'b'], ['b'])",
            "!sets.contains(['a', 'b'], ['c'])",
            "sets.equivalent(['c', 'b', 'a'], ['b', 'c', 'a'])",
            "sets.intersects(['a', 'b'], ['b', 'c'])",
            "!sets.intersects([], [])",
            "sets.contains([{'a': 1}, {'b': 2}], [{'b': 2}])",
            "sets.contains([duration('1h'), duration('2h')], [duration('2h')])",
        ],
        {},
    ),
    (
        "listSets",
        val_schemas(
            {**list_type(S), "x-kubernetes-list-type": "set"},
            {**list_type(S), "x-kubernetes-list-type": "set"},
        ),
        vals(["a", "b", "c"], ["a", "c", "b"]),
        [
            "self.val1 == ['c', 'b', 'a']",
            "self.val1 == self.val2",
            "'a' in self.val1",
            "self.val2[0] in self.val1",
            "!('x' in self.val1)",
            "self.val1 + self.val2 == ['a', 'b', 'c']",
            "self.val1 + ['c', 'd'] == ['a', 'b', 'c', 'd']",
        ],
        {},
    ),
    (
        "listMaps",
        obj_type(
            {
                "objs": list_type(
                    {
                        **list_type(obj_type({"k": S, "v": S})),
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["k"],
                    }
                )
            }
        ),
        {
            "objs": [
                [{"k": "a", "v": "1"}, {"k": "b", "v": "2"}],
                [{"k": "b", "v": "2"}, {"k": "a", "v": "1"}],
                [{"k": "b", "v": "3"}, {"k": "a", "v": "1"}],
                [{"k": "c", "v": "4"}],
            ]
        },
        [
            "self.objs[0] == self.objs[1]",
            "self.objs[0] + self.objs[2] == self.objs[2]",
            "self.objs[2] + self.objs[0] == self.objs[0]",
            "self.objs[0] == [self.objs[0][0], self.objs[0][1]]",
            "self.objs[0] == [self.objs[0][1], self.objs[0][0]]",
            "self.objs[2] + [self.objs[0][0], self.objs[0][1]] == self.objs[0]",
            "size(self.objs[0] + [self.objs[3][0]]) == 3",
        ],
        {},
    ),
    (
        "maps",
        val_schemas(map_type(S), map_type(S)),
        vals({"k1": "a", "k2": "b"}, {"k2": "b", "k1": "a"}),
        [
            "self.val1 == self.val2",
            "'k1' in self.val1",
            "!('k3' in self.val1)",
            "self.val1 == {'k1': 'a', 'k2': 'b'}",
        ],
        {},
    ),
    (
        "object access",
        obj_type(
            {
                "a": obj_type({"b": I, "c": I, "d": nullable(I)}),
                "a1": obj_type({"b1": obj_type({"c1": I}), "d2": obj_type({"e2": I})}),
            }
        ),
        {"a": {"b": 1, "d": None}, "a1": {"b1": {"c1": 4}}, "a3": {}},
        [
            "has(self.a.b)",
            "!has(self.a.c)",
            "!has(self.a.d)",
            "has(self.a1.b1.c1)",
            "!(has(self.a1.d2) && has(self.a1.d2.e2))",
            "!has(self.a1.d2)",
        ],
        {"has(self.a.z)": None, "self.a['b'] == 1": None, "has(self.a1.d2.e2)": "no such key: d2"},
    ),
    (
        "map access",
        obj_type({"val": map_type(I)}),
        {"val": {"b": 1, "d": 2}},
        [
            "!('a' in self.val)",
            "'b' in self.val",
            "!has(self.val.a)",
            "has(self.val.b)",
            "self.val.all(k, self.val[k] > 0)",
            "self.val.exists(k, self.val[k] > 1)",
            "self.val.exists_one(k, self.val[k] == 2)",
            "!self.val.exists(k, self.val[k] > 2)",
            "!self.val.exists_one(k, self.val[k] > 0)",
            "size(self.val) == 2",
            "self.val.map(k, self.val[k]).exists(v, v == 1)",
            "size(self.val.filter(k, self.val[k] > 1)) == 1",
        ],
        {"self.val['c'] == 1": "no such key: c"},
    ),
    (
        "listMap access",
        obj_type(
            {
                "listMap": {
                    **list_type(obj_type({"k": S, "v": S, "v2": S})),
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["k"],
                }
            }
        ),
        {
            "listMap": [
                {"k": "a1", "v": "b1"},
                {"k": "a2", "v": "b2"},
                {"k": "a3", "v": "b3", "v2": "z"},
            ]
        },
        [
            "has(self.listMap[0].v)",
            "self.listMap.all(m, m.k.startsWith('a'))",
            "self.listMap.all(m, !has(m.v2) || m.v2 == 'z')",
            "self.listMap.exists(m, m.k.endsWith('1'))",
            "self.listMap.exists_one(m, m.k == 'a3')",
            "!self.listMap.all(m, m.k.endsWith('1'))",
            "!self.listMap.exists(m, m.v == 'x')",
            "!self.listMap.exists_one(m, m.k.startsWith('a'))",
            "size(self.listMap.filter(m, m.k == 'a1')) == 1",
            "self.listMap.exists(m, m.k == 'a1' && m.v == 'b1')",
            "self.listMap.map(m, m.v).exists(v, v == 'b1')",
            "self.listMap.exists(m, has(m.v2) && m.v2 == 'z')",
            "!self.listMap.all(m, has(m.v2) && m.v2 != 'z')",
            "self.listMap.exists_one(m, has(m.v2) && m.v2 == 'z')",
            "self.listMap.filter(m, has(m.v2) && m.v2 == 'z').size() == 1",
            "self.listMap.map(m, has(m.v2) && m.v2 == 'z', m.v2).size() == 1",
            "self.listMap.filter(m, has(m.v2) && m.v2 == 'z').map(m, m.v2).size() == 1",
            "self.listMap.exists(m, m.v2 == 'z')",
            "!self.listMap.all(m, m.v2 != 'z')",
        ],
        {
            "self.listMap.all(m, m.v2 == 'z')": "no such key: v2",
            "self.listMap.exists_one(m, m.v2 == 'z')": "no such key: v2",
            "self.listMap.filter(m, m.v2 == 'z').size() == 1": "no such key: v2",
            "self.listMap.map(m, m.v2).size() == 1": "no such key: v2",
            "self.listMap.map(m, m.v2 == 'z', m.v2).size() == 1": "no such key: v2",
        },
    ),
    (
        "list access",
        obj_type({"array": list_type(I)}),
        {"array": [1, 1, 2, 2, 3, 3, 4, 5]},
        [
            "2 in self.array",
            "self.array.all(e, e > 0)",
            "self.array.exists(e, e > 2)",
            "self.array.exists_one(e, e > 4)",
            "!self.array.all(e, e < 2)",
            "!self.array.exists(e, e < 0)",
            "!self.array.exists_one(e, e == 2)",
            "size(self.array.filter(e, e%2 == 0)) == 3",
            "self.array.map(e, e * 20).filter(e, e > 50).exists(e, e == 60)",
            "size(self.array) == 8",
        ],
        {"self.array[100] == 0": "index out of bounds: 100"},
    ),
    (
        "typemeta and objectmeta access not specified",
        obj_type({"spec": obj_type({"field1": S})}),
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "foo", "generateName": "pickItForMe", "namespace": "xyz"},
            "spec": {"field1": "a"},
        },
        [
            "self.kind == 'Pod'",
            "self.apiVersion == 'v1'",
            "self.metadata.name == 'foo'",
            "self.metadata.generateName == 'pickItForMe'",
            "self.spec.field1 == 'a'",
        ],
        {"has(self.metadata.namespace)": None},
    ),
    (
        "embedded object",
        obj_type({"embedded": {"type": "object", "x-kubernetes-embedded-resource": True}}),
        {
            "embedded": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "foo", "generateName": "pickItForMe", "namespace": "xyz"},
                "spec": {"field1": "a"},
            }
        },
        [
            "self.embedded.kind == 'Pod'",
            "self.embedded.apiVersion == 'v1'",
            "self.embedded.metadata.name == 'foo'",
            "self.embedded.metadata.generateName == 'pickItForMe'",
        ],
        {"has(self.embedded.metadata.namespace)": None, "has(self.embedded.spec)": None},
    ),
    (
        "string in intOrString",
        obj_type({"something": IOS}),
        {"something": "25%"},
        [
            "self.something == '25%'",
            "self.something != 1",
            "self.something == 1 || self.something == '25%'",
            "self.something == '25%' || self.something == 1",
            "type(self.something) == string && self.something == '25%'",
            "type(self.something) == int ? self.something == 1 : self.something == '25%'",
            "self.something != ['anything']",
        ],
        {},
    ),
    (
        "int in intOrString",
        obj_type({"something": IOS}),
        {"something": 1},
        [
            "self.something == 1",
            "self.something != 'some string'",
            "self.something == 1 || self.something == '25%'",
            "type(self.something) == int && self.something == 1",
            "type(self.something) == int ? self.something == 1 : self.something == '25%'",
        ],
        {},
    ),
    (
        "null in intOrString",
        obj_type({"something": nullable(IOS)}),
        {"something": None},
        ["!has(self.something)"],
        {"type(self.something) == int": "no such key"},
    ),
    (
        "field nullability",
        obj_type(
            {
                "unsetPlainStr": S,
                "unsetNullableStr": nullable(S),
                "setPlainStr": S,
                "setNullableStr": nullable(S),
                "setToNullNullableStr": nullable(S),
            }
        ),
        {"setPlainStr": "v1", "setNullableStr": "v3", "setToNullNullableStr": None},
        [
            "!has(self.unsetPlainStr)",
            "!has(self.unsetNullableStr)",
            "has(self.setPlainStr) && self.setPlainStr == 'v1'",
            "has(self.setNullableStr) && self.setNullableStr == 'v3'",
            "type(self.setNullableStr) != null_type",
            "!has(self.setToNullNullableStr)",
        ],
        {},
    ),
    (
        "null values in container types",
        obj_type({"m": map_type(nullable(S)), "l": list_type(nullable(S))}),
        {"m": {"a": None, "b": "not-nil"}, "l": [None, "not-nil"]},
        [
            "self.m.size() == 2",
            "'a' in self.m",
            "type(self.m['a']) == null_type",
            "self.l.size() == 2",
            "type(self.l[0]) == null_type",
        ],
        {},
    ),
    (
        "escaping",
        obj_type(
            {
                "namespace": I,
                "if": I,
                "int": I,
                "self": I,
                "_true": I,
                "dot.dot": I,
                "dash-dash": I,
                "slash/slash": I,
                "underscore_underscore": I,
                "doubleunderscore__doubleunderscore": I,
            }
        ),
        {
            "namespace": 17,
            "if": 12,
            "int": 101,
            "self": 201,
            "_true": 301,
            "dot.dot": 401,
            "dash-dash": 402,
            "slash/slash": 403,
            "underscore_underscore": 404,
            "doubleunderscore__doubleunderscore": 405,
        },
        [
            "self.__namespace__ == 17",
            "self.__if__ == 12",
            "self.int == 101",
            "self.self == 201",
            "self._true == 301",
            "self.dot__dot__dot == 401",
            "self.dash__dash__dash == 402",
            "self.slash__slash__slash == 403",
            "self.underscore_underscore == 404",
            "self.doubleunderscore__underscores__doubleunderscore == 405",
        ],
        {},
    ),
    (
        "stdlib list functions",
        obj_type(
            {
                "ints": list_type(I),
                "unsortedInts": list_type(I),
                "emptyInts": list_type(I),
                "doubles": list_type(D),
                "intBackedDoubles": list_type(D),
                "durations": list_type(DUR),
                "strings": list_type(S),
                "emptyStrings": list_type(S),
                "dates": list_type(DATE),
                "objs": list_type(obj_type({"f1": S, "f2": S})),
            }
        ),
        {
            "ints": [1, 2, 2, 3],
            "unsortedInts": [2, 1],
            "emptyInts": [],
            "doubles": [1.0, 2.0, 2.0, 3.0],
            "intBackedDoubles": [1, 2, 2, 3],
            "durations": ["1s", "1m", "1m", "1h"],
            "strings": ["a", "b", "b", "c"],
            "emptyStrings": [],
            "dates": ["2000-01-01", "2000-02-01", "2000-02-01", "2010-01-01"],
            "objs": [
                {"f1": "a", "f2": "a"},
                {"f1": "a", "f2": "b"},
                {"f1": "a", "f2": "b"},
                {"f1": "a", "f2": "c"},
            ],
        },
        [
            "self.ints.sum() == 8",
            "self.ints.min() == 1",
            "self.ints.max() == 3",
            "self.emptyInts.sum() == 0",
            "self.ints.isSorted()",
            "self.emptyInts.isSorted()",
            "self.unsortedInts.isSorted() == false",
            "self.ints.indexOf(2) == 1",
            "self.ints.lastIndexOf(2) == 2",
            "self.ints.indexOf(10) == -1",
            "self.doubles.sum() == 8.0",
            "self.doubles.max() == 3.0",
            "self.intBackedDoubles.sum() == 8.0",
            "self.intBackedDoubles.lastIndexOf(2.0) == 2",
            "self.durations.sum() == duration('1h2m1s')",
            "self.durations.min() == duration('1s')",
            "self.durations.isSorted()",
            "self.durations.lastIndexOf(duration('1m')) == 2",
            "self.strings.min() == 'a'",
            "self.strings.isSorted()",
            "self.strings.lastIndexOf('b') == 2",
            "self.dates.max() == timestamp('2010-01-01T00:00:00.000Z')",
            "self.dates.indexOf(timestamp('2000-02-01T00:00:00.000Z')) == 1",
            "[[1], [2]].indexOf([1]) == 0",
            "[{'a': 1}, {'b': 2}].lastIndexOf({'b': 2}) == 1",
            "self.objs.indexOf(self.objs[1]) == 1",
            "self.objs.lastIndexOf(self.objs[1]) == 2",
            "([0] + self.emptyInts).min() == 0",
            "dyn([1, 2]).sum() == 3",
            "[].sum() == 0",
        ],
        {
            "self.emptyInts.min() == 1": "min called on empty list",
            "self.emptyInts.max() == 3": "max called on empty list",
            "self.emptyStrings.min() == 'a'": "min called on empty list",
        },
    ),
    (
        "stdlib regex functions",
        obj_type({"str": S}),
        {"str": "this is a 123 string 456"},
        [
            "self.str.find('[0-9]+') == '123'",
            "self.str.find('xyz') == ''",
            "self.str.findAll('[0-9]+') == ['123', '456']",
            "self.str.findAll('[0-9]+', 0) == []",
            "self.str.findAll('[0-9]+', 1) == ['123']",
            "self.str.findAll('[0-9]+', -1) == ['123', '456']",
        ],
        {"self.str.find(')') == ''": None, "self.str.matches('x++')": None},
    ),
    (
        "URL parsing",
        obj_type({"url": S}),
        {"url": "https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor"},
        [
            "url('/path').getScheme() == ''",
            "url('https://example.com/').getScheme() == 'https'",
            "url('https://example.com:80/').getHost() == 'example.com:80'",
            "url('https://[::1]:80/').getHost() == '[::1]:80'",
            "url('/path').getHost() == ''",
            "url('https://[::1]/').getHostname() == '::1'",
            "url('https://example.com:80/').getPort() == '80'",
            "url('https://example.com/').getPort() == ''",
            "url('https://example.com/with space/').getEscapedPath() == '/with%20space/'",
            "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() "
            "== { 'k1': ['a'], 'k2': ['b', 'c']}",
            "url('https://example.com/path').getQuery() == {}",
            "url(self.url).getHostname() == 'kubernetes.io'",
            "url(self.url).getEscapedPath() == '/docs/home'",
            "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
            "isURL('/path') == true",
            "isURL('https://a:b:c/') == false",
            "isURL('../relative-path') == false",
        ],
        {},
    ),
    (
        "optionals",
        obj_type(
            {
                "presentObj": obj_type({"presentStr": S}),
                "absentObj": obj_type({"absentStr": S}),
                "m": map_type(S),
                "l": list_type(S),
            }
        ),
        {"presentObj": {"presentStr": "value"}, "m": {"k": "v"}, "l": ["a"]},
        [
            "self.?presentObj.?presentStr == optional.of('value')",
            "self.presentObj.?presentStr.or(optional.of('nope')) == optional.of('value')",
            "self.presentObj.?presentStr.orValue('') == 'value'",
            "self.presentObj.?presentStr.optMap(v, v == 'value').hasValue()",
            "self.?absentObj.?absentStr == optional.none()",
            "self.?absentObj.?absentStr.orValue('nope') == 'nope'",
            "self.m[?'k'] == optional.of('v')",
            "self.m[?'x'].orValue('nope') == 'nope'",
            "self.l[?0] == optional.of('a')",
            "self.l[?1] == optional.none()",
            "optional.ofNonZeroValue(1).hasValue()",
            "optional.ofNonZeroValue('') == optional.none()",
            "optional.ofNonZeroValue(timestamp('0001-01-01T00:00:00.000+00:00')) "
            "== optional.none()",
            "{?'k': optional.none(), 'k2': 'v2'} == {'k2': 'v2'}",
            "['a', ?optional.of('v'), 'c'] == ['a', 'v', 'c']",
        ],
        {"self.absentObj.?absentStr == optional.none()": "no such key: absentObj"},
    ),
    (
        "quantity",
        val_schemas(S, S),
        vals("20", "200M"),
        [
            "isQuantity(self.val1)",
            "isQuantity(self.val2)",
            'isQuantity("20Mi")',
            'quantity(self.val2) == quantity("0.2G") && quantity("0.2G") == quantity("200M")',
            'quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M")',
            'quantity(self.val1).isLessThan(quantity("100M"))',
            'quantity(self.val2).isGreaterThan(quantity("50M"))',
            'quantity(self.val2).compareTo(quantity("0.2G")) == 0',
            'quantity("50k").add(quantity(self.val1)) == quantity("50.02k")',
            'quantity("50k").sub(quantity(self.val1)) == quantity("49980")',
            "quantity(self.val1).isInteger()",
        ],
        {},
    ),
]


def _with_rule(schema: dict[str, Any], rule: str) -> dict[str, Any]:
    return {**schema, "x-kubernetes-validations": [{"rule": rule}]}


def _holds(schema: dict[str, Any], obj: Any, rule: str) -> list[str]:
    """The messages of ``!(rule)``: one "failed rule" when ``rule`` holds."""
    return [e.message() for e in rule_errors(_with_rule(schema, f"!({rule})"), obj)]


@pytest.mark.parametrize(
    ("schema", "obj", "rule"),
    [pytest.param(s, o, r, id=f"{n}: {r}") for n, s, o, valid, _ in CASES for r in valid],
)
def test_rules_that_hold(schema: dict[str, Any], obj: Any, rule: str) -> None:
    """Source: v0.30.0 validation_test.go, each case's ``valid`` rules."""
    assert rule_errors(_with_rule(schema, rule), obj) == []
    assert _holds(schema, obj, rule) == [f'<nil>: Invalid value: "object": failed rule: !({rule})']


@pytest.mark.parametrize(
    ("schema", "obj", "rule", "expected"),
    [
        pytest.param(s, o, r, e, id=f"{n}: {r}")
        for n, s, o, _, errors in CASES
        for r, e in errors.items()
    ],
)
def test_rules_that_fail(schema: dict[str, Any], obj: Any, rule: str, expected: str | None) -> None:
    """Source: v0.30.0 validation_test.go, each case's ``errors``: a runtime error is
    reported as ``<error> evaluating rule: <rule>``; a rule a real server refuses to
    compile (``expected`` None here) is skipped."""
    errors = [e.message() for e in rule_errors(_with_rule(schema, rule), obj)]
    if expected is None:
        assert errors == []
        return
    assert len(errors) == 1, errors
    assert expected in errors[0]
    assert errors[0].endswith(f" evaluating rule: {rule}")


def _eval(text: str, **variables: Any) -> Any:
    return compile_rule(text).evaluate(variables)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # CEL spec: literals
        ("0x10 == 16", True),
        ("1u + 2u == 3u", True),
        ("-9223372036854775808 < 0", True),
        ("1e3 == 1000.0", True),
        ("'\\u00e9' == 'é'", True),
        ("'\\303' == '\\u00c3'", True),
        ("r'\\n' == '\\\\n'", True),
        ('"""a"b""" == \'a"b\'', True),
        ("b'\\xff'.size() == 1", True),
        ("null == null", True),
        ("{'a': 1, 'b': 2}.size() == 2", True),
        # CEL spec: integer division truncates toward zero, % keeps the dividend's sign
        ("-7 / 2 == -3", True),
        ("-7 % 2 == -1", True),
        ("7 % -2 == 1", True),
        # CEL spec: heterogeneous equality (numbers by value, other types differ)
        ("1 == 1.0", True),
        ("1u == 1", True),
        ("'1' == 1", False),
        ("[1, 'a'] == [1.0, 'a']", True),
        ("{'a': 1} == {'a': 1.0}", True),
        # CEL spec: && and || absorb an error when the other side decides
        ("false && 1 / 0 == 1", False),
        ("1 / 0 == 1 && false", False),
        ("true || 1 / 0 == 1", True),
        ("1 / 0 == 1 || true", True),
        ("[1, 0].exists(x, 1 / x == 1)", True),
        ("![0, 2].all(x, 2 / x == 2)", True),
        # ternary, in, string functions
        ("true ? 1 : 1 / 0 == 1", 1),
        ("2 in [1, 2] && 'a' in {'a': 1}", True),
        ("'abc'.indexOf('') == 0 && 'abc'.lastIndexOf('') == 3", True),
        ("'abc'.lastIndexOf('c', 1) == -1", True),
        ("'a b c'.split(' ', 0) == []", True),
        ("' \\t x \\n'.trim() == 'x'", True),
        ("string(1.5) == '1.5' && string(-3) == '-3' && string(2u) == '2'", True),
        # cel-go's string(double) is Go's %g: an exponent from 1e+06 up and below 1e-04
        ("string(100000.0) == '100000' && string(1234567.0) == '1.234567e+06'", True),
        ("string(0.0001) == '0.0001' && string(0.00001) == '1e-05'", True),
        ("int('-42') == -42 && uint('42') == 42u && double('2.5') == 2.5", True),
        ("bool('true') && !bool('false')", True),
        ("duration('1h30m') == duration('90m')", True),
        (
            "timestamp('2024-01-01T00:00:00Z') + duration('24h') == "
            "timestamp('2024-01-02T00:00:00Z')",
            True,
        ),
        (
            "timestamp('2024-01-02T00:00:00Z') - timestamp('2024-01-01T00:00:00Z') "
            "== duration('24h')",
            True,
        ),
        ("int(timestamp('1970-01-01T00:01:00Z')) == 60", True),
        ("[3, 1, 2].map(x, x * 2).filter(x, x > 2) == [6, 4]", True),
        ("[1, 2, 3].exists_one(x, x > 2)", True),
        # RE2: $ is the end of the text, not before a final newline (unlike Python's re)
        ("'abc\\n'.matches('^abc$')", False),
        ("'abc'.matches('^abc$') && 'a$'.matches('^a[$]$')", True),
    ],
)
def test_cel_semantics(text: str, value: Any) -> None:
    """Source: CEL spec (doc/langdef.md) and cel-go's standard and ext libraries."""
    assert _eval(text) == value


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("9223372036854775807 + 1 > 0", "integer overflow"),
        ("-9223372036854775808 - 1 < 0", "integer overflow"),
        ("-9223372036854775808 / -1 < 0", "integer overflow"),
        ("0u - 1u == 0u", "unsigned integer overflow"),
        ("1 % 0 == 0", "modulus by zero"),
        ("[1][1] == 1", "index out of bounds: 1"),
        ("{'a': 1}['b'] == 1", "no such key: b"),
        ("int('x') == 1", "cannot convert string 'x' to int"),
        ("false || 1 / 0 == 1", "division by zero"),
        ("true && 1 / 0 == 1", "division by zero"),
        ("[0, 1].all(x, 1 / x == 1)", "division by zero"),
        ("'abc'.substring(2, 1) == ''", "invalid substring range. start: 2, end: 1"),
        ("'abc'.charAt(4) == ''", "index out of range: 4"),
    ],
)
def test_cel_errors(text: str, error: str) -> None:
    """Source: CEL spec (int64 / uint64 overflow is an error) and cel-go's words."""
    with pytest.raises(CelError, match=f"^{error.replace('[', '.').replace('(', '.')}"):
        _eval(text)


@pytest.mark.parametrize(
    "text",
    ["1 +", "foo(1)", "'a'.unknown()", "{1: 2", "a.b.c", "self.x(", "'a' ++ 'b'", "Msg{a: 1}"],
)
def test_what_is_not_read_is_unsupported(text: str) -> None:
    """A rule that does not parse, or names something unknown, is Unsupported (the
    caller skips it: a real server refuses such a CRD)."""
    with pytest.raises(Unsupported):
        _eval(text, self={})


_FOO = obj_type({"foo": S})


@pytest.mark.parametrize(
    ("schema", "rule", "obj", "old", "fails"),
    [
        pytest.param(
            _FOO,
            "self.foo == 'not bar' || !oldSelf.hasValue()",
            {"foo": "bar"},
            None,
            False,
            id="allow new value if old value is null",
        ),
        pytest.param(
            _FOO,
            "self.foo == 'valid' || !oldSelf.hasValue()",
            {"foo": "invalid"},
            {"foo": "bar"},
            True,
            id="block new value if old value is not null",
        ),
        pytest.param(
            _FOO,
            "self.foo == 'valid' || (oldSelf.hasValue() && oldSelf.value().foo != 'valid')",
            {"foo": "invalid again"},
            {"foo": "invalid"},
            False,
            id="allow invalid new value if old value is also invalid",
        ),
        pytest.param(
            _FOO,
            "self.foo == 'valid' || oldSelf.foo.orValue('') != 'valid'",
            {"foo": "invalid again"},
            {"foo": "invalid"},
            False,
            id="... with chained optionals",
        ),
        pytest.param(
            _FOO,
            "self.foo == 'valid' || (oldSelf.hasValue() && oldSelf.value().foo != 'valid')",
            {"foo": "invalid"},
            {"foo": "valid"},
            True,
            id="block invalid new value if old value is valid",
        ),
        *(
            pytest.param(
                I,
                "self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)",
                new,
                old,
                fails,
                id=name,
            )
            for name, new, old, fails in [
                ("create: new min or allow higher than oldValue", 10, None, False),
                ("block create: new min or allow higher than oldValue", 9, None, True),
                ("update: new min or allow higher than oldValue", 10, 5, False),
                ("ratchet update: new min or allow higher than oldValue", 9, 5, False),
                ("ratchet noop update: new min or allow higher than oldValue", 5, 5, False),
                ("block update: new min or allow higher than oldValue", 4, 5, True),
            ]
        ),
    ],
)
def test_optional_old_self(
    schema: dict[str, Any], rule: str, obj: Any, old: Any, fails: bool
) -> None:
    """Source: v0.30.0 validation_test.go, TestOptionalOldSelf (every rule with
    ``optionalOldSelf: true``)."""
    ruled = {**schema, "x-kubernetes-validations": [{"rule": rule, "optionalOldSelf": True}]}
    errors = [e.message() for e in rule_errors(ruled, obj, old)]
    assert errors == (
        [f'<nil>: Invalid value: "{schema["type"]}": failed rule: {rule}'] if fails else []
    )


def test_transition_rules() -> None:
    """Source: v0.30.0 validation_test.go, "transition rules" and "skipped transition
    rule for nil old ..." (a rule with oldSelf and no old value is not evaluated)."""
    schema = obj_type({"v": S})
    for rule in ("oldSelf.v != self.v", "oldSelf.v == 'old' && self.v == 'new'"):
        assert rule_errors(_with_rule(schema, rule), {"v": "new"}, {"v": "old"}) == []
        assert _holds(schema, {"v": "new"}, rule) == []  # (skipped on a create)
    for rule_schema, obj in ((S, "exists"), (list_type(S), []), (_FOO, {"foo": "x"})):
        assert rule_errors(_with_rule(rule_schema, "oldSelf != self"), obj) == []


def _rooted(message: str) -> str:
    """A message with the Go test's root path (``root``) for serve's (none)."""
    if message.startswith("<nil>"):
        return "root" + message[len("<nil>") :]
    return ("root" if message.startswith("[") else "root.") + message


def _baz(message: str = "gotta be baz", rule: str = 'self == "baz"') -> dict[str, Any]:
    return {"type": "string", "x-kubernetes-validations": [{"rule": rule, "message": message}]}


_MAP_LIST_OF_VALUES = {
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["key"],
    "items": obj_type({"key": S, "value": _baz()}),
}
_NESTED_MAPS = obj_type(
    {
        "stringField": S,
        "mapField": obj_type(
            {
                "foo": _baz(),
                "mapField": obj_type(
                    {"bar": _baz(), "otherBar": _baz("gotta be otherBaz", 'self == "otherBaz"')}
                ),
            }
        ),
    }
)
_ODD = {
    "type": "number",
    "x-kubernetes-validations": [{"rule": "int(self) % 2 == 1", "message": "gotta be odd"}],
}
_GOTTA = 'Invalid value: "string": gotta be baz'

#: name -> (schema, old, new, errors, warnings)
RATCHETING: dict[str, tuple[dict[str, Any], Any, Any, list[str], list[str]]] = {
    "descendent of an atomic array whose parent is totally unchanged": (
        list_type(obj_type({"bar": _baz()})),
        [{"bar": "bar"}],
        [{"bar": "bar"}],
        [],
        [f"root[0].bar: {_GOTTA}"],
    ),
    "descendent of a set whose parent is totally unchanged": (
        {**list_type(_ODD), "x-kubernetes-list-type": "set"},
        [1, 2],
        [1, 2],
        [],
        ['root[1]: Invalid value: "number": gotta be odd'],
    ),
    "descendent of a set and one of its siblings has changed": (
        obj_type(
            {"stringField": S, "setArray": {**list_type(_ODD), "x-kubernetes-list-type": "set"}}
        ),
        {"stringField": "foo", "setArray": [1, 3, 2]},
        {"stringField": "changed but ratcheted", "setArray": [1, 3, 2]},
        [],
        ['root.setArray[2]: Invalid value: "number": gotta be odd'],
    ),
    "descendent of a map list whose parent is unchanged": (
        _MAP_LIST_OF_VALUES,
        [{"key": "foo", "value": "notbaz"}, {"key": "bar", "value": "notbaz"}],
        [
            {"key": "foo", "value": "notbaz"},
            {"key": "bar", "value": "notbaz"},
            {"key": "baz", "value": "baz"},
        ],
        [],
        [f"root[0].value: {_GOTTA}", f"root[1].value: {_GOTTA}"],
    ),
    "descendent of a map list whose siblings have changed": (
        _MAP_LIST_OF_VALUES,
        [{"key": "foo", "value": "notbaz"}, {"key": "bar", "value": "notbaz"}],
        [{"key": "foo", "value": "baz"}, {"key": "bar", "value": "notbaz"}],
        [],
        [f"root[1].value: {_GOTTA}"],
    ),
    "descendent of a map whose parent is totally unchanged": (
        _NESTED_MAPS,
        {"stringField": "foo", "mapField": {"foo": "notbaz", "mapField": {"bar": "notbaz"}}},
        {"stringField": "foo", "mapField": {"foo": "notbaz", "mapField": {"bar": "notbaz"}}},
        [],
        [f"root.mapField.foo: {_GOTTA}", f"root.mapField.mapField.bar: {_GOTTA}"],
    ),
    "descendent of a map whose siblings have changed": (
        _NESTED_MAPS,
        {
            "stringField": "foo",
            "mapField": {"foo": "baz", "mapField": {"bar": "notbaz", "otherBar": "nototherBaz"}},
        },
        {
            "stringField": "foo",
            "mapField": {"foo": "notbaz", "mapField": {"bar": "notbaz", "otherBar": "otherBaz"}},
        },
        [f"root.mapField.foo: {_GOTTA}"],
        [f"root.mapField.mapField.bar: {_GOTTA}"],
    ),
    "descendent of an atomic array whose siblings has changed": (
        obj_type({"stringField": S, "atomicArray": list_type(obj_type({"bar": _baz()}))}),
        {"stringField": "foo", "atomicArray": [{"bar": "bar"}]},
        {"stringField": "changed but ratcheted", "atomicArray": [{"bar": "bar"}]},
        [],
        [f"root.atomicArray[0].bar: {_GOTTA}"],
    ),
    "uncorrelatable part of the schema whose parent nodes has changed": (
        list_type(obj_type({"bar": _baz()})),
        [{"bar": "bar"}],
        [{"bar": "bar"}, {"bar": "baz"}],
        [f"root[0].bar: {_GOTTA}"],
        [],
    ),
    "transition rules never ratchet for correlatable schemas": (
        obj_type({"foo": _baz(rule='oldSelf != "bar" && self == "baz"')}),
        {"foo": "bar"},
        {"foo": "bar"},
        [f"root.foo: {_GOTTA}"],
        [],
    ),
    "changing field path does not change ratcheting logic": (
        {
            **obj_type({"bar": S, "foo": S}),
            "x-kubernetes-validations": [
                {"rule": 'self.foo == "baz"', "message": "gotta be baz", "fieldPath": ".foo"}
            ],
        },
        {"foo": "bar"},
        {"foo": "bar", "bar": "invalid"},
        ['root.foo: Invalid value: "object": gotta be baz'],
        [],
    ),
    "typemeta fields are not ratcheted": (
        obj_type(
            {
                "apiVersion": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": 'self == "v1"'}],
                },
                "kind": {"type": "string", "x-kubernetes-validations": [{"rule": 'self == "Pod"'}]},
            }
        ),
        {"apiVersion": "v2", "kind": "Baz"},
        {"apiVersion": "v2", "kind": "Baz"},
        [
            'root.apiVersion: Invalid value: "string": failed rule: self == "v1"',
            'root.kind: Invalid value: "string": failed rule: self == "Pod"',
        ],
        [],
    ),
    "normal CEL expression": (
        obj_type({"foo": _baz(rule='self == "bar"')}),
        {"foo": "baz"},
        {"foo": "baz"},
        [],
        [f"root.foo: {_GOTTA}"],
    ),
}


@pytest.mark.parametrize("case", list(RATCHETING), ids=list(RATCHETING))
def test_ratcheting(case: str) -> None:
    """Source: v0.30.0 validation_test.go, TestRatcheting: an update's rule failures on
    values matched to unchanged stored ones are warnings (not errors), unless the rule
    reads oldSelf; items of atomic lists and sets are matched only through an
    unchanged list; the root's apiVersion and kind are never ratcheted."""
    schema, old, new, errors, warnings = RATCHETING[case]
    sent: list[str] = []
    token = rule_warnings.set(sent)
    try:
        found = [_rooted(e.message()) for e in rule_errors(schema, new, old)]
    finally:
        rule_warnings.reset(token)
    assert sorted(found) == sorted(errors)
    assert sorted(_rooted(w) for w in sent) == sorted(warnings)


def _match_selector(rule: str) -> dict[str, Any]:
    schema = obj_type(
        {"matchExpressions": list_type(obj_type({"key": S, "operator": S, "values": list_type(S)}))}
    )
    return _with_rule(schema, rule)


@pytest.mark.parametrize(
    ("schema", "obj", "expected"),
    [
        pytest.param(
            obj_type({"f/2": _with_rule(obj_type({"m": I}), "self.m == 2")}),
            {"f/2": {"m": 1}},
            ['f/2: Invalid value: "object": failed rule: self.m == 2'],
            id="failing rule under escaped field name",
        ),
        pytest.param(
            obj_type({"a@b": _with_rule(obj_type({"m": I}), "self.m == 2")}),
            {"a@b": {"m": 1}},
            ['a@b: Invalid value: "object": failed rule: self.m == 2'],
            id="failing rule under unescapable field name",
        ),
        pytest.param(
            _match_selector(
                'self.matchExpressions.all(rule, (rule.operator != "In" && rule.operator != '
                '"NotIn") || ((has(rule.values) && size(rule.values) > 0)))'
            ),
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": []}]},
            ["failed rule"],
            id="matchExpressions - 'values' must be specified when 'operator' is 'In' or 'NotIn'",
        ),
        pytest.param(
            _match_selector(
                'self.matchExpressions.all(rule, (rule.operator != "Exists" && rule.operator != '
                '"DoesNotExist") || ((!has(rule.values) || size(rule.values) == 0)))'
            ),
            {"matchExpressions": [{"key": "tier", "operator": "Exists", "values": ["somevalue"]}]},
            ["failed rule"],
            id="matchExpressions - 'values' may not be specified with 'Exists'",
        ),
        pytest.param(
            _match_selector(
                'self.matchExpressions.all(rule, rule.operator == "In" || rule.operator == '
                '"NotIn" || rule.operator == "DoesNotExist")'
            ),
            {"matchExpressions": [{"key": "tier", "operator": "badop", "values": []}]},
            ["failed rule"],
            id="matchExpressions - invalid selector operator",
        ),
        pytest.param(
            _match_selector(
                "self.matchExpressions.all(rule, size(rule.key) <= 63 && "
                'rule.key.matches("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"))'
            ),
            {"matchExpressions": [{"key": "badkey!", "operator": "Exists", "values": []}]},
            ["failed rule"],
            id="matchExpressions - invalid label value",
        ),
    ],
)
def test_rules_at_schema_levels(schema: dict[str, Any], obj: Any, expected: list[str]) -> None:
    """Source: v0.30.0 validation_test.go, TestValidationExpressionsAtSchemaLevels (the
    cases whose rules compile)."""
    errors = [e.message() for e in rule_errors(schema, obj)]
    assert len(errors) == len(expected)
    for error, text in zip(errors, expected, strict=True):
        assert text in error


@pytest.mark.parametrize(
    ("message", "expression", "expected"),
    [
        pytest.param("", '"static string"', "static string", id="no cost error expected"),
        pytest.param(
            "invisible",
            '"this is messageExpression"',
            "this is messageExpression",
            id="messageExpression takes precedence over message",
        ),
        pytest.param(
            "",
            "true",
            "failed rule: false",
            id="default rule message used if messageExpression does not eval to string",
        ),
        pytest.param("", '"str1 " + self.str', "str1 a string", id="str concat"),
        pytest.param(
            "message not messageExpression",
            '"str1 " + ["a", "b", "c", "d"][4]',
            "message not messageExpression",
            id="messageExpression fails during evaluation",
        ),
        pytest.param(
            "",
            '"str1 " + ["a", "b", "c", "d"][4]',
            "failed rule: false",
            id="messageExpression fails during evaluation (no message set)",
        ),
        pytest.param(
            "message not messageExpression",
            '"str with \\na newline"',
            "message not messageExpression",
            id="no line breaks",
        ),
        pytest.param(
            "message not messageExpression",
            '"' + "a" * 5121 + '"',
            "message not messageExpression",
            id="not more than 5120 characters",
        ),
        pytest.param(
            "message not messageExpression",
            'string("")',
            "message not messageExpression",
            id="not empty",
        ),
        pytest.param(
            "message not messageExpression",
            'string("     ")',
            "message not messageExpression",
            id="not only spaces",
        ),
    ],
)
def test_message_expression(message: str, expression: str, expected: str) -> None:
    """Source: v0.30.0 validation_test.go, TestMessageExpression (rule ``false`` on an
    object ``{"str": "a string"}``; the cost cases are not modelled)."""
    rule: dict[str, Any] = {"rule": "false", "messageExpression": expression}
    if message:
        rule["message"] = message
    schema = {**obj_type({"str": S}), "x-kubernetes-validations": [rule]}
    errors = [e.message() for e in rule_errors(schema, {"str": "a string"})]
    assert errors == [f'<nil>: Invalid value: "object": {expected}']
