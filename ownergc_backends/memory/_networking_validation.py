"""The spec rules kube-apiserver 1.30 checks on Ingresses, IngressClasses and
NetworkPolicies (networking.k8s.io/v1), worded as a real server words them.

Run on the defaulted object (a NetworkPolicy port's protocol defaulted to TCP, an
IngressClass's ``parameters.scope`` to Cluster), after the metadata's checks. What
is checked:

* Ingress: a ``defaultBackend`` or ``rules``; each rule's host a DNS name (a
  wildcard only as ``*.`` first label, no IP address); each HTTP path with a
  ``pathType`` (Exact, Prefix, ImplementationSpecific), an absolute path without
  ``//``, ``/./``, ``/../``, ``%2f`` or a ``/.``/``/..`` ending for Exact and Prefix,
  and a backend that is a service (a DNS-1035 name, a port name or a port number,
  not both) or a resource (kind and name required), not both; TLS hosts and secret
  names; ``ingressClassName``; on create, a ``kubernetes.io/ingress.class``
  annotation that differs from ``ingressClassName``. An update of an Ingress that
  already holds a bad TLS secret name, or a wildcard rule with bad paths, lets those
  through (as kube-apiserver does for what it stored before it checked them).
* IngressClass: ``controller`` a domain-prefixed path of at most 250 bytes, which an
  update may not change; ``parameters`` with kind and name, a scope of Cluster or
  Namespace, a namespace exactly when the scope is Namespace.
* NetworkPolicy: its selectors (podSelector, each peer's), each port's protocol (TCP,
  UDP, SCTP), port (a number 1-65535 or a port name) and endPort (a number, not
  below the port, only with a numeric port), each peer one of podSelector /
  namespaceSelector / ipBlock (an ipBlock alone), an ipBlock's CIDR and its
  ``except`` CIDRs strictly inside it, at most two policyTypes (Ingress, Egress).
  kube-apiserver validates an updated NetworkPolicy's spec twice (once for the
  object, once for the update): its causes come twice, its message once (Go's
  ``ErrorList.ToAggregate`` drops repeated messages; :func:`._objects._invalid`
  does too).
* An Ingress's status written through ``/status``: each load balancer point's ip an
  IP address, its hostname a DNS name that is no IP address.

An update that leaves the spec as stored is not checked (an object loaded with
``serve --load`` stays writable). Not done: the warnings 1.30 adds to some writes (the
deprecated class annotation), an updated NetworkPolicy's metadata problems (1.30
reports them twice too; serve once).

An Ingress's or a NetworkPolicy's refusal is named ``Ingress.extensions`` /
``NetworkPolicy.extensions``: the internal types are registered first in the
``extensions`` group, which kube-apiserver qualifies the kind by (:data:`ERROR_GROUPS`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._core_validation import (
    _IPV4_SLOPPY,
    _dict,
    _dns_label,
    _dns_subdomain,
    _is_int,
    _list,
    _parse_ip,
    _port_number,
    _supported,
)
from ._patch import json_equal
from ._selectors import label_selector_errors
from ._validation import FieldError, GoValue, path_segment_errors, port_name_errors

__all__ = ["ERROR_GROUPS", "networking_errors", "networking_update_errors"]

_GROUP: Final = "networking.k8s.io"
#: The group kube-apiserver qualifies a refused kind by, where it is not the group the
#: kind is served in (its internal type's first registration).
ERROR_GROUPS: Final = {(_GROUP, "Ingress"): "extensions", (_GROUP, "NetworkPolicy"): "extensions"}

_PATH_TYPES: Final = ("Exact", "ImplementationSpecific", "Prefix")
_BAD_SEQUENCES: Final = ("//", "/./", "/../", "%2f", "%2F")
_BAD_SUFFIXES: Final = ("/..", "/.")
_PROTOCOLS: Final = ("TCP", "UDP", "SCTP")  # (in the order 1.30 lists them)
_POLICY_TYPES: Final = ("Ingress", "Egress")
_SCOPES: Final = ("Cluster", "Namespace")
_MAX_CONTROLLER: Final = 250
_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_WILDCARD = re.compile(r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")

_DNS1035_RULE: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
    "with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  "
    "or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_WILDCARD_RULE: Final = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
    "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
    "alphanumeric character (e.g. '*.example.com', regex used for validation is "
    "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_HTTP_PATH_RULE: Final = (
    "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"
)
_DOMAIN_PREFIXED: Final = 'must be a domain-prefixed path (such as "acme.io/foo")'


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _invalid(where: str, value: Any, whys: list[str]) -> list[FieldError]:
    return [FieldError(where, "FieldValueInvalid", why, value) for why in whys]


# -- the apimachinery name checks these rules quote ----------------------------------


def _dns1035_label(value: str, where: str) -> list[FieldError]:
    whys = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _DNS1035.fullmatch(value):
        whys.append(_DNS1035_RULE)
    return _invalid(where, value, whys)


def _wildcard_subdomain(value: str, where: str) -> list[FieldError]:
    whys = ["must be no more than 253 characters"] if len(value) > 253 else []
    if not _WILDCARD.fullmatch(value):
        whys.append(_WILDCARD_RULE)
    return _invalid(where, value, whys)


def _host(value: str, where: str) -> list[FieldError]:
    """A host: a wildcard subdomain when it has a ``*``, else a DNS subdomain."""
    return _wildcard_subdomain(value, where) if "*" in value else _dns_subdomain(value, where)


def _cidr(text: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """A CIDR as Go's sloppy parser reads it (IPv4 parts may have leading zeros), its
    host bits cleared; None when it is none."""
    if not isinstance(text, str) or "/" not in text:
        return None
    address, _, bits = text.partition("/")
    if not bits.isdigit():
        return None
    match = _IPV4_SLOPPY.fullmatch(address)
    try:
        if match:
            parts = [int(p) for p in match.groups()]
            if any(p > 255 for p in parts) or int(bits) > 32:
                return None
            return ipaddress.IPv4Network((".".join(map(str, parts)), int(bits)), strict=False)
        if ":" not in address or "%" in address or int(bits) > 128:
            return None
        return ipaddress.IPv6Network((address, int(bits)), strict=False)
    except ValueError:
        return None


# -- Ingress -------------------------------------------------------------------------


def _object_reference(ref: JSONDict, where: str) -> list[FieldError]:
    """A typed local object reference (a resource backend, an IngressClass's parameters):
    an apiGroup that is a DNS subdomain, a kind and a name that are path segments."""
    errors: list[FieldError] = []
    if ref.get("apiGroup") is not None:
        errors += _dns_subdomain(_str(ref["apiGroup"]), f"{where}.apiGroup")
    for key in ("kind", "name"):
        value = _str(ref.get(key))
        if not value:
            errors.append(FieldError(f"{where}.{key}", "FieldValueRequired", f"{key} is required"))
        else:
            errors += _invalid(f"{where}.{key}", value, path_segment_errors(value))
    return errors


def _backend(backend: JSONDict, where: str) -> list[FieldError]:
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [
            FieldError(
                where, "FieldValueInvalid", "cannot set both resource and service backends", ""
            )
        ]
    if resource is not None:
        return _object_reference(_dict(resource), f"{where}.resource")
    if service is None:
        return [
            FieldError(where, "FieldValueInvalid", "resource or service backend is required", "")
        ]
    service = _dict(service)
    errors: list[FieldError] = []
    name = _str(service.get("name"))
    if not name:
        errors.append(FieldError(f"{where}.service.name", "FieldValueRequired", ""))
    else:
        errors += _dns1035_label(name, f"{where}.service.name")
    port = _dict(service.get("port"))
    port_name = _str(port.get("name"))
    number = port.get("number") if _is_int(port.get("number")) else 0
    if port_name and number:
        errors.append(
            FieldError(where, "FieldValueInvalid", "cannot set both port name & port number", "")
        )
    elif port_name:
        errors += _invalid(f"{where}.service.port.name", port_name, port_name_errors(port_name))
    elif number:
        errors += _port_number(number, f"{where}.service.port.number")
    else:
        errors.append(FieldError(where, "FieldValueRequired", "port name or number is required"))
    return errors


def _http_path(path: JSONDict, where: str) -> list[FieldError]:
    path_type = path.get("pathType")
    if path_type is None:
        return [FieldError(f"{where}.pathType", "FieldValueRequired", "pathType must be specified")]
    errors: list[FieldError] = []
    text = _str(path.get("path"))
    at = f"{where}.path"
    if path_type in ("Exact", "Prefix"):
        if not text.startswith("/"):
            errors.append(FieldError(at, "FieldValueInvalid", "must be an absolute path", text))
        errors += _invalid(
            at, text, [f"must not contain '{s}'" for s in _BAD_SEQUENCES if s in text]
        )
        errors += _invalid(
            at, text, [f"cannot end with '{s}'" for s in _BAD_SUFFIXES if text.endswith(s)]
        )
    elif path_type == "ImplementationSpecific":
        if text and not text.startswith("/"):
            errors.append(FieldError(at, "FieldValueInvalid", "must be an absolute path", text))
    else:
        errors.append(
            FieldError(
                f"{where}.pathType", "FieldValueNotSupported", _supported(_PATH_TYPES), path_type
            )
        )
    return errors + _backend(_dict(path.get("backend")), f"{where}.backend")


def _rule_value(rule: JSONDict, where: str) -> list[FieldError]:
    http = rule.get("http")
    if http is None:
        return []
    paths = _list(_dict(http).get("paths"))
    errors = [] if paths else [FieldError(f"{where}.http.paths", "FieldValueRequired", "")]
    for i, path in enumerate(paths):
        errors += _http_path(_dict(path), f"{where}.http.paths[{i}]")
    return errors


def _ingress_spec(spec: JSONDict, allow_secret: bool, allow_wildcard: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    rules = spec.get("rules")
    backend = spec.get("defaultBackend")
    if not rules and backend is None:
        shown = (
            "[]networking.IngressRule{}"
            if isinstance(rules, list)
            else "[]networking.IngressRule(nil)"
        )
        why = "either `defaultBackend` or `rules` must be specified"
        errors.append(FieldError("spec", "FieldValueInvalid", why, GoValue(shown)))
    if backend is not None:
        errors += _backend(_dict(backend), "spec.defaultBackend")
    for i, rule in enumerate(_list(rules)):
        rule, where = _dict(rule), f"spec.rules[{i}]"
        host = _str(rule.get("host"))
        if host:
            if _parse_ip(host) is not None:
                why = "must be a DNS name, not an IP address"
                errors.append(FieldError(f"{where}.host", "FieldValueInvalid", why, host))
            errors += _host(host, f"{where}.host")
        if "*" not in host or not allow_wildcard:
            errors += _rule_value(rule, where)
    for i, tls in enumerate(_list(spec.get("tls"))):
        tls = _dict(tls)
        for j, host in enumerate(_list(tls.get("hosts"))):
            errors += _host(_str(host), f"spec.tls[{i}].hosts[{j}]")
        secret = _str(tls.get("secretName"))
        if secret and not allow_secret:
            errors += _dns_subdomain(secret, f"spec.tls[{i}].secretName")
    if spec.get("ingressClassName") is not None:
        errors += _dns_subdomain(_str(spec["ingressClassName"]), "spec.ingressClassName")
    return errors


def _ingress(body: JSONDict) -> list[FieldError]:
    spec = _dict(body.get("spec"))
    errors = _ingress_spec(spec, False, False)
    annotations = _dict(_dict(body.get("metadata")).get("annotations"))
    annotation = annotations.get(_CLASS_ANNOTATION)
    name = spec.get("ingressClassName")
    if annotation is not None and name is not None and annotation != name:
        errors.append(
            FieldError(
                f"annotations.{_CLASS_ANNOTATION}",
                "FieldValueInvalid",
                "must match `ingressClassName` when both are specified",
                annotation,
            )
        )
    return errors


def _ingress_update(body: JSONDict, old: JSONDict) -> list[FieldError]:
    old_spec = _dict(old.get("spec"))
    allow_secret = any(
        _dns_subdomain(s, "")
        for t in _list(old_spec.get("tls"))
        if (s := _str(_dict(t).get("secretName")))
    )
    allow_wildcard = any(
        "*" in _str(_dict(r).get("host")) and _rule_value(_dict(r), "")
        for r in _list(old_spec.get("rules"))
    )
    return _ingress_spec(_dict(body.get("spec")), allow_secret, allow_wildcard)


def _ingress_status(body: JSONDict) -> list[FieldError]:
    """An Ingress's load balancer status, as a write through ``/status`` is checked: each
    point's ip an IP address, its hostname a DNS name that is no IP address."""
    errors: list[FieldError] = []
    points = _list(_dict(_dict(body.get("status")).get("loadBalancer")).get("ingress"))
    for i, point in enumerate(points):
        point, where = _dict(point), f"status.loadBalancer.ingress[{i}]"
        ip, hostname = _str(point.get("ip")), _str(point.get("hostname"))
        if ip and _parse_ip(ip) is None:
            why = "must be a valid IP address"
            errors.append(FieldError(f"{where}.ip", "FieldValueInvalid", why, ip))
        if hostname:
            errors += _dns_subdomain(hostname, f"{where}.hostname")
            if _parse_ip(hostname) is not None:
                why = "must be a DNS name, not an IP address"
                errors.append(FieldError(f"{where}.hostname", "FieldValueInvalid", why, hostname))
    return errors


# -- IngressClass --------------------------------------------------------------------


def _controller(value: str) -> list[FieldError]:
    where = "spec.controller"
    errors: list[FieldError] = []
    if len(value.encode()) > _MAX_CONTROLLER:
        errors.append(
            FieldError(where, "FieldValueTooLong", f"must have at most {_MAX_CONTROLLER} bytes")
        )
    if not value:
        return [*errors, FieldError(where, "FieldValueRequired", "")]
    host, slash, path = value.partition("/")
    if not slash or not host or not path:
        return [*errors, FieldError(where, "FieldValueInvalid", _DOMAIN_PREFIXED, value)]
    errors += _dns_subdomain(host, where)
    if not _HTTP_PATH.fullmatch(path):
        errors.append(FieldError(where, "FieldValueInvalid", _HTTP_PATH_RULE, path))
    return errors


def _parameters(parameters: Any) -> list[FieldError]:
    if parameters is None:
        return []
    parameters, where = _dict(parameters), "spec.parameters"
    errors = _object_reference(parameters, where)
    scope = parameters.get("scope")
    namespace = parameters.get("namespace")
    if scope is None:
        return [*errors, FieldError(f"{where}.scope", "FieldValueRequired", "")]
    if scope not in _SCOPES:
        return [
            *errors,
            FieldError(f"{where}.scope", "FieldValueNotSupported", _supported(_SCOPES), scope),
        ]
    if scope == "Namespace":
        if namespace is None:
            why = "`parameters.scope` is set to 'Namespace'"
            errors.append(FieldError(f"{where}.namespace", "FieldValueRequired", why))
        else:
            errors += _dns_label(_str(namespace), f"{where}.namespace")
    elif namespace is not None:
        why = "`parameters.scope` is set to 'Cluster'"
        errors.append(FieldError(f"{where}.namespace", "FieldValueForbidden", why))
    return errors


def _ingress_class(body: JSONDict) -> list[FieldError]:
    spec = _dict(body.get("spec"))
    return _controller(_str(spec.get("controller"))) + _parameters(spec.get("parameters"))


def _ingress_class_update(body: JSONDict, old: JSONDict) -> list[FieldError]:
    controller = _str(_dict(body.get("spec")).get("controller"))
    errors: list[FieldError] = []
    if controller != _str(_dict(old.get("spec")).get("controller")):
        errors.append(
            FieldError("spec.controller", "FieldValueInvalid", "field is immutable", controller)
        )
    return errors + _ingress_class(body)


# -- NetworkPolicy -------------------------------------------------------------------


def _policy_port(port: JSONDict, where: str) -> list[FieldError]:
    errors: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PROTOCOLS:
        errors.append(
            FieldError(
                f"{where}.protocol", "FieldValueNotSupported", _supported(_PROTOCOLS), protocol
            )
        )
    number, end = port.get("port"), port.get("endPort")
    if number is None:
        if end is not None:
            why = "may not be specified when `port` is not specified"
            errors.append(FieldError(f"{where}.endPort", "FieldValueInvalid", why, end))
    elif isinstance(number, str):
        if end is not None:
            why = "may not be specified when `port` is non-numeric"
            errors.append(FieldError(f"{where}.endPort", "FieldValueInvalid", why, end))
        errors += _invalid(f"{where}.port", number, port_name_errors(number))
    elif _is_int(number):
        errors += _port_number(number, f"{where}.port")
        if _is_int(end):
            if end < number:
                why = "must be greater than or equal to `port`"
                errors.append(FieldError(f"{where}.endPort", "FieldValueInvalid", why, number))
            errors += _port_number(end, f"{where}.endPort")
    return errors


def _ip_block(block: JSONDict, where: str) -> list[FieldError]:
    cidr = _str(block.get("cidr"))
    if not cidr:
        return [FieldError(f"{where}.cidr", "FieldValueRequired", "")]
    network = _cidr(cidr)
    if network is None:
        return [FieldError(f"{where}.cidr", "FieldValueInvalid", "not a valid CIDR", cidr)]
    errors: list[FieldError] = []
    for i, text in enumerate(_list(block.get("except"))):
        at = f"{where}.except[{i}]"
        inner = _cidr(text)
        if inner is None:  # (the first bad one ends the check)
            return [*errors, FieldError(at, "FieldValueInvalid", "not a valid CIDR", text)]
        inside = inner.version == network.version and inner.network_address in network
        if not inside or network.prefixlen >= inner.prefixlen:
            errors.append(
                FieldError(at, "FieldValueInvalid", "must be a strict subset of `cidr`", text)
            )
    return errors


def _peer(peer: JSONDict, where: str, allow: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    present = 0
    for key in ("podSelector", "namespaceSelector"):
        if peer.get(key) is not None:
            present += 1
            errors += label_selector_errors(peer[key], f"{where}.{key}", allow_invalid_values=allow)
    block = peer.get("ipBlock")
    if block is not None:
        present += 1
        errors += _ip_block(_dict(block), f"{where}.ipBlock")
    if not present:
        errors.append(FieldError(where, "FieldValueRequired", "must specify a peer"))
    elif present > 1 and block is not None:
        errors.append(
            FieldError(
                where, "FieldValueForbidden", "may not specify both ipBlock and another peer"
            )
        )
    return errors


def _network_policy_spec(spec: JSONDict, allow: bool) -> list[FieldError]:
    errors = label_selector_errors(
        spec.get("podSelector"), "spec.podSelector", allow_invalid_values=allow
    )
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(_list(spec.get(direction))):
            rule, where = _dict(rule), f"spec.{direction}[{i}]"
            for j, port in enumerate(_list(rule.get("ports"))):
                errors += _policy_port(_dict(port), f"{where}.ports[{j}]")
            for j, peer in enumerate(_list(rule.get(peers))):
                errors += _peer(_dict(peer), f"{where}.{peers}[{j}]", allow)
    types = _list(spec.get("policyTypes"))
    if len(types) > len(_POLICY_TYPES):
        shown = GoValue("[]networking.PolicyType{" + ", ".join(f'"{_str(t)}"' for t in types) + "}")
        errors.append(
            FieldError(
                "spec.policyTypes",
                "FieldValueInvalid",
                "may not specify more than two policyTypes",
                shown,
            )
        )
        return errors
    for i, kind in enumerate(types):
        if kind not in _POLICY_TYPES:
            errors.append(
                FieldError(
                    f"spec.policyTypes[{i}]",
                    "FieldValueNotSupported",
                    _supported(_POLICY_TYPES),
                    kind,
                )
            )
    return errors


def _network_policy(body: JSONDict) -> list[FieldError]:
    return _network_policy_spec(_dict(body.get("spec")), False)


def _network_policy_update(body: JSONDict, old: JSONDict) -> list[FieldError]:
    # (expression values that are no label values pass when the stored podSelector
    # has a problem; the spec is checked for the object, then again for the update)
    allow = bool(
        label_selector_errors(_dict(old.get("spec")).get("podSelector"), "spec.podSelector")
    )
    once = _network_policy_spec(_dict(body.get("spec")), allow)
    return once + once


_CREATE: Final[dict[str, Callable[[JSONDict], list[FieldError]]]] = {
    "ingresses": _ingress,
    "ingressclasses": _ingress_class,
    "networkpolicies": _network_policy,
}
_UPDATE: Final[dict[str, Callable[[JSONDict, JSONDict], list[FieldError]]]] = {
    "ingresses": _ingress_update,
    "ingressclasses": _ingress_class_update,
    "networkpolicies": _network_policy_update,
}


def networking_errors(group: str, resource: str, body: Any) -> list[FieldError]:
    """The spec problems of an Ingress, IngressClass or NetworkPolicy to create (none for
    other kinds)."""
    rule = _CREATE.get(resource) if group == _GROUP else None
    return rule(body) if rule is not None and isinstance(body, dict) else []


def networking_update_errors(
    group: str, resource: str, body: Any, existing: Any, subresource: str | None = None
) -> list[FieldError]:
    """The spec problems of an update of an Ingress, IngressClass or NetworkPolicy from
    ``existing`` to ``body`` (none for other kinds, none when the spec is unchanged);
    through ``/status`` (``subresource``), an Ingress's status problems."""
    if subresource is not None:
        if (group, resource, subresource) == (_GROUP, "ingresses", "status"):
            return _ingress_status(body) if isinstance(body, dict) else []
        return []
    rule = _UPDATE.get(resource) if group == _GROUP else None
    if rule is None or not isinstance(body, dict) or not isinstance(existing, dict):
        return []
    if json_equal(body.get("spec"), existing.get("spec")):
        # An update that leaves the spec as stored passes: an object loaded from
        # elsewhere (``serve --load``, not validated) stays writable, its metadata
        # too (the garbage collector's patches); what kube-apiserver stored is valid.
        return []
    return rule(body, existing)
