"""The label selectors a kind's spec holds, validated on a write as kube-apiserver 1.30
validates them (a 422 of :class:`FieldError` entries, with the metadata's).

Which selectors: a workload's ``spec.selector`` (Deployment, ReplicaSet, DaemonSet,
StatefulSet, Job; a ReplicationController's plain map), a PodDisruptionBudget's and an
admission webhook's ``namespaceSelector`` / ``objectSelector``. Each is checked by
:func:`~._selectors.label_selector_errors`; a workload with a pod template (one with
containers) also needs one (but for a DaemonSet), not empty, that selects the
template's labels. A workload without (a skeleton, which kube-apiserver would refuse
for its template anyway) is only checked for the selector it has. Other spec fields
are not validated here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._patch import json_equal
from ._selectors import (
    go_labels,
    go_selector,
    label_selector_errors,
    label_selector_has_invalid_value,
    label_selector_requirements,
)
from ._validation import FieldError, validate_labels

__all__ = ["selector_errors", "selector_update_errors"]

_MISMATCH: Final = "`selector` does not match template `labels`"


def _dict(value: Any) -> JSONDict:
    return value if isinstance(value, dict) else {}


def _has_template(spec: JSONDict) -> bool:
    """Does the workload have a pod template, one with containers? One without (a
    skeleton, which kube-apiserver would refuse for its template anyway, and serve takes
    as it takes a Pod without containers: it does not validate pod templates) is only
    checked for the selector it has."""
    template_spec = _dict(_dict(spec.get("template")).get("spec"))
    containers = template_spec.get("containers")
    return isinstance(containers, list) and bool(containers)


def _template_labels(spec: JSONDict) -> Any:
    return _dict(_dict(spec.get("template")).get("metadata")).get("labels")


def _selects_template(selector: Any, spec: JSONDict) -> bool | None:
    """Does ``selector`` select the template's labels? None when it does not parse. A
    missing selector selects nothing (``LabelSelectorAsSelector(nil)``)."""
    if selector is None:
        return False
    requirements = label_selector_requirements(selector)
    if requirements is None:
        return None
    labels = _dict(_template_labels(spec))
    return all(r.matches(labels) for r in requirements)


def _mismatch(spec: JSONDict) -> FieldError:
    return FieldError(
        "spec.template.metadata.labels",
        "FieldValueInvalid",
        _MISMATCH,
        go_labels(_template_labels(spec)),
    )


def _is_empty(selector: JSONDict) -> bool:
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def _replicated(kind: str, bad_parse: str) -> Callable[[JSONDict, bool], list[FieldError]]:
    """Deployment, ReplicaSet, StatefulSet: a selector required, not empty, parsable
    (``bad_parse`` the detail when not) and selecting the template's labels."""

    def check(obj: JSONDict, allow: bool) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        selector = spec.get("selector")
        if not _has_template(spec):
            return label_selector_errors(selector, "spec.selector")
        errors: list[FieldError] = []
        if selector is None:
            errors.append(FieldError("spec.selector", "FieldValueRequired", ""))
        else:
            errors += label_selector_errors(selector, "spec.selector")
            if isinstance(selector, dict) and _is_empty(selector):
                errors.append(
                    FieldError(
                        "spec.selector",
                        "FieldValueInvalid",
                        f"empty selector is invalid for {kind}",
                        go_selector(selector),
                    )
                )
        selects = _selects_template(selector, spec)
        if selects is None:
            errors.append(
                FieldError("spec.selector", "FieldValueInvalid", bad_parse, go_selector(selector))
            )
        elif not selects and not (isinstance(selector, dict) and _is_empty(selector)):
            errors.append(_mismatch(spec))
        return errors

    return check


def _daemon_set(obj: JSONDict, allow: bool) -> list[FieldError]:
    # (no selector is no error of its own: it selects nothing, so not the template)
    spec = _dict(obj.get("spec"))
    selector = spec.get("selector")
    errors = label_selector_errors(selector, "spec.selector")
    if not _has_template(spec):
        return errors
    if _selects_template(selector, spec) is False:
        errors.append(_mismatch(spec))
    if isinstance(selector, dict) and _is_empty(selector):
        errors.append(
            FieldError(
                "spec.selector",
                "FieldValueInvalid",
                "empty selector is invalid for daemonset",
                go_selector(selector),
            )
        )
    return errors


def _replication_controller(obj: JSONDict, allow: bool) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    selector = spec.get("selector")
    if not _has_template(spec):
        return []
    if not isinstance(selector, dict) or not selector:
        return [FieldError("spec.selector", "FieldValueRequired", "")]
    labels = _dict(_template_labels(spec))
    if any(labels.get(key) != value for key, value in selector.items()):
        return [_mismatch(spec)]
    return []


def _job(obj: JSONDict, allow: bool) -> list[FieldError]:
    # (after the selector is generated, when it is: see _defaults._prepare_job)
    spec = _dict(obj.get("spec"))
    selector = spec.get("selector")
    if not _has_template(spec):
        return label_selector_errors(selector, "spec.selector", allow_invalid_values=allow)
    errors: list[FieldError] = []
    if selector is None:
        errors.append(FieldError("spec.selector", "FieldValueRequired", ""))
    else:
        errors += label_selector_errors(selector, "spec.selector", allow_invalid_values=allow)
    if _selects_template(selector, spec) is False:
        errors.append(_mismatch(spec))
    return errors


def _and_template_labels(
    rule: Callable[[JSONDict, bool], list[FieldError]],
) -> Callable[[JSONDict, bool], list[FieldError]]:
    """``rule``, then the pod template's labels checked as ``metadata.labels`` are, at
    ``spec.template.labels`` (after the selector's problems, as a ReplicationController's
    are recorded). A Deployment's or ReplicaSet's template is not looked at when its
    selector does not parse (recorded too); the other workloads' template labels are not
    checked (not recorded)."""

    def check(obj: JSONDict, allow: bool) -> list[FieldError]:
        spec = _dict(obj.get("spec"))
        labels = _template_labels(spec)
        errors = rule(obj, allow)
        if "selector" in spec and label_selector_requirements(spec["selector"]) is None:
            return errors  # (a map selector, a ReplicationController's, always parses)
        if isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values()):
            errors += validate_labels(labels, "spec.template.labels")
        return errors

    return check


def _at(where: str, selector: Any, allow: bool) -> list[FieldError]:
    return label_selector_errors(selector, where, allow_invalid_values=allow)


def _budget(obj: JSONDict, allow: bool) -> list[FieldError]:
    return _at("spec.selector", _dict(obj.get("spec")).get("selector"), allow)


def _hook_selectors(obj: JSONDict) -> Iterator[tuple[str, Any]]:
    hooks = obj.get("webhooks")
    for i, hook in enumerate(hooks if isinstance(hooks, list) else []):
        for key in ("namespaceSelector", "objectSelector"):
            yield f"webhooks[{i}].{key}", _dict(hook).get(key)


def _webhook_configuration(obj: JSONDict, allow: bool) -> list[FieldError]:
    return [e for where, s in _hook_selectors(obj) for e in _at(where, s, allow)]


#: By (group, resource): the kind's selector rules, given the object and whether
#: expression values that are no label values are let through (an update of a stored
#: object that has such values already, as 1.27+ lets it through for these kinds).
_RULES: Final[dict[tuple[str, str], Callable[[JSONDict, bool], list[FieldError]]]] = {
    ("apps", "deployments"): _and_template_labels(
        _replicated("deployment", "invalid label selector")
    ),
    # (1.30 still says "deployment" for a ReplicaSet)
    ("apps", "replicasets"): _and_template_labels(
        _replicated("deployment", "invalid label selector")
    ),
    ("apps", "statefulsets"): _replicated("statefulset", ""),
    ("apps", "daemonsets"): _daemon_set,
    ("", "replicationcontrollers"): _and_template_labels(_replication_controller),
    ("batch", "jobs"): _job,
    ("policy", "poddisruptionbudgets"): _budget,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _webhook_configuration,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _webhook_configuration,
}
#: Kinds whose expression values are always checked, even on an update of an object
#: that has bad ones (1.30 validates the workloads' selectors strictly).
_STRICT: Final = frozenset(
    {
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
    }
)
#: Kinds whose ``spec.selector`` an update may not change (apps/v1; a StatefulSet's
#: spec is refused as a whole, not done here).
_IMMUTABLE_SELECTOR: Final = frozenset(
    {("apps", "deployments"), ("apps", "replicasets"), ("apps", "daemonsets")}
)


def selector_errors(group: str, resource: str, obj: JSONDict) -> list[FieldError]:
    """The label-selector problems of an object to create (none for other kinds)."""
    rule = _RULES.get((group, resource))
    return rule(obj, False) if rule is not None else []


def _selectors_of(obj: JSONDict) -> list[Any]:
    spec = _dict(obj.get("spec"))
    return [spec.get("selector")] + [s for _, s in _hook_selectors(obj)]


def selector_update_errors(
    group: str, resource: str, new: JSONDict, old: JSONDict
) -> list[FieldError]:
    """The label-selector problems of an update from ``old`` to ``new``: an apps/v1
    workload's changed selector (``field is immutable``), then the new object's
    problems. An update that leaves the selectors and the pod template as stored is not
    refused for them (serve can hold an object loaded from elsewhere that kube-apiserver
    would not take: its metadata stays writable)."""
    rule = _RULES.get((group, resource))
    if rule is None:
        return []
    errors: list[FieldError] = []
    if (group, resource) in _IMMUTABLE_SELECTOR:
        now = _dict(new.get("spec")).get("selector")
        if not json_equal(now, _dict(old.get("spec")).get("selector")):
            errors.append(
                FieldError(
                    "spec.selector", "FieldValueInvalid", "field is immutable", go_selector(now)
                )
            )
    if json_equal(new.get("spec"), old.get("spec")) and json_equal(
        new.get("webhooks"), old.get("webhooks")
    ):
        return errors
    allow = (group, resource) not in _STRICT and any(
        label_selector_has_invalid_value(s) for s in _selectors_of(old)
    )
    return errors + rule(new, allow)
