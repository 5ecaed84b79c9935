"""What kube-apiserver 1.30 refuses in a ValidatingAdmissionPolicy or its Binding
(admissionregistration.k8s.io/v1), the main checks of
``pkg/apis/admissionregistration/validation`` (facts: the field paths, reasons and
words; the code is this project's own).

Checked: the policy's failurePolicy, paramKind, matchConstraints (required, with
resourceRules), matchPolicy, matchConditions' names and expressions, variables' names
and expressions, validations (at least one, or auditAnnotations), a validation's
expression, message and reason; the binding's policyName, paramRef (name or selector,
parameterNotFoundAction), matchResources' matchPolicy and validationActions.

Not checked (documented in docs/serve.md): the CEL type-checking of the expressions
(a real server refuses one that does not compile, with cel-go's words), the label
selectors' syntax and the rules' groups / versions / resources.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._validation import FieldError, GoValue, go_string, supported_values

__all__ = ["admission_policy_errors"]

GROUP: Final = "admissionregistration.k8s.io"
_REQUIRED: Final = "FieldValueRequired"
_INVALID: Final = "FieldValueInvalid"
_NOT_SUPPORTED: Final = "FieldValueNotSupported"
_DUPLICATE: Final = "FieldValueDuplicate"
_FORBIDDEN: Final = "FieldValueForbidden"
_REASONS: Final = ("Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized")
_ACTIONS: Final = ("Audit", "Deny", "Warn")
_CEL_IDENT: Final = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_CEL_RESERVED: Final = frozenset(
    {
        *("true", "false", "null", "in", "as", "break", "const", "continue", "else"),
        *("for", "function", "if", "import", "let", "loop", "package", "namespace"),
        *("return", "var", "void", "while"),
    }
)
_AT_LEAST_ONE: Final = "validations or auditAnnotations must contain at least one item"


def _dict(value: Any) -> JSONDict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _match_resources(match: JSONDict, where: str) -> list[FieldError]:
    policy = match.get("matchPolicy")
    if policy in (None, ""):
        return [FieldError(f"{where}.matchPolicy", _REQUIRED, "")]
    if policy not in ("Equivalent", "Exact"):
        return [
            FieldError(
                f"{where}.matchPolicy",
                _NOT_SUPPORTED,
                supported_values(["Equivalent", "Exact"]),
                policy,
            )
        ]
    return []


def _policy(obj: JSONDict) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    errors: list[FieldError] = []
    failure = spec.get("failurePolicy")
    if failure in (None, ""):
        errors.append(FieldError("spec.failurePolicy", _REQUIRED, ""))
    elif failure not in ("Fail", "Ignore"):
        errors.append(
            FieldError(
                "spec.failurePolicy", _NOT_SUPPORTED, supported_values(["Fail", "Ignore"]), failure
            )
        )
    if isinstance(spec.get("paramKind"), dict):
        for key in ("apiVersion", "kind"):
            if not _text(spec["paramKind"].get(key)):
                errors.append(FieldError(f"spec.paramKind.{key}", _REQUIRED, ""))
    constraints = spec.get("matchConstraints")
    if not isinstance(constraints, dict):
        errors.append(FieldError("spec.matchConstraints", _REQUIRED, ""))
    else:
        errors += _match_resources(constraints, "spec.matchConstraints")
        if not _list(constraints.get("resourceRules")):
            errors.append(FieldError("spec.matchConstraints.resourceRules", _REQUIRED, ""))
    names: set[str] = set()
    for i, condition in enumerate(_list(spec.get("matchConditions"))):
        where = f"spec.matchConditions[{i}]"
        condition = _dict(condition)
        if not _text(condition.get("expression")).strip():
            errors.append(FieldError(f"{where}.expression", _REQUIRED, ""))
        name = _text(condition.get("name"))
        if not name:
            errors.append(FieldError(f"{where}.name", _REQUIRED, ""))
        elif name in names:
            errors.append(FieldError(f"{where}.name", _DUPLICATE, json.dumps(name)))
        names.add(name)
    for i, variable in enumerate(_list(spec.get("variables"))):
        where = f"spec.variables[{i}]"
        variable = _dict(variable)
        name = _text(variable.get("name"))
        if not name.strip():
            errors.append(FieldError(f"{where}.name", _REQUIRED, "name is not specified"))
        elif not _CEL_IDENT.fullmatch(name) or name in _CEL_RESERVED:
            errors.append(
                FieldError(f"{where}.name", _INVALID, "name is not a valid CEL identifier", name)
            )
        if not _text(variable.get("expression")).strip():
            errors.append(
                FieldError(f"{where}.expression", _REQUIRED, "expression is not specified")
            )
    validations = _list(spec.get("validations"))
    if not validations and not _list(spec.get("auditAnnotations")):
        errors.append(FieldError("spec.validations", _REQUIRED, _AT_LEAST_ONE))
        errors.append(FieldError("spec.auditAnnotations", _REQUIRED, _AT_LEAST_ONE))
    for i, validation in enumerate(validations):
        errors += _validation(_dict(validation), f"spec.validations[{i}]")
    return errors


def _validation(validation: JSONDict, where: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not _text(validation.get("expression")).strip():
        errors.append(FieldError(f"{where}.expression", _REQUIRED, "expression is not specified"))
    expression = _text(validation.get("messageExpression"))
    if expression and not expression.strip():
        errors.append(
            FieldError(
                f"{where}.messageExpression", _INVALID, "must be non-empty if specified", expression
            )
        )
    message = _text(validation.get("message"))
    if message and not message.strip():
        errors.append(
            FieldError(
                f"{where}.message", _INVALID, "message must be non-empty if specified", message
            )
        )
    elif re.search(r"[\n\r]", message.strip()):
        errors.append(
            FieldError(
                f"{where}.message", _INVALID, "message must not contain line breaks", message
            )
        )
    reason = validation.get("reason")
    if reason is not None and reason not in _REASONS:
        errors.append(
            FieldError(f"{where}.reason", _NOT_SUPPORTED, supported_values(list(_REASONS)), reason)
        )
    return errors


def _binding(obj: JSONDict) -> list[FieldError]:
    spec = _dict(obj.get("spec"))
    errors: list[FieldError] = []
    if not _text(spec.get("policyName")):
        errors.append(FieldError("spec.policyName", _REQUIRED, ""))
    ref = spec.get("paramRef")
    if isinstance(ref, dict):
        errors += _param_ref(ref)
    if isinstance(spec.get("matchResources"), dict):
        errors += _match_resources(spec["matchResources"], "spec.matchResources")
    actions = _list(spec.get("validationActions"))
    seen: set[str] = set()
    for i, action in enumerate(actions):
        where = f"spec.validationActions[{i}]"
        if action not in _ACTIONS:
            errors.append(
                FieldError(where, _NOT_SUPPORTED, supported_values(list(_ACTIONS)), action)
            )
        if str(action) in seen:
            errors.append(FieldError(where, _DUPLICATE, json.dumps(action)))
        seen.add(str(action))
    if {"Deny", "Warn"} <= seen:
        errors.append(
            FieldError(
                "spec.validationActions",
                _INVALID,
                "must not contain both Deny and Warn (repeating the same validation failure "
                "information in the API response and headers serves no purpose)",
                # (Go's %#v of the typed list)
                GoValue(
                    "[]admissionregistration.ValidationAction{"
                    + ", ".join(go_string(a) for a in actions)
                    + "}"
                ),
            )
        )
    if not seen:
        errors.append(
            FieldError(
                "spec.validationActions", _REQUIRED, "at least one validation action is required"
            )
        )
    return errors


def _param_ref(ref: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    name = _text(ref.get("name"))
    selector = ref.get("selector")
    exclusive = "name and selector are mutually exclusive"
    if name and selector is not None:
        errors.append(FieldError("spec.paramRef.name", _FORBIDDEN, exclusive))
        errors.append(FieldError("spec.paramRef.selector", _FORBIDDEN, exclusive))
    if not name and selector is None:
        errors.append(
            FieldError("spec.paramRef", _REQUIRED, "one of name or selector must be specified")
        )
    action = ref.get("parameterNotFoundAction")
    if action in (None, ""):
        errors.append(FieldError("spec.paramRef.parameterNotFoundAction", _REQUIRED, ""))
    elif action not in ("Deny", "Allow"):
        errors.append(
            FieldError(
                "spec.paramRef.parameterNotFoundAction",
                _NOT_SUPPORTED,
                supported_values(["Deny", "Allow"]),
                action,
            )
        )
    return errors


def admission_policy_errors(group: str, resource: str, obj: JSONDict) -> list[FieldError]:
    """What validation refuses in a policy or binding to create or update (none for
    other kinds)."""
    if group != GROUP:
        return []
    if resource == "validatingadmissionpolicies":
        return _policy(obj)
    if resource == "validatingadmissionpolicybindings":
        return _binding(obj)
    return []
