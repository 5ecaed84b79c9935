"""``limit`` / ``continue`` for the REST facade: a long list in consistent pages.

kube-apiserver serves the pages of one list from the etcd revision of the
first page, so a client paging through sees one snapshot. The in-memory store
keeps no history, so the facade keeps the rest of the list itself, as of the
first page, behind an opaque token; a token that is too old (or was evicted)
is answered with 410 Expired, as the apiserver answers a compacted revision.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ownergc.errors import BadRequest, ResourceExpired
from ownergc.protocols import JSONDict

__all__ = ["ContinuePages", "limit_of"]

#: kube-apiserver's message for an expired continue token.
_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter."
)


@dataclass(slots=True)
class _Rest:
    items: list[JSONDict]
    resource_version: str
    collection: str
    expires: float


class ContinuePages:
    """The rest of each paged list, kept for ``ttl`` seconds (at most ``capacity`` lists)."""

    def __init__(
        self,
        *,
        ttl: float = 300.0,
        capacity: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.capacity = capacity
        self._clock = clock
        self._rests: OrderedDict[str, _Rest] = OrderedDict()

    def save(self, rest: list[JSONDict], resource_version: str, collection: str) -> str:
        """Keep ``rest`` and return the continue token that names it."""
        key = uuid.uuid4().hex
        self._rests[key] = _Rest(rest, resource_version, collection, self._clock() + self.ttl)
        while len(self._rests) > self.capacity:
            self._rests.popitem(last=False)
        raw = json.dumps({"rv": resource_version, "id": key}).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def resume(self, token: str, collection: str) -> tuple[list[JSONDict], str]:
        """The items after the page ``token`` ended, and the list's resourceVersion."""
        try:
            padded = token + "=" * (-len(token) % 4)
            decoded = json.loads(base64.urlsafe_b64decode(padded))
            key = str(decoded["id"])
        except (ValueError, KeyError, TypeError, binascii.Error):
            raise BadRequest(f"continue key is not valid: {token!r}", reason="BadRequest") from None
        rest = self._rests.pop(key, None)
        if rest is None or rest.expires < self._clock():
            raise ResourceExpired(_EXPIRED, reason="Expired")
        if rest.collection != collection:
            raise BadRequest(
                "continue key is not valid: it belongs to another list", reason="BadRequest"
            )
        return rest.items, rest.resource_version


def limit_of(value: str | None) -> int:
    """``limit``: 0 (or absent) for no limit; a negative or non-number limit is a 400."""
    if not value:
        return 0
    try:
        limit = int(value)
    except ValueError:
        raise BadRequest(f"invalid limit {value!r}", reason="BadRequest") from None
    return max(limit, 0)
