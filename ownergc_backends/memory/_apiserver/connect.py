"""The connect subresources of a cluster without kubelets: ``pods/log``,
``pods/exec``, ``pods/attach``, ``pods/portforward``, ``pods/proxy``,
``nodes/proxy`` and ``services/proxy``.

kube-apiserver answers these by finding where the request would go (a Pod's
node and that node's kubelet, a Pod's IP, a Service's endpoint) and then
proxying or upgrading the connection to it. serve runs no kubelet and reaches
no Pod, so it answers every request as kube-apiserver does up to that point —
the same query parsing and validation, the same 404 for a missing Pod, the
same 400 for a container name it cannot pick or a Pod without a node, the same
500 for a node without an address — and where kube-apiserver would dial, as it
answers when the dial is refused: a 500 without a reason naming the address it
would dial (the Node's preferred address and kubelet port, the Pod's IP, the
endpoint's), ``connect: connection refused``. serve never dials it (nor resolves a
Node's ``Hostname`` address: a real server's lookup may fail first). A Pod not
yet on a node has no logs yet: its ``/log`` is a 204 with no body.

Recorded from a real kube-apiserver in tests/data/real-apiserver-1.20/pod-connect.json
(``tools/record_pod_connect.py``) and replayed by tests/facade/test_pod_connect_real.py.
Upgrade requests (SPDY, WebSocket) are answered before any upgrade, as
kube-apiserver answers them when it cannot reach the kubelet (1.30 upgrades a
WebSocket ``v5.channel.k8s.io`` exec first and reports a kubelet it cannot
reach in the stream's error channel; serve answers those before the upgrade,
and kubectl prints the same message either way but for an ``Internal error
occurred:`` before it).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote, urlencode

from ownergc.errors import NotFound, RESTMappingError
from ownergc.protocols import APIResource, JSONDict

from .._negotiation import _json_response, _Response
from ..store import InMemoryStore
from .context import Reply, RequestContext, ResourceRoute

__all__ = ["CONNECT_DISCOVERY", "CONNECT_SUBRESOURCES", "ConnectHandler"]

_PROXY_VERBS: Final = ["create", "delete", "get", "patch", "update"]
#: Each connect subresource's discovery kind and verbs, as kube-apiserver lists them
#: (the registry's ``_CONNECT`` says which resources serve them).
CONNECT_DISCOVERY: Final[dict[tuple[str, str], tuple[str, list[str]]]] = {
    ("pods", "attach"): ("PodAttachOptions", ["create", "get"]),
    ("pods", "exec"): ("PodExecOptions", ["create", "get"]),
    ("pods", "log"): ("Pod", ["get"]),
    ("pods", "portforward"): ("PodPortForwardOptions", ["create", "get"]),
    ("pods", "proxy"): ("PodProxyOptions", _PROXY_VERBS),
    ("nodes", "proxy"): ("NodeProxyOptions", _PROXY_VERBS),
    ("services", "proxy"): ("ServiceProxyOptions", _PROXY_VERBS),
}
CONNECT_SUBRESOURCES: Final = ("log", "exec", "attach", "portforward", "proxy")

#: kube-apiserver's default ``--kubelet-preferred-address-types`` and ``--kubelet-port``.
_ADDRESS_TYPES: Final = ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP")
_KUBELET_PORT: Final = 10250
#: The methods each connect subresource takes (others: 405).
_METHODS: Final[dict[str, frozenset[str]]] = {
    "log": frozenset({"GET"}),
    "exec": frozenset({"GET", "POST"}),
    "attach": frozenset({"GET", "POST"}),
    "portforward": frozenset({"GET", "POST"}),
    "proxy": frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}),
}


class _Answer(Exception):
    """A finished answer (an error Status), raised from deep in a lookup."""

    def __init__(self, response: _Response) -> None:
        super().__init__(response.status)
        self.response = response


def _status(
    code: int, message: str, reason: str | None = None, details: JSONDict | None = None
) -> _Answer:
    """A Failure Status as kube-apiserver writes it (no reason for an error it did
    not classify, such as a dial error)."""
    body: JSONDict = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason is not None:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return _Answer(_json_response(code, body))


def _bad_request(message: str) -> _Answer:
    return _status(400, message, "BadRequest")


def _not_found(resource: str, name: str) -> _Answer:
    return _status(
        404, f'{resource} "{name}" not found', "NotFound", {"name": name, "kind": resource}
    )


def _refused(host: str, port: int | str, prefix: str) -> _Answer:
    return _status(500, f"{prefix}dial tcp {_join(host, port)}: connect: connection refused")


def _not_allowed() -> _Answer:
    return _status(
        405,
        "the server does not allow this method on the requested resource",
        "MethodNotAllowed",
        {},
    )


def _join(host: str, port: int | str) -> str:
    """Go's net.JoinHostPort."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _go_quote(text: str) -> str:
    """Go's %q of a string (close enough for ASCII: JSON's escaping)."""
    return json.dumps(text, ensure_ascii=False)


# ----------------------------------------------------------------- query parameters


def _first(query: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


def _bool(query: Mapping[str, Sequence[str]], name: str) -> bool:
    """A bool parameter as kube-apiserver converts one: absent, ``0`` or ``false`` (any
    case) is false, anything else true."""
    value = _first(query, name)
    return value is not None and value != "0" and value.lower() != "false"


_INT64 = re.compile(r"[+-]?[0-9]+")


def _int64(query: Mapping[str, Sequence[str]], name: str) -> int | None:
    """An optional int64 parameter, or the 400 Go's strconv.ParseInt error gives."""
    value = _first(query, name)
    if value is None:
        return None
    if not _INT64.fullmatch(value):
        raise _bad_request(f"strconv.ParseInt: parsing {_go_quote(value)}: invalid syntax")
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise _bad_request(f"strconv.ParseInt: parsing {_go_quote(value)}: value out of range")
    return number


def _ports(query: Mapping[str, Sequence[str]]) -> list[int]:
    """``ports``: repeated or comma separated, each a 16-bit unsigned number."""
    ports = []
    for value in query.get("ports", ()):
        for part in value.split(","):
            if not part.isascii() or not part.isdigit():
                raise _bad_request(
                    "cannot convert to []int32: strconv.ParseUint: parsing "
                    f"{_go_quote(part)}: invalid syntax"
                )
            if int(part) > 0xFFFF:
                raise _bad_request(
                    "cannot convert to []int32: strconv.ParseUint: parsing "
                    f"{_go_quote(part)}: value out of range"
                )
            ports.append(int(part))
    return ports


#: RFC 3339 as Go's time.Parse reads it, element by element: (layout, pattern).
_RFC3339: Final = (
    ("2006", r"[0-9]{4}"),
    ("-", "-"),
    ("01", r"[0-9]{2}"),
    ("-", "-"),
    ("02", r"[0-9]{2}"),
    ("T", "T"),
    ("15", r"[0-9]{2}"),
    (":", ":"),
    ("04", r"[0-9]{2}"),
    (":", ":"),
    ("05", r"[0-9]{2}(?:[.,][0-9]+)?"),
    ("Z07:00", r"Z|[+-][0-9]{2}:[0-9]{2}"),
)
_RFC3339_LAYOUT: Final = "2006-01-02T15:04:05Z07:00"
#: The layout elements Go checks the range of: (what the error names, lowest, highest).
_RANGES: Final = {
    "01": ("month", 1, 12),
    "02": ("day", 1, 31),
    "15": ("hour", 0, 23),
    "04": ("minute", 0, 59),
    "05": ("second", 0, 59),
}


def _since_time(query: Mapping[str, Sequence[str]]) -> datetime.datetime | None:
    """``sinceTime``: RFC 3339, or the 400 Go's time.Parse error gives."""
    value = _first(query, "sinceTime")
    if value is None or value in ("", "null"):
        return None
    rest = value

    def fail(detail: str) -> _Answer:
        return _bad_request(
            f"parsing time {_go_quote(value)} as {_go_quote(_RFC3339_LAYOUT)}: {detail}"
        )

    def after_value(what: str) -> _Answer:
        return _bad_request(f"parsing time {_go_quote(value)}: {what}")

    fields: list[str] = []
    for layout, pattern in _RFC3339:
        match = re.match(pattern, rest)
        if match is None:
            raise fail(f"cannot parse {_go_quote(rest)} as {_go_quote(layout)}")
        fields.append(match.group())
        rest = rest[match.end() :]
        # A number out of its range fails as soon as it is read, as Go's time.Parse does.
        limits = _RANGES.get(layout)
        if limits is not None and not limits[1] <= int(fields[-1][:2]) <= limits[2]:
            raise after_value(f"{limits[0]} out of range")
    if rest:
        raise after_value(f"extra text: {_go_quote(rest)}")
    year, month, day, hour, minute = (int(fields[i]) for i in (0, 2, 4, 6, 8))
    second_text = fields[10].replace(",", ".")
    second = int(second_text[:2])
    micro = int((second_text[3:] + "000000")[:6]) if len(second_text) > 2 else 0
    zone = fields[11]
    offset = datetime.timedelta(0)
    if zone != "Z":
        offset = datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        if zone[0] == "-":
            offset = -offset
    try:
        return datetime.datetime(
            year, month, day, hour, minute, second, micro, tzinfo=datetime.timezone(offset)
        )
    except ValueError:
        raise after_value("day out of range") from None


# ----------------------------------------------------------------------- the handler


class ConnectHandler:
    """Every method of the connect subresources (``route.subresource`` says which)."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        sub = route.subresource
        assert sub is not None and route.name is not None
        try:
            if ctx.request.method not in _METHODS[sub]:
                raise _not_allowed()
            resource = route.resource.resource
            if resource == "pods":
                if sub == "log":
                    return await self._log(ctx, route)
                if sub in ("exec", "attach"):
                    return await self._stream(ctx, route)
                if sub == "portforward":
                    return await self._port_forward(ctx, route)
                return await self._pod_proxy(route)
            if resource == "nodes":
                return await self._node_proxy(route)
            return await self._service_proxy(route)
        except _Answer as answer:
            return answer.response

    # ------------------------------------------------------------------ lookups

    def _core(self, resource: str) -> APIResource:
        return self.store.resource_by_name(f"{resource}.v1")

    async def _get(
        self, resource: str, name: str, namespace: str | None, named_as: str
    ) -> JSONDict:
        """The object, or kube-apiserver's 404 worded with the request's resource
        (``named_as``: a Pod's missing Node is ``pods "node" not found``)."""
        try:
            return await self.store.get(
                self._core(resource), name, namespace=namespace, metadata_only=False
            )
        except (NotFound, RESTMappingError):
            raise _not_found(named_as, name) from None

    async def _pod(self, route: ResourceRoute, name: str | None = None) -> JSONDict:
        return await self._get("pods", name or route.name or "", route.namespace, "pods")

    async def _kubelet(self, node_name: str, named_as: str) -> tuple[str, int]:
        """The node's kubelet address as kube-apiserver picks it: the first address of
        the preferred types, the kubelet port the Node reports (else the default)."""
        node = await self._get("nodes", node_name, None, named_as)
        status = node.get("status") or {}
        addresses = [a for a in status.get("addresses") or () if isinstance(a, dict)]
        for wanted in _ADDRESS_TYPES:
            for address in addresses:
                if address.get("type") == wanted:
                    host = str(address.get("address", ""))
                    break
            else:
                continue
            break
        else:
            known = " ".join(f"{{{a.get('type', '')} {a.get('address', '')}}}" for a in addresses)
            raise _status(500, f"no preferred addresses found; known addresses: [{known}]")
        endpoints = status.get("daemonEndpoints") or {}
        port = (endpoints.get("kubeletEndpoint") or {}).get("Port")
        if not isinstance(port, int) or port <= 0:
            port = _KUBELET_PORT
        return host, port

    # ----------------------------------------------------------- pods/log

    async def _log(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        query = ctx.request.query
        name = route.name or ""
        # Converted field by field as PodLogOptions is laid out; the first bad one answers.
        container = _first(query, "container") or ""
        follow, previous = _bool(query, "follow"), _bool(query, "previous")
        since_seconds = _int64(query, "sinceSeconds")
        since_time = _since_time(query)
        timestamps = _bool(query, "timestamps")
        tail_lines = _int64(query, "tailLines")
        limit_bytes = _int64(query, "limitBytes")
        causes: list[JSONDict] = []

        def invalid(field: str, value: int, message: str) -> None:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {value}: {message}",
                    "field": field,
                }
            )

        if tail_lines is not None and tail_lines < 0:
            invalid("tailLines", tail_lines, "must be greater than or equal to 0")
        if limit_bytes is not None and limit_bytes < 1:
            invalid("limitBytes", limit_bytes, "must be greater than 0")
        if since_seconds is not None and since_time is not None:
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "message": "Forbidden: at most one of `sinceTime` or `sinceSeconds` "
                    "may be specified",
                    "field": "[]",
                }
            )
        elif since_seconds is not None and since_seconds < 1:
            invalid("sinceSeconds", since_seconds, "must be greater than 0")
        if causes:
            listed = [f"{c['field']}: {c['message']}" for c in causes]
            summary = listed[0] if len(listed) == 1 else f"[{', '.join(listed)}]"
            raise _status(
                422,
                f'PodLogOptions "{name}" is invalid: {summary}',
                "Invalid",
                {"name": name, "kind": "PodLogOptions", "causes": causes},
            )
        pod = await self._pod(route)
        container = _container(pod, container)
        node = _node_name(pod)
        if not node:
            return _Response(204, b"", [])  # no node yet: nothing logged, nothing to stream
        host, port = await self._kubelet(node, "pods")
        params: list[tuple[str, str]] = []
        if follow:
            params.append(("follow", "true"))
        if previous:
            params.append(("previous", "true"))
        if timestamps:
            params.append(("timestamps", "true"))
        if since_seconds is not None:
            params.append(("sinceSeconds", str(since_seconds)))
        if since_time is not None:
            stamp = since_time.astimezone(datetime.timezone.utc).replace(microsecond=0)
            params.append(("sinceTime", stamp.strftime("%Y-%m-%dT%H:%M:%SZ")))
        if tail_lines is not None:
            params.append(("tailLines", str(tail_lines)))
        if limit_bytes is not None:
            params.append(("limitBytes", str(limit_bytes)))
        url = f"https://{_join(host, port)}/containerLogs/{route.namespace}/{pod_name(pod)}/"
        url += container
        if params:
            url += "?" + urlencode(sorted(params), quote_via=quote)
        raise _refused(host, port, f"Get {_go_quote(url)}: ")

    # ---------------------------------------------- pods/exec, attach, portforward

    async def _stream(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        pod = await self._pod(route)
        _container(pod, _first(ctx.request.query, "container") or "")
        return await self._upgrade(ctx, pod, route)

    async def _port_forward(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        _ports(ctx.request.query)  # (converted before the Pod is read)
        pod = await self._pod(route)
        return await self._upgrade(ctx, pod, route)

    async def _upgrade(self, ctx: RequestContext, pod: JSONDict, route: ResourceRoute) -> Reply:
        node = _node_name(pod)
        if not node:
            raise _bad_request(f"pod {route.name} does not have a host assigned")
        host, port = await self._kubelet(node, "pods")
        if "upgrade" not in ctx.request.headers.get("connection", "").lower():
            raise _bad_request("Upgrade request required")
        raise _refused(host, port, "error dialing backend: ")

    # ------------------------------------------------------------------ proxies

    async def _pod_proxy(self, route: ResourceRoute) -> Reply:
        scheme, name, port = _scheme_name_port(route.name or "", "pod")
        pod = await self._pod(route, name)
        if not port:
            for container in (pod.get("spec") or {}).get("containers") or ():
                ports = container.get("ports") or []
                if ports:
                    port = str(ports[0].get("containerPort", ""))
                    break
        ips = (pod.get("status") or {}).get("podIPs") or []
        ip = str(ips[0].get("ip", "")) if ips and isinstance(ips[0], dict) else ""
        if not _global_unicast(ip):
            raise _bad_request("address not allowed")
        raise _refused(ip, port or _default_port(scheme), "error trying to reach service: ")

    async def _node_proxy(self, route: ResourceRoute) -> Reply:
        _, name, port = _scheme_name_port(route.name or "", "node")
        host, kubelet_port = await self._kubelet(name, "nodes")
        if port and port != str(kubelet_port):
            if not _proxyable(host):
                raise _bad_request("address not allowed")
            raise _refused(host, port, "error trying to reach service: ")
        raise _refused(host, kubelet_port, "error trying to reach service: ")

    async def _service_proxy(self, route: ResourceRoute) -> Reply:
        full = route.name or ""
        _, name, port = _scheme_name_port(full, "service")
        namespace = route.namespace
        if re.fullmatch(r"[+-]?[0-9]+", port):
            service = await self._get("services", name, namespace, "services")
            for service_port in (service.get("spec") or {}).get("ports") or ():
                if service_port.get("port") == int(port):
                    port = str(service_port.get("name", ""))
                    break
            else:
                raise _status(
                    503,
                    f"no service port {int(port)} found for service {_go_quote(name)}",
                    "ServiceUnavailable",
                )
        endpoints = await self._get("endpoints", name, namespace, "services")
        subsets = [s for s in endpoints.get("subsets") or () if isinstance(s, dict)]
        if not subsets:
            raise _status(
                503, f"no endpoints available for service {_go_quote(name)}", "ServiceUnavailable"
            )
        for subset in subsets:
            addresses = subset.get("addresses") or []
            for subset_port in subset.get("ports") or ():
                if subset_port.get("name", "") != port:
                    continue
                for address in addresses:
                    if await self._valid_address(address, namespace):
                        raise _refused(
                            str(address.get("ip", "")),
                            subset_port.get("port", 0),
                            "error trying to reach service: ",
                        )
        raise _status(
            503, f"no endpoints available for service {_go_quote(full)}", "ServiceUnavailable"
        )

    async def _valid_address(self, address: Any, namespace: str | None) -> bool:
        """An endpoint address kube-apiserver proxies to: it names a Pod of the
        Service's namespace that has the address among its IPs."""
        if not isinstance(address, dict):
            return False
        target = address.get("targetRef")
        if not isinstance(target, dict) or target.get("namespace") != namespace:
            return False
        try:
            pod = await self.store.get(
                self._core("pods"),
                str(target.get("name", "")),
                namespace=namespace,
                metadata_only=False,
            )
        except NotFound:
            return False
        ips = (pod.get("status") or {}).get("podIPs") or []
        return any(isinstance(i, dict) and i.get("ip") == address.get("ip") for i in ips)


def pod_name(pod: JSONDict) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def _node_name(pod: JSONDict) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _container(pod: JSONDict, container: str) -> str:
    """The container a request names, or the Pod's only one; else the 400s."""
    spec = pod.get("spec") or {}
    name = pod_name(pod)
    # Init containers, containers, ephemeral containers: the order 1.30 lists them in.
    every = [
        str(c.get("name", ""))
        for key in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(key) or ()
        if isinstance(c, dict)
    ]
    if container:
        if container not in every:
            raise _bad_request(f"container {container} is not valid for pod {name}")
        return container
    containers = [c for c in spec.get("containers") or () if isinstance(c, dict)]
    if len(containers) == 1:
        return str(containers[0].get("name", ""))
    if not containers:
        raise _bad_request(f"a container name must be specified for pod {name}")
    raise _bad_request(
        f"a container name must be specified for pod {name}, choose one of: [{' '.join(every)}]"
    )


def _scheme_name_port(value: str, kind: str) -> tuple[str, str, str]:
    """``name``, ``name:port`` or ``scheme:name:port`` (scheme ``http`` or ``https``)."""
    parts = value.split(":")
    scheme, port = "", ""
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        name, port = parts
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        name = ""
    if not name or scheme not in ("", "http", "https"):
        raise _bad_request(f"invalid {kind} request {_go_quote(value)}")
    return scheme, name, port


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _global_unicast(text: str) -> bool:
    """Go's IP.IsGlobalUnicast (private ranges included)."""
    ip = _ip(text)
    if ip is None:
        return False
    if isinstance(ip, ipaddress.IPv4Address) and ip == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified)


def _proxyable(host: str) -> bool:
    """Whether kube-apiserver proxies to a host on another port than the kubelet's: not a
    loopback, link-local or (for a name) an address serve cannot resolve."""
    ip = _ip(host)
    if ip is None:
        return True
    return not (ip.is_loopback or ip.is_link_local)
