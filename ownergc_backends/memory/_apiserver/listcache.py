"""``resourceVersion=0`` lists answered as kube-apiserver's watch cache answers them.

A reflector (client-go's, and the collector's) starts with a list at
``resourceVersion=0``: "anything at least as new as what you have". The
apiserver serves it from its watch cache in one response, whatever the
``limit`` (before 1.33 the cache cannot page; the limit is ignored), which is
why a controller's start-up on a big cluster costs one round trip, not one per
page. This facade does the same and keeps the encoded answer per collection
and form, valid while the store's resourceVersion has not moved: a reflector
restarting (or a benchmark starting many) against an unchanged store pays for
the rendering and encoding once.

Lists without ``resourceVersion`` (consistent reads, kubectl's), with an
``Exact`` one, with another version and a ``limit`` (which 1.24 sends to etcd)
and continuations keep their pages of ``limit``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Final

from ownergc._kit.http import Request

__all__ = ["CachedLists", "from_watch_cache"]

#: Answers kept: a controller lists each resource it watches once per start.
_ENTRIES: Final = 16


def from_watch_cache(request: Request) -> bool:
    """Whether kube-apiserver (1.24) would answer this list from its watch cache, unpaged.

    A version was named and the match is not ``Exact``, without a continue token
    (a continuation is always a page of a consistent snapshot): ``0`` whatever the
    ``limit``, another version (a reflector's relist: "at least as new as what I
    saw") only without one. The facade's store is always current, so "at least as
    new" is the newest state.
    """
    version = request.param("resourceVersion")
    if not version or request.param("continue"):
        return False
    if request.param("resourceVersionMatch") == "Exact":
        return False
    return version == "0" or not request.param("limit")


class CachedLists:
    """Encoded list answers by (collection, form, selectors), each valid at one
    store resourceVersion; the least recently used goes first past ``size``."""

    def __init__(self, size: int = _ENTRIES) -> None:
        self._size = size
        self._entries: OrderedDict[Hashable, tuple[str, bytes]] = OrderedDict()

    def get(self, key: Hashable, resource_version: str) -> bytes | None:
        """The body kept for ``key`` if the store is still at the resourceVersion it was
        encoded at; a stale one is dropped (its bytes can be large)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] != resource_version:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: Hashable, resource_version: str, body: bytes) -> None:
        self._entries[key] = (resource_version, body)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
