"""A controller's list-then-watch loop over one resource.

The namespace controller and the namespace-defaults controller both keep a
resource in view the way an informer does: list it, watch from the list's
resourceVersion, start over with a list when the watch has expired (410),
back off on any other failure, and close every watch stream, even when
cancelled. They differ only in what they do with the objects.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NoReturn

import anyio

from ownergc.errors import ResourceExpired
from ownergc.protocols import APIResource, JSONDict, ObjectStore, WatchEventType

__all__ = ["list_and_watch"]


async def list_and_watch(
    store: ObjectStore,
    resource: Callable[[], Awaitable[APIResource]],
    *,
    metadata_only: bool,
    watch_timeout: float | None,
    on_list: Callable[[list[JSONDict]], None],
    on_event: Callable[[WatchEventType, Mapping[str, Any]], None],
    log: logging.Logger,
    what: str,
) -> NoReturn:
    """Run until cancelled: ``on_list`` gets each list's items, ``on_event`` each watch
    event; ``resource`` is asked again before each list (discovery may have moved)."""
    backoff = 0.1
    while True:
        try:
            served = await resource()
            listed = await store.list(served, metadata_only=metadata_only)
            on_list(listed.items)
            rv = listed.resource_version
            while True:
                stream = store.watch(
                    served,
                    resource_version=rv,
                    metadata_only=metadata_only,
                    timeout_seconds=watch_timeout,
                )
                try:
                    async for event in stream:
                        meta = event.object.get("metadata") or {}
                        rv = meta.get("resourceVersion") or rv
                        on_event(event.type, event.object)
                finally:
                    aclose = getattr(stream, "aclose", None)
                    if aclose is not None:
                        with anyio.CancelScope(shield=True):
                            await aclose()
                backoff = 0.1
        except ResourceExpired:
            continue
        except Exception as exc:
            log.warning("%s watch failed; retrying in %.1fs: %s", what, backoff, exc)
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, 10.0)
