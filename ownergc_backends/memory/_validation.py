"""ObjectMeta decoding and validation, as kube-apiserver applies it to every write.

Two kinds of failure are kept apart like on a real server: a value of the
wrong JSON type cannot be decoded into the Go struct and is a 400
(:class:`MetadataTypeError`), while a well-typed value that breaks a rule is a
422 built from :class:`FieldError` entries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ._patch import json_equal

__all__ = [
    "FINALIZER_FOREGROUND",
    "FINALIZER_ORPHAN",
    "FieldError",
    "GoValue",
    "MetadataTypeError",
    "decode_metadata",
    "dns1035_label_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "label_value_errors",
    "name_errors",
    "path_segment_errors",
    "port_name_errors",
    "qualified_name_errors",
    "validate_annotations",
    "validate_finalizers",
    "validate_labels",
    "validate_name",
    "validate_owner_references",
]

FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+")
_PORT_NAME_LETTER = re.compile(r"[a-z]")
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


class GoValue(str):
    """A field error's value already written as kube-apiserver prints it (Go's ``%#v``
    of a struct or map: ``map[string]string{"app":"web"}``); shown as is."""

    __slots__ = ()


def _shown(value: Any) -> str:
    """A field error's value as kube-apiserver prints it: strings quoted, scalars as
    Go prints them, objects and lists as compact JSON (a :class:`GoValue` as written)."""
    if isinstance(value, GoValue):
        return str(value)
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One ``field.Error``: where, which reason, and the message kubectl prints."""

    field: str
    reason: str  # FieldValueInvalid, FieldValueRequired, FieldValueForbidden, ...
    detail: str
    value: Any = None

    def message(self) -> str:
        label = {
            "FieldValueInvalid": "Invalid value",
            "FieldValueRequired": "Required value",
            "FieldValueForbidden": "Forbidden",
            "FieldValueNotSupported": "Unsupported value",
            "FieldValueDuplicate": "Duplicate value",
            "FieldValueTooLong": "Too long",
            "FieldValueTooMany": "Too many",
            "FieldValueTypeInvalid": "Invalid value",
            "FieldValueNotFound": "Not found",
        }.get(self.reason, self.reason)
        # (an empty detail is left out, as Go's field.Error leaves it out)
        detail = f": {self.detail}" if self.detail else ""
        if self.reason in (
            "FieldValueInvalid",
            "FieldValueNotSupported",
            "FieldValueTypeInvalid",
            "FieldValueTooMany",
        ):
            return f"{self.field}: {label}: {_shown(self.value)}{detail}"
        return f"{self.field}: {label}{detail}"

    def cause(self) -> dict[str, str]:
        # A Status cause carries the field apart and the message without it
        # (k8s ``field.Error.ErrorBody``), as kube-apiserver answers.
        body = self.message().removeprefix(f"{self.field}: ")
        return {"reason": self.reason, "message": body, "field": self.field}


class MetadataTypeError(ValueError):
    """A metadata field holds a JSON value of the wrong type (decodes to a 400)."""


_STRING_FIELDS = ("name", "generateName", "namespace", "uid", "resourceVersion", "selfLink")
_TIME_FIELDS = ("creationTimestamp", "deletionTimestamp")
_INT_FIELDS = ("generation", "deletionGracePeriodSeconds")
_REF_STRING_FIELDS = ("apiVersion", "kind", "name", "uid")
_REF_BOOL_FIELDS = ("controller", "blockOwnerDeletion")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _typed(
    src: dict[str, Any],
    keys: tuple[str, ...],
    is_type: Callable[[Any], bool],
    type_name: str,
    where: str,
) -> Iterator[tuple[str, Any]]:
    """``(key, value)`` of each of ``keys`` set (not null) in ``src``, in that order;
    a value of another JSON type is the 400 the typed decoder would answer."""
    for key in keys:
        value = src.get(key)
        if value is None:
            continue
        if not is_type(value):
            raise MetadataTypeError(f"{where}.{key} must be {type_name}, got {value!r}")
        yield key, value


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise MetadataTypeError(f"{where} must be an object of strings, got {value!r}")
    for k, v in value.items():
        if not isinstance(v, str) and v is not None:
            raise MetadataTypeError(f"{where}[{k!r}] must be a string, got {v!r}")
    # a null value decodes to the empty string, as into Go's map[string]string
    return {k: "" if v is None else v for k, v in value.items()}


def decode_metadata(meta: Any) -> dict[str, Any]:
    """Decode ``metadata`` like the typed ObjectMeta does: check types, drop what it drops.

    Nulls, empty lists/maps and unknown keys disappear (``omitempty`` and the
    default "Warn" field validation); entries of ``ownerReferences`` keep only
    the six OwnerReference fields. The result is a new dict in a stable key order.
    """
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise MetadataTypeError(f"metadata must be an object, got {meta!r}")
    out: dict[str, Any] = {}
    out.update(
        (k, v) for k, v in _typed(meta, _STRING_FIELDS, _is_str, "a string", "metadata") if v
    )
    out.update(
        (k, v)
        for k, v in _typed(meta, _INT_FIELDS, _is_int, "an integer", "metadata")
        if not (k == "generation" and v == 0)
    )
    out.update(_typed(meta, _TIME_FIELDS, _is_str, "an RFC3339 string", "metadata"))
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is None:
            continue
        mapping = _string_map(value, f"metadata.{key}")
        if mapping:
            out[key] = mapping
    refs = meta.get("ownerReferences")
    if refs is not None:
        if not isinstance(refs, list):
            raise MetadataTypeError(f"metadata.ownerReferences must be a list, got {refs!r}")
        decoded = [_decode_owner_reference(r, i) for i, r in enumerate(refs)]
        if decoded:
            out["ownerReferences"] = decoded
    finalizers = meta.get("finalizers")
    if finalizers is not None:
        if not isinstance(finalizers, list):
            raise MetadataTypeError(f"metadata.finalizers must be a list, got {finalizers!r}")
        for f in finalizers:
            if not isinstance(f, str):
                raise MetadataTypeError(f"metadata.finalizers entries must be strings, got {f!r}")
        if finalizers:
            out["finalizers"] = list(finalizers)
    managed = meta.get("managedFields")
    if managed is not None:
        if not isinstance(managed, list):
            raise MetadataTypeError("metadata.managedFields must be a list")
        if managed:
            out["managedFields"] = managed
    return out


def _decode_owner_reference(ref: Any, index: int) -> dict[str, Any]:
    where = f"metadata.ownerReferences[{index}]"
    if not isinstance(ref, dict):
        raise MetadataTypeError(f"{where} must be an object, got {ref!r}")
    out: dict[str, Any] = dict.fromkeys(_REF_STRING_FIELDS, "")
    out.update(_typed(ref, _REF_STRING_FIELDS, _is_str, "a string", where))
    out.update(_typed(ref, _REF_BOOL_FIELDS, _is_bool, "a boolean", where))
    return out


def dns1123_label_errors(value: str) -> list[str]:
    """apimachinery's IsDNS1123Label words (1.30: a dotted subdomain "must not contain dots")."""
    errors = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _DNS_LABEL.fullmatch(value):
        errors.append("must not contain dots" if _DNS_SUBDOMAIN.fullmatch(value) else _LABEL_RULE)
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    """apimachinery's IsDNS1123Subdomain words: the length and the pattern, each checked."""
    errors = ["must be no more than 253 characters"] if len(value) > 253 else []
    if not _DNS_SUBDOMAIN.fullmatch(value):
        errors.append(_SUBDOMAIN_RULE)
    return errors


def dns1035_label_errors(value: str) -> list[str]:
    """apimachinery's IsDNS1035Label words (a Service's name: a letter first)."""
    errors = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _DNS1035_LABEL.fullmatch(value):
        errors.append(_DNS1035_LABEL_RULE)
    return errors


def path_segment_errors(name: str, prefix: bool = False) -> list[str]:
    """What a name usable in a URL path may not be (every object's rule; RBAC's only one)."""
    errors = [] if prefix or name not in (".", "..") else [f"may not be '{name}'"]
    return errors + [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


def go_string(value: Any) -> str:
    """A string as Go's ``%q`` (and ``%#v``) prints it."""
    return json.dumps(value if isinstance(value, str) else str(value), ensure_ascii=False)


def go_strings(values: Any) -> GoValue:
    """A ``[]string`` as Go's ``%#v`` prints it (``[]string(nil)`` for none)."""
    if not isinstance(values, list):
        return GoValue("[]string(nil)")
    return GoValue("[]string{" + ", ".join(go_string(v) for v in values) + "}")


def supported_values(values: tuple[str, ...] | list[str]) -> str:
    """The detail of a ``field.NotSupported`` error."""
    return "supported values: " + ", ".join(f'"{v}"' for v in values)


_NAME_CHECKS: dict[str, Callable[[str], list[str]]] = {
    "dns1123-label": dns1123_label_errors,
    "dns1123-subdomain": dns1123_subdomain_errors,
    "dns1035-label": dns1035_label_errors,
}


def name_errors(name: str, rule: str, prefix: bool = False) -> list[str]:
    """What is wrong with ``name`` under a kind's name ``rule``, in kube-apiserver's words.

    ``prefix``: a ``generateName``, checked as the start of a name (a trailing dash
    stands for the characters that follow it).
    """
    if rule == "path-segment":
        return path_segment_errors(name, prefix)
    check = _NAME_CHECKS.get(rule)
    if check is None:  # ("none")
        return []
    if prefix and len(name) > 1 and name.endswith("-"):
        name = name[:-1] + "a"
    return check(name)


def validate_name(
    name: str, rule: str, field: str = "metadata.name", *, prefix: bool = False
) -> list[FieldError]:
    """Name rules: DNS-1123 subdomain / label, DNS-1035 label, a URL path segment, none."""
    return [
        FieldError(field, "FieldValueInvalid", why, name) for why in name_errors(name, rule, prefix)
    ]


_STANDARD_FINALIZERS = frozenset({"kubernetes", FINALIZER_ORPHAN, FINALIZER_FOREGROUND})


def namespace_finalizer_errors(finalizers: Any, indexed: bool) -> list[FieldError]:
    """A Namespace's ``spec.finalizers``: qualified names, and one without a prefix a
    standard one (``kubernetes``, ``orphan``, ``foregroundDeletion``). A create names
    the list (``spec.finalizers``), ``/finalize`` each entry (``spec.finalizers[i]``)."""
    errors: list[FieldError] = []
    for i, value in enumerate(finalizers if isinstance(finalizers, list) else []):
        where = f"spec.finalizers[{i}]" if indexed else "spec.finalizers"
        if not isinstance(value, str):
            errors.append(FieldError(where, "FieldValueInvalid", "must be a string", value))
            continue
        errors += [
            FieldError(where, "FieldValueInvalid", m, value) for m in qualified_name_errors(value)
        ]
        if "/" not in value and value not in _STANDARD_FINALIZERS:
            errors.append(
                FieldError(
                    where,
                    "FieldValueInvalid",
                    "name is neither a standard finalizer name nor is it fully qualified",
                    value,
                )
            )
    return errors


def _is_qualified_name(value: str) -> bool:
    prefix, sep, name = value.rpartition("/")
    if sep and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME_PART.match(name))


# The words of apimachinery's validation helpers (IsQualifiedName, IsValidLabelValue,
# IsDNS1123Subdomain), which every kube-apiserver error about a label or an annotation
# quotes.
_NAME_EXAMPLES = "(e.g. 'MyName',  or 'my.name',  or '123-abc', "
_QUALIFIED_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    f"an alphanumeric character {_NAME_EXAMPLES}regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')"
)
_LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_LABEL_RULE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
#: The most bytes a object's annotations may hold, keys and values together.
ANNOTATIONS_SIZE_LIMIT = 256 * 1024


def qualified_name_errors(value: str) -> list[str]:
    """What is wrong with ``value`` as a qualified name (``[prefix/]name``), worded as
    kube-apiserver words it; empty when it is one."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name {_QUALIFIED_NAME_RULE} with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')"
        ]
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errors.append("prefix part must be no more than 253 characters")
            if not _DNS_SUBDOMAIN.fullmatch(prefix):
                errors.append(f"prefix part {_SUBDOMAIN_RULE}")
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME_PART.fullmatch(name):
        errors.append(f"name part {_QUALIFIED_NAME_RULE}")
    return errors


def label_value_errors(value: str) -> list[str]:
    """What is wrong with ``value`` as a label value, worded as kube-apiserver words it."""
    errors = ["must be no more than 63 characters"] if len(value) > 63 else []
    if value and not _QUALIFIED_NAME_PART.fullmatch(value):
        errors.append(_LABEL_VALUE_RULE)
    return errors


def port_name_errors(name: str) -> list[str]:
    """What is wrong with ``name`` as a port name (apimachinery's IsValidPortName), worded
    as kube-apiserver 1.30 words it."""
    errors = []
    if len(name) > 15:
        errors.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARS.fullmatch(name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def validate_labels(labels: dict[str, str], field: str = "metadata.labels") -> list[FieldError]:
    """Label keys are qualified names, values empty or a qualified name's name part of at
    most 63 characters (a real server lists a key's errors, then its value's)."""
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors.extend(
            FieldError(field, "FieldValueInvalid", why, key) for why in qualified_name_errors(key)
        )
        errors.extend(
            FieldError(field, "FieldValueInvalid", why, value) for why in label_value_errors(value)
        )
    return errors


def validate_annotations(
    annotations: dict[str, str], field: str = "metadata.annotations"
) -> list[FieldError]:
    """Annotation keys are qualified names in any case; the values are free but, keys
    included, hold at most 256 KiB."""
    errors = [
        FieldError(field, "FieldValueInvalid", why, key)
        for key in annotations
        for why in qualified_name_errors(key.lower())
    ]
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_SIZE_LIMIT:
        errors.append(
            FieldError(
                field, "FieldValueTooLong", f"must have at most {ANNOTATIONS_SIZE_LIMIT} bytes"
            )
        )
    return errors


def validate_finalizers(finalizers: list[str]) -> list[FieldError]:
    """Finalizers are qualified names; ``orphan`` and ``foregroundDeletion`` exclude each other."""
    errors: list[FieldError] = []
    for i, f in enumerate(finalizers):
        if not _is_qualified_name(f):
            errors.append(
                FieldError(
                    f"metadata.finalizers[{i}]",
                    "FieldValueInvalid",
                    "name part must consist of alphanumeric characters, '-', '_' or '.', "
                    "with an optional DNS subdomain prefix and '/'",
                    f,
                )
            )
    if FINALIZER_ORPHAN in finalizers and FINALIZER_FOREGROUND in finalizers:
        errors.append(
            FieldError(
                "metadata.finalizers",
                "FieldValueInvalid",
                f"finalizer {FINALIZER_ORPHAN!r} and {FINALIZER_FOREGROUND!r} cannot be both set",
                finalizers,
            )
        )
    return errors


def _version_of(api_version: str) -> str | None:
    """Version part of an apiVersion, or None when it does not parse (``a/b/c``)."""
    if api_version.count("/") > 1:
        return None
    return api_version.rpartition("/")[2]


def validate_owner_references(refs: list[dict[str, Any]]) -> list[FieldError]:
    """Non-empty version/kind/name/uid, no core v1 Event owner, at most one controller.

    As kube-apiserver reports them: each reference's problems on
    ``metadata.ownerReferences.<field>`` (no index), and each controller after the
    first named against the first (``Found "true" in references for A/a and B/b``).
    """
    errors: list[FieldError] = []
    where = "metadata.ownerReferences"
    first_controller = ""
    for ref in refs:
        api_version = ref["apiVersion"]
        version = _version_of(api_version)
        if not version:
            errors.append(
                FieldError(
                    f"{where}.apiVersion",
                    "FieldValueInvalid",
                    "version must not be empty",
                    api_version,
                )
            )
        for key in ("kind", "name", "uid"):
            if not ref[key]:
                errors.append(
                    FieldError(
                        f"{where}.{key}", "FieldValueInvalid", f"{key} must not be empty", ""
                    )
                )
        if api_version == "v1" and ref["kind"] == "Event":
            errors.append(
                FieldError(
                    where,
                    "FieldValueInvalid",
                    "/v1, Kind=Event is disallowed from being an owner",
                    ref,
                )
            )
        if ref.get("controller") is True:
            name = f"{ref['kind']}/{ref['name']}"
            if not first_controller:
                first_controller = name
                continue
            errors.append(
                FieldError(
                    where,
                    "FieldValueInvalid",
                    'Only one reference can have Controller set to true. Found "true" in '
                    f"references for {first_controller} and {name}",
                    refs,
                )
            )
    return errors


def immutable(field: str, new: Any, old: Any) -> list[FieldError]:
    """``field is immutable`` when the value changed."""
    if json_equal(new, old):
        return []
    return [FieldError(field, "FieldValueInvalid", "field is immutable", new)]
