"""The spec rules kube-apiserver 1.30 checks on Services, ConfigMaps, Secrets and Endpoints.

Run on the defaulted object, before the Service registry allocates addresses
and node ports (which refuses taken or out-of-range ones itself, see
:mod:`._service_ips`). Worded as a real server words them, field paths and all;
where a value is printed as Go's ``%#v`` prints an internal struct, so is it here.

Left to the registry (a 1.30 server allocates before it validates, so these
refusals come from the allocator): a node port outside the range or taken, two
ports asking for one node port, a cluster IP taken or outside the range.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._validation import (
    FieldError,
    GoValue,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    namespace_finalizer_errors,
    port_name_errors,
    qualified_name_errors,
    validate_labels,
)

__all__ = ["core_spec_errors", "core_spec_update_errors"]

_IMMUTABLE_SET: Final = "field is immutable when `immutable` is set"
#: The most bytes a ConfigMap's or a Secret's data may hold (``core.MaxSecretSize``).
_MAX_DATA: Final = 1024 * 1024
_PORT_RANGE: Final = "must be between 1 and 65535, inclusive"
_NOT_AN_IP: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_NOT_CIDRS: Final = "must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 "
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_SERVICE_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_AFFINITIES: Final = ("ClientIP", "None")
_FAMILIES: Final = ("IPv4", "IPv6")
_FAMILY_POLICIES: Final = ("PreferDualStack", "RequireDualStack", "SingleStack")
_TRAFFIC_POLICIES: Final = ("Cluster", "Local")
_MAX_AFFINITY_SECONDS: Final = 86400

_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_IPV4_SLOPPY = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})")

_CONFIG_KEY_RULE: Final = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)


def _go_strings(values: list[Any]) -> GoValue:
    """A ``[]string`` as ``%#v`` prints it."""
    return GoValue("[]string{" + ", ".join(json.dumps(v) for v in values) + "}")


def _supported(values: tuple[str, ...]) -> str:
    return "supported values: " + ", ".join(f'"{v}"' for v in values)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dict(value: Any) -> JSONDict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# -- the apimachinery checks these rules quote --------------------------------------


def _dns_label(value: str, where: str) -> list[FieldError]:
    return [
        FieldError(where, "FieldValueInvalid", why, value) for why in dns1123_label_errors(value)
    ]


def _dns_subdomain(value: str, where: str) -> list[FieldError]:
    return [
        FieldError(where, "FieldValueInvalid", why, value)
        for why in dns1123_subdomain_errors(value)
    ]


def _config_key(key: str) -> list[str]:
    errors = []
    if len(key) > 253:
        errors.append("must be no more than 253 characters")
    if not _CONFIG_KEY.fullmatch(key):
        errors.append(_CONFIG_KEY_RULE)
    if key == ".":
        errors.append("must not be '.'")
    elif key == "..":
        errors.append("must not be '..'")
    elif key.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def _parse_ip(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address as Go's sloppy parser reads it (IPv4 parts may have leading zeros; no
    IPv6 zone); IPv4-mapped IPv6 addresses as their IPv4 address."""
    if not isinstance(text, str) or "%" in text:
        return None
    match = _IPV4_SLOPPY.fullmatch(text)
    if match:
        parts = [int(p) for p in match.groups()]
        if any(p > 255 for p in parts):
            return None
        return ipaddress.IPv4Address(".".join(map(str, parts)))
    if ":" not in text:
        return None
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        return None
    return address.ipv4_mapped or address


def _non_special_ip(text: str, where: str) -> list[FieldError]:
    address = _parse_ip(text)
    if address is None:
        return [FieldError(where, "FieldValueInvalid", "must be a valid IP address", text)]
    errors = []
    if address.is_unspecified:
        errors.append(
            FieldError(where, "FieldValueInvalid", "may not be unspecified (0.0.0.0)", text)
        )
    if address.is_loopback:
        why = "may not be in the loopback range (127.0.0.0/8)"
        errors.append(FieldError(where, "FieldValueInvalid", why, text))
    if address.is_link_local:
        why = "may not be in the link-local range (169.254.0.0/16)"
        errors.append(FieldError(where, "FieldValueInvalid", why, text))
    packed = address.packed
    multicast_link_local = (
        packed[:3] == b"\xe0\x00\x00"
        if address.version == 4
        else packed[0] == 0xFF and packed[1] & 0x0F == 0x02
    )
    if multicast_link_local:
        why = "may not be in the link-local multicast range (224.0.0.0/24)"
        errors.append(FieldError(where, "FieldValueInvalid", why, text))
    return errors


def _valid_cidr(text: Any) -> bool:
    if not isinstance(text, str) or "/" not in text:
        return False
    address, _, bits = text.partition("/")
    if _parse_ip(address) is None or not bits.isdigit():
        return False
    return int(bits) <= (32 if _IPV4_SLOPPY.fullmatch(address) else 128)


def _port_number(value: Any, where: str) -> list[FieldError]:
    if _is_int(value) and 1 <= value <= 65535:
        return []
    return [FieldError(where, "FieldValueInvalid", _PORT_RANGE, value if value is not None else 0)]


def _protocol(value: Any, where: str) -> list[FieldError]:
    if value in (None, ""):
        return [FieldError(where, "FieldValueRequired", "")]
    if value not in _PROTOCOLS:
        return [FieldError(where, "FieldValueNotSupported", _supported(_PROTOCOLS), value)]
    return []


def _qualified_name(value: Any, where: str) -> list[FieldError]:
    if not isinstance(value, str):
        return []
    return [
        FieldError(where, "FieldValueInvalid", why, value) for why in qualified_name_errors(value)
    ]


# -- Services ----------------------------------------------------------------------


def _go_service_port(port: JSONDict) -> GoValue:
    protocol = port.get("protocol") or ""
    number = port.get("port") if _is_int(port.get("port")) else 0
    return GoValue(
        f'core.ServicePort{{Name:"", Protocol:"{protocol}", AppProtocol:(*string)(nil), '
        f'Port:{number}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:""}}, '
        "NodePort:0}"
    )


def _service_port(
    port: JSONDict, require_name: bool, names: set[str], where: str
) -> list[FieldError]:
    errors: list[FieldError] = []
    name = port.get("name") or ""
    if require_name and not name:
        errors.append(FieldError(f"{where}.name", "FieldValueRequired", ""))
    elif name and isinstance(name, str):
        errors += _dns_label(name, f"{where}.name")
        if name in names:
            errors.append(FieldError(f"{where}.name", "FieldValueDuplicate", f'"{name}"', name))
        names.add(name)
    errors += _port_number(port.get("port"), f"{where}.port")
    errors += _protocol(port.get("protocol"), f"{where}.protocol")
    target = port.get("targetPort")
    if isinstance(target, str):
        errors += [
            FieldError(f"{where}.targetPort", "FieldValueInvalid", why, target)
            for why in port_name_errors(target)
        ]
    else:  # (defaulted to the port: left out only with the port)
        errors += _port_number(0 if target is None else target, f"{where}.targetPort")
    if port.get("appProtocol") is not None:
        errors += _qualified_name(port["appProtocol"], f"{where}.appProtocol")
    return errors


def _is_headless(spec: JSONDict) -> bool:
    return _list(spec.get("clusterIPs")) == ["None"]


def _cluster_ip_fields(spec: JSONDict) -> list[FieldError]:
    """ClusterIP, ClusterIPs, ipFamilies and ipFamilyPolicy, each alone and together."""
    errors: list[FieldError] = []
    cluster_ip = spec.get("clusterIP") or ""
    cluster_ips = _list(spec.get("clusterIPs"))
    if cluster_ip and cluster_ips and cluster_ips[0] != cluster_ip:
        errors.append(
            FieldError(
                "spec.clusterIPs",
                "FieldValueInvalid",
                "element [0] must match clusterIP",
                _go_strings(cluster_ips),
            )
        )
    # (clusterIPs without a clusterIP: the registry sets clusterIP from them, or gives
    # both anew, before a 1.30 server validates)
    seen: set[Any] = set()
    for index, family in enumerate(_list(spec.get("ipFamilies"))):
        where = f"spec.ipFamilies[{index}]"
        if family not in _FAMILIES:
            errors.append(
                FieldError(where, "FieldValueNotSupported", _supported(_FAMILIES), family)
            )
        if isinstance(family, str) and family in seen:
            errors.append(FieldError(where, "FieldValueDuplicate", f'"{family}"', family))
        seen.add(family if isinstance(family, str) else None)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in _FAMILY_POLICIES:
        errors.append(
            FieldError(
                "spec.ipFamilyPolicy",
                "FieldValueNotSupported",
                _supported(_FAMILY_POLICIES),
                policy,
            )
        )
    bad_ips = False
    for index, ip in enumerate(cluster_ips):
        if index == 0 and ip == "None":
            if len(cluster_ips) > 1:
                bad_ips = True
                errors.append(
                    FieldError(
                        "spec.clusterIPs",
                        "FieldValueInvalid",
                        "'None' must be the first and only value",
                        _go_strings(cluster_ips),
                    )
                )
            continue
        if _parse_ip(ip) is None:
            bad_ips = True
            errors.append(
                FieldError(f"spec.clusterIPs[{index}]", "FieldValueInvalid", _NOT_AN_IP, ip)
            )
    if len(cluster_ips) > 2:
        errors.append(
            FieldError(
                "spec.clusterIPs",
                "FieldValueInvalid",
                "may only hold up to 2 values",
                _go_strings(cluster_ips),
            )
        )
    if bad_ips:
        return errors
    if len(cluster_ips) > 1:
        versions = [a.version for a in map(_parse_ip, cluster_ips) if a is not None]
        if sorted(versions) != [4, 6]:
            errors.append(
                FieldError(
                    "spec.clusterIPs",
                    "FieldValueInvalid",
                    "may specify no more than one IP for each IP family",
                    _go_strings(cluster_ips),
                )
            )
    families = _list(spec.get("ipFamilies"))
    if not _is_headless(spec) and cluster_ips and families:
        for index, (ip, family) in enumerate(zip(cluster_ips, families, strict=False)):
            address = _parse_ip(ip)
            is_v6 = address is not None and address.version == 6
            if family == "IPv4" and is_v6:
                why = f"expected an IPv4 value as indicated by `ipFamilies[{index}]`"
                errors.append(FieldError(f"spec.clusterIPs[{index}]", "FieldValueInvalid", why, ip))
            if family == "IPv6" and not is_v6:
                why = f"expected an IPv6 value as indicated by `ipFamilies[{index}]`"
                errors.append(FieldError(f"spec.clusterIPs[{index}]", "FieldValueInvalid", why, ip))
    return errors


def _service_errors(body: JSONDict, old_spec: JSONDict | None = None) -> list[FieldError]:
    """``ValidateService`` (1.30); ``old_spec``: the stored Service's, on an update, whose
    type-dependent fields a kept value may still carry (a real server clears those it
    kept when the type changes)."""
    spec = body.get("spec")
    if not isinstance(spec, dict):  # (what defaulting gives a Service without a spec)
        spec = {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster"}
    old = old_spec or {}

    def changed(key: str) -> bool:
        return old_spec is None or spec.get(key) != old.get(key)

    errors: list[FieldError] = []
    kind = spec.get("type")
    ports = [p if isinstance(p, dict) else {} for p in _list(spec.get("ports"))]
    headless = _is_headless(spec)
    if not ports and not headless and kind != "ExternalName":
        errors.append(FieldError("spec.ports", "FieldValueRequired", ""))
    cluster_ips = _list(spec.get("clusterIPs"))
    if kind in ("LoadBalancer", "NodePort") and headless:
        errors.append(
            FieldError(
                "spec.clusterIPs[0]",
                "FieldValueInvalid",
                f"may not be set to 'None' for {kind} services",
                cluster_ips[0],
            )
        )
    elif kind == "ExternalName":
        # (kept from a stored Service of another type, a real server clears them)
        for key in ("clusterIPs", "ipFamilies"):
            if _list(spec.get(key)) and changed(key):
                errors.append(
                    FieldError(
                        f"spec.{key}",
                        "FieldValueForbidden",
                        "may not be set for ExternalName services",
                    )
                )
        if spec.get("ipFamilyPolicy") is not None and changed("ipFamilyPolicy"):
            errors.append(
                FieldError(
                    "spec.ipFamilyPolicy",
                    "FieldValueForbidden",
                    "may not be set for ExternalName services",
                )
            )
        name = spec.get("externalName")
        cname = name.removesuffix(".") if isinstance(name, str) else ""
        if cname:
            errors += _dns_subdomain(cname, "spec.externalName")
        else:
            errors.append(FieldError("spec.externalName", "FieldValueRequired", ""))
    names: set[str] = set()
    for index, port in enumerate(ports):
        errors += _service_port(port, len(ports) > 1, names, f"spec.ports[{index}]")
    selector = spec.get("selector")
    if isinstance(selector, dict):
        errors += validate_labels(
            {k: v for k, v in selector.items() if isinstance(v, str)}, "spec.selector"
        )
    affinity = spec.get("sessionAffinity")
    if not affinity:
        errors.append(FieldError("spec.sessionAffinity", "FieldValueRequired", ""))
    elif affinity not in _AFFINITIES:
        errors.append(
            FieldError(
                "spec.sessionAffinity", "FieldValueNotSupported", _supported(_AFFINITIES), affinity
            )
        )
    config = spec.get("sessionAffinityConfig")
    if affinity == "ClientIP":
        errors += _affinity_config(config)
    elif affinity == "None" and config is not None:
        errors.append(
            FieldError(
                "spec.sessionAffinityConfig",
                "FieldValueForbidden",
                "must not be set when session affinity is None",
            )
        )
    if kind != "ExternalName":
        errors += _cluster_ip_fields(spec)
    for index, ip in enumerate(_list(spec.get("externalIPs"))):
        where = f"spec.externalIPs[{index}]"
        if _parse_ip(ip) is None:
            errors.append(FieldError(where, "FieldValueInvalid", _NOT_AN_IP, ip))
        else:
            errors += _non_special_ip(ip, where)
    if not kind:
        errors.append(FieldError("spec.type", "FieldValueRequired", ""))
    elif kind not in _SERVICE_TYPES:
        errors.append(
            FieldError("spec.type", "FieldValueNotSupported", _supported(_SERVICE_TYPES), kind)
        )
    if kind == "ClusterIP":
        kept = {p.get("nodePort") for p in _list(old.get("ports")) if isinstance(p, dict)} - {
            None,
            0,
        }
        kept_all = {p.get("nodePort") for p in ports} - {None, 0} == kept
        for index, port in enumerate(ports):
            if port.get("nodePort") not in (None, 0) and not (old_spec and kept_all):
                errors.append(
                    FieldError(
                        f"spec.ports[{index}].nodePort",
                        "FieldValueForbidden",
                        "may not be used when `type` is 'ClusterIP'",
                    )
                )
    seen_ports: set[tuple[Any, Any]] = set()
    for index, port in enumerate(ports):
        pair = (port.get("protocol"), port.get("port"))
        if pair in seen_ports:
            errors.append(
                FieldError(f"spec.ports[{index}]", "FieldValueDuplicate", _go_service_port(port))
            )
        seen_ports.add(pair)
    ranges = _list(spec.get("loadBalancerSourceRanges"))
    if ranges:
        where = "spec.LoadBalancerSourceRanges"
        if kind != "LoadBalancer" and changed("loadBalancerSourceRanges"):
            errors.append(
                FieldError(
                    where, "FieldValueForbidden", "may only be used when `type` is 'LoadBalancer'"
                )
            )
        if not all(isinstance(v, str) and _valid_cidr(v.strip()) for v in ranges):
            shown = "[" + " ".join(str(v) for v in ranges) + "]"  # (Go's %v of a []string)
            errors.append(FieldError(where, "FieldValueInvalid", _NOT_CIDRS, shown))
    if (
        spec.get("allocateLoadBalancerNodePorts") is not None
        and kind != "LoadBalancer"
        and changed("allocateLoadBalancerNodePorts")
    ):
        errors.append(
            FieldError(
                "spec.allocateLoadBalancerNodePorts",
                "FieldValueForbidden",
                "may only be used when `type` is 'LoadBalancer'",
            )
        )
    errors += _traffic_policies(spec, kind, changed)
    return errors


def _affinity_config(config: Any) -> list[FieldError]:
    where = "spec.sessionAffinityConfig"
    why = "when session affinity type is ClientIP"
    if not isinstance(config, dict):
        return [FieldError(where, "FieldValueRequired", why)]
    client_ip = config.get("clientIP")
    if not isinstance(client_ip, dict):
        return [FieldError(f"{where}.clientIP", "FieldValueRequired", why)]
    timeout = client_ip.get("timeoutSeconds")
    if timeout is None:
        return [FieldError(f"{where}.clientIP.timeoutSeconds", "FieldValueRequired", why)]
    if _is_int(timeout) and not 0 < timeout <= _MAX_AFFINITY_SECONDS:
        return [
            FieldError(
                f"{where}.clientIP.timeoutSeconds",
                "FieldValueInvalid",
                f"must be greater than 0 and less than {_MAX_AFFINITY_SECONDS}",
                timeout,
            )
        ]
    return []


def _traffic_policies(spec: JSONDict, kind: Any, changed: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    external = spec.get("externalTrafficPolicy") or ""
    accessible = kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(_list(spec.get("externalIPs")))
    )
    if not accessible:
        if external and changed("externalTrafficPolicy"):
            errors.append(
                FieldError(
                    "spec.externalTrafficPolicy",
                    "FieldValueInvalid",
                    "may only be set for externally-accessible services",
                    external,
                )
            )
    elif not external:
        errors.append(FieldError("spec.externalTrafficPolicy", "FieldValueRequired", ""))
    elif external not in _TRAFFIC_POLICIES:
        errors.append(
            FieldError(
                "spec.externalTrafficPolicy",
                "FieldValueNotSupported",
                _supported(_TRAFFIC_POLICIES),
                external,
            )
        )
    health = spec.get("healthCheckNodePort")
    if not (kind == "LoadBalancer" and external == "Local"):
        if health not in (None, 0) and changed("healthCheckNodePort"):
            errors.append(
                FieldError(
                    "spec.healthCheckNodePort",
                    "FieldValueInvalid",
                    "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` "
                    "is 'Local'",
                    health,
                )
            )
    elif health not in (None, 0):  # (left out: the registry allocates one)
        errors += _port_number(health, "spec.healthCheckNodePort")
    internal = spec.get("internalTrafficPolicy")
    if internal is None and kind in ("ClusterIP", "NodePort", "LoadBalancer"):
        errors.append(FieldError("spec.internalTrafficPolicy", "FieldValueRequired", ""))
    elif internal is not None and internal not in _TRAFFIC_POLICIES:
        errors.append(
            FieldError(
                "spec.internalTrafficPolicy",
                "FieldValueNotSupported",
                _supported(_TRAFFIC_POLICIES),
                internal,
            )
        )
    # (trafficDistribution: alpha and off in 1.30, so not checked)
    return errors


# -- ConfigMaps and Secrets ----------------------------------------------------------


def _decoded(value: Any) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def _go_char(char: str) -> str:
    """A character as Go's JSON scanner quotes it in an error."""
    if char == "'":
        return "'\\''"
    if char == '"':
        return "'\"'"
    return "'" + json.dumps(char)[1:-1] + "'"


class _JSONSyntax(Exception):
    pass


class _GoJSONScanner:
    """Go's ``encoding/json`` syntax check, for its first error's words."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, context: str) -> _JSONSyntax:
        if self.pos >= len(self.text):
            return _JSONSyntax("unexpected end of JSON input")
        return _JSONSyntax(f"invalid character {_go_char(self.text[self.pos])} {context}")

    def peek(self) -> str:
        if self.pos >= len(self.text):
            raise _JSONSyntax("unexpected end of JSON input")
        return self.text[self.pos]

    def space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
            self.pos += 1

    def value(self) -> None:
        self.space()
        char = self.peek()
        if char == "{":
            self.pos += 1
            self.space()
            if self.peek() == "}":
                self.pos += 1
                return
            while True:
                self.space()
                if self.peek() != '"':
                    raise self.fail("looking for beginning of object key string")
                self.string()
                self.space()
                if self.peek() != ":":
                    raise self.fail("after object key")
                self.pos += 1
                self.value()
                self.space()
                char = self.peek()
                self.pos += 1
                if char == "}":
                    return
                if char != ",":
                    self.pos -= 1
                    raise self.fail("after object key:value pair")
        elif char == "[":
            self.pos += 1
            self.space()
            if self.peek() == "]":
                self.pos += 1
                return
            while True:
                self.value()
                self.space()
                char = self.peek()
                self.pos += 1
                if char == "]":
                    return
                if char != ",":
                    self.pos -= 1
                    raise self.fail("after array element")
        elif char == '"':
            self.string()
        elif char == "-" or char.isdigit():
            self.number()
        elif char in "tfn":
            word = {"t": "true", "f": "false", "n": "null"}[char]
            for expected in word[1:]:
                self.pos += 1
                if self.peek() != expected:
                    raise self.fail(f"in literal {word} (expecting {_go_char(expected)})")
            self.pos += 1
        else:
            raise self.fail("looking for beginning of value")

    def string(self) -> None:
        self.pos += 1
        while True:
            char = self.peek()
            if char == '"':
                self.pos += 1
                return
            if char == "\\":
                self.pos += 1
                escape = self.peek()
                if escape == "u":
                    for _ in range(4):
                        self.pos += 1
                        if self.peek() not in "0123456789abcdefABCDEF":
                            raise self.fail("in \\u hexadecimal character escape")
                elif escape not in 'bfnrt"\\/':
                    raise self.fail("in string escape code")
            elif ord(char) < 0x20:
                raise self.fail("in string literal")
            self.pos += 1

    def digits(self, context: str) -> None:
        if not self.peek().isdigit():
            raise self.fail(context)
        while self.pos < len(self.text) and self.text[self.pos].isdigit():
            self.pos += 1

    def number(self) -> None:
        if self.text[self.pos] == "-":
            self.pos += 1
        if self.peek() == "0":
            self.pos += 1
        else:
            self.digits("in numeric literal")
        if self.pos < len(self.text) and self.text[self.pos] == ".":
            self.pos += 1
            self.digits("after decimal point in numeric literal")
        if self.pos < len(self.text) and self.text[self.pos] in "eE":
            self.pos += 1
            if self.pos < len(self.text) and self.text[self.pos] in "+-":
                self.pos += 1
            self.digits("in exponent of numeric literal")

    def check(self) -> None:
        self.value()
        self.space()
        if self.pos < len(self.text):
            raise self.fail("after top-level value")


def _go_json_error(raw: bytes) -> str | None:
    """Why Go's ``json.Unmarshal`` into a ``map[string]interface{}`` refuses ``raw``
    (its syntax check's first error, or the type it cannot put in a map), or None."""
    text = raw.decode("utf-8", errors="replace")
    try:
        _GoJSONScanner(text).check()
    except _JSONSyntax as exc:
        return str(exc)
    value = json.loads(text)
    if value is None or isinstance(value, dict):
        return None
    shown = {list: "array", str: "string", bool: "bool"}.get(type(value), "number")
    return f"json: cannot unmarshal {shown} into Go value of type map[string]interface {{}}"


def _configmap_errors(body: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    data = _dict(body.get("data"))
    binary = _dict(body.get("binaryData"))
    size = 0
    for key, value in data.items():
        errors += [
            FieldError(f"data[{key}]", "FieldValueInvalid", why, key) for why in _config_key(key)
        ]
        if key in binary:
            errors.append(
                FieldError(
                    f"data[{key}]",
                    "FieldValueInvalid",
                    "duplicate of key present in binaryData",
                    key,
                )
            )
        size += len(value.encode()) if isinstance(value, str) else 0
    for key, value in binary.items():
        errors += [
            FieldError(f"binaryData[{key}]", "FieldValueInvalid", why, key)
            for why in _config_key(key)
        ]
        size += len(_decoded(value) or b"")
    if size > _MAX_DATA:
        errors.append(FieldError("[]", "FieldValueTooLong", f"must have at most {_MAX_DATA} bytes"))
    return errors


def _secret_errors(body: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    data = _dict(body.get("data"))
    size = 0
    for key, value in data.items():
        errors += [
            FieldError(f"data[{key}]", "FieldValueInvalid", why, key) for why in _config_key(key)
        ]
        size += len(_decoded(value) or b"")
    if size > _MAX_DATA:
        errors.append(
            FieldError("data", "FieldValueTooLong", f"must have at most {_MAX_DATA} bytes")
        )
    kind = body.get("type")
    annotations = _dict(_dict(body.get("metadata")).get("annotations"))
    if kind == "kubernetes.io/service-account-token":
        if not annotations.get("kubernetes.io/service-account.name"):
            errors.append(
                FieldError(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "FieldValueRequired",
                    "",
                )
            )
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            errors.append(FieldError(f"data[{key}]", "FieldValueRequired", ""))
        else:
            why = _go_json_error(_decoded(data[key]) or b"")
            if why is not None:
                errors.append(
                    FieldError(
                        f"data[{key}]", "FieldValueInvalid", why, "<secret contents redacted>"
                    )
                )
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errors.append(FieldError("data[username]", "FieldValueRequired", ""))
            errors.append(FieldError("data[password]", "FieldValueRequired", ""))
    elif kind == "kubernetes.io/ssh-auth":  # (1.20 named these data[%s][...])
        if not _decoded(data.get("ssh-privatekey")):
            errors.append(FieldError("data[ssh-privatekey]", "FieldValueRequired", ""))
    elif kind == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                errors.append(FieldError(f"data[{key}]", "FieldValueRequired", ""))
    return errors


def _immutable_data(body: JSONDict, old: JSONDict, keys: tuple[str, ...]) -> list[FieldError]:
    """What an update of a ConfigMap or Secret stored with ``immutable: true`` may not do."""
    if old.get("immutable") is not True:
        return []
    errors = []
    if body.get("immutable") is not True:
        errors.append(FieldError("immutable", "FieldValueForbidden", _IMMUTABLE_SET))
    for key in keys:
        if (body.get(key) or {}) != (old.get(key) or {}):
            errors.append(FieldError(key, "FieldValueForbidden", _IMMUTABLE_SET))
    return errors


# -- Endpoints ---------------------------------------------------------------------


def _endpoints_errors(body: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    for index, subset in enumerate(_list(body.get("subsets"))):
        subset = _dict(subset)
        where = f"subsets[{index}]"
        addresses = _list(subset.get("addresses"))
        not_ready = _list(subset.get("notReadyAddresses"))
        if not addresses and not not_ready:
            errors.append(
                FieldError(
                    where, "FieldValueRequired", "must specify `addresses` or `notReadyAddresses`"
                )
            )
        for key, entries in (("addresses", addresses), ("notReadyAddresses", not_ready)):
            for at, address in enumerate(entries):
                errors += _endpoint_address(_dict(address), f"{where}.{key}[{at}]")
        ports = _list(subset.get("ports"))
        for at, port in enumerate(ports):
            port = _dict(port)
            path = f"{where}.ports[{at}]"
            name = port.get("name") or ""
            if len(ports) > 1 and not name:
                errors.append(FieldError(f"{path}.name", "FieldValueRequired", ""))
            elif name and isinstance(name, str):
                errors += _dns_label(name, f"{path}.name")
            errors += _port_number(port.get("port"), f"{path}.port")
            errors += _protocol(port.get("protocol"), f"{path}.protocol")
            if port.get("appProtocol") is not None:
                errors += _qualified_name(port["appProtocol"], f"{path}.appProtocol")
    return errors


def _endpoint_address(address: JSONDict, where: str) -> list[FieldError]:
    raw = address.get("ip")
    ip = raw if isinstance(raw, str) else ""
    errors: list[FieldError] = []
    if _parse_ip(ip) is None:
        errors.append(FieldError(f"{where}.ip", "FieldValueInvalid", _NOT_AN_IP, ip))
    hostname = address.get("hostname")
    if isinstance(hostname, str) and hostname:
        errors += _dns_label(hostname, f"{where}.hostname")
    node = address.get("nodeName")
    if isinstance(node, str):
        errors += _dns_subdomain(node, f"{where}.nodeName")
    errors += _non_special_ip(ip, f"{where}.ip")
    return errors


# -- entry points ------------------------------------------------------------------


def core_spec_errors(group: str, resource: str, body: JSONDict) -> list[FieldError]:
    """The rules a create of ``body`` (defaulted) breaks, for the kinds this module knows."""
    if group != "":
        return []
    if resource == "services":
        return _service_errors(body)
    if resource == "configmaps":
        return _configmap_errors(body)
    if resource == "secrets":
        return _secret_errors(body)
    if resource == "endpoints":
        return _endpoints_errors(body)
    if resource == "namespaces":
        spec = body.get("spec")
        finalizers = spec.get("finalizers") if isinstance(spec, dict) else None
        return namespace_finalizer_errors(finalizers, indexed=False)
    return []


def core_spec_update_errors(
    group: str, resource: str, body: JSONDict, existing: JSONDict
) -> list[FieldError]:
    """The rules an update of ``existing`` to ``body`` (defaulted) breaks."""
    if group != "":
        return []
    if resource == "services":
        if not isinstance(existing.get("spec"), dict):
            return []  # (a metadata-only copy, loaded as it came: serve's preview)
        return _service_errors(body, existing["spec"])
    if resource == "configmaps":
        return _immutable_data(body, existing, ("data", "binaryData")) + _configmap_errors(body)
    if resource == "secrets":
        errors: list[FieldError] = []
        kind, old_kind = body.get("type"), existing.get("type")
        if kind != old_kind:
            errors.append(FieldError("type", "FieldValueInvalid", "field is immutable", kind))
        return errors + _immutable_data(body, existing, ("data",)) + _secret_errors(body)
    if resource == "endpoints":
        return _endpoints_errors(body)
    return []
