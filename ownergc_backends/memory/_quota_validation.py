"""A ResourceQuota's ``hard`` (and status) entries, validated as kube-apiserver 1.30 does.

A resource name is a qualified name; one without a ``/`` is a standard resource
("must be a standard resource type or fully qualified") and one quota tracks ("must
be a standard resource for quota"). A quantity is not negative, and an object count
(``pods``, ``services``, ``count/...``, an extended resource without the ``requests.``
prefix) is whole ("must be an integer", the value printed as Go prints a
``resource.Quantity`` with ``%#v``).
"""

from __future__ import annotations

import re
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._defaults import canonical_quantity, quantity_value
from ._validation import FieldError, GoValue, qualified_name_errors

__all__ = ["resource_quota_errors"]

_COUNTS: Final = frozenset(
    {
        "pods",
        "quotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
#: What a quota tracks, besides the counts and huge pages.
_QUOTA_RESOURCES: Final = _COUNTS | {
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
}
#: The standard resources: the quota ones, less requests.storage's kin, plus storage.
_STANDARD: Final = _QUOTA_RESOURCES | {"storage"}
_HUGE_PAGES: Final = ("hugepages-", "requests.hugepages-")
_DECIMAL: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(n|u|m|k|M|G|T|P|E)?")
_EXPONENTS: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}


def _huge_pages(name: str) -> bool:
    return name.startswith(_HUGE_PAGES)


def _is_count(name: str) -> bool:
    """kube-apiserver's IsIntegerResourceName: a count, or an extended resource (outside
    kubernetes.io, not ``requests.``-prefixed)."""
    if name in _COUNTS or name.startswith("count/"):
        return True
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.")


def _name_errors(name: str) -> list[str]:
    problems = qualified_name_errors(name)
    if "/" in name:
        return problems
    if not problems and name not in _STANDARD and not _huge_pages(name):
        problems = ["must be a standard resource type or fully qualified"]
    if name not in _QUOTA_RESOURCES and not _huge_pages(name):
        problems = [*problems, "must be a standard resource for quota"]
    return problems


def go_quantity(text: str) -> str:
    """Go's ``%#v`` of the ``resource.Quantity`` parsed from a decimal ``text`` (the form
    a whole-number check prints it in)."""
    match = _DECIMAL.fullmatch(text)
    if match is None:
        return text
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    value = int(f"{sign}{whole}{fraction}" or "0")
    scale = _EXPONENTS[suffix or ""] - len(fraction)
    cached = text if canonical_quantity(text) == text else ""
    return (
        f"resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, "
        f'd:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:"{cached}", Format:"DecimalSI"}}'
    )


def _list_errors(resources: Any, where: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not isinstance(resources, dict):
        return errors
    for name, quantity in resources.items():
        path = f"{where}[{name}]"
        errors.extend(
            FieldError(path, "FieldValueInvalid", why, name) for why in _name_errors(name)
        )
        value = quantity_value(quantity)
        if value is None:
            continue
        if value < 0:
            errors.append(
                FieldError(
                    path,
                    "FieldValueInvalid",
                    "must be greater than or equal to 0",
                    str(canonical_quantity(quantity)),
                )
            )
        if _is_count(name) and value.denominator != 1:
            shown = go_quantity(str(quantity))
            errors.append(
                FieldError(path, "FieldValueInvalid", "must be an integer", GoValue(shown))
            )
    return errors


def resource_quota_errors(obj: JSONDict) -> list[FieldError]:
    """What validation refuses in a ResourceQuota's ``spec.hard`` and status lists."""
    spec = obj.get("spec")
    status = obj.get("status")
    errors = _list_errors(spec.get("hard") if isinstance(spec, dict) else None, "spec.hard")
    if isinstance(status, dict):
        errors += _list_errors(status.get("hard"), "status.hard")
        errors += _list_errors(status.get("used"), "status.used")
    return errors
