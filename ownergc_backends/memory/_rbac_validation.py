"""Roles, ClusterRoles, RoleBindings and ClusterRoleBindings (rbac.authorization.k8s.io),
validated on a write as kube-apiserver 1.30 validates them (a 422 of
:class:`FieldError` entries, after the metadata's; the names themselves, path segments,
are the generic metadata check's).

* A rule has verbs; a resource rule has apiGroups and resources; a rule with
  nonResourceURLs has none of apiGroups, resources or resourceNames, and a Role's rules
  (namespaced) have no nonResourceURLs at all.
* A ClusterRole's aggregationRule has at least one selector, each a valid label selector
  (an expression's values label values, unless the stored object already had bad ones:
  the 1.26+ rule, kubernetes/kubernetes#113699).
* A binding's roleRef names the rbac group, a kind it may bind (Role or ClusterRole;
  ClusterRole alone for a ClusterRoleBinding) and a name that is a path segment; each
  subject has a name and is a ServiceAccount (no apiGroup, a DNS-subdomain name, and in
  a ClusterRoleBinding a namespace), a User or a Group (the rbac group).
* An update may not change a binding's roleRef ("cannot change roleRef"). The rest is
  checked again on an update, and reported twice: the RBAC strategies run the kind's
  validation and then its update validation, which runs it again (until 1.34,
  kubernetes/kubernetes#132550).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._patch import json_equal
from ._selectors import (
    label_selector_errors,
    label_selector_has_invalid_value,
    label_selector_requirements,
)
from ._validation import (
    FieldError,
    GoValue,
    dns1123_subdomain_errors,
    go_string,
    go_strings,
    path_segment_errors,
    supported_values,
)

__all__ = ["rbac_errors", "rbac_update_errors"]

GROUP: Final = "rbac.authorization.k8s.io"
_SUBJECT_KINDS: Final = ("ServiceAccount", "User", "Group")
#: The fields these rules read.
_CHECKED: Final = ("rules", "aggregationRule", "roleRef", "subjects")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> JSONDict:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _rule_errors(rule: JSONDict, where: str, namespaced: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    if not _list(rule.get("verbs")):
        errors.append(
            FieldError(
                f"{where}.verbs", "FieldValueRequired", "verbs must contain at least one value"
            )
        )
    urls = _list(rule.get("nonResourceURLs"))
    if urls:
        shown = go_strings(urls)
        if namespaced:
            errors.append(
                FieldError(
                    f"{where}.nonResourceURLs",
                    "FieldValueInvalid",
                    "namespaced rules cannot apply to non-resource URLs",
                    shown,
                )
            )
        if any(_list(rule.get(key)) for key in ("apiGroups", "resources", "resourceNames")):
            errors.append(
                FieldError(
                    f"{where}.nonResourceURLs",
                    "FieldValueInvalid",
                    "rules cannot apply to both regular resources and non-resource URLs",
                    shown,
                )
            )
        return errors
    if not _list(rule.get("apiGroups")):
        errors.append(
            FieldError(
                f"{where}.apiGroups",
                "FieldValueRequired",
                "resource rules must supply at least one api group",
            )
        )
    if not _list(rule.get("resources")):
        errors.append(
            FieldError(
                f"{where}.resources",
                "FieldValueRequired",
                "resource rules must supply at least one resource",
            )
        )
    return errors


def _rules_errors(obj: JSONDict, namespaced: bool) -> list[FieldError]:
    return [
        error
        for index, rule in enumerate(_list(obj.get("rules")))
        for error in _rule_errors(_dict(rule), f"rules[{index}]", namespaced)
    ]


def _role(obj: JSONDict, old: JSONDict | None) -> list[FieldError]:
    return _rules_errors(obj, namespaced=True)


def _aggregation_errors(obj: JSONDict, allow_invalid_values: bool) -> list[FieldError]:
    rule = obj.get("aggregationRule")
    if not isinstance(rule, dict):
        return []
    where = "aggregationRule.clusterRoleSelectors"
    selectors = _list(rule.get("clusterRoleSelectors"))
    errors: list[FieldError] = []
    if not selectors:
        errors.append(
            FieldError(
                where,
                "FieldValueRequired",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            )
        )
    for index, selector in enumerate(selectors):
        selector = _dict(selector)  # (a null entry: Go's empty selector)
        at = f"{where}[{index}]"
        errors += label_selector_errors(selector, at, allow_invalid_values=allow_invalid_values)
        if label_selector_requirements(selector) is None:
            # (the value shown is the selector the failed conversion returned: none)
            errors.append(
                FieldError(at, "FieldValueInvalid", "invalid label selector.", GoValue('"null"'))
            )
    return errors


def _cluster_role(obj: JSONDict, old: JSONDict | None) -> list[FieldError]:
    allow = old is not None and any(
        label_selector_has_invalid_value(s)
        for s in _list(_dict(old.get("aggregationRule")).get("clusterRoleSelectors"))
    )
    return _rules_errors(obj, namespaced=False) + _aggregation_errors(obj, allow)


def _role_ref_errors(ref: JSONDict, kinds: tuple[str, ...]) -> list[FieldError]:
    errors: list[FieldError] = []
    group = _str(ref.get("apiGroup"))
    if group != GROUP:
        errors.append(
            FieldError(
                "roleRef.apiGroup", "FieldValueNotSupported", supported_values([GROUP]), group
            )
        )
    kind = _str(ref.get("kind"))
    if kind not in kinds:
        errors.append(
            FieldError("roleRef.kind", "FieldValueNotSupported", supported_values(kinds), kind)
        )
    name = _str(ref.get("name"))
    if not name:
        errors.append(FieldError("roleRef.name", "FieldValueRequired", ""))
    errors += [
        FieldError("roleRef.name", "FieldValueInvalid", why, name)
        for why in path_segment_errors(name)
        if name
    ]
    return errors


def _subject_errors(subject: JSONDict, where: str, namespaced: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    name = _str(subject.get("name"))
    if not name:
        errors.append(FieldError(f"{where}.name", "FieldValueRequired", ""))
    kind = _str(subject.get("kind"))
    group = _str(subject.get("apiGroup"))
    if kind == "ServiceAccount":
        if name:
            errors += [
                FieldError(f"{where}.name", "FieldValueInvalid", why, name)
                for why in dns1123_subdomain_errors(name)
            ]
        if group:
            errors.append(
                FieldError(
                    f"{where}.apiGroup", "FieldValueNotSupported", supported_values([""]), group
                )
            )
        if not namespaced and not _str(subject.get("namespace")):
            errors.append(FieldError(f"{where}.namespace", "FieldValueRequired", ""))
    elif kind in ("User", "Group"):
        if group != GROUP:
            errors.append(
                FieldError(
                    f"{where}.apiGroup", "FieldValueNotSupported", supported_values([GROUP]), group
                )
            )
    else:
        errors.append(
            FieldError(
                f"{where}.kind", "FieldValueNotSupported", supported_values(_SUBJECT_KINDS), kind
            )
        )
    return errors


def _binding(
    kinds: tuple[str, ...], namespaced: bool
) -> Callable[[JSONDict, JSONDict | None], list[FieldError]]:
    def check(obj: JSONDict, old: JSONDict | None) -> list[FieldError]:
        errors = _role_ref_errors(_dict(obj.get("roleRef")), kinds)
        for index, subject in enumerate(_list(obj.get("subjects"))):
            errors += _subject_errors(_dict(subject), f"subjects[{index}]", namespaced)
        return errors

    return check


def _role_ref_key(obj: JSONDict) -> tuple[str, str, str]:
    ref = _dict(obj.get("roleRef"))
    return (_str(ref.get("apiGroup")), _str(ref.get("kind")), _str(ref.get("name")))


_RULES: Final[dict[str, Callable[[JSONDict, JSONDict | None], list[FieldError]]]] = {
    "roles": _role,
    "clusterroles": _cluster_role,
    "rolebindings": _binding(("Role", "ClusterRole"), namespaced=True),
    "clusterrolebindings": _binding(("ClusterRole",), namespaced=False),
}


def rbac_errors(group: str, resource: str, obj: JSONDict) -> list[FieldError]:
    """What validation refuses in an RBAC object to create (none for other kinds)."""
    rule = _RULES.get(resource) if group == GROUP else None
    return rule(obj, None) if rule is not None else []


def rbac_update_errors(group: str, resource: str, obj: JSONDict, old: JSONDict) -> list[FieldError]:
    """What validation refuses in an update of an RBAC object from ``old`` to ``obj``:
    the object's problems twice (see the module's note), then a changed roleRef."""
    rule = _RULES.get(resource) if group == GROUP else None
    if rule is None:
        return []
    if all(json_equal(obj.get(key), old.get(key)) for key in _CHECKED):
        # An update that leaves these as stored passes: an object loaded from elsewhere
        # (``load`` skips these checks) stays writable. (A real server never stores one.)
        return []
    errors = rule(obj, old)
    errors = errors + errors
    if resource.endswith("bindings") and _role_ref_key(obj) != _role_ref_key(old):
        kind_group, kind, name = _role_ref_key(obj)
        shown = GoValue(
            f"rbac.RoleRef{{APIGroup:{go_string(kind_group)}, Kind:{go_string(kind)}, "
            f"Name:{go_string(name)}}}"
        )
        errors.append(FieldError("roleRef", "FieldValueInvalid", "cannot change roleRef", shown))
    return errors
