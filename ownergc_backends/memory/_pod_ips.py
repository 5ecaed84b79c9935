"""A Pod's ``status.podIP`` and ``status.podIPs``: made to agree on every write, and
checked on a write of ``/status``, as kube-apiserver 1.20 and 1.30 do (recorded from
1.20 in tests/data/real-apiserver-1.20/pod-ips.json).

kube-apiserver's internal Pod has ``podIPs`` alone: reading a v1 Pod fills it from
``podIP`` (which wins where the two disagree), writing one out sets ``podIP`` to its
first address. So a ``status.podIP=...`` field selector (which reads ``podIPs[0]``)
selects by the address a client reads back as ``podIP``."""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._validation import FieldError, GoValue

__all__ = ["normalise_pod_ips", "validate_pod_ips"]

_NOT_AN_IP: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_DOTTED: Final = re.compile(r"^(\d+)\.(\d+)\.(\d+)\.(\d+)$")


def normalise_pod_ips(status: JSONDict) -> None:
    """A Pod status's ``podIP`` and ``podIPs`` made to agree, in place, as kube-apiserver
    does when it reads a v1 Pod (its internal Pod has ``podIPs`` alone) and writes it
    back out (``podIP`` is ``podIPs[0]``):

    * ``podIP`` alone: ``podIPs`` becomes ``[{"ip": podIP}]``;
    * both, ``podIPs[0]`` another address: ``podIP`` wins, ``podIPs`` becomes
      ``[{"ip": podIP}]`` (a second family's address is dropped too);
    * ``podIPs`` (alone, or after the above): ``podIP`` is its first address;
    * neither (or empty ones): both left out, as the server omits them.

    Entries that are not ``{"ip": ...}`` objects are left for validation to refuse."""
    ip = status.get("podIP")
    ips = status.get("podIPs")
    if ip is not None and not isinstance(ip, str):
        return
    if ips is not None and not isinstance(ips, list):
        return
    first = ips[0] if ips else None
    if first is not None and not isinstance(first, dict):
        return
    if ip and (first is None or first.get("ip") != ip):
        status["podIPs"] = ips = [{"ip": ip}]
        first = ips[0]
    if first is not None:
        status["podIP"] = first.get("ip", "")
        if not status["podIP"]:
            del status["podIP"]
    else:
        status.pop("podIP", None)
        status.pop("podIPs", None)


def _family(text: str) -> int | None:
    """4 or 6 for an IP address as kube-apiserver 1.30 parses it (IPv4 parts may have
    leading zeros; an IPv4-mapped IPv6 address is IPv4; no zone), else None."""
    if "%" in text:
        return None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        dotted = _DOTTED.match(text)
        if dotted and all(int(part) <= 255 for part in dotted.groups()):
            return 4
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return 4
    return address.version


def _go_pod_ip(entry: Any) -> str:
    ip = entry.get("ip", "") if isinstance(entry, dict) else ""
    return f'core.PodIP{{IP:"{ip}"}}'


def validate_pod_ips(status: Any) -> list[FieldError]:
    """A ``/status`` write's ``podIPs`` (after :func:`normalise_pod_ips`): each a valid
    IP address, and more than one only as one IPv4 and one IPv6, none repeated."""
    if not isinstance(status, dict) or not isinstance(status.get("podIPs"), list):
        return []
    entries: list[Any] = status["podIPs"]
    texts = [str(e.get("ip", "")) if isinstance(e, dict) else "" for e in entries]
    errors: list[FieldError] = []
    families = [_family(text) for text in texts]
    for index, (text, family) in enumerate(zip(texts, families, strict=True)):
        if family is None:
            errors.append(
                FieldError(f"status.podIPs[{index}]", "FieldValueInvalid", _NOT_AN_IP, text)
            )
    if len(entries) > 1 and None not in families:
        if set(families) != {4, 6} or len(entries) > 2:
            shown = "[]core.PodIP{" + ", ".join(_go_pod_ip(e) for e in entries) + "}"
            errors.append(
                FieldError(
                    "status.podIPs",
                    "FieldValueInvalid",
                    "may specify no more than one IP for each IP family",
                    GoValue(shown),
                )
            )
        seen: set[str] = set()
        for index, (entry, text) in enumerate(zip(entries, texts, strict=True)):
            if text in seen:
                errors.append(
                    FieldError(f"status.podIPs[{index}]", "FieldValueDuplicate", _go_pod_ip(entry))
                )
            seen.add(text)
    return errors
