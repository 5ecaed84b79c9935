"""Request info: what a request asks for, read from its method, path and query alone.

Like k8s.io/apiserver's ``RequestInfo`` (read for structure only): resolved
once, before routing, so the request log, the fault gate and the router agree
on the verb and the resource without each parsing the path again. Pure: no
store, no registry (whether the resource exists is the router's question).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["RequestInfo", "request_info"]


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """The parts of a request path, and the kube verb (as kube-apiserver's audit log
    names it: ``get``, ``list``, ``watch``, ``create``, … and ``discovery`` /
    ``nonresource`` for paths outside resources)."""

    #: The path without trailing slashes (``/`` for the root).
    path: str
    segments: tuple[str, ...]
    verb: str
    #: ``api`` (the core group), ``apis`` (named groups) or ``""`` (a non-resource path).
    api_prefix: str = ""
    group: str = ""
    version: str = ""
    namespace: str | None = None
    #: The resource name in the path (``configmaps``), ``""`` for discovery paths.
    resource: str = ""
    name: str | None = None
    subresource: str | None = None
    #: The path segments after the group and version, as sent (the resolver
    #: refuses more than resource/name/subresource).
    parts: tuple[str, ...] = ()

    @property
    def is_resource_request(self) -> bool:
        """A path below a group version (a collection, an object, a subresource)."""
        return bool(self.parts)

    @property
    def resource_parts(self) -> tuple[str, ...]:
        """resource, name, subresource, … (the parts after the namespace)."""
        return self.parts[2:] if self.namespace is not None else self.parts

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def _verb(method: str, name: str | None, query: Mapping[str, Sequence[str]]) -> str:
    if method == "GET":
        if name is not None:
            return "get"
        watch = query.get("watch")
        return "watch" if watch and watch[0] in ("true", "1") else "list"
    if method == "DELETE":
        return "delete" if name is not None else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def request_info(method: str, path: str, query: Mapping[str, Sequence[str]]) -> RequestInfo:
    """Read ``path`` as kube-apiserver lays out its URLs."""
    normalized = path.rstrip("/") or "/"
    segments = tuple(s for s in normalized.split("/") if s)
    if not segments or segments[0] not in ("api", "apis"):
        return RequestInfo(normalized, segments, "nonresource")
    prefix = segments[0]
    if prefix == "api":
        group, version, depth = "", (segments[1] if len(segments) > 1 else ""), 2
    else:
        group = segments[1] if len(segments) > 1 else ""
        version = segments[2] if len(segments) > 2 else ""
        depth = 3
    if len(segments) <= depth:
        return RequestInfo(normalized, segments, "discovery", prefix, group, version)
    parts = segments[depth:]
    rest = parts
    namespace: str | None = None
    # /api/v1/namespaces/{name}/status and /finalize are subresources of a
    # namespace, not a collection inside one.
    if (
        rest[0] == "namespaces"
        and len(rest) >= 3
        and not (group == "" and len(rest) == 3 and rest[2] in ("status", "finalize"))
    ):
        namespace, rest = rest[1], rest[2:]
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) >= 3 else None
    return RequestInfo(
        normalized,
        segments,
        _verb(method, name, query),
        prefix,
        group,
        version,
        namespace,
        rest[0],
        name,
        subresource,
        parts,
    )
