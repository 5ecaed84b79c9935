"""Label and field selectors, parsed and matched as kube-apiserver does."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ownergc._kit.http import (
    Request,
)
from ownergc.errors import (
    BadRequest,
)
from ownergc.protocols import APIResource, JSONDict

from ._label_query import LabelQueryError, parse_label_query
from ._validation import (
    FieldError,
    GoValue,
    go_string,
    go_strings,
    label_value_errors,
    qualified_name_errors,
)

#: Go's strconv.ParseInt(s, 10, 64), which reads a label compared by ``<`` or ``>``.
_GO_INT64: Final = re.compile("[+-]?[0-9]+")

__all__ = [
    "_Filter",
    "_Requirement",
    "_filter_from",
    "go_labels",
    "go_selector",
    "label_selector_errors",
    "label_selector_has_invalid_value",
    "label_selector_matches",
    "label_selector_requirements",
    "parse_field_selector",
    "parse_label_selector",
    "selector_string",
]


@dataclass(frozen=True, slots=True)
class _Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, Any]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("gt", "lt"):
            # integers compared; a label that is not one is not selected
            if not has or not isinstance(value, str) or not _GO_INT64.fullmatch(value):
                return False
            (bound,) = self.values
            number, limit = int(value), int(bound)
            if not -(2**63) <= number < 2**63:
                return False
            return number > limit if self.op == "gt" else number < limit
        if self.op in ("=", "in"):
            return has and value in self.values
        return not has or value not in self.values  # "!=" and "notin"


def parse_label_selector(text: str) -> list[_Requirement]:
    """A labelSelector query, read as kube-apiserver reads it (:mod:`._label_query`); a 400
    in its words when it does not parse."""
    try:
        parsed = parse_label_query(text)
    except LabelQueryError as exc:
        raise BadRequest(str(exc), reason="BadRequest") from None
    return [_Requirement(key, op, frozenset(values)) for key, op, values in parsed]


#: The fields a kind is selected by besides ``metadata.name`` and ``metadata.namespace``
#: (kube-apiserver 1.30's field label conversions), by (group, resource): the labels,
#: whether the two metadata fields are among them (a cluster-scoped kind with its own
#: conversion takes no ``metadata.namespace``), and how an unknown label is refused.
_FIELD_LABELS: dict[tuple[str, str], tuple[frozenset[str], bool, str]] = {
    ("", "pods"): (
        frozenset(
            {
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",  # (taken, and selects as empty: not a selectable field)
                "status.nominatedNodeName",
                "spec.host",  # (read as spec.nodeName)
            }
        ),
        True,
        "field label not supported: {label}",
    ),
    ("", "nodes"): (frozenset({"spec.unschedulable"}), False, "field label not supported: {label}"),
    ("", "namespaces"): (frozenset({"status.phase"}), False, "field label not supported: {label}"),
    ("", "replicationcontrollers"): (
        frozenset({"status.replicas"}),
        True,
        "field label not supported: {label}",
    ),
    ("", "secrets"): (frozenset({"type"}), True, "field label not supported: {label}"),
    ("", "events"): (
        frozenset(
            {
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            }
        ),
        True,
        "field label not supported: {label}",
    ),
    ("events.k8s.io", "events"): (
        frozenset(
            {
                "regarding.kind",
                "regarding.namespace",
                "regarding.name",
                "regarding.uid",
                "regarding.apiVersion",
                "regarding.resourceVersion",
                "regarding.fieldPath",
                "reason",
                "reportingController",
                "type",
            }
        ),
        True,
        "field label not supported: {label}",
    ),
    ("batch", "jobs"): (
        frozenset({"status.successful"}),
        True,
        'field label "{label}" not supported for batchv1.Job',
    ),
    ("certificates.k8s.io", "certificatesigningrequests"): (
        frozenset({"spec.signerName"}),
        False,
        "field label not supported: {label}",
    ),
}
_METADATA_FIELDS: Final = frozenset({"metadata.name", "metadata.namespace"})
#: Labels another label is read as (a Pod's old ``spec.host``; events.k8s.io's names for
#: the core Event's fields).
_ALIASES: Final = {"spec.host": "spec.nodeName", "reportingController": "reportingComponent"}


def _field_terms(text: str) -> list[str]:
    """A field selector's terms: split on the commas a backslash does not escape (a
    backslash escapes whatever follows it), nothing trimmed."""
    terms: list[str] = []
    start, escaped = 0, False
    for index, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:index])
            start = index + 1
    terms.append(text[start:])
    return terms


#: A term's operators, tried in this order at each position from the left.
_FIELD_OPERATORS: Final = ("!=", "==", "=")


def _split_field_term(term: str) -> tuple[str, str, str] | None:
    """``(field, operator, value)`` at the leftmost operator (no escapes honoured before
    it: ``a\\=b`` is the field ``a\\``), or None."""
    for index in range(len(term)):
        for operator in _FIELD_OPERATORS:
            if term.startswith(operator, index):
                return term[:index], operator, term[index + len(operator) :]
    return None


def _unescape_field_value(value: str) -> str:
    """A term's value with ``\\\\``, ``\\,`` and ``\\=`` read as the character; another escape,
    a trailing backslash or a bare ``=`` (or ``,``) is a 400, worded as kube-apiserver's
    (the character as Go prints a rune: its number)."""
    if "\\" not in value and "=" not in value and "," not in value:
        return value
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise BadRequest(
                    f"invalid field selector: invalid escape sequence: \\{ch}", reason="BadRequest"
                )
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise BadRequest(
                f"invalid field selector: unescaped character in value: {ord(ch)}",
                reason="BadRequest",
            )
        else:
            out.append(ch)
    if escaped:
        raise BadRequest("invalid field selector: invalid escape sequence: \\", reason="BadRequest")
    return "".join(out)


def parse_field_selector(
    text: str, resource: tuple[str, str] = ("", "")
) -> list[tuple[str, bool, str]]:
    """A field selector's terms ``(field, equal, value)``, for the resource ``(group,
    resource)``, read as kube-apiserver reads them (1.20 and 1.30 alike):

    * terms are split on unescaped commas and taken in sorted order (which of several
      bad terms is reported); an empty term is skipped, nothing is trimmed (``" a=b"``
      names the field ``" a"``);
    * each term splits at its leftmost ``!=``, ``==`` or ``=`` (``==`` is ``=``); a
      term without one is a 400 naming it and the whole selector;
    * the value is unescaped (``\\,``, ``\\=``, ``\\\\``); a term whose field and value are
      both empty (``=``, ``==``, ``!=``) selects everything;
    * the fields are then checked: ``metadata.name`` / ``metadata.namespace`` and
      those the kind adds (a Pod's ``spec.nodeName``, ``status.phase``, ...); another
      is refused as kube-apiserver refuses it (400). A field given twice is two terms,
      both of which must hold."""
    labels, with_metadata, refusal = _FIELD_LABELS.get(resource, (frozenset(), True, ""))
    known = labels | _METADATA_FIELDS if with_metadata else labels | {"metadata.name"}
    parsed: list[tuple[str, bool, str]] = []
    for term in sorted(_field_terms(text)):
        if not term:
            continue
        split = _split_field_term(term)
        if split is None:
            raise BadRequest(
                f"invalid selector: '{text}'; can't understand '{term}'", reason="BadRequest"
            )
        key, operator, raw = split
        value = _unescape_field_value(raw)
        if key or value:
            parsed.append((key, operator != "!=", value))
    out: list[tuple[str, bool, str]] = []
    for key, equal, value in parsed:
        if key not in known:
            message = (
                refusal.format(label=key)
                if refusal
                else f'"{key}" is not a known field selector: only "metadata.name", '
                '"metadata.namespace"'
            )
            raise BadRequest(message, reason="BadRequest")
        out.append((_ALIASES.get(key, key), equal, value))
    return out


def _text(value: Any) -> str:
    """A field's value as a field selector compares it (Go's formatting)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _field_value(obj: JSONDict, key: str) -> str:
    """The value ``key`` selects ``obj`` by, as kube-apiserver's selectable fields give
    it (a missing field is empty, a missing count 0, a missing flag false)."""
    meta = obj.get("metadata") or {}
    if key == "metadata.name":
        return _text(meta.get("name"))
    if key == "metadata.namespace":
        return _text(meta.get("namespace"))
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if key == "status.podIP":
        ips = status.get("podIPs") or []
        first = ips[0] if isinstance(ips, list) and ips else None
        return _text(first.get("ip") if isinstance(first, dict) else status.get("podIP"))
    if key == "status.podIPs":
        return ""
    if key in ("spec.hostNetwork", "spec.unschedulable"):
        return _text(bool(spec.get(key.partition(".")[2])))
    if key in ("status.replicas", "status.successful"):
        count = status.get("succeeded" if key == "status.successful" else "replicas")
        return _text(count if isinstance(count, int) else 0)
    if key.startswith(("involvedObject.", "regarding.")):
        field = key.partition(".")[2]
        about = obj.get("involvedObject") or obj.get("regarding") or {}
        return _text(about.get(field) if isinstance(about, dict) else None)
    if key == "reportingComponent":
        return _text(obj.get("reportingComponent") or obj.get("reportingController"))
    if key == "source":
        source = obj.get("source") or obj.get("deprecatedSource") or {}
        component = source.get("component") if isinstance(source, dict) else None
        return _text(component or obj.get("reportingComponent") or obj.get("reportingController"))
    head, _, rest = key.partition(".")
    if head in ("spec", "status"):
        return _text((spec if head == "spec" else status).get(rest))
    return _text(obj.get(key))


@dataclass(frozen=True, slots=True)
class _Filter:
    labels: tuple[_Requirement, ...] = ()
    fields: tuple[tuple[str, bool, str], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields

    @property
    def needs_body(self) -> bool:
        """Does a field term read more than the metadata?"""
        return any(key not in _METADATA_FIELDS for key, _, _ in self.fields)

    def matches(self, obj: JSONDict) -> bool:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        if not all(r.matches(labels) for r in self.labels):
            return False
        return all((_field_value(obj, key) == value) == equal for key, equal, value in self.fields)


def _filter_from(request: Request, resource: APIResource | None = None) -> _Filter:
    """The request's label and field selectors, for ``resource`` (whose kind decides the
    fields it may be selected by)."""
    labels = request.param("labelSelector")
    fields = request.param("fieldSelector")
    kind = (resource.group, resource.resource) if resource is not None else ("", "")
    return _Filter(
        labels=tuple(parse_label_selector(labels)) if labels else (),
        fields=tuple(parse_field_selector(fields, kind)) if fields else (),
    )


def selector_string(selector: Any) -> str:
    """A workload's ``spec.selector`` as a label selector string (a Scale's
    ``status.selector``, the SELECTOR column of ``kubectl get -o wide``): a LabelSelector
    (``matchLabels`` / ``matchExpressions``), or a ReplicationController's plain map.
    Requirements are sorted by key and each value set sorted, as Kubernetes prints
    them; an empty or malformed selector is the empty string."""
    if not isinstance(selector, dict):
        return ""
    if "matchLabels" in selector or "matchExpressions" in selector:
        labels = selector.get("matchLabels") or {}
        expressions = selector.get("matchExpressions") or []
    else:
        labels, expressions = selector, []
    requirements: list[tuple[str, str]] = []
    if isinstance(labels, dict):
        requirements += [(str(k), f"{k}={v}") for k, v in labels.items()]
    for expression in expressions if isinstance(expressions, list) else []:
        if not isinstance(expression, dict):
            continue
        key, operator = str(expression.get("key", "")), expression.get("operator")
        values = ",".join(sorted(str(v) for v in expression.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(operator))
        if text is not None:
            requirements.append((key, text))
    return ",".join(text for _, text in sorted(requirements, key=lambda r: r[0]))


# --- metav1.LabelSelector objects (matchLabels / matchExpressions) -------------------
#
# One reading of a LabelSelector object for the whole server: its validation as
# kube-apiserver 1.30 validates it on a write (``label_selector_errors``), its parse into
# requirements (``label_selector_requirements``: None when kube-apiserver could not turn
# it into a selector) and its match (``label_selector_matches``).

#: A LabelSelectorRequirement's operator as the string-selector requirement it is.
_OPERATORS: Final = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def go_labels(labels: Any) -> GoValue:
    """A ``map[string]string`` as Go's ``%#v`` prints it (keys sorted; a missing map is
    ``map[string]string(nil)``)."""
    if not isinstance(labels, dict):
        return GoValue("map[string]string(nil)")
    items = ", ".join(f"{go_string(k)}:{go_string(v)}" for k, v in sorted(labels.items()))
    return GoValue(f"map[string]string{{{items}}}")


def go_selector(selector: Any) -> GoValue:
    """A LabelSelector as Go's ``%#v`` prints it, the value of kube-apiserver's
    ``spec.selector: Invalid value: v1.LabelSelector{...}`` errors."""
    if not isinstance(selector, dict):
        return GoValue("null")
    expressions = selector.get("matchExpressions")
    if isinstance(expressions, list):
        shown = ", ".join(
            "v1.LabelSelectorRequirement{"
            f"Key:{go_string(e.get('key', ''))}, Operator:{go_string(e.get('operator', ''))}, "
            f"Values:{go_strings(e.get('values'))}}}"
            for e in expressions
            if isinstance(e, dict)
        )
        written = f"[]v1.LabelSelectorRequirement{{{shown}}}"
    else:
        written = "[]v1.LabelSelectorRequirement(nil)"
    return GoValue(
        f"v1.LabelSelector{{MatchLabels:{go_labels(selector.get('matchLabels'))}, "
        f"MatchExpressions:{written}}}"
    )


def _expressions(selector: JSONDict) -> list[Any]:
    expressions = selector.get("matchExpressions")
    return expressions if isinstance(expressions, list) else []


def label_selector_has_invalid_value(selector: Any) -> bool:
    """Does an expression of ``selector`` hold a value that is no label value? (An update
    keeping such a stored selector is not refused for it, as kube-apiserver 1.27+.)"""
    if not isinstance(selector, dict):
        return False
    return any(
        not isinstance(value, str) or bool(label_value_errors(value))
        for expression in _expressions(selector)
        if isinstance(expression, dict)
        for value in expression.get("values") or []
    )


def label_selector_errors(
    selector: Any, field: str, *, allow_invalid_values: bool = False
) -> list[FieldError]:
    """A LabelSelector's problems as kube-apiserver 1.30 reports them on a write, at
    ``field``: each matchLabels key a qualified name and value a label value; each
    expression's operator one of In/NotIn/Exists/DoesNotExist, In/NotIn with values,
    Exists/DoesNotExist without, its key a qualified name and (unless
    ``allow_invalid_values``) each value a label value. A missing selector has none."""
    if not isinstance(selector, dict):
        return []
    errors: list[FieldError] = []
    match_labels = selector.get("matchLabels")
    if isinstance(match_labels, dict):
        where = f"{field}.matchLabels"
        for key, value in sorted(match_labels.items()):
            errors += [
                FieldError(where, "FieldValueInvalid", p, key) for p in qualified_name_errors(key)
            ]
            errors += [
                FieldError(where, "FieldValueInvalid", p, value)
                for p in label_value_errors(str(value))
            ]
    for index, expression in enumerate(_expressions(selector)):
        if not isinstance(expression, dict):
            continue
        where = f"{field}.matchExpressions[{index}]"
        operator = expression.get("operator", "")
        values = expression.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(
                    FieldError(
                        f"{where}.values",
                        "FieldValueRequired",
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    FieldError(
                        f"{where}.values",
                        "FieldValueForbidden",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errors.append(
                FieldError(
                    f"{where}.operator",
                    "FieldValueInvalid",
                    "not a valid selector operator",
                    operator,
                )
            )
        key = str(expression.get("key", ""))
        errors += [
            FieldError(f"{where}.key", "FieldValueInvalid", p, key)
            for p in qualified_name_errors(key)
        ]
        if not allow_invalid_values:
            errors += [
                FieldError(f"{where}.values[{i}]", "FieldValueInvalid", p, value)
                for i, value in enumerate(values)
                for p in label_value_errors(str(value))
            ]
    return errors


def label_selector_requirements(selector: Any) -> tuple[_Requirement, ...] | None:
    """A LabelSelector object as the requirements it selects by, or None when
    kube-apiserver could not turn it into a selector (``LabelSelectorAsSelector`` fails:
    an unknown operator, In/NotIn without values, Exists/DoesNotExist with some, a key
    that is no qualified name, a value that is no label value, or a field of the wrong
    JSON type). An empty selector has no requirements (it selects everything)."""
    if not isinstance(selector, dict):
        return None
    match_labels = selector.get("matchLabels")
    expressions = selector.get("matchExpressions")
    if not isinstance(match_labels, dict | None) or not isinstance(expressions, list | None):
        return None
    out: list[_Requirement] = []
    for key, value in (match_labels or {}).items():
        if not isinstance(value, str) or qualified_name_errors(key):
            return None
        if label_value_errors(value):
            return None
        out.append(_Requirement(key, "=", frozenset((value,))))
    for expression in expressions or ():
        if not isinstance(expression, dict):
            return None
        key, values = expression.get("key"), expression.get("values")
        op = _OPERATORS.get(expression.get("operator"))  # type: ignore[arg-type]
        if op is None or not isinstance(key, str) or qualified_name_errors(key):
            return None
        if not isinstance(values, list | None):
            return None
        values = values or []
        if (op in ("in", "notin")) != bool(values):
            return None
        if any(not isinstance(v, str) or label_value_errors(v) for v in values):
            return None
        out.append(_Requirement(key, op, frozenset(values)))
    return tuple(out)


def label_selector_matches(selector: Any, labels: Mapping[str, Any]) -> bool:
    """Does the LabelSelector object ``selector`` select ``labels``? An empty one selects
    everything; one that does not parse (see :func:`label_selector_requirements`),
    nothing. (What a missing selector selects differs by field: callers decide.)"""
    requirements = label_selector_requirements(selector)
    if requirements is None:
        return False
    plain = labels if isinstance(labels, dict) else dict(labels)
    return all(r.matches(plain) for r in requirements)
