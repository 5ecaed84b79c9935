"""Custom resources read and checked against their CRD's structural schema, as
kube-apiserver 1.30 reads and checks them.

A create or update of a custom resource goes through four steps here, in the
server's order:

1. :func:`prune_nulls`: a ``null`` where the schema wants a value that is not
   ``nullable`` and has no ``default`` is dropped (the server's decoder drops it;
   the object is then stored without the field);
2. :func:`apply_defaults`: each property with a ``default`` that is absent (or
   null and not nullable) gets a deep copy of it, below objects that exist;
3. :func:`schema_errors`: the OpenAPI v3 validation of kube-openapi (types,
   formats, enums, bounds, lengths, patterns, item and property counts,
   required, allOf / anyOf / oneOf / not), then the embedded resources'
   ``apiVersion`` / ``kind`` / ``metadata``, then the list types' uniqueness
   (``x-kubernetes-list-type: set`` and ``map``), each worded as 1.30 words it;
4. :func:`rule_errors`: the validation rules (``x-kubernetes-validations``, CEL,
   evaluated by :mod:`._cel`), unless step 3 found an error that blocks them.

An update is checked with ratcheting (1.30's ``CRDValidationRatcheting``, on by
default): an error about a value the update left as it was is not reported.

Go visits an object's properties in map order, which changes from one request
to the next; errors here follow the schema's order (the server's order is not
one a client can rely on). Facts from kube-openapi and apiextensions-apiserver
(v0.30.0) and answers recorded from a real kube-apiserver
(tests/facade/test_cr_schema_real.py); the code is this project's own.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import email.utils
import ipaddress
import json
import math
import re
import urllib.parse
from collections.abc import Callable
from contextvars import ContextVar
from decimal import Decimal
from typing import Any, Final

from ._cel import (
    CelError,
    MapList,
    Object,
    ObjectList,
    Optional,
    SetList,
    Unsupported,
    compile_rule,
    escape_name,
    optional_none,
    parse_duration,
    parse_timestamp,
)
from ._validation import FieldError, GoValue, path_segment_errors

__all__ = ["apply_defaults", "prune_nulls", "rule_errors", "rule_warnings", "schema_errors"]

_INVALID: Final = "FieldValueInvalid"
_TYPE_INVALID: Final = "FieldValueTypeInvalid"
_REQUIRED: Final = "FieldValueRequired"
_JSON_INTEGER_EPSILON: Final = 1e-9
#: The metadata fields the server checks itself (and the schema does not describe).
_ROOT_SKIPPED: Final = ("metadata",)


# -- 1. nulls and 2. defaults ---------------------------------------------------------


def _property_schema(schema: Any, key: str) -> Any:
    """The schema of ``key`` in an object: its property's, else additionalProperties'."""
    if not isinstance(schema, dict):
        return None
    properties = schema.get("properties")
    if isinstance(properties, dict) and key in properties:
        return properties[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


_DEFAULTS: Final = 0
_LIST_TYPES: Final = 1
_EMBEDDED: Final = 2
_RULES: Final = 3
#: id(schema node) -> (the node, whether it or a node below has a default, a set or
#: map list type, an embedded resource, validation rules); the node is held, so its
#: id is not reused
_BELOW: dict[int, tuple[dict[str, Any], tuple[bool, bool, bool, bool]]] = {}


def _below(schema: Any, what: int) -> bool:
    """Whether ``schema`` or a schema below it has a default / a list type / an embedded
    resource / validation rules: the walks looking for those skip the (many) subtrees
    without."""
    if not isinstance(schema, dict):
        return False
    entry = _BELOW.get(id(schema))
    if entry is None or entry[0] is not schema:
        children: list[Any] = []
        properties = schema.get("properties")
        if isinstance(properties, dict):
            children += properties.values()
        children += [schema.get("additionalProperties"), schema.get("items")]
        found = [
            "default" in schema,
            schema.get("x-kubernetes-list-type") in ("set", "map"),
            schema.get("x-kubernetes-embedded-resource") is True,
            bool(schema.get("x-kubernetes-validations")),
        ]
        for child in children:
            if isinstance(child, dict):
                for index in range(4):
                    found[index] = found[index] or _below(child, index)
        if len(_BELOW) >= 65536:
            _BELOW.clear()
        entry = (schema, (found[0], found[1], found[2], found[3]))
        _BELOW[id(schema)] = entry
    return entry[1][what]


def _nullable(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("nullable") is True


def prune_nulls(value: Any, schema: Any) -> None:
    """Drop (in place) the nulls of fields that are neither nullable nor defaulted; the
    ones with a default are left for :func:`apply_defaults`. Nulls in lists stay."""
    if isinstance(value, dict):
        for key in list(value):
            sub = _property_schema(schema, key)
            item = value[key]
            if (
                item is None
                and isinstance(sub, dict)
                and not _nullable(sub)
                and "default" not in sub
            ):
                del value[key]
            else:
                prune_nulls(item, sub)
    elif isinstance(value, list):
        items = schema.get("items") if isinstance(schema, dict) else None
        for item in value:
            prune_nulls(item, items)


def _null_to_default(value: Any, schema: Any) -> bool:
    return value is None and isinstance(schema, dict) and not _nullable(schema)


def apply_defaults(value: Any, schema: Any) -> None:
    """Fill in (in place) the schema's defaults below ``value``: a property that is
    absent, or null and not nullable, gets a deep copy of its ``default``; then each
    property, map value and list item is defaulted in turn (a default object too)."""
    if not _below(schema, _DEFAULTS):
        return
    if isinstance(value, dict):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        for key, sub in properties.items():
            if not isinstance(sub, dict) or "default" not in sub or sub["default"] is None:
                continue
            if key not in value or _null_to_default(value[key], sub):
                value[key] = copy.deepcopy(sub["default"])
        extra = schema.get("additionalProperties")
        for key in list(value):
            sub = properties.get(key)
            if isinstance(sub, dict):
                apply_defaults(value[key], sub)
            elif isinstance(extra, dict):
                if _null_to_default(value[key], extra):
                    value[key] = copy.deepcopy(extra.get("default"))
                apply_defaults(value[key], extra)
    elif isinstance(value, list):
        items = schema.get("items")
        for index, item in enumerate(value):
            if _null_to_default(item, items):
                value[index] = copy.deepcopy(items.get("default"))
            apply_defaults(value[index], items)


# -- how Go prints values -------------------------------------------------------------


def go_float(value: float) -> str:
    """A float64 as Go's ``%v`` prints it (shortest digits; an exponent below 1e-4 and
    from 1e+06 up: Go prints a million as ``1e+06``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # where the decimal point falls in the digits
    exp = point - 1
    head = "-" if sign else ""
    if exp < -4 or exp >= 6:  # (strconv: shortest %g decides at precision 6)
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{head}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{head}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{head}{text}{'0' * (point - len(text))}"
    return f"{head}{text[:point]}.{text[point:]}"


def _go_v(value: Any) -> str:
    """A decoded JSON scalar as Go's ``%v`` prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def _json_float(value: float) -> str:
    """A float64 as Go's encoding/json writes it: plain digits, an exponent (``1e-07``
    written ``1e-7``) only below 1e-6 and from 1e21 up."""
    size = abs(value)
    if size != 0 and (size < 1e-6 or size >= 1e21):
        mantissa, _, exponent = f"{value:e}".partition("e")
        digits = Decimal(repr(value)).normalize().as_tuple().digits
        text = "".join(map(str, digits))
        mantissa = ("-" if value < 0 else "") + text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{mantissa}e{int(exponent):+d}"
    return format(Decimal(repr(value)).normalize(), "f")


def go_json(value: Any) -> str:
    """``value`` as Go's encoding/json writes it (compact, keys sorted, floats Go's way)."""
    if isinstance(value, float) and not isinstance(value, bool):
        if math.isnan(value) or math.isinf(value):
            return go_float(value)
        return _json_float(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def go_sharp_v(value: Any) -> str:
    """A decoded JSON value as Go's ``%#v`` prints it (maps with sorted keys)."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(k)}:{go_sharp_v(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_sharp_v(v) for v in value) + "}"
    return _go_v(value)


def _shown(value: Any) -> Any:
    """A field error's value: scalars as they are (the error prints them), objects and
    lists as Go's ``%#v`` (what ``field.Error`` falls back to)."""
    if isinstance(value, (dict, list)):
        return GoValue(go_sharp_v(value))
    if isinstance(value, float):
        return GoValue(go_float(value))
    return value


# -- 3. validation --------------------------------------------------------------------


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _is_json_integer(value: float) -> bool:
    """swag's IsFloat64AJSONInteger: a float that is an integer, to a relative 1e-9."""
    if math.isnan(value) or math.isinf(value):
        return False
    whole = float(math.trunc(value))
    if value == whole:
        return True
    diff = abs(value - whole)
    if whole == 0:
        return diff < _JSON_INTEGER_EPSILON * 5e-324
    return diff / min(abs(value) + abs(whole), 1.7976931348623157e308) < _JSON_INTEGER_EPSILON


def _types(schema: dict[str, Any]) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    kind = schema.get("type")
    if isinstance(kind, str) and kind:
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    return []


def _type_error(path: str, wanted: list[str], got: str) -> FieldError:
    return FieldError(
        path or "<nil>",
        _TYPE_INVALID,
        f'{path} in body must be of type {",".join(wanted)}: "{got}"',
        got,
    )


def _type_errors(
    schema: dict[str, Any], wanted: list[str], value: Any, path: str
) -> list[FieldError]:
    if not wanted and not schema.get("format"):
        return []
    got = _json_type(value)
    if value is None:
        if wanted and "null" not in wanted and not _nullable(schema):
            return [_type_error(path, wanted, "null")]
        return []
    if got in wanted:
        return []
    if got == "number" and "integer" in wanted and _is_json_integer(value):
        return []
    if got == "integer" and "number" in wanted:
        return []
    if not wanted:  # a format alone: a string's is the format validator's
        return []
    return [_type_error(path, wanted, got)]


def _enum_errors(schema: dict[str, Any], value: Any, path: str) -> list[FieldError]:
    allowed = schema.get("enum")
    if not isinstance(allowed, list) or not allowed:
        return []
    if any(_enum_equal(value, candidate) for candidate in allowed):
        return []
    listed = ", ".join(
        json.dumps(v if isinstance(v, str) else go_json(v), ensure_ascii=False) for v in allowed
    )
    return [
        FieldError(path, "FieldValueNotSupported", f"supported values: {listed}", _shown(value))
    ]


def _enum_equal(value: Any, candidate: Any) -> bool:
    """Go's check: the value converted to the enum value's type, then deep-equal."""
    if candidate is None:
        return False
    if isinstance(candidate, bool) or isinstance(value, bool):
        return isinstance(candidate, bool) and isinstance(value, bool) and value is candidate
    numeric = (int, float)
    if isinstance(candidate, numeric):
        # (a schema's enum numbers are decoded as float64: a value is compared as one,
        # so 2.5 is not 2 and 2 is 2.0)
        return isinstance(value, numeric) and float(value) == float(candidate)
    if isinstance(candidate, str):
        return isinstance(value, str) and value == candidate
    return type(value) is type(candidate) and value == candidate


def _number_errors(schema: dict[str, Any], value: Any, path: str) -> list[FieldError]:
    multiple: list[FieldError] = []
    minimum: list[FieldError] = []
    maximum: list[FieldError] = []
    shown = _shown(value)
    factor = schema.get("multipleOf")
    if isinstance(factor, (int, float)) and not isinstance(factor, bool):
        if factor <= 0:
            multiple.append(
                FieldError(
                    path,
                    _INVALID,
                    f"factor MultipleOf declared for {path} must be positive: {_go_v(factor)}",
                    shown,
                )
            )
        elif not _is_multiple(value, factor):
            multiple.append(
                FieldError(
                    path,
                    _INVALID,
                    f"{path} in body should be a multiple of {_go_v(float(factor))}",
                    shown,
                )
            )
    top = schema.get("maximum")
    if isinstance(top, (int, float)) and not isinstance(top, bool):
        exclusive = schema.get("exclusiveMaximum") is True
        if value > top or (exclusive and value == top):
            how = "less than" if exclusive else "less than or equal to"
            maximum.append(
                FieldError(
                    path, _INVALID, f"{path} in body should be {how} {_go_v(float(top))}", shown
                )
            )
    bottom = schema.get("minimum")
    if isinstance(bottom, (int, float)) and not isinstance(bottom, bool):
        exclusive = schema.get("exclusiveMinimum") is True
        if value < bottom or (exclusive and value == bottom):
            how = "greater than" if exclusive else "greater than or equal to"
            minimum.append(
                FieldError(
                    path, _INVALID, f"{path} in body should be {how} {_go_v(float(bottom))}", shown
                )
            )
    return multiple + minimum + maximum


def _is_multiple(value: float, factor: float) -> bool:
    if isinstance(value, int) and float(factor).is_integer():
        return value % int(factor) == 0
    return _is_json_integer(value / factor)


def _string_errors(schema: dict[str, Any], value: str, path: str) -> list[FieldError]:
    """kube-openapi's string validator: the first of maxLength, minLength, pattern."""
    length = len(value)
    longest = schema.get("maxLength")
    if isinstance(longest, int) and length > longest:
        return [FieldError(path, "FieldValueTooLong", f"may not be longer than {longest}", value)]
    shortest = schema.get("minLength")
    if isinstance(shortest, int) and length < shortest:
        return [
            FieldError(
                path, _INVALID, f"{path} in body should be at least {shortest} chars long", value
            )
        ]
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern and not _matches(pattern, value):
        return [FieldError(path, _INVALID, f"{path} in body should match '{pattern}'", value)]
    return []


_PATTERNS: dict[str, re.Pattern[str] | None] = {}


def _matches(pattern: str, value: str) -> bool:
    """Go's regexp.MatchString (a search); a pattern Python cannot read matches anything
    (the CRD's own validation is where a bad pattern is refused)."""
    compiled = _PATTERNS.get(pattern, False)
    if compiled is False:
        try:
            compiled = re.compile(pattern)
        except re.error:
            compiled = None
        _PATTERNS[pattern] = compiled
    return compiled is None or compiled.search(value) is not None  # type: ignore[union-attr]


def _format_errors(schema: dict[str, Any], value: str, path: str) -> list[FieldError]:
    name = schema.get("format")
    if not isinstance(name, str):
        return []
    check = _FORMATS.get(name.replace("-", "").lower())
    if check is None or check(value):
        return []
    return [
        FieldError(
            path,
            _TYPE_INVALID,
            f"{path} in body must be of type {name}: {json.dumps(value, ensure_ascii=False)}",
            value,
        )
    ]


def _slice_errors(
    schema: dict[str, Any], value: list[Any], path: str, ratchet: _Ratchet
) -> list[FieldError]:
    errors: list[FieldError] = []
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            errors += _validate(items, item, f"{path}[{index}]", ratchet.item(value, index, schema))
    size = len(value)
    fewest = schema.get("minItems")
    if isinstance(fewest, int) and size < fewest:
        errors.append(
            FieldError(path, _INVALID, f"{path} in body should have at least {fewest} items", size)
        )
    most = schema.get("maxItems")
    if isinstance(most, int) and size > most:
        errors.append(
            FieldError(path, "FieldValueTooMany", f"must have at most {most} items", size)
        )
    return errors


def _object_errors(
    schema: dict[str, Any], value: dict[str, Any], path: str, ratchet: _Ratchet
) -> list[FieldError]:
    errors: list[FieldError] = []
    size = len(value)
    fewest = schema.get("minProperties")
    if isinstance(fewest, int) and size < fewest:
        errors.append(
            FieldError(
                path, _INVALID, f"{path} in body should have at least {fewest} properties", size
            )
        )
    most = schema.get("maxProperties")
    if isinstance(most, int) and size > most:
        errors.append(
            FieldError(path, "FieldValueTooMany", f"must have at most {most} items", size)
        )
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    extra = schema.get("additionalProperties")
    root = not path
    if isinstance(extra, dict):
        for key, item in value.items():
            if key not in properties and not (root and key in _ROOT_SKIPPED):
                errors += _validate(
                    extra, item, f"{path}.{key}" if path else key, ratchet.child(key)
                )
    for key, sub in properties.items():
        if key in value and isinstance(sub, dict) and not (root and key in _ROOT_SKIPPED):
            errors += _validate(
                sub, value[key], f"{path}.{key}" if path else key, ratchet.child(key)
            )
    for key in schema.get("required") or ():
        if isinstance(key, str) and key not in value:
            errors.append(FieldError(f"{path}.{key}" if path else key, _REQUIRED, ""))
    return errors


def _composite(path: str, message: str) -> FieldError:
    return FieldError("<nil>", _INVALID, f'"{path}" {message}', "")


def _alternatives_errors(
    schema: dict[str, Any], value: Any, path: str, ratchet: _Ratchet
) -> list[FieldError]:
    """allOf / anyOf / oneOf / not, each alternative checked at the same path."""
    errors: list[FieldError] = []
    any_of = [s for s in schema.get("anyOf") or () if isinstance(s, dict)]
    if any_of:
        results = [_validate(s, value, path, ratchet) for s in any_of]
        if not any(not r for r in results):
            errors.append(_composite(path, "must validate at least one schema (anyOf)"))
            errors += results[0]
    one_of = [s for s in schema.get("oneOf") or () if isinstance(s, dict)]
    if one_of:
        results = [_validate(s, value, path, ratchet) for s in one_of]
        valid = sum(1 for r in results if not r)
        if valid != 1:
            found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            errors.append(
                _composite(path, f"must validate one and only one schema (oneOf). {found}")
            )
            if valid == 0:
                errors += results[0]
    all_of = [s for s in schema.get("allOf") or () if isinstance(s, dict)]
    if all_of:
        results = [_validate(s, value, path, ratchet) for s in all_of]
        for result in results:
            errors += result
        valid = sum(1 for r in results if not r)
        if valid != len(all_of):
            more = ". None validated" if valid == 0 else ""
            errors.append(_composite(path, f"must validate all the schemas (allOf){more}"))
    negated = schema.get("not")
    if isinstance(negated, dict) and not _validate(negated, value, path, ratchet):
        errors.append(_composite(path, "must not validate the schema (not)"))
    return errors


class _Plan:
    """Which of the validators a schema node has anything for (worked out once per node:
    most nodes have a type and little else, and every write walks them)."""

    __slots__ = (
        "alternatives",
        "enum",
        "numbers",
        "object",
        "slice",
        "strings",
        "typed",
        "types",
    )

    def __init__(self, schema: dict[str, Any]) -> None:
        self.types = _types(schema)
        self.typed = bool(self.types) or bool(schema.get("format"))
        self.alternatives = any(k in schema for k in ("anyOf", "oneOf", "allOf", "not"))
        self.strings = any(k in schema for k in ("maxLength", "minLength", "pattern", "format"))
        self.numbers = any(k in schema for k in ("multipleOf", "maximum", "minimum"))
        self.slice = any(k in schema for k in ("items", "minItems", "maxItems"))
        self.enum = "enum" in schema
        self.object = any(
            k in schema
            for k in (
                "properties",
                "additionalProperties",
                "required",
                "minProperties",
                "maxProperties",
            )
        )


#: id(schema node) -> (the node, its plan); the node is held, so its id is not reused
_PLANS: dict[int, tuple[dict[str, Any], _Plan]] = {}
_PLANS_LIMIT: Final = 65536


def _plan(schema: dict[str, Any]) -> _Plan:
    entry = _PLANS.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    if len(_PLANS) >= _PLANS_LIMIT:
        _PLANS.clear()
    plan = _Plan(schema)
    _PLANS[id(schema)] = (schema, plan)
    return plan


def _validate(schema: Any, value: Any, path: str, ratchet: _Ratchet) -> list[FieldError]:
    """kube-openapi's schema validator, in its order: type, the alternatives, string,
    format, number, items, enum, object."""
    if not isinstance(schema, dict):
        return []
    plan = _plan(schema)
    errors = _type_errors(schema, plan.types, value, path) if plan.typed else []
    if value is None:
        if plan.enum:
            errors += _enum_errors(schema, value, path)
        return ratchet.keep(errors)
    if plan.alternatives:
        errors += _alternatives_errors(schema, value, path, ratchet)
    kind = type(value)
    if kind is str:
        if plan.strings:
            errors += _string_errors(schema, value, path)
            errors += _format_errors(schema, value, path)
    elif kind is int or kind is float:
        if plan.numbers:
            errors += _number_errors(schema, value, path)
    elif kind is list and plan.slice:
        errors += _slice_errors(schema, value, path, ratchet)
    if plan.enum:
        errors += _enum_errors(schema, value, path)
    if kind is dict and plan.object:
        errors += _object_errors(schema, value, path, ratchet)
    return ratchet.keep(errors) if errors else errors


# -- ratcheting -----------------------------------------------------------------------


_ABSENT: Final = object()


class _Ratchet:
    """Where an update's value sits in the stored object: an error about a value the
    update left unchanged is dropped (CRDValidationRatcheting). ``old`` is the stored
    value at the same place (``_ABSENT`` when there is none, or on a create)."""

    __slots__ = ("new", "old")

    def __init__(self, new: Any, old: Any) -> None:
        self.new = new
        self.old = old

    def keep(self, errors: list[FieldError]) -> list[FieldError]:
        if self.old is _ABSENT or not errors:
            return errors
        return [] if _same(self.new, self.old) else errors

    def child(self, key: str) -> _Ratchet:
        if self.old is _ABSENT:  # (a create, or nothing stored here: nothing to ratchet)
            return _UNRATCHETED
        new = self.new.get(key, _ABSENT) if isinstance(self.new, dict) else _ABSENT
        old = self.old.get(key, _ABSENT) if isinstance(self.old, dict) else _ABSENT
        return _Ratchet(new, old)

    def item(self, items: list[Any], index: int, schema: dict[str, Any]) -> _Ratchet:
        """A list item is matched to a stored one by its keys in a map list, and not at
        all in other lists (whose items have no identity of their own)."""
        if self.old is _ABSENT:
            return _UNRATCHETED
        new = items[index]
        keys = schema.get("x-kubernetes-list-map-keys")
        if (
            schema.get("x-kubernetes-list-type") != "map"
            or not isinstance(keys, list)
            or not isinstance(new, dict)
            or not isinstance(self.old, list)
        ):
            return _Ratchet(new, _ABSENT)
        wanted = [new.get(k, _ABSENT) for k in keys]
        for old in self.old:
            if isinstance(old, dict) and [old.get(k, _ABSENT) for k in keys] == wanted:
                return _Ratchet(new, old)
        return _Ratchet(new, _ABSENT)


_UNRATCHETED: Final = _Ratchet(_ABSENT, _ABSENT)


def _same(a: Any, b: Any) -> bool:
    """Deep equality of decoded JSON values, types kept apart (1 is not true)."""
    if type(a) is not type(b):
        return (
            isinstance(a, (int, float))
            and isinstance(b, (int, float))
            and not (isinstance(a, bool) or isinstance(b, bool))
            and a == b
        )
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# -- embedded resources and list types ------------------------------------------------


def _embedded_errors(schema: Any, value: Any, path: str) -> list[FieldError]:
    """apiVersion and kind of each ``x-kubernetes-embedded-resource`` object, and its
    metadata's name (the rule every object's name meets)."""
    if not _below(schema, _EMBEDDED):
        return []
    errors: list[FieldError] = []
    if isinstance(value, dict):
        if schema.get("x-kubernetes-embedded-resource") is True:
            errors += _embedded_resource_errors(value, path)
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if not path and key in _ROOT_SKIPPED:
                continue
            if key in properties:
                errors += _embedded_errors(properties[key], item, f"{path}.{key}" if path else key)
            elif isinstance(extra, dict):
                errors += _embedded_errors(extra, item, f"{path}[{key}]")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            errors += _embedded_errors(schema.get("items"), item, f"{path}[{index}]")
    return errors


def _embedded_resource_errors(value: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in ("apiVersion", "kind"):
        if key not in value:
            errors.append(FieldError(f"{path}.{key}", _REQUIRED, "must not be empty"))
    api_version = value.get("apiVersion", "")
    if "apiVersion" in value:
        if not isinstance(api_version, str):
            errors.append(
                FieldError(f"{path}.apiVersion", _INVALID, "must be a string", _shown(api_version))
            )
        elif not api_version:
            errors.append(FieldError(f"{path}.apiVersion", _INVALID, "must not be empty", ""))
        elif api_version.count("/") > 1:
            errors.append(
                FieldError(
                    f"{path}.apiVersion",
                    _INVALID,
                    f"unexpected GroupVersion string: {api_version}",
                    api_version,
                )
            )
    kind = value.get("kind", "")
    if "kind" in value:
        if not isinstance(kind, str):
            errors.append(FieldError(f"{path}.kind", _INVALID, "must be a string", _shown(kind)))
        elif not kind:
            errors.append(FieldError(f"{path}.kind", _INVALID, "must not be empty", ""))
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        name = metadata.get("name")
        if isinstance(name, str) and name:
            errors += [
                FieldError(f"{path}.metadata.name", _INVALID, why, name)
                for why in path_segment_errors(name)
            ]
    return errors


def _list_type_errors(schema: Any, value: Any, path: str) -> list[FieldError]:
    """Duplicates in ``x-kubernetes-list-type: set`` and ``map`` lists."""
    if not _below(schema, _LIST_TYPES):
        return []
    errors: list[FieldError] = []
    if isinstance(value, dict):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                errors += _list_type_errors(properties[key], item, f"{path}.{key}" if path else key)
            elif isinstance(extra, dict):
                errors += _list_type_errors(extra, item, f"{path}[{key}]")
    elif isinstance(value, list):
        kind = schema.get("x-kubernetes-list-type")
        if kind == "set":
            for index in _repeated(value):
                errors.append(
                    FieldError(f"{path}[{index}]", "FieldValueDuplicate", _dup(value[index]))
                )
        elif kind == "map":
            errors += _map_list_errors(schema, value, path)
        for index, item in enumerate(value):
            errors += _list_type_errors(schema.get("items"), item, f"{path}[{index}]")
    return errors


def _dup(value: Any) -> str:
    """A duplicate's value as ``field.Duplicate`` prints it (``%q`` / ``%v`` / ``%#v``)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (dict, list)) or value is None:
        return "null" if value is None else go_sharp_v(value)
    return _go_v(value)


def _identity(value: Any) -> Any:
    """A value as a hashable key as Go's set check tells values apart: a scalar by its
    type and value (Go's interface keys: 1, 1.0 and true differ), an object or list by
    its JSON text (where 1 and 1.0 are both ``1``)."""
    if isinstance(value, (dict, list)):
        return ("json", _json_identity(value))
    return (type(value).__name__, value)


def _json_identity(value: Any) -> Any:
    """What decides equal JSON texts, without writing them: keys sorted, a number by how
    Go writes it."""
    if isinstance(value, dict):
        return tuple(sorted((k, _json_identity(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("[", *(_json_identity(v) for v in value))
    if isinstance(value, float):
        return ("n", go_json(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return ("n", str(value))
    return (type(value).__name__, value)


def _repeated(values: list[Any]) -> list[int]:
    """The indices where a value is seen the second time (each value reported once)."""
    seen: dict[Any, int] = {}
    out = []
    for index, value in enumerate(values):
        key = _identity(value)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 2:
            out.append(index)
    return out


def _map_list_errors(schema: dict[str, Any], value: list[Any], path: str) -> list[FieldError]:
    for index, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            return [
                FieldError(
                    f"{path}[{index}]",
                    _INVALID,
                    "must be an object for an array of list-type map",
                    _shown(item),
                )
            ]
    if len(value) <= 1:
        return []
    key_fields = [k for k in schema.get("x-kubernetes-list-map-keys") or () if isinstance(k, str)]
    keys: list[dict[str, Any]] = []
    for item in value:
        keys.append({k: item[k] for k in key_fields if isinstance(item, dict) and k in item})
    return [
        FieldError(f"{path}[{index}]", "FieldValueDuplicate", go_sharp_v(keys[index]))
        for index in _repeated([k if k else _UNSPECIFIED for k in keys])
    ]


#: A map-list item without its key: all such items share one "unspecified" key.
_UNSPECIFIED: Final = "\x00unspecified"


# -- formats --------------------------------------------------------------------------


_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID3 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID4 = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
)
_UUID5 = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
)
_HOST_LABEL = r"[a-zA-Z0-9\u00a0-\U0010ffff]"
_HOSTNAME = re.compile(
    rf"^({_HOST_LABEL}((-?{_HOST_LABEL}{{0,62}})?)|"
    rf"({_HOST_LABEL}(([a-zA-Z0-9\-\u00a0-\U0010ffff]{{0,61}}{_HOST_LABEL})?)(\.)){{1,}}"
    r"([a-zA-Z\u00a0-\U0010ffff]){2,63})$"
)
_BASE64 = re.compile(
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
)
_MAC = re.compile(
    r"^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$|^([0-9A-Fa-f]{2}[:-]){7}([0-9A-Fa-f]{2})$|"
    r"^([0-9A-Fa-f]{4}\.){2}([0-9A-Fa-f]{4})$|^([0-9A-Fa-f]{4}\.){3}([0-9A-Fa-f]{4})$"
)
_TIME_OF_DAY = re.compile(
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
)
_GO_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$|^[-+]?0$")
_LOOSE_DURATION = re.compile(r"((\d+)\s*([A-Za-zµ]+))")
_DURATION_UNITS = (
    ("ns", "nano"),
    ("us", "µs", "micro"),
    ("ms", "milli"),
    ("s", "sec"),
    ("m", "min"),
    ("h", "hr", "hour"),
    ("d", "day"),
    ("w", "wk", "week"),
)
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGBCOLOR = re.compile(
    r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
    r"\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$"
)
_PLAIN_EMAIL = re.compile(r"^[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_BSON_ID = re.compile(r"^[0-9a-fA-F]{24}$")


def _is_date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_datetime(text: str) -> bool:
    """strfmt's IsDateTime: a date, a "t", and a time of day (hours to 23, minutes and
    seconds to 59) with a zone."""
    if len(text) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    found = _TIME_OF_DAY.search(parts[1])
    return found is not None and found[1] <= "23" and found[2] <= "59" and found[3] <= "59"


def _is_duration(text: str) -> bool:
    """Go's time.ParseDuration, else strfmt's looser "<n> <unit>" form."""
    if _GO_DURATION.match(text):
        return True
    for _, _, unit in _LOOSE_DURATION.findall(text):
        unit = unit.strip().lower()
        for variants in _DURATION_UNITS:
            last = len(variants) - 1
            for index, variant in enumerate(variants):
                if (index == last and unit.startswith(variant)) or unit == variant.lower():
                    return True
    return False


def _is_ipv4(text: str) -> bool:
    """An IPv4 address, leading zeros tolerated (k8s.io/utils ParseIPSloppy)."""
    parts = text.split(".")
    return len(parts) == 4 and all(p.isdigit() and p.isascii() and int(p) <= 255 for p in parts)


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return _is_ipv4(text)  # (Go's net.ParseIP reads an IPv4 address too)
    return True


def _is_cidr(text: str) -> bool:
    address, slash, bits = text.partition("/")
    if not slash or not bits.isdigit() or not bits.isascii():
        return False
    if _is_ipv4(address):
        return int(bits) <= 32
    try:
        ipaddress.IPv6Address(address)
    except ValueError:
        return False
    return int(bits) <= 128


def _is_email(text: str) -> bool:
    """Go's net/mail.ParseAddress, roughly: one address with a local part and a domain."""
    if _PLAIN_EMAIL.match(text):  # (the common case, without the parser)
        return True
    _, address = email.utils.parseaddr(text)
    if not address or "@" not in address:
        return False
    local, _, domain = address.rpartition("@")
    return bool(local) and bool(domain) and " " not in address


def _is_hostname(text: str) -> bool:
    if not _HOSTNAME.match(text) or len(text) > 255:
        return False
    return all(len(part) <= 63 for part in text.split("."))


def _is_uri(text: str) -> bool:
    """Go's url.ParseRequestURI: an absolute URI or an absolute path."""
    if not text or " " in text:
        return False
    parsed = urllib.parse.urlsplit(text)
    return bool(parsed.scheme) or text.startswith("/")


def _is_base64(text: str) -> bool:
    if not _BASE64.match(text):
        return False
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _isbn10(text: str) -> bool:
    digits = re.sub(r"[\s-]", "", text)
    if not re.fullmatch(r"\d{9}[\dX]", digits):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
    return total % 11 == 0


def _isbn13(text: str) -> bool:
    digits = re.sub(r"[\s-]", "", text)
    if not re.fullmatch(r"\d{13}", digits):
        return False
    total = sum((1 if i % 2 == 0 else 3) * int(c) for i, c in enumerate(digits[:12]))
    return (10 - total % 10) % 10 == int(digits[12])


def _creditcard(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    if not re.fullmatch(
        r"4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
        r"3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}",
        digits,
    ):
        return False
    total = 0
    for index, char in enumerate(reversed(digits)):
        number = int(char)
        if index % 2:
            number = number * 2 - 9 if number * 2 > 9 else number * 2
        total += number
    return total % 10 == 0


#: The formats a CRD's schema may name that the server checks (names as strfmt reads
#: them: dashes dropped); any other format is not checked.
_FORMATS: Final[dict[str, Callable[[str], bool]]] = {
    "bsonobjectid": lambda s: bool(_BSON_ID.match(s)),
    "uri": _is_uri,
    "email": _is_email,
    "hostname": _is_hostname,
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "cidr": _is_cidr,
    "mac": lambda s: bool(_MAC.match(s)),
    "uuid": lambda s: bool(_UUID.match(s)),
    "uuid3": lambda s: bool(_UUID3.match(s)),
    "uuid4": lambda s: bool(_UUID4.match(s)),
    "uuid5": lambda s: bool(_UUID5.match(s)),
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _creditcard,
    "ssn": lambda s: bool(_SSN.match(s)),
    "hexcolor": lambda s: bool(_HEXCOLOR.match(s)),
    "rgbcolor": lambda s: bool(_RGBCOLOR.match(s)),
    "byte": _is_base64,
    "password": lambda s: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": _is_datetime,
}


# -- the whole check ------------------------------------------------------------------


def schema_errors(
    schema: Any,
    obj: Any,
    old: Any = None,
    metadata: Any = None,
    old_metadata: Any = None,
) -> list[FieldError]:
    """What a custom resource's structural schema refuses in ``obj`` (defaulted), in
    kube-apiserver 1.30's words: the schema's validation, then the embedded resources',
    then the list types', then the validation rules (``x-kubernetes-validations``,
    :func:`rule_errors`; not run when an earlier error is one that blocks them). With
    ``old`` (an update), errors about values the update left as they were are dropped
    (ratcheting; the embedded and list-type checks are not ratcheted, as the server
    does not ratchet them). ``metadata`` is the object's (``self.metadata`` in a rule
    at the root)."""
    if not isinstance(schema, dict):
        return []
    ratchet = _UNRATCHETED if old is None else _Ratchet(obj, old)
    errors = _validate(schema, obj, "", ratchet)
    errors += _embedded_errors(schema, obj, "")
    errors += _list_type_errors(schema, obj, "")
    if _below(schema, _RULES):
        if any(e.reason in _BLOCKING for e in errors):
            errors.append(FieldError("<nil>", _INVALID, _NOT_CHECKED, "null"))
        else:
            errors += rule_errors(schema, obj, old, metadata, old_metadata)
    return errors


# -- 4. validation rules (x-kubernetes-validations) -----------------------------------

#: The errors after which the server does not run the rules (hasBlockingErr).
_BLOCKING: Final = frozenset(
    {"FieldValueNotSupported", _REQUIRED, "FieldValueTooLong", "FieldValueTooMany", _TYPE_INVALID}
)
_NOT_CHECKED: Final = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)
_REASONS: Final = {
    "FieldValueForbidden": "FieldValueForbidden",
    "FieldValueRequired": _REQUIRED,
    "FieldValueDuplicate": "FieldValueDuplicate",
}
_MESSAGE_EXPRESSION_LIMIT: Final = 5 * 1024

#: Where a ratcheted rule failure goes: the request's warnings (the HTTP layer sets
#: it to them for the request), sent as ``Warning`` headers as 1.30 sends them.
rule_warnings: ContextVar[list[str] | None] = ContextVar("rule_warnings", default=None)


def _cel_value(value: Any, schema: Any, resource: bool = False, metadata: Any = None) -> Any:
    """A JSON value as the rule sees it: typed by its schema (a ``number`` is a double,
    a ``byte`` string bytes, a ``duration`` / ``date-time`` string a duration /
    timestamp), an object with properties one whose undeclared fields cannot be
    selected; a resource's root or embedded resource also has apiVersion, kind and
    metadata (its name and generateName)."""
    if value is None:
        return None
    if not isinstance(schema, dict) or not schema:
        return _untyped(value)
    kind = schema.get("type")
    if isinstance(value, dict):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, dict) and not resource:
            return {k: _cel_value(v, extra) for k, v in value.items()}
        if not properties and not resource and kind != "object":
            return _untyped(value)
        fields: set[str] = set()
        items: dict[str, Any] = {}
        for key, sub in properties.items():
            name = escape_name(key)
            if name is None:
                continue
            fields.add(name)
            if value.get(key) is not None:  # (a null field is an absent one)
                items[name] = _cel_value(value[key], sub, _embedded(sub))
        if resource:
            fields |= {"apiVersion", "kind", "metadata"}
            for key in ("apiVersion", "kind"):
                if isinstance(value.get(key), str):
                    items[key] = value[key]
            meta = metadata if metadata is not None else value.get("metadata")
            if isinstance(meta, dict):
                items["metadata"] = Object(
                    {k: meta[k] for k in ("name", "generateName") if isinstance(meta.get(k), str)},
                    frozenset({"name", "generateName"}),
                )
        return Object(items, frozenset(fields))
    if isinstance(value, list):
        items_schema = schema.get("items")
        converted = [_cel_value(v, items_schema) for v in value]
        list_type = schema.get("x-kubernetes-list-type")
        keys = schema.get("x-kubernetes-list-map-keys")
        if list_type == "set":
            return SetList(converted)
        if list_type == "map" and isinstance(keys, list):
            return MapList(converted, tuple(escape_name(str(k)) or str(k) for k in keys))
        return ObjectList(converted)
    if isinstance(value, str):
        fmt = schema.get("format")
        if kind == "string" and fmt == "byte":
            try:
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise Unsupported("not base64") from None
        if kind == "string" and fmt == "duration":
            try:
                return parse_duration(value)
            except CelError:
                raise Unsupported("not a duration") from None
        if kind == "string" and fmt in ("date-time", "date"):
            text = value + "T00:00:00Z" if fmt == "date" else value
            try:
                return parse_timestamp(text)
            except CelError:
                raise Unsupported("not a timestamp") from None
        return value
    if kind == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _untyped(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untyped(v) for k, v in value.items()}
    if isinstance(value, list):
        return ObjectList(_untyped(v) for v in value)
    return value


def _embedded(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("x-kubernetes-embedded-resource") is True


def _rule_field_path(field_path: str, schema: Any) -> str | None:
    """A rule's ``fieldPath`` (``.a.b``, ``.a['b']``) as the error's path below the
    rule's schema; None when it does not name a field of the schema."""
    pieces: list[str] = []
    at = 0
    current = schema
    pattern = re.compile(r"\.([^.\[\]]+)|\['((?:[^'\\]|\\.)*)'\]")
    while at < len(field_path):
        found = pattern.match(field_path, at)
        if found is None or not isinstance(current, dict):
            return None
        name = found[1] if found[1] is not None else re.sub(r"\\(.)", r"\1", found[2])
        at = found.end()
        properties = current.get("properties")
        extra = current.get("additionalProperties")
        if isinstance(properties, dict):
            if name not in properties:
                return None
            pieces.append(("." if pieces else "") + name)
            current = properties[name]
        elif isinstance(extra, dict):
            pieces.append(f"[{name}]")
            current = extra
        else:
            return None
    return "".join(pieces)


class _RuleContext:
    __slots__ = ("errors", "metadata", "old_metadata")

    def __init__(self, metadata: Any, old_metadata: Any) -> None:
        self.errors: list[FieldError] = []
        self.metadata = metadata
        self.old_metadata = old_metadata

    @staticmethod
    def has_rules(schema: Any) -> bool:
        """Whether rules sit at or below ``schema`` (:func:`_below`, worked out once per
        schema node)."""
        return _below(schema, _RULES)


def rule_errors(
    schema: Any, obj: Any, old: Any = None, metadata: Any = None, old_metadata: Any = None
) -> list[FieldError]:
    """What the schema's validation rules refuse in ``obj``, in 1.30's words: each
    schema node's rules, with ``self`` the value there (absent and null values are not
    checked) and ``oldSelf`` the stored value at the same place on an update (matched
    as ratcheting matches it: by key in objects and maps, by the map keys in a map
    list, not at all in other lists); a rule with ``oldSelf`` and no stored value is
    skipped unless ``optionalOldSelf``. A rule that fails on a value the update left
    as it was is not reported, unless it reads ``oldSelf``. A rule this interpreter
    cannot read is skipped (a real server refuses such a CRD)."""
    context = _RuleContext(metadata, old_metadata)
    _walk_rules(schema, obj, _ABSENT if old is None else old, "", True, False, context)
    return context.errors


def _walk_rules(
    schema: Any,
    value: Any,
    old: Any,
    path: str,
    resource: bool,
    parent_same: bool | None,
    context: _RuleContext,
) -> None:
    """Check the rules at and below ``schema``; ``parent_same``: whether the nearest
    value matched to a stored one is unchanged (None: never ratchet here)."""
    if not isinstance(schema, dict) or value is None or not context.has_rules(schema):
        return
    if parent_same is None:
        same = False
    else:
        same = _same(value, old) if old is not _ABSENT else parent_same
    rules = schema.get("x-kubernetes-validations")
    if isinstance(rules, list) and rules:
        _check_rules(schema, rules, value, old, path, resource, same, context)
    if isinstance(value, dict):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if not path and key in _ROOT_SKIPPED:
                continue
            old_item = old.get(key, _ABSENT) if isinstance(old, dict) else _ABSENT
            if key in properties:
                sub = properties[key]
                where = f"{path}.{key}" if path else key
            elif isinstance(extra, dict):
                sub = extra
                where = f"{path}[{key}]"
            else:
                continue
            if old_item is None:
                old_item = _ABSENT
            # (the root's type meta is never ratcheted: parent_same None)
            type_meta = not path and key in ("apiVersion", "kind")
            _walk_rules(
                sub, item, old_item, where, _embedded(sub), None if type_meta else same, context
            )
    elif isinstance(value, list):
        items = schema.get("items")
        ratchet = _Ratchet(value, old)
        for index, item in enumerate(value):
            old_item = ratchet.item(value, index, schema).old if old is not _ABSENT else _ABSENT
            if old_item is None:
                old_item = _ABSENT
            _walk_rules(items, item, old_item, f"{path}[{index}]", _embedded(items), same, context)


def _check_rules(
    schema: dict[str, Any],
    rules: list[Any],
    value: Any,
    old: Any,
    path: str,
    resource: bool,
    same: bool,
    context: _RuleContext,
) -> None:
    kind = schema.get("type")
    shown = kind if isinstance(kind, str) else ""
    field = path or "<nil>"
    self_value: Any = _ABSENT
    old_value: Any = _ABSENT
    for rule in rules:
        if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str):
            continue
        text = rule["rule"]
        if not text.strip():
            continue
        try:
            program = compile_rule(text)
        except Unsupported:
            continue
        optional_old = rule.get("optionalOldSelf") is True
        if program.uses_old_self and old is _ABSENT and not optional_old:
            continue
        try:
            if self_value is _ABSENT:
                self_value = _cel_value(
                    value, schema, resource, context.metadata if not path else None
                )
            variables = {"self": self_value}
            if program.uses_old_self or optional_old:
                if old_value is _ABSENT and old is not _ABSENT:
                    old_value = _cel_value(
                        old, schema, resource, context.old_metadata if not path else None
                    )
                if optional_old:
                    variables["oldSelf"] = (
                        Optional(old_value) if old is not _ABSENT else optional_none()
                    )
                else:
                    variables["oldSelf"] = old_value
            result = program.evaluate(variables)
        except Unsupported:
            continue
        except CelError as exc:
            label = _rule_label(rule)
            detail = str(exc)
            if detail.startswith("no such overload"):
                detail = (
                    f"'{detail}': call arguments did not match a supported operator, "
                    f"function or macro signature for rule: {label}"
                )
            else:
                detail = f"{detail} evaluating rule: {label}"
            context.errors.append(FieldError(field, _INVALID, detail, shown))
            continue
        if result is True:
            continue
        if not isinstance(result, bool):
            continue  # (not a bool: a real server refuses the CRD)
        where = field
        field_path = rule.get("fieldPath")
        if isinstance(field_path, str) and field_path:
            relative = _rule_field_path(field_path, schema)
            if relative:
                where = f"{path}.{relative}" if path else relative
        message = _rule_message(rule)
        expression = rule.get("messageExpression")
        if isinstance(expression, str) and expression:
            variables = {"self": self_value}
            # (oldSelf is bound for it only when a rule of this node reads oldSelf)
            if old is not _ABSENT and _node_reads_old_self(rules):
                try:
                    if old_value is _ABSENT:
                        old_value = _cel_value(
                            old, schema, resource, context.old_metadata if not path else None
                        )
                    variables["oldSelf"] = old_value
                except Unsupported:
                    pass
            message = _message_expression(expression, variables) or message
        error = _rule_error(where, rule.get("reason"), message, shown)
        if same and not program.uses_old_self:  # (ratcheted: the server only warns)
            warnings = rule_warnings.get()
            if warnings is not None:
                warnings.append(error.message())
            continue
        context.errors.append(error)


def _node_reads_old_self(rules: list[Any]) -> bool:
    for rule in rules:
        text = rule.get("rule") if isinstance(rule, dict) else None
        if isinstance(text, str) and text.strip():
            try:
                if compile_rule(text).uses_old_self:
                    return True
            except Unsupported:
                continue
    return False


def _rule_label(rule: dict[str, Any]) -> str:
    message = rule.get("message")
    if isinstance(message, str) and message:
        return message.strip()
    return str(rule["rule"]).strip()


def _rule_message(rule: dict[str, Any]) -> str:
    message = rule.get("message")
    if isinstance(message, str) and message:
        return message.strip()
    return f"failed rule: {str(rule['rule']).strip()}"


def _message_expression(expression: str, variables: dict[str, Any]) -> str | None:
    """A messageExpression's message; None when it fails (the rule's message is used
    then, as the server does)."""
    try:
        result = compile_rule(expression).evaluate(variables)
    except (Unsupported, CelError):
        return None
    if not isinstance(result, str):
        return None
    text = result.strip()
    if not text or "\n" in text or len(text.encode()) > _MESSAGE_EXPRESSION_LIMIT:
        return None
    return text


def _rule_error(field: str, reason: Any, message: str, shown: str) -> FieldError:
    kind = _REASONS.get(reason) if isinstance(reason, str) else None
    if kind == "FieldValueDuplicate":
        return FieldError(field, kind, json.dumps(shown))
    if kind is not None:
        return FieldError(field, kind, message)
    return FieldError(field, _INVALID, message, shown)
