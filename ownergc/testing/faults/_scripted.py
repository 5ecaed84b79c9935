"""Faults a test asks for by name: the next matching calls fail or answer late,
and the open watch streams end now.

Random faults (:class:`~ownergc.testing.faults.FaultRates`) explore; these
pin one situation down (a 429 on the third DELETE, a watch dropped while the
collector is mid-cascade). They are kept apart from the random draws so a
scripted fault never shifts the seed's sequence.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypedDict

import anyio
import anyio.from_thread
import anyio.lowlevel

from ownergc.errors import APIError
from ownergc.protocols import APIResource

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: The calls a scripted fault can match: the ObjectStore verbs, plus the kube
#: verbs a server serving the wrapped store admits (:meth:`FaultyStore.admit`).
SCRIPTABLE_VERBS: Final = frozenset(
    {"discover", "list", "watch", "get", "create", "patch", "delete", "update", "deletecollection"}
)


class CallMatch(TypedDict, total=False):
    """Which calls a scripted fault hits: every call of its verb unless narrowed."""

    #: Only calls on this resource.
    resource: APIResource | None
    #: Only calls on the object of this name (for ``discover``: a group version).
    name: str | None
    #: How many matching calls it hits (default 1).
    times: int


@dataclass(slots=True)
class _Scripted:
    verb: str
    error: APIError | None
    delay: float
    resource: tuple[str, str] | None
    name: str | None
    remaining: int

    def matches(self, verb: str, resource: APIResource | None, name: str | None) -> bool:
        if self.verb != verb or (self.name is not None and self.name != name):
            return False
        return self.resource is None or (
            resource is not None and self.resource == (resource.group, resource.resource)
        )


class Script:
    """Scripted request faults, matched in the order they were added.

    Thread-safe: a test thread may script faults for a store served on
    another thread's event loop.
    """

    def __init__(self) -> None:
        self._entries: list[_Scripted] = []
        self._lock = threading.Lock()

    def add(
        self, verb: str, error: APIError | None, delay: float, **match: Unpack[CallMatch]
    ) -> None:
        times = match.get("times", 1)
        if verb not in SCRIPTABLE_VERBS:
            raise ValueError(f"unknown verb {verb!r}; expected one of {sorted(SCRIPTABLE_VERBS)}")
        if times < 1:
            raise ValueError("times must be at least 1")
        if delay < 0:
            raise ValueError("delay must not be negative")
        resource = match.get("resource")
        key = (resource.group, resource.resource) if resource is not None else None
        with self._lock:
            self._entries.append(_Scripted(verb, error, delay, key, match.get("name"), times))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    async def apply(self, verb: str, resource: APIResource | None, name: str | None) -> None:
        """Wait and/or raise as the first entry matching the call says (if any)."""
        with self._lock:
            entry = next((e for e in self._entries if e.matches(verb, resource, name)), None)
            if entry is None:
                return
            entry.remaining -= 1
            if entry.remaining <= 0:
                self._entries.remove(entry)
        if entry.delay > 0:
            await anyio.sleep(entry.delay)
        if entry.error is not None:
            raise entry.error


@dataclass(eq=False, slots=True)
class _OpenWatch:
    """One watch stream being served, and how to interrupt it from any thread."""

    token: anyio.lowlevel.EventLoopToken
    thread: int
    #: The scope around the stream's current wait for the next event (None between waits).
    scope: anyio.CancelScope | None = None
    #: Set when the stream must end; raised at its next step.
    ending: APIError | None = None


class OpenWatches:
    """The watch streams a :class:`FaultyStore` is serving, to end them on demand."""

    def __init__(self) -> None:
        self._open: set[_OpenWatch] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._open)

    @contextmanager
    def track(self) -> Iterator[_OpenWatch]:
        handle = _OpenWatch(anyio.lowlevel.current_token(), threading.get_ident())
        with self._lock:
            self._open.add(handle)
        try:
            yield handle
        finally:
            with self._lock:
                self._open.discard(handle)

    @staticmethod
    @contextmanager
    def waiting(handle: _OpenWatch) -> Iterator[None]:
        """Around one wait for the next event: :meth:`end_all` cancels it."""
        if handle.ending is not None:
            raise handle.ending
        with anyio.CancelScope() as scope:
            handle.scope = scope
            try:
                yield
            finally:
                handle.scope = None
        if handle.ending is not None:
            raise handle.ending

    def end_all(self, error: Callable[[], APIError]) -> int:
        """End every open stream with ``error()`` at its next step; returns how many.

        Callable from the streams' event loop or from any other thread (the
        cancellation is then run on the loop, where cancel scopes live).
        """
        here = threading.get_ident()
        with self._lock:
            handles = list(self._open)
        for handle in handles:
            handle.ending = error()

            def cancel(handle: _OpenWatch = handle) -> None:
                if handle.scope is not None:
                    handle.scope.cancel()

            if handle.thread == here:
                cancel()
            else:
                # RuntimeError: that event loop has stopped, the stream is gone anyway.
                with contextlib.suppress(RuntimeError):
                    anyio.from_thread.run_sync(cancel, token=handle.token)
        return len(handles)
