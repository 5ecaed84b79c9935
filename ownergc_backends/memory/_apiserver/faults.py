"""The fault gate: where a wrapper of the served store (``FaultyStore``) admits requests.

Not admission control (see :mod:`.admission`): this is the test seam through
which scripted faults (a 429 with Retry-After, a slow answer, a dropped
watch) reach clients as kube-apiserver would send them. The router calls the
gate once per request, after the path resolved and before any handler runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from ownergc.protocols import APIResource, ObjectStore, WatchEvent

from ..store import InMemoryStore

__all__ = [
    "OpenGate",
    "RequestGate",
    "StoreWrapper",
    "WrapperGate",
    "gate_for",
    "memory_store_behind",
]


@runtime_checkable
class StoreWrapper(Protocol):
    """A wrapper of the served store, such as ``ownergc.testing.faults.FaultyStore``.

    The facade serves the :class:`InMemoryStore` behind ``inner`` (following
    nested wrappers), admits each request through :meth:`admit` (which may
    wait, or raise the error the client then gets) and reads every watch
    through the wrapper. That is how tests inject HTTP faults without the
    facade having fault hooks of its own.
    """

    inner: ObjectStore

    async def admit(
        self, verb: str, resource: APIResource | None = None, *, name: str | None = None
    ) -> None: ...

    def watch(
        self,
        resource: APIResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        metadata_only: bool = True,
        timeout_seconds: float | None = None,
    ) -> AsyncIterator[WatchEvent]: ...


def memory_store_behind(served: InMemoryStore | StoreWrapper) -> InMemoryStore:
    """The :class:`InMemoryStore` a facade serves, unwrapping wrappers."""
    store: object = served
    while not isinstance(store, InMemoryStore):
        inner = getattr(store, "inner", None)
        if inner is None:
            raise TypeError(
                "KubeAPIServer serves an InMemoryStore or a wrapper of one "
                f"(with .inner, e.g. FaultyStore), not {type(served).__name__}"
            )
        store = inner
    return store


class RequestGate(Protocol):
    """Lets a request through, delays it, or raises the APIError its client gets.

    ``verb`` is the request info's verb (``discover`` for a group version's
    resource list); ``name`` the object's name, or the group version for discovery.
    """

    async def admit(self, verb: str, resource: APIResource | None, name: str | None) -> None: ...


class OpenGate:
    """Every request passes (a plain in-memory store)."""

    async def admit(self, verb: str, resource: APIResource | None, name: str | None) -> None:
        return None


class WrapperGate:
    """Requests pass through a :class:`StoreWrapper`'s ``admit``."""

    def __init__(self, wrapper: StoreWrapper) -> None:
        self.wrapper = wrapper

    async def admit(self, verb: str, resource: APIResource | None, name: str | None) -> None:
        await self.wrapper.admit(verb, resource, name=name)


def gate_for(served: InMemoryStore | StoreWrapper) -> RequestGate:
    """The gate of what a facade serves: open for the store itself, else the wrapper's."""
    if isinstance(served, InMemoryStore):
        return OpenGate()
    return WrapperGate(served)
