"""A LimitRange's ``spec.limits`` validated as kube-apiserver 1.30 does.

Each item's ``type`` is ``Pod``, ``Container``, ``PersistentVolumeClaim`` or a
qualified name with a prefix, and no type comes twice. Resource names are those a
container may ask for (Pod, Container) or any standard or qualified resource (the
others). A ``Pod`` item has no ``default``/``defaultRequest``; a
``PersistentVolumeClaim`` item bounds ``storage`` with a ``min`` or a ``max``. Per
resource: min <= defaultRequest <= default <= max, ``maxLimitRequestRatio`` at least 1
and at most max/min, and a resource that cannot be overcommitted (an extended one,
huge pages) has equal default and defaultRequest. The object is the defaulted one: a
Container item's ``default`` already holds its ``max`` and its ``defaultRequest`` its
``default`` and ``min``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._defaults import canonical_quantity, quantity_value
from ._quota_validation import (
    container_resource_name_errors,
    go_quantity,
    is_native,
    standard_resource_name_errors,
)
from ._validation import FieldError, GoValue, qualified_name_errors

__all__ = ["limit_range_errors"]

_INVALID: Final = "FieldValueInvalid"
_TYPES: Final = frozenset({"Pod", "Container", "PersistentVolumeClaim"})
#: Go's resource.MaxMilliValue: past it a ratio is compared in whole units.
_MAX_MILLI: Final = (2**63 - 1) // 1000


def _dict(value: Any) -> JSONDict:
    return value if isinstance(value, dict) else {}


def _type_errors(kind: str, where: str) -> list[FieldError]:
    problems = qualified_name_errors(kind)
    if not problems and "/" not in kind and kind not in _TYPES:
        problems = ["must be a standard limit type or fully qualified"]
    return [FieldError(where, _INVALID, why, kind) for why in problems]


def _names(kind: str, resources: JSONDict, where: str) -> list[FieldError]:
    check = (
        container_resource_name_errors
        if kind in ("Pod", "Container")
        else standard_resource_name_errors
    )
    return [
        FieldError(f"{where}[{name}]", _INVALID, why, name)
        for name in resources
        for why in check(name)
    ]


def _away_from_zero(value: Fraction) -> int:
    """Go's Quantity.Value: rounded up, away from zero."""
    whole = math.ceil(abs(value))
    return whole if value >= 0 else -whole


class _Quantity:
    """One quantity of an item: its exact value, its text and Go's ``%#v`` of it."""

    def __init__(self, raw: Any) -> None:
        self.text = str(canonical_quantity(raw))
        self.value = quantity_value(raw) or Fraction(0)

    def shown(self) -> GoValue:
        return GoValue(go_quantity(self.text))

    def milli(self) -> int:
        return _away_from_zero(self.value * 1000)

    def whole(self) -> int:
        return _away_from_zero(self.value)


def _ratio_limit(ratio: _Quantity, low: _Quantity, high: _Quantity) -> tuple[float, float]:
    """The ratio and max/min as Go compares them: in thousandths when all three fit."""
    if all(q.whole() < _MAX_MILLI for q in (ratio, low, high)):
        value, lowest, highest = ratio.milli() / 1000, low.milli(), high.milli()
    else:
        value, lowest, highest = float(ratio.whole()), low.whole(), high.whole()
    if lowest == 0:
        return value, math.nan if highest == 0 else math.copysign(math.inf, highest)
    return value, highest / lowest


def _bounds(name: str, lists: dict[str, dict[str, _Quantity]], where: str) -> list[FieldError]:
    low = lists["min"].get(name)
    high = lists["max"].get(name)
    default = lists["default"].get(name)
    request = lists["defaultRequest"].get(name)
    ratio = lists["maxLimitRequestRatio"].get(name)
    errors: list[FieldError] = []

    def fail(key: str, shown: _Quantity, why: str) -> None:
        errors.append(FieldError(f"{where}.{key}[{name}]", _INVALID, why, shown.shown()))

    if low and high and low.value > high.value:
        fail("min", low, f"min value {low.text} is greater than max value {high.text}")
    if request and low and low.value > request.value:
        fail(
            "defaultRequest",
            request,
            f"min value {low.text} is greater than default request value {request.text}",
        )
    if request and high and request.value > high.value:
        fail(
            "defaultRequest",
            request,
            f"default request value {request.text} is greater than max value {high.text}",
        )
    if request and default and request.value > default.value:
        fail(
            "defaultRequest",
            request,
            f"default request value {request.text} is greater than default limit value "
            f"{default.text}",
        )
    if default and low and low.value > default.value:
        fail("default", low, f"min value {low.text} is greater than default value {default.text}")
    if default and high and default.value > high.value:
        # (Go shows the max here, not the default)
        fail("default", high, f"default value {default.text} is greater than max value {high.text}")
    if ratio and ratio.value < 1:
        fail("maxLimitRequestRatio", ratio, f"ratio {ratio.text} is less than 1")
    if ratio and low and high:
        value, limit = _ratio_limit(ratio, low, high)
        if value > limit:
            fail(
                "maxLimitRequestRatio",
                ratio,
                f"ratio {ratio.text} is greater than max/min = {limit:f}",
            )
    overcommit = is_native(name) and not name.startswith("hugepages-")
    if not overcommit and default and request and default.value != request.value:
        fail(
            "defaultRequest",
            request,
            f"default value {default.text} must equal to defaultRequest value {request.text} "
            f"in {name}",
        )
    return errors


def _item_errors(item: JSONDict, where: str) -> list[FieldError]:
    kind = str(item.get("type") or "")
    errors: list[FieldError] = []
    keys: dict[str, None] = {}
    lists: dict[str, dict[str, _Quantity]] = {
        key: {} for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")
    }

    def take(key: str) -> None:
        resources = _dict(item.get(key))
        errors.extend(_names(kind, resources, f"{where}.{key}"))
        for name, quantity in resources.items():
            keys[name] = None
            lists[key][name] = _Quantity(quantity)

    take("max")
    take("min")
    if kind == "Pod":
        for key in ("default", "defaultRequest"):
            if _dict(item.get(key)):
                errors.append(
                    FieldError(
                        f"{where}.{key}",
                        "FieldValueForbidden",
                        "may not be specified when `type` is 'Pod'",
                    )
                )
    else:
        take("default")
        take("defaultRequest")
    if kind == "PersistentVolumeClaim" and not (
        "storage" in _dict(item.get("min")) or "storage" in _dict(item.get("max"))
    ):
        errors.append(
            FieldError(
                f"{where}.limits",
                "FieldValueRequired",
                "either minimum or maximum storage value is required, but neither was provided",
            )
        )
    take("maxLimitRequestRatio")
    for name in keys:
        errors += _bounds(name, lists, where)
    return errors


def limit_range_errors(obj: JSONDict) -> list[FieldError]:
    """What validation refuses in a LimitRange's (defaulted) ``spec.limits``."""
    limits = _dict(obj.get("spec")).get("limits")
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, item in enumerate(limits if isinstance(limits, list) else []):
        if not isinstance(item, dict):
            continue
        where = f"spec.limits[{index}]"
        kind = str(item.get("type") or "")
        errors += _type_errors(kind, f"{where}.type")
        if kind in seen:
            errors.append(FieldError(f"{where}.type", "FieldValueDuplicate", f'"{kind}"', kind))
        seen.add(kind)
        errors += _item_errors(item, where)
    return errors
