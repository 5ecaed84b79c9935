"""A PriorityClass's rules, as kube-apiserver 1.30 applies them.

Validation (a 422): a name with the ``system-`` prefix is one of the classes the
server creates itself, with their value and not the default; another class's value is
at most a billion; ``preemptionPolicy`` is ``PreemptLowerPriority`` or ``Never``; an
update changes neither the value nor the policy. Admission (the Priority plugin, a
403): only one class may be ``globalDefault``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._validation import FieldError

__all__ = [
    "SYSTEM_PRIORITY_CLASSES",
    "other_default",
    "priority_class_errors",
    "priority_class_update_errors",
]

#: The priority classes kube-apiserver creates at start (name -> value).
SYSTEM_PRIORITY_CLASSES: Final = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
_SYSTEM_PREFIX: Final = "system-"
#: The highest value a class that is not a system one may have.
HIGHEST_USER_PRIORITY: Final = 1_000_000_000
_POLICIES: Final = ("PreemptLowerPriority", "Never")


def _system_class_problem(name: str, value: Any, default: Any) -> str | None:
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known:
        return f"value of {name} PriorityClass must be {known}"
    if default is True:
        return f"{name} PriorityClass must not be marked as global default"
    return None


def priority_class_errors(obj: JSONDict) -> list[FieldError]:
    """What validation refuses in a PriorityClass about to be created (or updated)."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    value = obj.get("value", 0)
    errors: list[FieldError] = []
    if name.startswith(_SYSTEM_PREFIX):
        problem = _system_class_problem(name, value, obj.get("globalDefault"))
        if problem is not None:
            errors.append(
                FieldError(
                    "metadata.name",
                    "FieldValueForbidden",
                    f"priority class names with '{_SYSTEM_PREFIX}' prefix are reserved for "
                    f"system use only. error: {problem}",
                )
            )
    elif isinstance(value, int) and value > HIGHEST_USER_PRIORITY:
        errors.append(
            FieldError(
                "value",
                "FieldValueForbidden",
                f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}",
            )
        )
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in _POLICIES:
        errors.append(
            FieldError(
                "preemptionPolicy",
                "FieldValueNotSupported",
                "supported values: " + ", ".join(f'"{p}"' for p in _POLICIES),
                policy,
            )
        )
    return errors


def priority_class_update_errors(obj: JSONDict, old: JSONDict) -> list[FieldError]:
    """What an update may not change: the value and the preemption policy."""
    errors: list[FieldError] = []
    if obj.get("value", 0) != old.get("value", 0):
        errors.append(
            FieldError("value", "FieldValueForbidden", "may not be changed in an update.")
        )
    policy = obj.get("preemptionPolicy")
    if policy != old.get("preemptionPolicy"):
        errors.append(
            FieldError("preemptionPolicy", "FieldValueInvalid", "field is immutable", policy)
        )
    return errors


def other_default(obj: JSONDict, operation: str, stored: Iterable[JSONDict]) -> str | None:
    """The Priority plugin's refusal of a second default: the name of the default class
    (the lowest value among several) when ``obj`` is marked ``globalDefault`` and is not
    that class being updated; else None."""
    if obj.get("globalDefault") is not True:
        return None
    defaults = [c for c in stored if c.get("globalDefault") is True]
    if not defaults:
        return None
    default = min(defaults, key=lambda c: c.get("value", 0))
    default_name = str((default.get("metadata") or {}).get("name") or "")
    name = (obj.get("metadata") or {}).get("name")
    if operation == "CREATE" or default_name != name:
        return default_name
    return None
