"""RESTMapper: (apiVersion, kind) -> the resource to call, from the last discovery.

Shared as upstream shares its REST mapper: the graph builder resets it on
every discovery, the workers and the operations only read it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ownergc.errors import RESTMappingError
from ownergc.protocols import APIResource

__all__ = ["RESTMapper"]


class RESTMapper:
    """(apiVersion, kind) -> APIResource from the last discovery (all served versions)."""

    def __init__(self) -> None:
        self._by_gvk: dict[tuple[str, str], APIResource] = {}

    def reset(self, resources: Iterable[APIResource]) -> None:
        by_gvk: dict[tuple[str, str], APIResource] = {}
        for res in resources:
            key = (res.api_version, res.kind)
            current = by_gvk.get(key)
            # Prefer the top-level resource; a kind can appear under several names.
            if current is None or (res.preferred and not current.preferred):
                by_gvk[key] = res
        self._by_gvk = by_gvk

    def add(self, resource: APIResource) -> None:
        self._by_gvk.setdefault((resource.api_version, resource.kind), resource)

    def resource_for(self, api_version: str, kind: str) -> APIResource:
        res = self._by_gvk.get((api_version, kind))
        if res is None:
            raise RESTMappingError(api_version, kind)
        return res
