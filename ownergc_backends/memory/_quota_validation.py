"""A ResourceQuota's ``hard`` (and status) entries, validated as kube-apiserver 1.30 does.

A resource name is a qualified name; one without a ``/`` is a standard resource
("must be a standard resource type or fully qualified") and one quota tracks ("must
be a standard resource for quota"). A quantity is not negative, and an object count
(``pods``, ``services``, ``count/...``, an extended resource without the ``requests.``
prefix) is whole ("must be an integer", the value printed as Go prints a
``resource.Quantity`` with ``%#v``).

``spec.scopes`` and ``spec.scopeSelector``: each scope one of the standard ones, each
fit for every standard quota resource in ``hard`` (``BestEffort`` only counts pods; the
others pods, cpu and memory), ``BestEffort``/``NotBestEffort`` and
``Terminating``/``NotTerminating`` never together; a selector's operator one of the
four, with values exactly for ``In``/``NotIn`` and ``Exists`` the only one for the
pod-state scopes. On update the set of scopes cannot change.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._defaults import canonical_quantity, quantity_value
from ._validation import FieldError, GoValue, go_string, qualified_name_errors

__all__ = [
    "container_resource_name_errors",
    "go_quantity",
    "is_native",
    "resource_quota_errors",
    "resource_quota_update_errors",
    "standard_resource_name_errors",
]

_COUNTS: Final = frozenset(
    {
        "pods",
        "resourcequotas",
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
_CONTAINER: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_HUGE_PAGES: Final = ("hugepages-", "requests.hugepages-")
_INVALID: Final = "FieldValueInvalid"
_DECIMAL: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(n|u|m|k|M|G|T|P|E)?")
_BINARY: Final = re.compile(r"(-?)([0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei)")
_BINARY_SUFFIXES: Final = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
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


#: The scopes a quota may name; 1.30 adds CrossNamespacePodAffinity (1.21+, GA 1.24).
_SCOPES: Final = frozenset(
    {
        "Terminating",
        "NotTerminating",
        "BestEffort",
        "NotBestEffort",
        "PriorityClass",
        "CrossNamespacePodAffinity",
    }
)
#: What a scope other than BestEffort may limit (BestEffort: pods alone).
_POD_SCOPED: Final = frozenset(
    {"pods", "cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"}
)
_CONFLICTING: Final = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
#: Scopes a selector may only name with ``Exists``.
_EXISTS_ONLY: Final = frozenset(
    {"BestEffort", "NotBestEffort", "Terminating", "NotTerminating", "CrossNamespacePodAffinity"}
)
_EXISTS_ONLY_WORDS: Final = (
    "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
    "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
    "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"
)


def _huge_pages(name: str) -> bool:
    return name.startswith(_HUGE_PAGES)


def _is_count(name: str) -> bool:
    """kube-apiserver's IsIntegerResourceName: a count, or an extended resource (outside
    kubernetes.io, not ``requests.``-prefixed)."""
    if name in _COUNTS or name.startswith("count/"):
        return True
    return not is_native(name) and not name.startswith("requests.")


def is_native(name: str) -> bool:
    """In kubernetes.io (a name without a prefix is)."""
    return "/" not in name or "kubernetes.io/" in name


def standard_resource_name_errors(name: str) -> list[str]:
    """kube-apiserver's validateResourceName: a qualified name, and one without a prefix
    a standard resource."""
    problems = qualified_name_errors(name)
    if problems or "/" in name:
        return problems
    if name not in _STANDARD and not _huge_pages(name):
        return ["must be a standard resource type or fully qualified"]
    return []


def container_resource_name_errors(name: str) -> list[str]:
    """validateContainerResourceName: a standard resource a container may ask for
    (cpu, memory, ephemeral-storage, huge pages), or an extended resource."""
    problems = standard_resource_name_errors(name)
    if "/" not in name:
        if name not in _CONTAINER and not name.startswith("hugepages-"):
            problems = [*problems, "must be a standard resource for containers"]
    elif not is_native(name) and (
        name.startswith("requests.") or qualified_name_errors("requests." + name)
    ):
        problems = [*problems, "doesn't follow extended resource name standard"]
    return problems


def _name_errors(name: str) -> list[str]:
    problems = standard_resource_name_errors(name)
    if "/" not in name and name not in _QUOTA_RESOURCES and not _huge_pages(name):
        problems = [*problems, "must be a standard resource for quota"]
    return problems


def go_quantity(text: str) -> str:
    """Go's ``%#v`` of the ``resource.Quantity`` parsed from ``text`` (decimal, or a whole
    number with a binary suffix): the form a field error prints a quantity in."""
    binary = _BINARY.fullmatch(text)
    if binary is not None:
        sign, whole, suffix = binary.groups()
        digits = int(whole)
        value = digits << (10 * (_BINARY_SUFFIXES.index(suffix) + 1))
        # (Go keeps the text when the digits are not a multiple of 8)
        cached = text if digits & 7 else ""
        return (
            f"resource.Quantity{{i:resource.int64Amount{{value:{sign}{value}, scale:0}}, "
            f'd:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:"{cached}", Format:"BinarySI"}}'
        )
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


def _go_slice(type_name: str, values: Any) -> GoValue:
    """A Go slice of strings as ``%#v`` prints it (``[]T(nil)`` when absent)."""
    if not isinstance(values, list):
        return GoValue(f"{type_name}(nil)")
    return GoValue(type_name + "{" + ", ".join(go_string(v) for v in values) + "}")


def _go_selector(selector: JSONDict) -> GoValue:
    """A ``core.ScopeSelector`` as ``%#v`` prints it."""
    kind = "core.ScopedResourceSelectorRequirement"
    shown = [
        f"{kind}{{ScopeName:{go_string(e.get('scopeName') or '')}, "
        f"Operator:{go_string(e.get('operator') or '')}, "
        f"Values:{_go_slice('[]string', e.get('values'))}}}"
        for e in _expressions(selector)
    ]
    listed = (
        f"[]{kind}(nil)"
        if selector.get("matchExpressions") is None
        else (f"[]{kind}{{" + ", ".join(shown) + "}")
    )
    return GoValue(f"core.ScopeSelector{{MatchExpressions:{listed}}}")


def _expressions(selector: JSONDict) -> list[JSONDict]:
    found = selector.get("matchExpressions")
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []


def _misfits(scope: str, hard: list[str]) -> int:
    """How many standard quota resources of ``hard`` the scope cannot limit."""
    if scope not in _SCOPES:
        return 0
    allowed = {"pods"} if scope == "BestEffort" else _POD_SCOPED
    return sum(1 for name in hard if _is_quota_resource(name) and name not in allowed)


def _is_quota_resource(name: str) -> bool:
    return name in _QUOTA_RESOURCES or _huge_pages(name)


def _conflicts(scopes: set[str]) -> int:
    return sum(1 for pair in _CONFLICTING if set(pair) <= scopes)


def _scope_errors(spec: JSONDict, hard: list[str]) -> list[FieldError]:
    scopes = spec.get("scopes")
    if not isinstance(scopes, list) or not scopes:
        return []
    shown = _go_slice("[]core.ResourceQuotaScope", scopes)
    errors: list[FieldError] = []
    for scope in scopes:
        if scope not in _SCOPES:
            errors.append(FieldError("spec.scopes", _INVALID, "unsupported scope", shown))
        errors += [
            FieldError("spec.scopes", _INVALID, "unsupported scope applied to resource", shown)
        ] * _misfits(str(scope), hard)
    conflicts = _conflicts({str(s) for s in scopes})
    return errors + [FieldError("spec.scopes", _INVALID, "conflicting scopes", shown)] * conflicts


def _selector_errors(spec: JSONDict, hard: list[str]) -> list[FieldError]:
    selector = spec.get("scopeSelector")
    if not isinstance(selector, dict):
        return []
    where = "spec.scopeSelector.matchExpressions"
    errors: list[FieldError] = []
    for expression in _expressions(selector):
        scope = str(expression.get("scopeName") or "")
        operator = str(expression.get("operator") or "")
        values = expression.get("values")
        if scope not in _SCOPES:
            errors.append(FieldError(f"{where}.scopeName", _INVALID, "unsupported scope", scope))
        errors += [
            FieldError(
                where, _INVALID, "unsupported scope applied to resource", _go_selector(selector)
            )
        ] * _misfits(scope, hard)
        if scope in _EXISTS_ONLY and operator != "Exists":
            errors.append(FieldError(f"{where}.operator", _INVALID, _EXISTS_ONLY_WORDS, operator))
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(
                    FieldError(
                        f"{where}.values",
                        "FieldValueRequired",
                        "must be at least one value when `operator` is 'In' or 'NotIn' for "
                        "scope selector",
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    FieldError(
                        f"{where}.values",
                        _INVALID,
                        "must be no value when `operator` is 'Exist' or 'DoesNotExist' for "
                        "scope selector",
                        _go_slice("[]string", values),
                    )
                )
        else:
            errors.append(
                FieldError(f"{where}.operator", _INVALID, "not a valid selector operator", operator)
            )
    named = {str(e.get("scopeName") or "") for e in _expressions(selector)}
    shown = _go_slice("[]core.ResourceQuotaScope", spec.get("scopes"))
    # (Go prints the quota's ``scopes`` here, not the selector's)
    return errors + [FieldError(where, _INVALID, "conflicting scopes", shown)] * _conflicts(named)


def resource_quota_errors(obj: JSONDict) -> list[FieldError]:
    """What validation refuses in a ResourceQuota's spec (``hard``, ``scopes``,
    ``scopeSelector``) and status lists."""
    spec = obj.get("spec")
    status = obj.get("status")
    errors = _list_errors(spec.get("hard") if isinstance(spec, dict) else None, "spec.hard")
    if isinstance(spec, dict):
        hard = sorted(spec["hard"]) if isinstance(spec.get("hard"), dict) else []
        errors += _scope_errors(spec, hard) + _selector_errors(spec, hard)
    if isinstance(status, dict):
        errors += _list_errors(status.get("hard"), "status.hard")
        errors += _list_errors(status.get("used"), "status.used")
    return errors


def resource_quota_update_errors(obj: JSONDict, old: JSONDict) -> list[FieldError]:
    """What an update of ``old`` to ``obj`` may not change: the set of scopes."""
    new_scopes = _dict(obj.get("spec")).get("scopes")
    old_scopes = _dict(old.get("spec")).get("scopes")
    if set(_strings(new_scopes)) == set(_strings(old_scopes)):
        return []
    shown = _go_slice("[]core.ResourceQuotaScope", new_scopes)
    return [FieldError("spec.scopes", _INVALID, "field is immutable", shown)]


def _dict(value: Any) -> JSONDict:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []
