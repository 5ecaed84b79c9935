"""What the core/v1 write subresources may change, and how they are validated.

``pods/ephemeralcontainers``, ``namespaces/status`` and ``namespaces/finalize`` are
updates of the object through another strategy (kube-apiserver's registry, read for
the rules only): :func:`subresource_update` keeps what the subresource may not change
and :func:`subresource_errors` validates what it changed. ``pods/binding`` is a
create of a Binding that writes the Pod: :func:`binding_errors` and :func:`bound_pod`.

Sources: a real kube-apiserver v1.20.2's answers
(tests/data/real-apiserver-1.20/pod-subresources.json) and, for ephemeral containers
(alpha and off in 1.20), Kubernetes 1.30's documented rules: the EphemeralContainer
API reference ("may not be removed or modified", the fields an ephemeral container
may not set) and its pod validation, as tests/facade/test_pod_subresources_real.py
lists them.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._patch import json_equal
from ._validation import FieldError, namespace_finalizer_errors, validate_name

__all__ = [
    "MIRROR_POD_ANNOTATION",
    "binding_errors",
    "bound_pod",
    "meta_for_status",
    "subresource_errors",
    "subresource_update",
]

#: A static (mirror) pod's annotation: such pods take no ephemeral containers.
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"

#: The container fields an ephemeral container may set (1.30's allow list); any other
#: one set is "Forbidden: cannot be set for an Ephemeral Container".
_EPHEMERAL_ALLOWED: Final = frozenset(
    {
        "name",
        "image",
        "command",
        "args",
        "workingDir",
        "envFrom",
        "env",
        "volumeMounts",
        "volumeDevices",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "securityContext",
        "stdin",
        "stdinOnce",
        "tty",
        # EphemeralContainer's own field, not a container's
        "targetContainerName",
    }
)
#: The fields of a container as 1.30 knows them (others are unknown, dropped by
#: decoding, and are not this module's concern).
#: A container's fields an ephemeral container may not set, in the Go struct's field
#: order (in which they are reported).
_ORDER: Final = (
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
)
_CONTAINER_FIELDS: Final = _EPHEMERAL_ALLOWED | set(_ORDER)
_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")


def _spec(obj: JSONDict) -> JSONDict:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def meta_for_status(existing: JSONDict, body: JSONDict) -> JSONDict:
    """The stored metadata, with the body's resourceVersion (the optimistic-concurrency
    check still applies): what ``ResetObjectMetaForStatus`` leaves a subresource
    write, whose labels, annotations, finalizers and owners are not its to change."""
    meta = dict(existing.get("metadata") or {})
    sent = body.get("metadata")
    sent = sent if isinstance(sent, dict) else {}
    for key in ("resourceVersion", "managedFields"):
        # (managedFields: as the field manager wrote them for this request)
        if sent.get(key) is not None:
            meta[key] = sent[key]
    return meta


def subresource_update(
    group: str, resource: str, existing: JSONDict, body: JSONDict, subresource: str
) -> JSONDict | None:
    """What an update through ``subresource`` stores, before validation; None for a
    subresource this module does not know (``status`` of other kinds)."""
    if group != "":
        return None
    if resource == "pods" and subresource == "binding":
        return body  # (the binding handler writes the Pod whole: spec and status)
    if resource == "pods" and subresource == "ephemeralcontainers":
        new = {k: v for k, v in existing.items() if k != "metadata"}
        new["metadata"] = meta_for_status(existing, body)
        spec = dict(_spec(existing))
        sent = _spec(body).get("ephemeralContainers")
        if sent is None:
            spec.pop("ephemeralContainers", None)
        else:
            spec["ephemeralContainers"] = sent
        new["spec"] = spec
        return new
    if resource == "namespaces" and subresource == "status":
        # The status and the metadata as sent; the spec as stored.
        new = {k: v for k, v in body.items() if k != "spec"}
        if "spec" in existing:
            new["spec"] = existing["spec"]
        return new
    if resource == "namespaces" and subresource == "finalize":
        # The spec (its finalizers) and the metadata as sent; the status as stored.
        new = {k: v for k, v in body.items() if k != "status"}
        if "status" in existing:
            new["status"] = existing["status"]
        sent_spec = new.get("spec")
        if isinstance(sent_spec, dict) and sent_spec.get("finalizers") in ([], None):
            # (an empty list is left out, as Go encodes it)
            new["spec"] = {k: v for k, v in sent_spec.items() if k != "finalizers"}
        return new
    return None


def subresource_errors(
    group: str, resource: str, old: JSONDict, new: JSONDict, subresource: str | None
) -> list[FieldError]:
    """Validation of an update through ``subresource`` (none for the others)."""
    if group != "" or subresource is None:
        return []
    if resource == "pods" and subresource == "ephemeralcontainers":
        return _ephemeral_errors(old, new)
    if resource == "namespaces" and subresource == "status":
        return _namespace_status_errors(new)
    if resource == "namespaces" and subresource == "finalize":
        return namespace_finalizer_errors(_spec(new).get("finalizers"), indexed=True)
    return []


def _namespace_status_errors(new: JSONDict) -> list[FieldError]:
    deleting = bool((new.get("metadata") or {}).get("deletionTimestamp"))
    status = new.get("status")
    phase = status.get("phase") if isinstance(status, dict) else None
    if not deleting and phase != "Active":
        return [
            FieldError(
                "status.Phase",
                "FieldValueInvalid",
                "may only be 'Active' if `deletionTimestamp` is empty",
                phase if phase is not None else "",
            )
        ]
    if deleting and phase != "Terminating":
        return [
            FieldError(
                "status.Phase",
                "FieldValueInvalid",
                "may only be 'Terminating' if `deletionTimestamp` is not empty",
                phase if phase is not None else "",
            )
        ]
    return []


def _set(value: Any) -> bool:
    """A field counts as set unless it is its zero value (Go's reflect comparison)."""
    return value not in (None, "", 0, False, [], {})


def _ephemeral_errors(old: JSONDict, new: JSONDict) -> list[FieldError]:
    where = "spec.ephemeralContainers"
    annotations = (old.get("metadata") or {}).get("annotations") or {}
    if isinstance(annotations, dict) and MIRROR_POD_ANNOTATION in annotations:
        return [
            FieldError("", "FieldValueForbidden", "static pods do not support ephemeral containers")
        ]
    spec = _spec(new)
    ephemeral = spec.get("ephemeralContainers")
    if ephemeral is not None and not isinstance(ephemeral, list):
        return [FieldError(where, "FieldValueInvalid", "must be a list", ephemeral)]
    errors: list[FieldError] = []
    others: set[str] = set()
    for key in ("containers", "initContainers"):
        for c in _list(spec.get(key)):
            if isinstance(c, dict) and isinstance(c.get("name"), str):
                others.add(c["name"])
    volumes = {v.get("name") for v in _list(spec.get("volumes")) if isinstance(v, dict)}
    names = set(others)
    for i, container in enumerate(_list(ephemeral)):
        at = f"{where}[{i}]"
        if not isinstance(container, dict):
            errors.append(FieldError(at, "FieldValueInvalid", "must be an object", container))
            continue
        name = container.get("name")
        if not isinstance(name, str) or not name:
            errors.append(FieldError(f"{at}.name", "FieldValueRequired", ""))
        else:
            errors += validate_name(name, "dns1123-label", f"{at}.name")
            if name in names:
                errors.append(FieldError(f"{at}.name", "FieldValueDuplicate", f'"{name}"', name))
            names.add(name)
        image = container.get("image")
        if not isinstance(image, str) or not image:
            errors.append(FieldError(f"{at}.image", "FieldValueRequired", ""))
        elif image != image.strip():
            errors.append(
                FieldError(
                    f"{at}.image",
                    "FieldValueInvalid",
                    "must not have leading or trailing whitespace",
                    image,
                )
            )
        errors += _choice(container, "terminationMessagePolicy", at, _MESSAGE_POLICIES)
        errors += _choice(container, "imagePullPolicy", at, _PULL_POLICIES)
        target = container.get("targetContainerName")
        if _set(target) and target not in others:
            errors.append(
                FieldError(f"{at}.targetContainerName", "FieldValueNotFound", f'"{target}"', target)
            )
        for key in sorted(_CONTAINER_FIELDS - _EPHEMERAL_ALLOWED, key=_field_order):
            if _set(container.get(key)):
                errors.append(
                    FieldError(
                        f"{at}.{key}",
                        "FieldValueForbidden",
                        "cannot be set for an Ephemeral Container",
                    )
                )
        for j, mount in enumerate(_list(container.get("volumeMounts"))):
            if not isinstance(mount, dict):
                continue
            m_at = f"{at}.volumeMounts[{j}]"
            if mount.get("name") not in volumes:
                errors.append(
                    FieldError(
                        f"{m_at}.name",
                        "FieldValueNotFound",
                        f'"{mount.get("name")}"',
                        mount.get("name"),
                    )
                )
            for key in ("subPath", "subPathExpr"):
                if _set(mount.get(key)):
                    errors.append(
                        FieldError(
                            f"{m_at}.{key}",
                            "FieldValueForbidden",
                            "cannot be set for an Ephemeral Container",
                        )
                    )
    # Those already there may be neither removed nor changed.
    sent = {c.get("name"): c for c in _list(ephemeral) if isinstance(c, dict)}
    for before in _list(_spec(old).get("ephemeralContainers")):
        if not isinstance(before, dict):
            continue
        name = before.get("name")
        after = sent.get(name)
        if after is None:
            errors.append(
                FieldError(
                    where,
                    "FieldValueForbidden",
                    f'existing ephemeral containers "{name}" may not be removed',
                )
            )
        elif not json_equal(before, after):
            errors.append(
                FieldError(
                    where,
                    "FieldValueForbidden",
                    f'existing ephemeral containers "{name}" may not be changed',
                )
            )
    return errors


def _field_order(key: str) -> int:
    return _ORDER.index(key)


def _choice(container: JSONDict, key: str, at: str, allowed: tuple[str, ...]) -> list[FieldError]:
    value = container.get(key)
    if value in (None, ""):
        return [FieldError(f"{at}.{key}", "FieldValueRequired", "")]
    if value not in allowed:
        return [
            FieldError(
                f"{at}.{key}",
                "FieldValueNotSupported",
                "supported values: " + ", ".join(f'"{v}"' for v in allowed),
                value,
            )
        ]
    return []


def binding_errors(binding: JSONDict) -> list[str]:
    """``ValidatePodBinding``'s messages (kube-apiserver answers them as a 500)."""
    target = binding.get("target")
    target = target if isinstance(target, dict) else {}
    messages = []
    kind = target.get("kind") or ""
    if kind not in ("", "Node"):
        messages.append(
            f'target.kind: Unsupported value: "{kind}": supported values: "Node", "<empty>"'
        )
    if not target.get("name"):
        messages.append("target.name: Required value")
    return messages


def bound_pod(pod: JSONDict, node: str, annotations: Any, now: str) -> JSONDict:
    """The Pod a Binding leaves: on ``node``, with the Binding's annotations and the
    PodScheduled condition true (its transition time ``now`` when it changes)."""
    out = copy.deepcopy(pod)
    spec = out.setdefault("spec", {})
    spec["nodeName"] = node
    meta = out.setdefault("metadata", {})
    if isinstance(annotations, dict) and annotations:
        merged = dict(meta.get("annotations") or {})
        merged.update(annotations)
        meta["annotations"] = merged
    status = out.get("status")
    status = dict(status) if isinstance(status, dict) else {}
    conditions = [c for c in _list(status.get("conditions")) if isinstance(c, dict)]
    scheduled = {"type": "PodScheduled", "status": "True", "lastProbeTime": None}
    for i, condition in enumerate(conditions):
        if condition.get("type") == "PodScheduled":
            changed = condition.get("status") != "True"
            updated = {**condition, **scheduled}
            updated["lastProbeTime"] = condition.get("lastProbeTime")
            if changed:
                updated["lastTransitionTime"] = now
            conditions[i] = updated
            break
    else:
        conditions.append({**scheduled, "lastTransitionTime": now})
    status["conditions"] = conditions
    out["status"] = status
    return out
