"""PodSpec validation, as kube-apiserver 1.30 applies it to Pods and pod templates.

A real server refuses, with a 422 ``Invalid``, a Pod or a pod template whose spec
cannot run: a container without an image, two containers of one name, a
volumeMount naming no volume, requests above limits, a port out of range, a
``restartPolicy`` a workload does not allow... This module words each refusal as
kube-apiserver 1.30 does and names the field as it does
(``spec.template.spec.containers[0].image``). It runs on the defaulted object (a
real server defaults before it validates), so a value the defaults fill in
(``imagePullPolicy``, ``protocol``, ``restartPolicy``...) is not reported missing.

Here: containers, names, images, the enums, ports, env, volumes and mounts,
resources, probes, tolerations, nodeSelector and a few scalar fields; security
contexts, affinity, topology spread constraints, DNS config, host aliases,
readiness and scheduling gates are :mod:`._podspec_scheduling`'s (called from
here). Not checked: the Windows-only rules, ephemeral containers' own rules
beyond the subresource's, and most volume sources' inner fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from fractions import Fraction
from typing import Any, Final

from ownergc.errors import BadRequest

from ._defaults import quantity_value
from ._podspec_scheduling import pod_scheduling_errors, scheduling_gate_update_errors
from ._quota_validation import container_resource_name_errors, is_native
from ._validation import (
    FieldError,
    GoValue,
    _shown,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    port_name_errors,
    qualified_name_errors,
    validate_labels,
)

__all__ = ["pod_spec_errors", "pod_spec_update_errors"]

_INVALID: Final = "FieldValueInvalid"
_REQUIRED: Final = "FieldValueRequired"
_FORBIDDEN: Final = "FieldValueForbidden"
_NOT_SUPPORTED: Final = "FieldValueNotSupported"
_DUPLICATE: Final = "FieldValueDuplicate"
_NOT_FOUND: Final = "FieldValueNotFound"

_ENV_VAR_NAME: Final = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")

_ENV_VAR_RULE: Final = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  "
    "or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
)
_PORT_RANGE: Final = "must be between 1 and 65535, inclusive"
_NEGATIVE: Final = "must be greater than or equal to 0"
_QUANTITY_SYNTAX: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)

#: The kinds whose objects hold a pod template: where the template is, which
#: ``restartPolicy`` values it may have, and whether its PodSpec is validated at all
#: (a StatefulSet's is not, in 1.30 as in 1.20: its validation only reads the
#: template's labels, annotations and restart policy).
_TEMPLATES: Final[dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...], bool]]] = {
    ("apps", "deployments"): (("spec", "template"), ("Always",), True),
    ("apps", "replicasets"): (("spec", "template"), ("Always",), True),
    ("apps", "daemonsets"): (("spec", "template"), ("Always",), True),
    ("apps", "statefulsets"): (("spec", "template"), ("Always",), False),
    ("", "replicationcontrollers"): (("spec", "template"), ("Always",), True),
    ("batch", "jobs"): (("spec", "template"), ("OnFailure", "Never"), True),
    ("batch", "cronjobs"): (
        ("spec", "jobTemplate", "spec", "template"),
        ("OnFailure", "Never"),
        True,
    ),
    ("", "podtemplates"): (("template",), (), True),
}
#: The workloads whose template may not set ``activeDeadlineSeconds`` (a Deployment's
#: is checked as its ReplicaSet's and named so).
_NO_DEADLINE: Final = {
    "deployments": "ReplicaSet",
    "replicasets": "ReplicaSet",
    "daemonsets": "DaemonSet",
    "statefulsets": "StatefulSet",
    "replicationcontrollers": "ReplicationController",
}

_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_OPERATORS: Final = ("Equal", "Exists")
_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_SCHEMES: Final = ("HTTP", "HTTPS")
#: Volume sources in the order the real validation looks at them (the second one set
#: is the one named "more than 1 volume type").
_VOLUME_SOURCES: Final = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret",
    "nfs", "iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "flexVolume",
    "cinder", "cephfs", "quobyte", "downwardAPI", "fc", "azureFile", "configMap",
    "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk", "storageos",
    "projected", "scaleIO", "csi", "ephemeral", "image",
)  # fmt: skip
#: The downward API fields an env var's ``fieldRef`` may name (plus a label or an
#: annotation by key).
_ENV_FIELD_PATHS: Final = (
    "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
    "status.podIPs",
)  # fmt: skip
_FIELD_LABELS: Final = frozenset((*_ENV_FIELD_PATHS, "metadata.labels", "metadata.annotations"))

#: 1.30's words for a forbidden Pod spec update (the fields a Pod's update may change).
POD_UPDATE_FORBIDDEN: Final = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _supported(values: tuple[str, ...]) -> str:
    return "supported values: " + ", ".join(f'"{v}"' for v in values)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dicts(value: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    for index, item in enumerate(_list(value)):
        yield index, _dict(item)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _port_number_errors(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [_PORT_RANGE]


def _env_name_errors(name: str) -> list[str]:
    errors = [] if _ENV_VAR_NAME.fullmatch(name) else [_ENV_VAR_RULE]
    if name == ".":
        errors.append("must not be '.'")
    elif name == "..":
        errors.append("must not be '..'")
    elif name.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def _not_supported(field: str, value: Any, allowed: tuple[str, ...]) -> FieldError:
    return FieldError(field, _NOT_SUPPORTED, _supported(allowed), value)


def _enum(field: str, value: Any, allowed: tuple[str, ...]) -> list[FieldError]:
    if value in (None, ""):
        return [FieldError(field, _REQUIRED, "")]
    if value not in allowed:
        return [_not_supported(field, value, allowed)]
    return []


def _nonnegative(field: str, value: Any) -> list[FieldError]:
    number = _int(value)
    if number is not None and number < 0:
        return [FieldError(field, _INVALID, _NEGATIVE, number)]
    return []


# -- volumes -----------------------------------------------------------------------


def _volume_source_errors(volume: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    count = 0
    for key in _VOLUME_SOURCES:
        if volume.get(key) is None:
            continue
        if count:
            errors.append(
                FieldError(f"{path}.{key}", _FORBIDDEN, "may not specify more than 1 volume type")
            )
            continue
        count += 1
        source = _dict(volume[key])
        where = f"{path}.{key}"
        if key == "hostPath" and not _str(source.get("path")):
            errors.append(FieldError(f"{where}.path", _REQUIRED, ""))
        elif key == "configMap" and not _str(source.get("name")):
            errors.append(FieldError(f"{where}.name", _REQUIRED, ""))
        elif key == "secret" and not _str(source.get("secretName")):
            errors.append(FieldError(f"{where}.secretName", _REQUIRED, ""))
        elif key == "persistentVolumeClaim" and not _str(source.get("claimName")):
            errors.append(FieldError(f"{where}.claimName", _REQUIRED, ""))
        elif key == "ephemeral":
            errors += _ephemeral_errors(source, where)
        elif key == "nfs":
            if not _str(source.get("server")):
                errors.append(FieldError(f"{where}.server", _REQUIRED, ""))
            nfs_path = _str(source.get("path"))
            if not nfs_path:
                errors.append(FieldError(f"{where}.path", _REQUIRED, ""))
            elif not nfs_path.startswith("/"):
                errors.append(
                    FieldError(f"{where}.path", _INVALID, "must be an absolute path", nfs_path)
                )
        if key in ("configMap", "secret"):
            for index, item in _dicts(source.get("items")):
                if not _str(item.get("key")):
                    errors.append(FieldError(f"{where}.items[{index}].key", _REQUIRED, ""))
                errors += _local_path_errors(_str(item.get("path")), f"{where}.items[{index}].path")
    if count == 0:
        errors.append(FieldError(path, _REQUIRED, "must specify a volume type"))
    return errors


def _ephemeral_errors(source: dict[str, Any], where: str) -> list[FieldError]:
    """A generic ephemeral volume's claim template (GA in 1.23): there, and its spec a
    valid claim's (:func:`._storage_validation.claim_spec_errors`)."""
    from ._storage_validation import claim_spec_errors  # (it imports this module)

    template = source.get("volumeClaimTemplate")
    if not isinstance(template, dict):
        return [FieldError(f"{where}.volumeClaimTemplate", _REQUIRED, "")]
    return claim_spec_errors(_dict(template.get("spec")), f"{where}.volumeClaimTemplate.spec")


def _local_path_errors(target: str, field: str, *, required: bool = True) -> list[FieldError]:
    if not target:
        return [FieldError(field, _REQUIRED, "")] if required else []
    if target.startswith("/"):
        return [FieldError(field, _INVALID, "must be a relative path", target)]
    if ".." in target.replace("\\", "/").split("/"):
        return [FieldError(field, _INVALID, "must not contain '..'", target)]
    return []


def _volume_errors(volumes: Any, path: str) -> tuple[list[FieldError], set[str]]:
    """The volumes' errors, and the names of the valid ones (a mount of an invalid
    volume names no volume, as on a real server)."""
    errors: list[FieldError] = []
    names: set[str] = set()
    seen: set[str] = set()
    for index, volume in _dicts(volumes):
        where = f"{path}[{index}]"
        own = _volume_source_errors(volume, where)
        name = _str(volume.get("name"))
        if not name:
            own.append(FieldError(f"{where}.name", _REQUIRED, ""))
        else:
            own += [
                FieldError(f"{where}.name", _INVALID, m, name) for m in dns1123_label_errors(name)
            ]
        if name in seen:
            own.append(FieldError(f"{where}.name", _DUPLICATE, _shown(name)))
        if own:
            errors += own
        else:
            seen.add(name)
            names.add(name)
    return errors, names


# -- containers --------------------------------------------------------------------


def _port_errors(ports: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    names: set[str] = set()
    for index, port in _dicts(ports):
        where = f"{path}[{index}]"
        name = _str(port.get("name"))
        if name:
            problems = port_name_errors(name)
            if problems:
                errors += [FieldError(f"{where}.name", _INVALID, m, name) for m in problems]
            elif name in names:
                errors.append(FieldError(f"{where}.name", _DUPLICATE, _shown(name)))
            else:
                names.add(name)
        container_port = _int(port.get("containerPort")) or 0
        if container_port == 0:
            errors.append(FieldError(f"{where}.containerPort", _REQUIRED, ""))
        else:
            errors += [
                FieldError(f"{where}.containerPort", _INVALID, m, container_port)
                for m in _port_number_errors(container_port)
            ]
        host_port = _int(port.get("hostPort")) or 0
        if host_port:
            errors += [
                FieldError(f"{where}.hostPort", _INVALID, m, host_port)
                for m in _port_number_errors(host_port)
            ]
        errors += _enum(f"{where}.protocol", port.get("protocol"), _PROTOCOLS)
    return errors


def _field_ref_errors(ref: dict[str, Any], path: str) -> list[FieldError]:
    if not _str(ref.get("apiVersion")):
        return [FieldError(f"{path}.apiVersion", _REQUIRED, "")]
    field_path = _str(ref.get("fieldPath"))
    where = f"{path}.fieldPath"
    if not field_path:
        return [FieldError(where, _REQUIRED, "")]
    match = re.fullmatch(r"(metadata\.(?:labels|annotations))\['(.*)'\]", field_path)
    if match is not None:
        key = match.group(2)
        problems = qualified_name_errors(key.lower() if "annotations" in match.group(1) else key)
        return [FieldError(where, _INVALID, m, key) for m in problems]
    if field_path not in _FIELD_LABELS:
        return [
            FieldError(
                where,
                _INVALID,
                f"error converting fieldPath: field label not supported: {field_path}",
                field_path,
            )
        ]
    if field_path not in _ENV_FIELD_PATHS:
        return [_not_supported(where, field_path, tuple(sorted(_ENV_FIELD_PATHS)))]
    return []


def _key_selector_errors(ref: dict[str, Any], path: str) -> list[FieldError]:
    name = _str(ref.get("name"))
    errors = [FieldError(f"{path}.name", _INVALID, m, name) for m in dns1123_subdomain_errors(name)]
    if not _str(ref.get("key")):
        errors.append(FieldError(f"{path}.key", _REQUIRED, ""))
    return errors


def _env_errors(env: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, var in _dicts(env):
        where = f"{path}[{index}]"
        name = _str(var.get("name"))
        if not name:
            errors.append(FieldError(f"{where}.name", _REQUIRED, ""))
        else:
            errors += [
                FieldError(f"{where}.name", _INVALID, m, name) for m in _env_name_errors(name)
            ]
        value_from = var.get("valueFrom")
        if not isinstance(value_from, dict):
            continue
        source_path = f"{where}.valueFrom"
        sources = 0
        for key in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef"):
            ref = value_from.get(key)
            if not isinstance(ref, dict):
                continue
            sources += 1
            if key == "fieldRef":
                errors += _field_ref_errors(ref, f"{source_path}.fieldRef")
            elif key == "resourceFieldRef":
                if not _str(ref.get("resource")):
                    errors.append(
                        FieldError(f"{source_path}.resourceFieldRef.resource", _REQUIRED, "")
                    )
            else:
                errors += _key_selector_errors(ref, f"{source_path}.{key}")
        if sources == 0:
            errors.append(
                FieldError(
                    source_path,
                    _INVALID,
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                    "or `secretKeyRef`",
                    "",
                )
            )
        elif _str(var.get("value")):
            errors.append(
                FieldError(
                    source_path, _INVALID, "may not be specified when `value` is not empty", ""
                )
            )
        elif sources > 1:
            errors.append(
                FieldError(
                    source_path,
                    _INVALID,
                    "may not have more than one field specified at a time",
                    "",
                )
            )
    return errors


def _mount_errors(mounts: Any, volumes: set[str], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    mount_paths: set[str] = set()
    for index, mount in _dicts(mounts):
        where = f"{path}[{index}]"
        name = _str(mount.get("name"))
        if not name:
            errors.append(FieldError(f"{where}.name", _REQUIRED, ""))
        if name not in volumes:
            errors.append(FieldError(f"{where}.name", _NOT_FOUND, _shown(name)))
        mount_path = _str(mount.get("mountPath"))
        if not mount_path:
            errors.append(FieldError(f"{where}.mountPath", _REQUIRED, ""))
        if mount_path in mount_paths:
            errors.append(FieldError(f"{where}.mountPath", _INVALID, "must be unique", mount_path))
        mount_paths.add(mount_path)
        # (the real server names these without the mount's index)
        sub_path = _str(mount.get("subPath"))
        if sub_path:
            errors += _local_path_errors(sub_path, f"{path}.subPath")
        sub_path_expr = _str(mount.get("subPathExpr"))
        if sub_path_expr:
            if sub_path:
                errors.append(
                    FieldError(
                        f"{where}.subPathExpr",
                        _INVALID,
                        "subPathExpr and subPath are mutually exclusive",
                        sub_path_expr,
                    )
                )
            errors += _local_path_errors(sub_path_expr, f"{path}.subPathExpr")
    return errors


def _resource_name_errors(name: str, field: str) -> list[FieldError]:
    return [FieldError(field, _INVALID, m, name) for m in container_resource_name_errors(name)]


def _quantity_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _parse_quantity(value: Any, kind: str) -> Fraction:
    """A quantity's exact value; one that does not parse cannot be decoded (a 400)."""
    if value is None:  # (a null decodes to the zero quantity)
        return Fraction(0)
    parsed = Fraction(value) if isinstance(value, float) else quantity_value(value)
    if parsed is None:
        raise BadRequest(
            f'{kind} in version "v1" cannot be handled as a {kind}: {_QUANTITY_SYNTAX}',
            reason="BadRequest",
        )
    return parsed


def _resource_errors(resources: dict[str, Any], path: str, kind: str) -> list[FieldError]:
    errors: list[FieldError] = []
    limits = _dict(resources.get("limits"))
    requests = _dict(resources.get("requests"))
    limit_values = {name: _parse_quantity(q, kind) for name, q in limits.items()}
    request_values = {name: _parse_quantity(q, kind) for name, q in requests.items()}
    hugepages = cpu_or_memory = False
    for group, values, texts in (
        ("limits", limit_values, limits),
        ("requests", request_values, requests),
    ):
        for name, value in values.items():
            where = f"{path}.{group}[{name}]"
            errors += _resource_name_errors(name, where)
            if value < 0:
                errors.append(FieldError(where, _INVALID, _NEGATIVE, _quantity_text(texts[name])))
            elif not is_native(name) and value.denominator != 1:
                errors.append(
                    FieldError(where, _INVALID, "must be an integer", _quantity_text(texts[name]))
                )
            hugepages = hugepages or name.startswith("hugepages-")
            cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
            if group != "requests":
                continue
            overcommit = is_native(name) and not name.startswith("hugepages-")
            if name in limit_values:
                limit = limit_values[name]
                shown = _quantity_text(requests[name])
                if value != limit and not overcommit:
                    detail = f"must be equal to {name} limit of {_quantity_text(limits[name])}"
                    errors.append(FieldError(f"{path}.requests", _INVALID, detail, shown))
                elif value > limit:
                    limit_text = _quantity_text(limits[name])
                    detail = f"must be less than or equal to {name} limit of {limit_text}"
                    errors.append(FieldError(f"{path}.requests", _INVALID, detail, shown))
            elif not overcommit:
                errors.append(
                    FieldError(
                        f"{path}.limits",
                        _REQUIRED,
                        "Limit must be set for non overcommitable resources",
                    )
                )
    if hugepages and not cpu_or_memory:
        errors.append(FieldError(path, _FORBIDDEN, "HugePages require cpu or memory"))
    return errors


def _handler_errors(holder: dict[str, Any], path: str, kinds: tuple[str, ...]) -> list[FieldError]:
    errors: list[FieldError] = []
    count = 0
    for key in kinds:
        handler = holder.get(key)
        if not isinstance(handler, dict):
            continue
        if count:
            errors.append(
                FieldError(f"{path}.{key}", _FORBIDDEN, "may not specify more than 1 handler type")
            )
            continue
        count += 1
        where = f"{path}.{key}"
        if key == "exec" and not _list(handler.get("command")):
            errors.append(FieldError(f"{where}.command", _REQUIRED, ""))
        elif key in ("httpGet", "tcpSocket"):
            if key == "httpGet":
                if not _str(handler.get("path")):
                    errors.append(FieldError(f"{where}.path", _REQUIRED, ""))
                scheme = handler.get("scheme")
                if scheme not in (None, "") and scheme not in _SCHEMES:
                    errors.append(_not_supported(f"{where}.scheme", scheme, _SCHEMES))
            port = handler.get("port")
            number = _int(port)
            if number is not None:
                errors += [
                    FieldError(f"{where}.port", _INVALID, m, number)
                    for m in _port_number_errors(number)
                ]
            elif isinstance(port, str):
                errors += [
                    FieldError(f"{where}.port", _INVALID, m, port) for m in port_name_errors(port)
                ]
        elif key == "grpc":
            number = _int(handler.get("port")) or 0
            errors += [
                FieldError(f"{where}.port", _INVALID, m, number)
                for m in _port_number_errors(number)
            ]
    if count == 0:
        errors.append(FieldError(path, _REQUIRED, "must specify a handler type"))
    return errors


def _probe_errors(probe: Any, path: str, *, success_must_be_one: bool) -> list[FieldError]:
    if not isinstance(probe, dict):
        return []
    errors = _handler_errors(probe, path, ("exec", "httpGet", "tcpSocket", "grpc"))
    for key in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        errors += _nonnegative(f"{path}.{key}", probe.get(key))
    grace = _int(probe.get("terminationGracePeriodSeconds"))
    if grace is not None and grace <= 0:
        errors.append(
            FieldError(
                f"{path}.terminationGracePeriodSeconds", _INVALID, "must be greater than 0", grace
            )
        )
    success = _int(probe.get("successThreshold"))
    if success_must_be_one and success is not None and success != 1:
        errors.append(FieldError(f"{path}.successThreshold", _INVALID, "must be 1", success))
    return errors


def _container_errors(
    container: dict[str, Any], path: str, volumes: set[str], kind: str, *, init: bool
) -> list[FieldError]:
    """The rules every container meets (``validateContainerCommon``), then a regular
    container's lifecycle and probes, or an init container's restart policy."""
    errors: list[FieldError] = []
    name = _str(container.get("name"))
    if not name:
        errors.append(FieldError(f"{path}.name", _REQUIRED, ""))
    else:
        errors += [
            FieldError(f"{path}.name", _INVALID, m, name) for m in dns1123_label_errors(name)
        ]
    if not _str(container.get("image")):
        errors.append(FieldError(f"{path}.image", _REQUIRED, ""))
    policy = container.get("terminationMessagePolicy")
    if policy in (None, ""):
        errors.append(FieldError(f"{path}.terminationMessagePolicy", _REQUIRED, ""))
    elif policy not in ("File", "FallbackToLogsOnError"):
        errors.append(
            FieldError(
                f"{path}.terminationMessagePolicy",
                _INVALID,
                "must be 'File' or 'FallbackToLogsOnError'",
                policy,
            )
        )
    errors += _port_errors(container.get("ports"), f"{path}.ports")
    errors += _env_errors(container.get("env"), f"{path}.env")
    errors += _mount_errors(container.get("volumeMounts"), volumes, f"{path}.volumeMounts")
    errors += _enum(f"{path}.imagePullPolicy", container.get("imagePullPolicy"), _PULL_POLICIES)
    errors += _resource_errors(_dict(container.get("resources")), f"{path}.resources", kind)
    restart = container.get("restartPolicy")
    if init:
        if restart not in (None, "", "Always"):
            errors.append(_not_supported(f"{path}.restartPolicy", restart, ("Always",)))
        if restart != "Always":
            for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if container.get(key) is not None:
                    errors.append(
                        FieldError(
                            f"{path}.{key}",
                            _FORBIDDEN,
                            "may not be set for init containers without restartPolicy=Always",
                        )
                    )
            return errors
    elif restart is not None:
        errors.append(
            FieldError(
                f"{path}.restartPolicy", _FORBIDDEN, "may not be set for non-init containers"
            )
        )
    lifecycle = _dict(container.get("lifecycle"))
    for hook in ("postStart", "preStop"):
        handler = lifecycle.get(hook)
        if isinstance(handler, dict):
            errors += _handler_errors(
                handler, f"{path}.lifecycle.{hook}", ("exec", "httpGet", "tcpSocket", "sleep")
            )
    errors += _probe_errors(
        container.get("livenessProbe"), f"{path}.livenessProbe", success_must_be_one=True
    )
    errors += _probe_errors(
        container.get("readinessProbe"), f"{path}.readinessProbe", success_must_be_one=False
    )
    errors += _probe_errors(
        container.get("startupProbe"), f"{path}.startupProbe", success_must_be_one=True
    )
    return errors


def _host_port_errors(containers: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for ci, container in _dicts(containers):
        for pi, port in _dicts(container.get("ports")):
            host_port = _int(port.get("hostPort")) or 0
            if host_port == 0:
                continue
            key = f"{_str(port.get('protocol'))}/{_str(port.get('hostIP'))}/{host_port}"
            if key in seen:
                errors.append(
                    FieldError(f"{path}[{ci}].ports[{pi}].hostPort", _DUPLICATE, _shown(key))
                )
            seen.add(key)
    return errors


def _go_toleration(toleration: dict[str, Any]) -> GoValue:
    seconds = (
        "(*int64)(nil)" if toleration.get("tolerationSeconds") is None else "(*int64)(0xc000000000)"
    )
    fields = ", ".join(
        f'{go}:"{_str(toleration.get(key))}"'
        for go, key in (
            ("Key", "key"),
            ("Operator", "operator"),
            ("Value", "value"),
            ("Effect", "effect"),
        )
    )
    return GoValue(f"core.Toleration{{{fields}, TolerationSeconds:{seconds}}}")


def _toleration_errors(tolerations: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, toleration in _dicts(tolerations):
        where = f"{path}[{index}]"
        key = _str(toleration.get("key"))
        operator = _str(toleration.get("operator"))
        effect = _str(toleration.get("effect"))
        value = _str(toleration.get("value"))
        if key:
            errors += [
                FieldError(f"{where}.key", _INVALID, m, key) for m in qualified_name_errors(key)
            ]
        if not key and operator != "Exists":
            errors.append(
                FieldError(
                    f"{where}.operator",
                    _INVALID,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                    operator,
                )
            )
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errors.append(
                FieldError(
                    f"{where}.effect",
                    _INVALID,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                    effect,
                )
            )
        if operator in ("Equal", ""):
            problems = label_value_errors(value)
            if problems:
                errors.append(FieldError(f"{where}.operator", _INVALID, ";".join(problems), value))
        elif operator == "Exists":
            if value:
                errors.append(
                    FieldError(
                        f"{where}.operator",
                        _INVALID,
                        "value must be empty when `operator` is 'Exists'",
                        _go_toleration(toleration),
                    )
                )
        else:
            errors.append(_not_supported(f"{where}.operator", operator, _OPERATORS))
        if effect and effect not in _EFFECTS:
            errors.append(_not_supported(f"{where}.effect", effect, _EFFECTS))
    return errors


def validate_pod_spec(spec: dict[str, Any], path: str, kind: str) -> list[FieldError]:
    """A PodSpec's errors, in the order kube-apiserver 1.30 finds them
    (``ValidatePodSpec``), each named under ``path``."""
    errors, volumes = _volume_errors(spec.get("volumes"), f"{path}.volumes")
    containers = spec.get("containers")
    if not _list(containers):
        errors.append(FieldError(f"{path}.containers", _REQUIRED, ""))
    names: set[str] = set()
    for index, container in _dicts(containers):
        where = f"{path}.containers[{index}]"
        errors += _container_errors(container, where, volumes, kind, init=False)
        name = _str(container.get("name"))
        if name and name in names:
            errors.append(FieldError(f"{where}.name", _DUPLICATE, _shown(name)))
        names.add(name)
    errors += _host_port_errors(containers, f"{path}.containers")
    for index, container in _dicts(spec.get("initContainers")):
        where = f"{path}.initContainers[{index}]"
        name = _str(container.get("name"))
        if name and name in names:
            errors.append(FieldError(f"{where}.name", _DUPLICATE, _shown(name)))
        names.add(name)
        errors += _container_errors(container, where, volumes, kind, init=True)
    errors += _host_port_errors(spec.get("initContainers"), f"{path}.initContainers")
    errors += _enum(f"{path}.restartPolicy", spec.get("restartPolicy"), _RESTART_POLICIES)
    dns_policy = spec.get("dnsPolicy")
    errors += _enum(f"{path}.dnsPolicy", dns_policy, _DNS_POLICIES)
    node_selector = spec.get("nodeSelector")
    if isinstance(node_selector, dict):
        errors += validate_labels(
            {k: v for k, v in node_selector.items() if isinstance(v, str)}, f"{path}.nodeSelector"
        )
    if dns_policy == "None" and not isinstance(spec.get("dnsConfig"), dict):
        errors.append(
            FieldError(
                f"{path}.dnsConfig", _REQUIRED, "must provide `dnsConfig` when `dnsPolicy` is None"
            )
        )
    for key, rule in (
        ("serviceAccountName", dns1123_subdomain_errors),
        ("nodeName", dns1123_subdomain_errors),
    ):
        value = _str(spec.get(key))
        if value:
            errors += [FieldError(f"{path}.{key}", _INVALID, m, value) for m in rule(value)]
    deadline = _int(spec.get("activeDeadlineSeconds"))
    if deadline is not None and not 1 <= deadline <= 2147483647:
        errors.append(
            FieldError(
                f"{path}.activeDeadlineSeconds",
                _INVALID,
                "must be between 1 and 2147483647, inclusive",
                deadline,
            )
        )
    for key in ("hostname", "subdomain"):
        value = _str(spec.get(key))
        if value:
            errors += [
                FieldError(f"{path}.{key}", _INVALID, m, value) for m in dns1123_label_errors(value)
            ]
    errors += _toleration_errors(spec.get("tolerations"), f"{path}.tolerations")
    priority_class = _str(spec.get("priorityClassName"))
    if priority_class:
        errors += [
            FieldError(f"{path}.priorityClassName", _INVALID, m, priority_class)
            for m in dns1123_subdomain_errors(priority_class)
        ]
    errors += pod_scheduling_errors(spec, path, is_pod=path == "spec")
    return errors


def _at(body: Any, keys: tuple[str, ...]) -> dict[str, Any] | None:
    for key in keys:
        if not isinstance(body, dict):
            return None
        body = body.get(key)
    return body if isinstance(body, dict) else None


def pod_spec_errors(group: str, resource: str, body: Any) -> list[FieldError]:
    """The PodSpec errors of a Pod or a pod template's object, as a create (and any
    write of a pod template) meets them; empty for other kinds."""
    if group == "" and resource == "pods":
        spec = _at(body, ("spec",))
        if spec is None:
            return []
        errors = validate_pod_spec(spec, "spec", "Pod")
        if _list(spec.get("ephemeralContainers")):
            errors.append(
                FieldError("spec.ephemeralContainers", _FORBIDDEN, "cannot be set on create")
            )
        return errors
    rule = _TEMPLATES.get((group, resource))
    if rule is None:
        return []
    where, _, full = rule
    template = _at(body, where)
    if template is None:
        return []
    spec = _at(template, ("spec",))
    if spec is None:
        return []
    path = ".".join((*where, "spec"))
    kind = "PodTemplate" if resource == "podtemplates" else "Pod"
    # (a workload's rules for its template's restartPolicy and activeDeadlineSeconds are
    # its own kind's validation: _workload_validation)
    return validate_pod_spec(spec, path, kind) if full else []


def _semantic(value: Any) -> Any:
    """A value as Go's semantic equality sees it: an absent, null, empty or zero-valued
    field is the same as another (a decoded struct keeps no difference). Quantities
    are compared as written: the defaults have put them in canonical form."""
    if isinstance(value, dict):
        kept = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", False, [], {})}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _toleration_update_errors(new: Any, old: Any, path: str) -> list[FieldError]:
    """Existing tolerations stay; only their ``tolerationSeconds`` may change."""

    def without_seconds(toleration: dict[str, Any]) -> Any:
        return _semantic({k: v for k, v in toleration.items() if k != "tolerationSeconds"})

    remaining = [without_seconds(t) for _, t in _dicts(new)]
    for _, toleration in _dicts(old):
        want = without_seconds(toleration)
        if want not in remaining:
            return [
                FieldError(
                    path,
                    _FORBIDDEN,
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            ]
        remaining.remove(want)
    return []


def _go_field(name: str) -> str:
    special = {"dnsPolicy": "DNSPolicy", "hostIPC": "HostIPC", "hostPID": "HostPID"}
    return special.get(name, name[:1].upper() + name[1:])


def spec_diff(old: dict[str, Any], new: dict[str, Any], kind: str = "PodSpec") -> str:
    """A short diff of the ``kind`` fields an update changed, in the shape of the one a
    real server appends (``- old``, ``+ new``; the values as JSON, not as Go prints them)."""
    lines = [f"  core.{kind}{{"]
    for key in sorted(old.keys() | new.keys()):
        if old.get(key) == new.get(key):
            continue
        if key in old:
            lines.append(f"- \t{_go_field(key)}: {json.dumps(old[key], sort_keys=True)},")
        if key in new:
            lines.append(f"+ \t{_go_field(key)}: {json.dumps(new[key], sort_keys=True)},")
    lines.append("  }")
    return "\n".join(lines) + "\n"


def pod_spec_update_errors(
    group: str, resource: str, body: Any, old: Any, subresource: str | None = None
) -> list[FieldError]:
    """An update's PodSpec errors: the new object's (as :func:`pod_spec_errors`) and, for
    a Pod, the 1.30 rule that only its images, ``activeDeadlineSeconds`` (lowered),
    tolerations (added) and a negative ``terminationGracePeriodSeconds`` (set to 1)
    may change. A subresource's write (``/status``...) is not checked here."""
    if subresource is not None:
        return []
    if not (group == "" and resource == "pods"):
        return pod_spec_errors(group, resource, body)
    new_spec = _at(body, ("spec",))
    old_spec = _at(old, ("spec",))
    if new_spec is None or old_spec is None:
        return []
    errors = validate_pod_spec(new_spec, "spec", "Pod")
    new_deadline = new_spec.get("activeDeadlineSeconds")
    old_deadline = old_spec.get("activeDeadlineSeconds")
    if isinstance(old_deadline, int):
        if new_deadline is None:
            errors.append(
                FieldError(
                    "spec.activeDeadlineSeconds",
                    _INVALID,
                    "must not update from a positive integer to nil value",
                    "null",
                )
            )
        elif isinstance(new_deadline, int) and new_deadline > old_deadline:
            errors.append(
                FieldError(
                    "spec.activeDeadlineSeconds",
                    _INVALID,
                    "must be less than or equal to previous value",
                    new_deadline,
                )
            )
    for key in ("containers", "initContainers"):
        if len(_list(new_spec.get(key))) != len(_list(old_spec.get(key))):
            errors.append(
                FieldError(
                    f"spec.{key}", _FORBIDDEN, "pod updates may not add or remove containers"
                )
            )
            return errors
    munged = json.loads(json.dumps(new_spec))
    for key in ("containers", "initContainers"):
        for (_, mine), (_, theirs) in zip(
            _dicts(munged.get(key)), _dicts(old_spec.get(key)), strict=False
        ):
            if "image" in theirs:
                mine["image"] = theirs["image"]
            else:
                mine.pop("image", None)
    errors += scheduling_gate_update_errors(new_spec, old_spec, "spec.schedulingGates")
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        if key in old_spec:
            munged[key] = old_spec[key]
        else:
            munged.pop(key, None)
    old_grace = _int(old_spec.get("terminationGracePeriodSeconds"))
    if old_grace is not None and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    errors += _toleration_update_errors(
        new_spec.get("tolerations"), old_spec.get("tolerations"), "spec.tolerations"
    )
    if _semantic(munged) != _semantic(old_spec):
        errors.append(
            FieldError(
                "spec",
                _FORBIDDEN,
                f"{POD_UPDATE_FORBIDDEN}\n{spec_diff(_semantic(old_spec), _semantic(munged))}",
            )
        )
    return errors
