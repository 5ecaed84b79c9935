"""The store's storage: objects per resource, the one resourceVersion counter, each
resource's event log (what watches read), and an index of the uids in use.

It knows nothing of kinds beyond the :class:`ResourceSpec` a bucket is made
with, and nothing of the apiserver's rules: it stores what it is given, gives
each write the next resourceVersion and records the watch event. Everything
here runs under :attr:`ObjectStorage.lock`; writers hold it through
:meth:`ObjectStorage.write`, which wakes the watchers once it is released.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from ownergc.errors import InvalidObject, ResourceExpired, ServerTimeout
from ownergc.protocols import JSONDict, WatchEventType

from ._objects import (
    _Event,
    _meta,
    _ordered,
    _Storage,
    _WatchStart,
    _with_rv,
)
from ._resources import ResourceSpec
from ._service_ips import ServiceAllocations

__all__ = ["ObjectStorage", "holds_services"]


class ObjectStorage:
    """Buckets of objects keyed by (group, resource), with their event logs.

    ``event_window`` is how many watch events each bucket's log keeps. The
    uid index counts the stored objects carrying each uid, kept by every
    store and remove, so "is this uid taken?" costs no walk of the objects
    (it made loading a cluster object by object quadratic, issue 22).
    """

    def __init__(self, *, event_window: int = 100_000) -> None:
        if event_window < 1:
            raise InvalidObject("event_window must be at least 1")
        self.lock = threading.Lock()
        self.window = event_window
        self._rv = 0
        self.buckets: dict[tuple[str, str], _Storage] = {}
        self._uids: dict[str, int] = {}
        #: What the stored Services hold (cluster IPs, node ports), kept likewise.
        self.service_allocations = ServiceAllocations()

    @property
    def rv(self) -> int:
        """The newest resourceVersion given out (read it under the lock for a consistent view)."""
        return self._rv

    @contextmanager
    def write(self) -> Iterator[list[anyio.Event]]:
        """The critical section of a write; watchers are woken after the lock is released."""
        wake: list[anyio.Event] = []
        try:
            with self.lock:
                yield wake
        finally:
            for event in wake:
                event.set()

    def next_rv(self) -> int:
        self._rv += 1
        return self._rv

    # -- buckets

    def add_bucket(self, spec: ResourceSpec) -> _Storage:
        """A new empty bucket for ``spec``'s group/resource (replacing none)."""
        key = (spec.group, spec.resource)
        if key in self.buckets:
            raise InvalidObject(f"{spec.group}/{spec.resource} already has a bucket")
        bucket = _Storage(spec, self.window)
        self.buckets[key] = bucket
        return bucket

    def drop_bucket(self, bucket: _Storage, wake: list[anyio.Event]) -> None:
        """Forget an emptied bucket; its watches end once they have read its log."""
        if bucket.count():
            raise InvalidObject(f"{bucket.group_resource} still holds objects")
        self.buckets.pop((bucket.spec.group, bucket.spec.resource), None)
        bucket.log.closed = True
        bucket.log.take_waiter(wake)

    # -- objects

    def store_locked(
        self, bucket: _Storage, kind: WatchEventType, obj: JSONDict, wake: list[anyio.Event]
    ) -> JSONDict:
        """Store ``obj`` (taking ownership of it) with the next resourceVersion and log
        the ``kind`` event."""
        rv = self.next_rv()
        meta = _meta(obj)
        meta["resourceVersion"] = str(rv)
        obj["metadata"] = _ordered(meta)
        namespace, name = meta.get("namespace", ""), meta["name"]
        before = bucket.lookup(namespace, name)
        services = holds_services(bucket)
        if before is not None:
            self._forget_uid(_meta(before).get("uid"))
            if services:
                self.service_allocations.remove(before)
        self._remember_uid(meta.get("uid"))
        if services:
            self.service_allocations.add(obj)
        bucket.put(namespace, name, obj)
        self.emit(bucket, kind, obj, wake)
        return obj

    def remove_locked(
        self, bucket: _Storage, namespace: str, name: str, last: JSONDict, wake: list[anyio.Event]
    ) -> JSONDict:
        """Remove an object; returns ``last`` with the deletion's resourceVersion, which
        is what the DELETED event carries."""
        rv = self.next_rv()
        stored = bucket.lookup(namespace, name)
        bucket.remove(namespace, name)
        if stored is not None:
            self._forget_uid(_meta(stored).get("uid"))
            if holds_services(bucket):
                self.service_allocations.remove(stored)
        gone = _with_rv(last, rv)
        self.emit(bucket, "DELETED", gone, wake)
        return gone

    def emit(
        self, bucket: _Storage, kind: WatchEventType, obj: JSONDict, wake: list[anyio.Event]
    ) -> None:
        meta = _meta(obj)
        bucket.log.append(
            _Event(int(meta["resourceVersion"]), kind, meta.get("namespace", ""), obj)
        )
        bucket.log.take_waiter(wake)

    def has_uid(self, uid: object) -> bool:
        """Is an object with this uid stored (in any bucket)?"""
        return isinstance(uid, str) and uid in self._uids

    def count(self) -> int:
        return sum(b.count() for b in self.buckets.values())

    def _remember_uid(self, uid: object) -> None:
        if isinstance(uid, str):
            self._uids[uid] = self._uids.get(uid, 0) + 1

    def _forget_uid(self, uid: object) -> None:
        if isinstance(uid, str):
            left = self._uids.get(uid, 0) - 1
            if left > 0:
                self._uids[uid] = left
            else:
                self._uids.pop(uid, None)

    # -- the watch cache

    def watch_start(self, bucket: _Storage, namespace: str | None, since: int) -> _WatchStart:
        """Where a watch from resourceVersion ``since`` starts (0: every current object
        first); call under the lock."""
        log = bucket.log
        if since == 0:
            return _WatchStart(bucket, namespace, list(bucket.iter_sorted(namespace)), log.end_seq)
        if since > self._rv:
            raise ServerTimeout(
                f"Timeout: Too large resource version: {since}, current: {self._rv}",
                reason="Timeout",
            )
        if since < log.evicted_rv:
            raise ResourceExpired(
                f"too old resource version: {since} ({log.evicted_rv + 1})",
                reason="Expired",
            )
        return _WatchStart(bucket, namespace, [], log.seq_after(since))

    @staticmethod
    def events_locked(
        bucket: _Storage, seq: int, limit: int, served: bool
    ) -> tuple[list[_Event], anyio.Event | None, bool]:
        """Up to ``limit`` events from sequence ``seq``: ``(events, waiter, ended)``.

        With no event to read, ``waiter`` is set by the next write, unless the
        stream has ``ended`` (the log was closed, or the resource is no longer
        ``served``). Raises :class:`ResourceExpired` when ``seq`` was evicted.
        """
        log = bucket.log
        if seq < log.first_seq:
            raise ResourceExpired(
                f"too old resource version: the watcher fell behind the event window "
                f"({log.evicted_rv + 1})",
                reason="Expired",
            )
        batch = log.read(seq, limit)
        if batch:
            return batch, None, False
        if log.closed or not served:
            return batch, None, True
        if log.waiter is None:
            log.waiter = anyio.Event()
        return batch, log.waiter, False


def holds_services(bucket: _Storage) -> bool:
    """Is this the core Services' bucket (whose holdings ``service_allocations`` keeps)?"""
    return bucket.spec.group == "" and bucket.spec.resource == "services"
