"""A Service's cluster IP and node ports, as kube-apiserver's Service registry allocates them.

The registry, not defaulting, gives a Service its ``clusterIP`` (and
``clusterIPs``), a node port for every port of a NodePort or LoadBalancer
Service, and a ``healthCheckNodePort`` to a LoadBalancer whose
``externalTrafficPolicy`` is ``Local``; it refuses an address or port that is
taken or outside its range, and on an update keeps what was allocated when
the new object leaves it out (so ``kubectl apply`` of a manifest without a
``clusterIP`` keeps it) and refuses a changed cluster IP.

This server's ranges are kubeadm's and kind's defaults: services in
``10.96.0.0/12`` (its first address kept for the ``kubernetes`` Service),
node ports in 30000-32767. Addresses and ports are handed out lowest first
(a real server picks at random), and a dry run is answered with the address
it would get, nothing reserved.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Container
from typing import Any, Final

from ownergc.errors import ServerError
from ownergc.protocols import JSONDict

from ._validation import FieldError

__all__ = [
    "NODE_PORTS",
    "SERVICE_CIDR",
    "Held",
    "ServiceAllocations",
    "allocate",
]

SERVICE_CIDR: Final = ipaddress.IPv4Network("10.96.0.0/12")
NODE_PORTS: Final = range(30000, 32768)
#: The network's address, and the first host address (the ``kubernetes`` Service's).
_RESERVED: Final = 2
_FIRST_IP: Final = int(SERVICE_CIDR.network_address) + _RESERVED
#: (the broadcast address, never given out)
_END_IP: Final = int(SERVICE_CIDR.broadcast_address)


def _held(service: JSONDict) -> tuple[list[str], list[int]]:
    """The cluster IPs and node ports (and health-check node port) ``service`` holds."""
    spec = service.get("spec")
    if not isinstance(spec, dict):
        return [], []
    ips = [
        ip
        for ip in spec.get("clusterIPs") or [spec.get("clusterIP")]
        if isinstance(ip, str) and ip not in ("", "None")
    ]
    ports = [
        port["nodePort"]
        for port in spec.get("ports") or []
        if isinstance(port, dict) and isinstance(port.get("nodePort"), int)
    ]
    if isinstance(spec.get("healthCheckNodePort"), int):
        ports.append(spec["healthCheckNodePort"])
    return ips, ports


class ServiceAllocations:
    """What the stored Services hold, kept up to date by every store and remove.

    So that a Service's write asks "is this address taken?" and "which is the
    lowest free one?" without reading every stored Service (which made loading
    a cluster's Services quadratic: 10 ms a create at 4,000 Services).
    Counts, not sets: a Service loaded as written may share an address.
    """

    __slots__ = ("_ips", "_lowest_free", "_lowest_free_port", "_ports")

    def __init__(self) -> None:
        self._ips: dict[str, int] = {}
        self._ports: dict[int, int] = {}
        #: No address (node port) below this one is free: where the search for one starts.
        self._lowest_free = _FIRST_IP
        self._lowest_free_port = NODE_PORTS.start

    def add(self, service: JSONDict) -> None:
        ips, ports = _held(service)
        for ip in ips:
            self._ips[ip] = self._ips.get(ip, 0) + 1
        for port in ports:
            self._ports[port] = self._ports.get(port, 0) + 1

    def remove(self, service: JSONDict) -> None:
        ips, ports = _held(service)
        for ip in ips:
            left = self._ips.get(ip, 0) - 1
            if left > 0:
                self._ips[ip] = left
                continue
            self._ips.pop(ip, None)
            value = _ip_value(ip)
            if value is not None and value < self._lowest_free:
                self._lowest_free = value
        for port in ports:
            left = self._ports.get(port, 0) - 1
            if left > 0:
                self._ports[port] = left
                continue
            self._ports.pop(port, None)
            self._lowest_free_port = min(self._lowest_free_port, port)

    def held_by_others(self, service: JSONDict | None) -> tuple[Held, Held]:
        """The addresses and node ports held by the stored Services other than
        ``service`` (the stored Service an update replaces, or None)."""
        own_ips, own_ports = _held(service) if service is not None else ([], [])
        return Held(self, self._ips, own_ips), Held(self, self._ports, own_ports)

    def lowest_free_ip(self, held: Held) -> str | None:
        """The lowest address not in ``held``, searched from where none below is free."""
        value = self._lowest_free
        while value < _END_IP:
            candidate = str(ipaddress.IPv4Address(value))
            if candidate not in held:
                return candidate
            if value == self._lowest_free and candidate in self._ips:
                self._lowest_free = value + 1
            value += 1
        return None

    def lowest_free_port(self, held: Held, *also: Container[int]) -> int | None:
        """The lowest node port neither in ``held`` nor in ``also``, likewise."""
        port = self._lowest_free_port
        while port < NODE_PORTS.stop:
            if port not in held and not any(port in taken for taken in also):
                return port
            if port == self._lowest_free_port and port in self._ports:
                self._lowest_free_port = port + 1
            port += 1
        return None


class Held:
    """What all stored Services but one hold, of addresses or of node ports (see
    :meth:`ServiceAllocations.held_by_others`), as ``allocate`` asks about them."""

    __slots__ = ("_counts", "_own", "allocations")

    def __init__(
        self, allocations: ServiceAllocations, counts: dict[Any, int], own: list[Any]
    ) -> None:
        self.allocations = allocations
        self._counts = counts
        self._own = own

    def __contains__(self, value: object) -> bool:
        return self._counts.get(value, 0) > self._own.count(value)


def _ip_value(ip: str) -> int | None:
    try:
        return int(ipaddress.IPv4Address(ip))
    except ValueError:
        return None


def _free_ip(used: Container[str]) -> str | None:
    if isinstance(used, Held):
        return used.allocations.lowest_free_ip(used)
    for value in range(_FIRST_IP, _END_IP):
        candidate = str(ipaddress.IPv4Address(value))
        if candidate not in used:
            return candidate
    return None


def _free_port(used: Container[int], *also: Container[int]) -> int | None:
    if isinstance(used, Held):
        return used.allocations.lowest_free_port(used, *also)
    every = (used, *also)
    return next((port for port in NODE_PORTS if not any(port in held for held in every)), None)


def _check_ip(ip: Any, used: Container[str]) -> list[FieldError]:
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return []  # (the format is validation's)
    if address not in SERVICE_CIDR:
        detail = (
            "failed to allocate IP "
            f"{ip}: the provided IP ({ip}) is not in the valid range. "
            f"The range of valid IPs is {SERVICE_CIDR}"
        )
        return [FieldError("spec.clusterIPs", "FieldValueInvalid", detail, [ip])]
    if ip in used:
        return [
            FieldError(
                "spec.clusterIPs",
                "FieldValueInvalid",
                f"failed to allocate IP {ip}: provided IP is already allocated",
                [ip],
            )
        ]
    return []


def _full(what: str) -> ServerError:
    """A full range: the registry's internal error, not the client's."""
    return ServerError(
        f"Internal error occurred: failed to allocate {what}: range is full",
        reason="InternalError",
    )


#: The types whose node ports an update keeps (even a load balancer's whose
#: ``allocateLoadBalancerNodePorts`` is false: it keeps those it had).
_WITH_NODE_PORTS = ("NodePort", "LoadBalancer")


def _needs_node_ports(spec: JSONDict) -> bool:
    kind = spec.get("type")
    return kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False
    )


def _keep_node_ports(spec: JSONDict, old: JSONDict) -> None:
    """An update's ports without a node port keep the one the stored Service's port of
    the same *name* had (so a manifest re-sent as written keeps its ports, even with
    another port number), unless the update gives that node port to another port."""
    old_by_name: dict[Any, Any] = {}
    old_given: set[Any] = set()
    for port in old.get("ports") or []:
        if isinstance(port, dict):
            old_by_name[port.get("name", "")] = port.get("nodePort")
            old_given.add(port.get("nodePort"))
    ports = [port for port in spec.get("ports") or [] if isinstance(port, dict)]
    given_again = old_given & {port.get("nodePort") for port in ports}
    for port in ports:
        if port.get("nodePort") in (None, 0):
            kept = old_by_name.get(port.get("name", ""))
            if isinstance(kept, int) and kept and kept not in given_again:
                port["nodePort"] = kept


def allocate(
    spec: JSONDict,
    used_ips: Container[str],
    used_ports: Container[int],
    old_spec: JSONDict | None = None,
) -> list[FieldError]:
    """Allocate in place what ``spec`` (a Service's, defaulted) is missing, given what
    the other Services hold; ``old_spec``: the stored Service's, on an update.
    Returns the registry's refusals."""
    errors: list[FieldError] = []
    kind = spec.get("type")
    if kind == "ExternalName":
        return errors
    old = old_spec or {}
    cluster_ip = spec.get("clusterIP")
    old_ip = old.get("clusterIP")
    if old_spec is not None and old_ip not in (None, "") and old.get("type") != "ExternalName":
        if cluster_ip in (None, ""):
            spec["clusterIP"] = old_ip
            spec["clusterIPs"] = list(old.get("clusterIPs") or [old_ip])
        elif cluster_ip != old_ip:
            return [
                FieldError(
                    "spec.clusterIPs[0]",
                    "FieldValueInvalid",
                    "may not change once set",
                    spec.get("clusterIPs") or [cluster_ip],
                )
            ]
    elif cluster_ip in (None, ""):
        free = _free_ip(used_ips)
        if free is None:
            raise _full("a serviceIP")
        spec["clusterIP"] = free
        spec["clusterIPs"] = [free]
    elif cluster_ip != "None":
        errors += _check_ip(cluster_ip, used_ips)
    #: the node ports this Service has been given so far (besides ``used_ports``)
    taken: set[int] = set()
    old_ports = {
        p["nodePort"]
        for p in old.get("ports") or []
        if isinstance(p, dict) and isinstance(p.get("nodePort"), int)
    }
    needs_ports = _needs_node_ports(spec)
    if kind in _WITH_NODE_PORTS and old.get("type") in _WITH_NODE_PORTS:
        _keep_node_ports(spec, old)
    #: One node port per port number (TCP and UDP 53 share theirs), as the registry keys them.
    by_number: dict[Any, int] = {}
    for index, port in enumerate(spec.get("ports") or []):
        if not isinstance(port, dict):
            continue
        node_port = port.get("nodePort")
        where = f"spec.ports[{index}].nodePort"
        if not needs_ports:
            if node_port not in (None, 0) and kind == "ClusterIP":
                errors.append(
                    FieldError(
                        where, "FieldValueForbidden", "may not be used when `type` is 'ClusterIP'"
                    )
                )
            continue
        if node_port in (None, 0):
            node_port = by_number.get(port.get("port"))
            if node_port is None:
                # (the stored Service's ports are still held while it is updated: a
                # port given up by name gets another number)
                node_port = _free_port(used_ports, taken, old_ports)
            if node_port is None:
                raise _full("a nodePort")
            port["nodePort"] = node_port
        elif isinstance(node_port, int):
            previously_ours = node_port in old_ports
            if node_port not in NODE_PORTS:
                detail = (
                    f"provided port is not in the valid range. The range of valid ports is "
                    f"{NODE_PORTS.start}-{NODE_PORTS.stop - 1}"
                )
                errors.append(FieldError(where, "FieldValueInvalid", detail, node_port))
                continue
            shared = by_number.get(port.get("port")) == node_port
            if (node_port in taken or node_port in used_ports) and not (previously_ours or shared):
                errors.append(
                    FieldError(
                        where, "FieldValueInvalid", "provided port is already allocated", node_port
                    )
                )
                continue
        taken.add(node_port)
        by_number.setdefault(port.get("port"), node_port)
    if (
        kind == "LoadBalancer"
        and spec.get("externalTrafficPolicy") == "Local"
        and spec.get("healthCheckNodePort") in (None, 0)
    ):
        kept = old.get("healthCheckNodePort")
        if isinstance(kept, int) and kept not in taken and kept not in used_ports:
            health: int | None = kept
        else:
            health = _free_port(used_ports, taken)
        if health is None:
            raise _full("a HealthCheck NodePort")
        spec["healthCheckNodePort"] = health
    return errors
