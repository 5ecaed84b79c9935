"""Parse Kubernetes discovery documents into :class:`~ownergc.protocols.APIResource`.

Two shapes are understood:

* the legacy per-group-version documents: ``/api`` (``APIVersions``),
  ``/apis`` (``APIGroupList`` with preferred versions) and one
  ``APIResourceList`` per group version;
* aggregated discovery (``APIGroupDiscoveryList``, apidiscovery.k8s.io v2 and
  v2beta1, Kubernetes 1.26+): everything in two requests, which matters
  because the GC rediscovers every 30 s under the same QPS budget as its
  deletions. A version marked ``freshness: Stale`` (an aggregated API server
  that is down) is reported as failed, as client-go does.

Subresources (``pods/status``) are never returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ownergc.protocols import APIResource

__all__ = [
    "AGGREGATED_ACCEPT",
    "GroupVersion",
    "group_versions_from_api_versions",
    "group_versions_from_group_list",
    "is_aggregated",
    "parse_aggregated",
    "parse_resource_list",
]

#: Ask for aggregated discovery and fall back to the legacy documents.
AGGREGATED_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)


@dataclass(frozen=True, slots=True)
class GroupVersion:
    """A group version to fetch a resource list for."""

    group: str
    version: str
    preferred: bool

    @property
    def name(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def group_versions_from_api_versions(body: Mapping[str, Any]) -> list[GroupVersion]:
    """``/api`` (``APIVersions``): the core group; the first version is preferred."""
    versions = [v for v in body.get("versions") or [] if isinstance(v, str) and v]
    return [GroupVersion("", v, i == 0) for i, v in enumerate(versions)]


def group_versions_from_group_list(body: Mapping[str, Any]) -> list[GroupVersion]:
    """``/apis`` (``APIGroupList``): every version of every group, preferred flagged."""
    out: list[GroupVersion] = []
    for group in body.get("groups") or []:
        if not isinstance(group, Mapping):
            continue
        name = _str(group.get("name"))
        versions = [_version_of(v) for v in group.get("versions") or [] if isinstance(v, Mapping)]
        versions = [v for v in versions if v]
        preferred_entry = group.get("preferredVersion")
        preferred = _version_of(preferred_entry) if isinstance(preferred_entry, Mapping) else ""
        if not preferred and versions:
            preferred = versions[0]
        out.extend(GroupVersion(name, v, v == preferred) for v in versions)
    return out


def _version_of(entry: Mapping[str, Any]) -> str:
    """``version``, or the last part of ``groupVersion`` (servers fill in either)."""
    version = _str(entry.get("version"))
    if not version:
        gv = _str(entry.get("groupVersion"))
        version = gv.rsplit("/", 1)[-1] if gv else ""
    return version


def parse_resource_list(body: Mapping[str, Any], gv: GroupVersion) -> list[APIResource]:
    """An ``APIResourceList`` into APIResources (subresources dropped)."""
    out: list[APIResource] = []
    for entry in body.get("resources") or []:
        if not isinstance(entry, Mapping):
            continue
        name = _str(entry.get("name"))
        if not name or "/" in name:
            continue
        out.append(
            APIResource(
                group=gv.group,
                version=gv.version,
                resource=name,
                kind=_str(entry.get("kind")),
                namespaced=bool(entry.get("namespaced")),
                verbs=frozenset(v for v in entry.get("verbs") or [] if isinstance(v, str)),
                preferred=gv.preferred,
            )
        )
    return out


def is_aggregated(body: Mapping[str, Any]) -> bool:
    return body.get("kind") == "APIGroupDiscoveryList"


def parse_aggregated(
    bodies: Iterable[Mapping[str, Any]],
) -> tuple[list[APIResource], dict[str, str]]:
    """``APIGroupDiscoveryList`` documents (from ``/api`` and ``/apis``) into resources.

    Versions are listed in preference order; the first is the preferred one.
    """
    resources: list[APIResource] = []
    failed: dict[str, str] = {}
    for body in bodies:
        for item in body.get("items") or []:
            if not isinstance(item, Mapping):
                continue
            meta = item.get("metadata")
            group = _str(meta.get("name")) if isinstance(meta, Mapping) else ""
            versions = [v for v in item.get("versions") or [] if isinstance(v, Mapping)]
            for index, v in enumerate(versions):
                gv = GroupVersion(group, _str(v.get("version")), index == 0)
                if not gv.version:
                    continue
                if v.get("freshness") == "Stale":
                    failed[gv.name] = (
                        f"stale discovery information for {gv.name} "
                        "(its aggregated API server is not answering)"
                    )
                    continue
                for entry in v.get("resources") or []:
                    if not isinstance(entry, Mapping):
                        continue
                    name = _str(entry.get("resource"))
                    if not name or "/" in name:
                        continue
                    response_kind = entry.get("responseKind")
                    kind = (
                        _str(response_kind.get("kind"))
                        if isinstance(response_kind, Mapping)
                        else ""
                    )
                    resources.append(
                        APIResource(
                            group=group,
                            version=gv.version,
                            resource=name,
                            kind=kind,
                            namespaced=entry.get("scope") == "Namespaced",
                            verbs=frozenset(
                                x for x in entry.get("verbs") or [] if isinstance(x, str)
                            ),
                            preferred=gv.preferred,
                        )
                    )
    return resources, failed
