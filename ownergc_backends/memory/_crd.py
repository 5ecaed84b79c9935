"""CustomResourceDefinition (apiextensions.k8s.io/v1) -> what the store must serve.

Operator test suites install their CRDs through the API and then expect the
kind to be served at once (kube-apiserver's apiextensions server does this
within milliseconds). Only what decides how a kind is *served* is read:
group, names, scope and the versions' ``served`` / ``storage`` flags; schemas,
conversion and subresources are accepted and ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ._validation import FieldError

#: apiextensions-apiserver adds it to every CRD; its finalizer controller deletes the custom
#: objects of a deleted CRD, waits until they are gone, then removes it.
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"

__all__ = [
    "CRD_CLEANUP_FINALIZER",
    "NAME_MISMATCH",
    "CRDServing",
    "crd_serving",
    "crd_status",
    "required_name",
    "version_priority_key",
]

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def version_priority_key(version: str) -> tuple[int, int, int, str]:
    """kube-aware version order (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > others by name);
    sorting by this key puts the version discovery prefers first."""
    m = _VERSION.match(version)
    if m is None:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = m.group(2)
    minor = int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, version)


@dataclass(frozen=True, slots=True)
class CRDServing:
    """How a CRD's kind is served: the arguments of ``register_resource``."""

    group: str
    resource: str
    kind: str
    namespaced: bool
    #: Served versions in discovery order (preferred first); may be empty.
    served: tuple[str, ...]
    storage: str
    #: Subresources any served version declares (``status``, ``scale``).
    subresources: frozenset[str] = frozenset()
    #: The scale subresource's (specReplicasPath, statusReplicasPath, labelSelectorPath).
    scale: tuple[str, str, str | None] | None = None


#: What a CRD's name (and a generateName) that is not its plural and group is told.
NAME_MISMATCH = 'must be spec.names.plural+"."+spec.group'


def required_name(obj: dict[str, Any]) -> str:
    """The one name a CRD may have, ``<spec.names.plural>.<spec.group>`` (Go's zero values,
    empty strings, for what is missing)."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    names = spec.get("names")
    plural = names.get("plural") if isinstance(names, dict) else None
    group = spec.get("group")
    return f"{plural if isinstance(plural, str) else ''}.{group if isinstance(group, str) else ''}"


def crd_serving(obj: dict[str, Any]) -> tuple[CRDServing | None, list[FieldError]]:
    """Validate the parts of a CRD that decide serving; (serving, []) or (None, errors)."""
    errors: list[FieldError] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None, [FieldError("spec", "FieldValueRequired", "spec is required")]
    group = spec.get("group")
    if not isinstance(group, str) or not group or "." not in group:
        errors.append(
            FieldError(
                "spec.group", "FieldValueInvalid", "should be a domain with at least one dot", group
            )
        )
    names = spec.get("names")
    if not isinstance(names, dict):
        names = {}
        errors.append(FieldError("spec.names", "FieldValueRequired", "names are required"))
    plural = names.get("plural")
    kind = names.get("kind")
    if not isinstance(plural, str) or not _DNS_LABEL.match(plural):
        errors.append(
            FieldError(
                "spec.names.plural",
                "FieldValueInvalid",
                "a lowercase RFC 1123 label is required",
                plural,
            )
        )
    if not isinstance(kind, str) or not _KIND.match(kind):
        errors.append(
            FieldError("spec.names.kind", "FieldValueInvalid", "a CamelCase kind is required", kind)
        )
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        errors.append(
            FieldError(
                "spec.scope",
                "FieldValueNotSupported",
                'supported values: "Cluster", "Namespaced"',
                scope,
            )
        )
    versions = spec.get("versions")
    served: list[str] = []
    storage: list[str] = []
    subresources: set[str] = set()
    scale: tuple[str, str, str | None] | None = None
    if not isinstance(versions, list) or not versions:
        errors.append(
            FieldError("spec.versions", "FieldValueRequired", "must have at least one version")
        )
        versions = []
    seen: set[str] = set()
    for i, entry in enumerate(versions):
        where = f"spec.versions[{i}]"
        if not isinstance(entry, dict):
            errors.append(FieldError(where, "FieldValueInvalid", "must be an object", entry))
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not _DNS_LABEL.match(name):
            errors.append(
                FieldError(
                    f"{where}.name", "FieldValueInvalid", "a DNS-1035 label is required", name
                )
            )
            continue
        if name in seen:
            errors.append(FieldError(f"{where}.name", "FieldValueDuplicate", f'"{name}"', name))
            continue
        seen.add(name)
        for flag in ("served", "storage"):
            if not isinstance(entry.get(flag), bool):
                errors.append(
                    FieldError(f"{where}.{flag}", "FieldValueRequired", "must be true or false")
                )
        if entry.get("served") is True:
            served.append(name)
            declared = entry.get("subresources")
            if isinstance(declared, dict):
                subresources.update(k for k in ("status", "scale") if k in declared)
                scale_spec = declared.get("scale")
                if isinstance(scale_spec, dict) and scale is None:
                    scale = (
                        str(scale_spec.get("specReplicasPath", "")),
                        str(scale_spec.get("statusReplicasPath", "")),
                        scale_spec.get("labelSelectorPath"),
                    )
        if entry.get("storage") is True:
            storage.append(name)
    if versions and len(storage) != 1:
        errors.append(
            FieldError(
                "spec.versions",
                "FieldValueInvalid",
                "must have exactly one version marked as storage version",
                versions,
            )
        )
    if errors:
        return None, errors
    assert isinstance(group, str) and isinstance(plural, str) and isinstance(kind, str)
    return (
        CRDServing(
            group=group,
            resource=plural,
            kind=kind,
            namespaced=scope == "Namespaced",
            served=tuple(sorted(served, key=version_priority_key)),
            storage=storage[0],
            subresources=frozenset(subresources),
            scale=scale,
        ),
        [],
    )


def crd_status(obj: dict[str, Any], serving: CRDServing, now: str) -> dict[str, Any]:
    """The status the apiextensions controllers settle on: names accepted, established."""
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    assert isinstance(status, dict)
    stored = [v for v in status.get("storedVersions") or [] if isinstance(v, str)]
    if serving.storage not in stored:
        stored.append(serving.storage)
    names = dict((obj.get("spec") or {}).get("names") or {})
    names.setdefault("singular", serving.kind.lower())
    names.setdefault("listKind", serving.kind + "List")

    def condition(kind: str, reason: str, message: str) -> dict[str, str]:
        return {
            "type": kind,
            "status": "True",
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }

    return {
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition(
                "Established", "InitialNamesAccepted", "the initial names have been accepted"
            ),
        ],
        "acceptedNames": names,
        "storedVersions": stored,
    }
