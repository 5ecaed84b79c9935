"""The PodSpec rules about where and how a Pod runs, as kube-apiserver 1.30 applies them to
Pods and pod templates: security contexts (the Pod's and each container's), affinity,
topology spread constraints, host aliases, DNS config, readiness and scheduling gates
and a few scheduling fields. :mod:`._podspec_validation` calls :func:`pod_scheduling_errors` for
every PodSpec it validates; the rules it holds itself (containers, volumes, tolerations,
``nodeSelector``, ``dnsPolicy``, ``activeDeadlineSeconds``...) are not repeated here.

Where 1.30 differs from older servers this follows 1.30: ``sysctls`` names may use
``/`` as a separator; a host-network Pod's ``hostPort`` must equal its ``containerPort``
(a template's may be left unset); up to 32 DNS search paths of 2048 characters; pod
affinity selectors are checked under ``labelSelector``; ``minDomains``,
``nodeAffinityPolicy``, ``nodeTaintsPolicy``, ``matchLabelKeys`` and a spread
constraint's ``labelSelector`` are checked. Not checked: ``privileged`` (serve runs as a
cluster started with ``--allow-privileged=true`` would), ``procMount`` and ``hostUsers``
(behind feature gates that are off in 1.30, which drop the fields), the Windows-only
rules of ``os: windows`` Pods, and most of ``windowsOptions``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from ._core_validation import _NOT_AN_IP, _dict, _dns_label, _dns_subdomain, _list, _parse_ip
from ._selectors import label_selector_errors
from ._validation import (
    FieldError,
    GoValue,
    _shown,
    go_strings,
    qualified_name_errors,
    supported_values,
)

__all__ = ["node_selector_errors", "pod_scheduling_errors", "scheduling_gate_update_errors"]

_INVALID: Final = "FieldValueInvalid"
_REQUIRED: Final = "FieldValueRequired"
_FORBIDDEN: Final = "FieldValueForbidden"
_NOT_SUPPORTED: Final = "FieldValueNotSupported"
_DUPLICATE: Final = "FieldValueDuplicate"

_ID_RANGE: Final = "must be between 0 and 2147483647, inclusive"
_NOT_POSITIVE: Final = "must be greater than zero"
_WEIGHT_RANGE: Final = "must be in the range 1-100"
_SECCOMP_TYPES: Final = ("Localhost", "RuntimeDefault", "Unconfined")
_APPARMOR_TYPES: Final = ("Localhost", "RuntimeDefault", "Unconfined")
_FS_GROUP_POLICIES: Final = ("Always", "OnRootMismatch")
_SPREAD_ACTIONS: Final = ("DoNotSchedule", "ScheduleAnyway")
_INCLUSION_POLICIES: Final = ("Honor", "Ignore")
_PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")
#: A sysctl name: segments of ``[a-z0-9]([-_a-z0-9]*[a-z0-9])?`` joined by ``.`` or ``/``.
_SYSCTL_RULE: Final = (
    "must have at most 253 characters and match regex "
    "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"
)
_MAX_NAMESERVERS: Final = 3
_MAX_SEARCHES: Final = 32
_MAX_SEARCH_CHARS: Final = 2048
#: Go's fake address for a set pointer in a struct printed with ``%#v``.
_ADDRESS: Final = "0xc000000000"


def _dicts(value: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    for index, item in enumerate(_list(value)):
        yield index, _dict(item)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _not_supported(field: str, value: Any, allowed: tuple[str, ...]) -> FieldError:
    return FieldError(field, _NOT_SUPPORTED, supported_values(allowed), value)


def _pointer(type_name: str, value: Any) -> str:
    return f"(*{type_name})({'nil' if value is None else _ADDRESS})"


# -- security contexts ---------------------------------------------------------------


def _id_errors(context: dict[str, Any], keys: tuple[str, ...], path: str) -> list[FieldError]:
    errors = []
    for key in keys:
        value = _int(context.get(key))
        if value is not None and not 0 <= value <= 2147483647:
            errors.append(FieldError(f"{path}.{key}", _INVALID, _ID_RANGE, value))
    return errors


def _descending_path_errors(target: str, field: str) -> list[FieldError]:
    """A path that must stay below its base: relative, no ``..`` (both may be wrong)."""
    errors = []
    if target.startswith("/"):
        errors.append(FieldError(field, _INVALID, "must be a relative path", target))
    if ".." in target.replace("\\", "/").split("/"):
        errors.append(FieldError(field, _INVALID, "must not contain '..'", target))
    return errors


def _seccomp_errors(profile: Any, path: str) -> list[FieldError]:
    if not isinstance(profile, dict):
        return []
    kind = _str(profile.get("type"))
    errors = []
    if not kind:
        errors.append(
            FieldError(f"{path}.type", _REQUIRED, "type is required when seccompProfile is set")
        )
    elif kind not in _SECCOMP_TYPES:
        errors.append(_not_supported(f"{path}.type", kind, _SECCOMP_TYPES))
    local = profile.get("localhostProfile")
    if kind == "Localhost":
        if local is None:
            errors.append(
                FieldError(
                    f"{path}.localhostProfile",
                    _REQUIRED,
                    "must be set when seccomp type is Localhost",
                )
            )
        else:
            errors += _descending_path_errors(_str(local), f"{path}.localhostProfile")
    elif local is not None:
        shown = GoValue(
            f'core.SeccompProfile{{Type:"{kind}", LocalhostProfile:{_pointer("string", local)}}}'
        )
        errors.append(
            FieldError(
                f"{path}.localhostProfile",
                _INVALID,
                "can only be set when seccomp type is Localhost",
                shown,
            )
        )
    return errors


def _apparmor_errors(profile: Any, path: str) -> list[FieldError]:
    if not isinstance(profile, dict):
        return []
    kind = _str(profile.get("type"))
    local = profile.get("localhostProfile")
    where = f"{path}.localhostProfile"
    if kind == "Localhost":
        missing = "must be set when AppArmor type is Localhost"
        if local is None:
            return [FieldError(where, _REQUIRED, missing)]
        text = _str(local)
        if text.strip() != text:
            return [FieldError(where, _INVALID, "must not be padded with whitespace", text)]
        return [FieldError(where, _REQUIRED, missing)] if not text else []
    if kind in _APPARMOR_TYPES:
        if local is not None:
            why = "can only be set when AppArmor type is Localhost"
            return [FieldError(where, _INVALID, why, local)]
        return []
    if not kind:
        why = "type is required when appArmorProfile is set"
        return [FieldError(f"{path}.type", _REQUIRED, why)]
    return [_not_supported(f"{path}.type", kind, _APPARMOR_TYPES)]


def _windows_errors(options: Any, path: str) -> list[FieldError]:
    """The commonest of the ``windowsOptions`` rules (names, empty strings)."""
    if not isinstance(options, dict):
        return []
    errors = []
    spec_name = options.get("gmsaCredentialSpecName")
    if isinstance(spec_name, str):
        errors += _dns_subdomain(spec_name, f"{path}.gmsaCredentialSpecName")
    if options.get("gmsaCredentialSpec") == "":
        errors.append(
            FieldError(
                f"{path}.gmsaCredentialSpec",
                _INVALID,
                "gmsaCredentialSpec cannot be an empty string",
                "",
            )
        )
    user = options.get("runAsUserName")
    if isinstance(user, str):
        where = f"{path}.runAsUserName"
        if not user:
            errors.append(
                FieldError(where, _INVALID, "runAsUserName cannot be an empty string", user)
            )
        elif user.count("\\") > 1:
            why = "runAsUserName cannot contain more than one backslash"
            errors.append(FieldError(where, _INVALID, why, user))
    return errors


def _sysctl_namespace(name: str) -> str | None:
    """Which namespace a sysctl belongs to (``net`` or ``ipc``), or None."""
    if "/" in name:  # (a name with slashes reads with '/' as the separator)
        name = name.replace(".", "\0").replace("/", ".").replace("\0", "/")
    if name.startswith("net."):
        return "net"
    if name.startswith(("kernel.shm", "kernel.msg", "fs.mqueue.")) or name == "kernel.sem":
        return "ipc"
    return None


def _sysctl_errors(spec: dict[str, Any], sysctls: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, sysctl in _dicts(sysctls):
        name = _str(sysctl.get("name"))
        where = f"{path}[{index}].name"
        if not name:
            errors.append(FieldError(where, _REQUIRED, ""))
        elif len(name) > 253 or not _is_sysctl_name(name):
            errors.append(FieldError(where, _INVALID, _SYSCTL_RULE, name))
        elif name in seen:
            errors.append(FieldError(where, _DUPLICATE, _shown(name)))
        namespace = _sysctl_namespace(name)
        if spec.get("hostNetwork") is True and namespace == "net":
            why = "may not be specified when 'hostNetwork' is true"
            errors.append(FieldError(where, _INVALID, why, name))
        elif spec.get("hostIPC") is True and namespace == "ipc":
            why = "may not be specified when 'hostIPC' is true"
            errors.append(FieldError(where, _INVALID, why, name))
        seen.add(name)
    return errors


def _is_sysctl_name(name: str) -> bool:
    segments = name.replace("/", ".").split(".")
    return all(_is_sysctl_segment(s) for s in segments)


def _is_sysctl_segment(segment: str) -> bool:
    if not segment or not (segment[0].isalnum() and segment[-1].isalnum()):
        return False
    return all(c in "abcdefghijklmnopqrstuvwxyz0123456789-_" for c in segment)


def _pod_security_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    context = _dict(spec.get("securityContext"))
    where = f"{path}.securityContext"
    errors = _id_errors(context, ("fsGroup", "runAsUser", "runAsGroup"), where)
    for index, group in enumerate(_list(context.get("supplementalGroups"))):
        number = _int(group)
        if number is not None and not 0 <= number <= 2147483647:
            errors.append(
                FieldError(f"{where}.supplementalGroups[{index}]", _INVALID, _ID_RANGE, number)
            )
    if spec.get("shareProcessNamespace") is True and spec.get("hostPID") is True:
        errors.append(
            FieldError(
                f"{where}.shareProcessNamespace",
                _INVALID,
                "ShareProcessNamespace and HostPID cannot both be enabled",
                True,
            )
        )
    errors += _sysctl_errors(spec, context.get("sysctls"), f"{where}.sysctls")
    policy = context.get("fsGroupChangePolicy")
    if isinstance(policy, str) and policy not in _FS_GROUP_POLICIES:
        errors.append(_not_supported(f"{where}.fsGroupChangePolicy", policy, _FS_GROUP_POLICIES))
    errors += _seccomp_errors(context.get("seccompProfile"), f"{where}.seccompProfile")
    errors += _windows_errors(context.get("windowsOptions"), f"{where}.windowsOptions")
    errors += _apparmor_errors(context.get("appArmorProfile"), f"{where}.appArmorProfile")
    return errors


def _go_security_context(context: dict[str, Any]) -> GoValue:
    """A container's ``core.SecurityContext`` as Go's ``%#v`` prints it (1.30's fields;
    ``procMount`` is dropped while its feature gate is off)."""
    fields = (
        ("Capabilities", "capabilities", "core.Capabilities"),
        ("Privileged", "privileged", "bool"),
        ("SELinuxOptions", "seLinuxOptions", "core.SELinuxOptions"),
        ("WindowsOptions", "windowsOptions", "core.WindowsSecurityContextOptions"),
        ("RunAsUser", "runAsUser", "int64"),
        ("RunAsGroup", "runAsGroup", "int64"),
        ("RunAsNonRoot", "runAsNonRoot", "bool"),
        ("ReadOnlyRootFilesystem", "readOnlyRootFilesystem", "bool"),
        ("AllowPrivilegeEscalation", "allowPrivilegeEscalation", "bool"),
        ("ProcMount", None, "core.ProcMountType"),
        ("SeccompProfile", "seccompProfile", "core.SeccompProfile"),
        ("AppArmorProfile", "appArmorProfile", "core.AppArmorProfile"),
    )
    shown = ", ".join(
        f"{go}:{_pointer(type_name, context.get(key) if key else None)}"
        for go, key, type_name in fields
    )
    return GoValue(f"core.SecurityContext{{{shown}}}")


def _container_security_errors(context: Any, path: str) -> list[FieldError]:
    if not isinstance(context, dict):
        return []
    errors = _id_errors(context, ("runAsUser", "runAsGroup"), path)
    errors += _seccomp_errors(context.get("seccompProfile"), f"{path}.seccompProfile")
    if context.get("allowPrivilegeEscalation") is False:
        if context.get("privileged") is True:
            why = "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
            errors.append(FieldError(path, _INVALID, why, _go_security_context(context)))
        for capability in _list(_dict(context.get("capabilities")).get("add")):
            if capability == "CAP_SYS_ADMIN":
                why = (
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                    "CAP_SYS_ADMIN"
                )
                errors.append(FieldError(path, _INVALID, why, _go_security_context(context)))
    errors += _windows_errors(context.get("windowsOptions"), f"{path}.windowsOptions")
    errors += _apparmor_errors(context.get("appArmorProfile"), f"{path}.appArmorProfile")
    return errors


def _host_network_errors(spec: dict[str, Any], path: str, *, is_pod: bool) -> list[FieldError]:
    """A host-network Pod's ports listen on the host: each ``hostPort`` is its
    ``containerPort`` (a template's may be unset: its Pods' defaults fill it in)."""
    if spec.get("hostNetwork") is not True:
        return []
    errors = []
    for ci, container in _dicts(spec.get("containers")):
        for pi, port in _dicts(container.get("ports")):
            host = _int(port.get("hostPort")) or 0
            if (is_pod or host) and host != (_int(port.get("containerPort")) or 0):
                errors.append(
                    FieldError(
                        f"{path}.containers[{ci}].ports[{pi}].hostPort",
                        _INVALID,
                        "must match `containerPort` when `hostNetwork` is true",
                        host,
                    )
                )
    return errors


# -- affinity ------------------------------------------------------------------------


def _node_requirement_errors(requirement: dict[str, Any], path: str) -> list[FieldError]:
    operator = _str(requirement.get("operator"))
    values = _list(requirement.get("values"))
    errors = []
    if operator in ("In", "NotIn"):
        if not values:
            why = "must be specified when `operator` is 'In' or 'NotIn'"
            errors.append(FieldError(f"{path}.values", _REQUIRED, why))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            why = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            errors.append(FieldError(f"{path}.values", _FORBIDDEN, why))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            why = "must be specified single value when `operator` is 'Lt' or 'Gt'"
            errors.append(FieldError(f"{path}.values", _REQUIRED, why))
    else:
        errors.append(
            FieldError(f"{path}.operator", _INVALID, "not a valid selector operator", operator)
        )
    key = _str(requirement.get("key"))
    errors += [FieldError(f"{path}.key", _INVALID, m, key) for m in qualified_name_errors(key)]
    return errors


def _node_field_requirement_errors(requirement: dict[str, Any], path: str) -> list[FieldError]:
    operator = _str(requirement.get("operator"))
    values = _list(requirement.get("values"))
    errors = []
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            why = (
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            )
            errors.append(FieldError(f"{path}.values", _REQUIRED, why))
    else:
        errors.append(
            FieldError(f"{path}.operator", _INVALID, "not a valid selector operator", operator)
        )
    key = _str(requirement.get("key"))
    if key != "metadata.name":
        errors.append(FieldError(f"{path}.key", _INVALID, "not a valid field selector key", key))
    else:
        for index, value in enumerate(values):
            errors += _dns_subdomain(_str(value), f"{path}.values[{index}]")
    return errors


def _node_term_errors(term: dict[str, Any], path: str) -> list[FieldError]:
    errors = []
    for index, requirement in _dicts(term.get("matchExpressions")):
        errors += _node_requirement_errors(requirement, f"{path}.matchExpressions[{index}]")
    for index, requirement in _dicts(term.get("matchFields")):
        errors += _node_field_requirement_errors(requirement, f"{path}.matchFields[{index}]")
    return errors


def node_selector_errors(selector: dict[str, Any], path: str) -> list[FieldError]:
    """A NodeSelector's problems (a Pod's required node affinity, a PersistentVolume's
    node affinity): at least one term; each term's expressions (operators and their
    values, keys label names) and fields (``metadata.name``, one node name)."""
    where = f"{path}.nodeSelectorTerms"
    terms = _list(selector.get("nodeSelectorTerms"))
    errors = (
        [] if terms else [FieldError(where, _REQUIRED, "must have at least one node selector term")]
    )
    for index, term in _dicts(terms):
        errors += _node_term_errors(term, f"{where}[{index}]")
    return errors


def _weight_errors(weight: Any, path: str) -> list[FieldError]:
    number = _int(weight) or 0
    return [] if 1 <= number <= 100 else [FieldError(path, _INVALID, _WEIGHT_RANGE, number)]


def _node_affinity_errors(affinity: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required, dict):
        errors += node_selector_errors(
            required, f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
        )
    where = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for index, preferred in _dicts(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
        errors += _weight_errors(preferred.get("weight"), f"{where}[{index}].weight")
        errors += _node_term_errors(
            _dict(preferred.get("preference")), f"{where}[{index}].preference"
        )
    return errors


def _pod_term_errors(term: dict[str, Any], path: str) -> list[FieldError]:
    errors = label_selector_errors(term.get("labelSelector"), f"{path}.labelSelector")
    errors += label_selector_errors(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for name in _list(term.get("namespaces")):
        errors += _dns_label(_str(name), f"{path}.namespace")
    key = _str(term.get("topologyKey"))
    if not key:
        errors.append(FieldError(f"{path}.topologyKey", _REQUIRED, "can not be empty"))
    errors += [
        FieldError(f"{path}.topologyKey", _INVALID, m, key) for m in qualified_name_errors(key)
    ]
    return errors


def _pod_affinity_errors(affinity: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    where = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for index, term in _dicts(affinity.get("requiredDuringSchedulingIgnoredDuringExecution")):
        errors += _pod_term_errors(term, f"{where}[{index}]")
    where = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for index, weighted in _dicts(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
        errors += _weight_errors(weighted.get("weight"), f"{where}[{index}].weight")
        errors += _pod_term_errors(
            _dict(weighted.get("podAffinityTerm")), f"{where}[{index}].podAffinityTerm"
        )
    return errors


def _affinity_errors(affinity: Any, path: str) -> list[FieldError]:
    if not isinstance(affinity, dict):
        return []
    errors: list[FieldError] = []
    if isinstance(affinity.get("nodeAffinity"), dict):
        errors += _node_affinity_errors(affinity["nodeAffinity"], f"{path}.nodeAffinity")
    for key in ("podAffinity", "podAntiAffinity"):
        if isinstance(affinity.get(key), dict):
            errors += _pod_affinity_errors(affinity[key], f"{path}.{key}")
    return errors


# -- topology spread constraints -----------------------------------------------------


def _selector_keys(selector: dict[str, Any]) -> set[str]:
    keys = set(_dict(selector.get("matchLabels")))
    keys.update(_str(e.get("key")) for _, e in _dicts(selector.get("matchExpressions")))
    return keys


def _spread_errors(constraints: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    items = [c for _, c in _dicts(constraints)]
    for index, constraint in enumerate(items):
        where = f"{path}[{index}]"
        skew = _int(constraint.get("maxSkew")) or 0
        if skew <= 0:
            errors.append(FieldError(f"{where}.maxSkew", _INVALID, _NOT_POSITIVE, skew))
        key = _str(constraint.get("topologyKey"))
        if not key:
            errors.append(FieldError(f"{where}.topologyKey", _REQUIRED, "can not be empty"))
        action = _str(constraint.get("whenUnsatisfiable"))
        if action not in _SPREAD_ACTIONS:
            errors.append(_not_supported(f"{where}.whenUnsatisfiable", action, _SPREAD_ACTIONS))
        for later in items[index + 1 :]:
            if (_str(later.get("topologyKey")), _str(later.get("whenUnsatisfiable"))) == (
                key,
                action,
            ):
                errors.append(
                    FieldError(
                        f"{where}.{{topologyKey, whenUnsatisfiable}}",
                        _DUPLICATE,
                        _shown(f"{{{key}, {action}}}"),
                    )
                )
                break
        domains = _int(constraint.get("minDomains"))
        if domains is not None:
            if domains <= 0:
                errors.append(FieldError(f"{where}.minDomains", _INVALID, _NOT_POSITIVE, domains))
            if action != "DoNotSchedule":
                why = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                errors.append(FieldError(f"{where}.minDomains", _INVALID, why, domains))
        for policy_key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(policy_key)
            if isinstance(policy, str) and policy not in _INCLUSION_POLICIES:
                errors.append(_not_supported(f"{where}.{policy_key}", policy, _INCLUSION_POLICIES))
        selector = constraint.get("labelSelector")
        errors += _match_label_keys_errors(
            _list(constraint.get("matchLabelKeys")), selector, f"{where}.matchLabelKeys"
        )
        errors += label_selector_errors(selector, f"{where}.labelSelector")
    return errors


def _match_label_keys_errors(keys: list[Any], selector: Any, path: str) -> list[FieldError]:
    if not keys:
        return []
    errors: list[FieldError] = []
    if isinstance(selector, dict):
        taken = _selector_keys(selector)
    else:
        taken = set()
        why = "must not be specified when labelSelector is not set"
        errors.append(FieldError(path, _FORBIDDEN, why))
    for index, key in enumerate(keys):
        text = _str(key)
        where = f"{path}[{index}]"
        errors += [FieldError(where, _INVALID, m, text) for m in qualified_name_errors(text)]
        if text in taken:
            why = "exists in both matchLabelKeys and labelSelector"
            errors.append(FieldError(where, _INVALID, why, text))
    return errors


# -- DNS, host aliases and the rest --------------------------------------------------


def _dns_config_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    """``dnsConfig``'s own rules (a missing one under ``dnsPolicy: None`` is the caller's)."""
    config = spec.get("dnsConfig")
    if not isinstance(config, dict):
        return []
    nameservers = _list(config.get("nameservers"))
    if spec.get("dnsPolicy") == "None" and not nameservers:
        why = "must provide at least one DNS nameserver when `dnsPolicy` is None"
        return [FieldError(f"{path}.nameservers", _REQUIRED, why)]
    errors: list[FieldError] = []
    if len(nameservers) > _MAX_NAMESERVERS:
        why = f"must not have more than {_MAX_NAMESERVERS} nameservers"
        errors.append(FieldError(f"{path}.nameservers", _INVALID, why, go_strings(nameservers)))
    for index, nameserver in enumerate(nameservers):
        if _parse_ip(nameserver) is None:
            errors.append(
                FieldError(f"{path}.nameservers[{index}]", _INVALID, _NOT_AN_IP, nameserver)
            )
    searches = [_str(s) for s in _list(config.get("searches"))]
    if len(searches) > _MAX_SEARCHES:
        why = f"must not have more than {_MAX_SEARCHES} search paths"
        errors.append(FieldError(f"{path}.searches", _INVALID, why, go_strings(searches)))
    if len(" ".join(searches)) > _MAX_SEARCH_CHARS:
        why = (
            f"must not have more than {_MAX_SEARCH_CHARS} characters (including spaces) in the "
            "search list"
        )
        errors.append(FieldError(f"{path}.searches", _INVALID, why, go_strings(searches)))
    for index, search in enumerate(searches):
        errors += _dns_subdomain(search.removesuffix("."), f"{path}.searches[{index}]")
    for index, option in _dicts(config.get("options")):
        if not _str(option.get("name")):
            errors.append(FieldError(f"{path}.options[{index}]", _REQUIRED, "must not be empty"))
    return errors


def _host_alias_errors(aliases: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, alias in _dicts(aliases):
        where = f"{path}[{index}]"
        address = _str(alias.get("ip"))
        if _parse_ip(address) is None:
            errors.append(FieldError(f"{where}.ip", _INVALID, _NOT_AN_IP, address))
        for position, hostname in enumerate(_list(alias.get("hostnames"))):
            errors += _dns_subdomain(_str(hostname), f"{where}.hostnames[{position}]")
    return errors


def _scalar_errors(spec: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, gate in _dicts(spec.get("readinessGates")):
        condition = _str(gate.get("conditionType"))
        errors += [
            FieldError(f"{path}.readinessGates[{index}].conditionType", _INVALID, m, condition)
            for m in qualified_name_errors(condition)
        ]
    seen: set[str] = set()
    for index, gate in _dicts(spec.get("schedulingGates")):
        name = _str(gate.get("name"))
        where = f"{path}.schedulingGates[{index}]"
        errors += [FieldError(where, _INVALID, m, name) for m in qualified_name_errors(name)]
        if name in seen:
            errors.append(FieldError(where, _DUPLICATE, _shown(name)))
        seen.add(name)
    runtime_class = spec.get("runtimeClassName")
    if isinstance(runtime_class, str):
        errors += _dns_subdomain(runtime_class, f"{path}.runtimeClassName")
    policy = spec.get("preemptionPolicy")
    if policy == "":
        errors.append(FieldError(f"{path}.preemptionPolicy", _REQUIRED, ""))
    elif isinstance(policy, str) and policy not in _PREEMPTION_POLICIES:
        errors.append(_not_supported(f"{path}.preemptionPolicy", policy, _PREEMPTION_POLICIES))
    return errors


def pod_scheduling_errors(spec: dict[str, Any], path: str, *, is_pod: bool) -> list[FieldError]:
    """A PodSpec's security-context, affinity, spread, DNS, host-alias and scheduling-field
    errors, each named under ``path`` (``spec`` or ``spec.template.spec``...). ``is_pod``:
    the spec is a Pod's, not a template's."""
    errors: list[FieldError] = []
    for key in ("containers", "initContainers"):
        for index, container in _dicts(spec.get(key)):
            errors += _container_security_errors(
                container.get("securityContext"), f"{path}.{key}[{index}].securityContext"
            )
    errors += _host_network_errors(spec, path, is_pod=is_pod)
    errors += _pod_security_errors(spec, path)
    errors += _affinity_errors(spec.get("affinity"), f"{path}.affinity")
    errors += _dns_config_errors(spec, f"{path}.dnsConfig")
    errors += _spread_errors(
        spec.get("topologySpreadConstraints"), f"{path}.topologySpreadConstraints"
    )
    errors += _host_alias_errors(spec.get("hostAliases"), f"{path}.hostAliases")
    errors += _scalar_errors(spec, path)
    return errors


def scheduling_gate_update_errors(
    new_spec: dict[str, Any], old_spec: dict[str, Any], path: str
) -> list[FieldError]:
    """A Pod's update may remove scheduling gates (what lets it be scheduled), not add any
    (1.30's validateOnlyDeletedSchedulingGates); the caller then compares the rest of the
    spec as if the gates had not changed."""
    old_names = {_str(g.get("name")) for _, g in _dicts(old_spec.get("schedulingGates"))}
    errors = []
    for index, gate in _dicts(new_spec.get("schedulingGates")):
        name = _str(gate.get("name"))
        if name not in old_names:
            why = f"only deletion is allowed, but found new scheduling gate '{name}'"
            errors.append(FieldError(f"{path}[{index}].name", _FORBIDDEN, why))
    return errors
