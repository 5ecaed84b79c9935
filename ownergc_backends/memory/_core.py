"""The store's state and the plumbing every write goes through: the lock, the resourceVersion
counter, storing and removing objects with their watch events, errors, the request log.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import anyio
import anyio.lowlevel

from ownergc.errors import (
    BadRequest,
    Conflict,
    Invalid,
    NotFound,
)
from ownergc.protocols import (
    APIResource,
    JSONDict,
    WatchEventType,
)

from ._objects import (
    _PARTIAL_API_VERSION,
    _PARTIAL_KIND,
    RequestRecord,
    _Event,
    _invalid,
    _meta,
    _ordered,
    _Storage,
)
from ._patch import (
    PatchError,
    check_json,
    copy_json,
)
from ._validation import (
    FieldError,
    MetadataTypeError,
    decode_metadata,
)

__all__ = ["StoreCore"]


class StoreCore:
    """State and write plumbing of :class:`~ownergc_backends.memory.InMemoryStore`
    (attributes are set by its ``__init__``)."""

    _clock: Callable[[], datetime]
    _window: int
    _uid_factory: Callable[[], str]
    _lock: threading.Lock
    _rv: int
    _storages: dict[tuple[str, str], _Storage]
    _by_gvr: dict[tuple[str, str, str], _Storage]
    _by_gvk: dict[tuple[str, str, str], _Storage]
    _discovery_failures: dict[str, str]
    _requests: deque[RequestRecord]
    _request_counts: Counter[tuple[str, str]]
    _terminating_namespaces: bool
    _crd_served: dict[tuple[str, str], str]
    #: CRDs whose cleanup is running (their objects' removals must not re-enter it).
    _crd_cleaning: set[str]

    @contextmanager
    def _write(self) -> Iterator[list[anyio.Event]]:
        """The critical section of a write; watchers are woken after the lock is released."""
        wake: list[anyio.Event] = []
        try:
            with self._lock:
                yield wake
        finally:
            for event in wake:
                event.set()

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _emit(
        self, storage: _Storage, kind: WatchEventType, obj: JSONDict, wake: list[anyio.Event]
    ) -> None:
        meta = _meta(obj)
        storage.log.append(
            _Event(int(meta["resourceVersion"]), kind, meta.get("namespace", ""), obj)
        )
        storage.log.take_waiter(wake)

    def _store_locked(
        self,
        storage: _Storage,
        kind: WatchEventType,
        obj: JSONDict,
        wake: list[anyio.Event],
    ) -> JSONDict:
        rv = self._next_rv()
        meta = _meta(obj)
        meta["resourceVersion"] = str(rv)
        obj["metadata"] = _ordered(meta)
        storage.put(meta.get("namespace", ""), meta["name"], obj)
        self._emit(storage, kind, obj, wake)
        return obj

    @staticmethod
    def _render(storage: _Storage, obj: JSONDict, version: str, metadata_only: bool) -> JSONDict:
        if metadata_only:
            return {
                "apiVersion": _PARTIAL_API_VERSION,
                "kind": _PARTIAL_KIND,
                "metadata": copy_json(obj["metadata"]),
            }
        spec = storage.spec
        out: JSONDict = {
            "apiVersion": f"{spec.group}/{version}" if spec.group else version,
            "kind": spec.kind,
        }
        for key, value in obj.items():
            if key not in ("apiVersion", "kind"):
                out[key] = copy_json(value)
        return out

    def _not_found(self, storage: _Storage, name: str) -> NotFound:
        return NotFound(
            f'{storage.group_resource} "{name}" not found',
            reason="NotFound",
            details={"name": name, "group": storage.spec.group, "kind": storage.spec.resource},
        )

    def _conflict(self, storage: _Storage, name: str, why: str) -> Conflict:
        return Conflict(
            f'Operation cannot be fulfilled on {storage.group_resource} "{name}": {why}',
            reason="Conflict",
            details={"name": name, "group": storage.spec.group, "kind": storage.spec.resource},
        )

    def _invalid(self, storage: _Storage, name: str, errors: list[FieldError]) -> Invalid:
        return _invalid(storage.spec.kind, name, errors, storage.spec.group)

    @staticmethod
    def _json(value: Any, what: str) -> Any:
        """``value`` if it is plain JSON, else the 400 the apiserver answers."""
        try:
            return check_json(value)
        except PatchError as exc:
            raise BadRequest(
                f"{what} is not valid JSON: {exc.message}", reason="BadRequest"
            ) from None

    @classmethod
    def _body(cls, value: Any, what: str) -> JSONDict:
        body = cls._json(value, what)
        if not isinstance(body, dict):
            raise BadRequest(f"{what} must be a JSON object, got {value!r}", reason="BadRequest")
        return body

    @staticmethod
    def _decode_meta(raw: Any) -> JSONDict:
        try:
            return decode_metadata(raw)
        except MetadataTypeError as exc:
            raise BadRequest(f"unable to decode metadata: {exc}", reason="BadRequest") from None

    @staticmethod
    def _check_type(storage: _Storage, body: JSONDict) -> None:
        spec = storage.spec
        kind = body.get("kind")
        if kind not in (None, "", spec.kind):
            raise BadRequest(
                f"the object kind {kind!r} does not match the resource "
                f"{storage.group_resource} (kind {spec.kind!r})",
                reason="BadRequest",
            )
        api_version = body.get("apiVersion")
        served = {f"{spec.group}/{v}" if spec.group else v for v in spec.versions}
        if api_version not in (None, "") and api_version not in served:
            raise BadRequest(
                f"apiVersion {api_version!r} is not served for {storage.group_resource} "
                f"(served: {sorted(served)})",
                reason="BadRequest",
            )

    @property
    def requests(self) -> tuple[RequestRecord, ...]:
        """The most recent API calls, oldest first."""
        with self._lock:
            return tuple(self._requests)

    def request_count(
        self, verb: str | None = None, resource: APIResource | str | None = None
    ) -> int:
        """How many calls were made, optionally only of one verb and/or one resource
        (an :class:`APIResource` or its ``group_resource`` string, e.g. ``"deployments.apps"``)."""
        wanted = resource.group_resource if isinstance(resource, APIResource) else resource
        with self._lock:
            return sum(
                n
                for (v, gr), n in self._request_counts.items()
                if (verb is None or v == verb) and (wanted is None or gr == wanted)
            )

    def clear_requests(self) -> None:
        """Forget the request log and counters."""
        with self._lock:
            self._requests.clear()
            self._request_counts.clear()

    def _begin(
        self,
        verb: str,
        resource: APIResource | None,
        namespace: str | None = None,
        name: str | None = None,
    ) -> None:
        """Record a call in the request log."""
        with self._lock:
            self._requests.append(RequestRecord(verb, resource, namespace, name))
            self._request_counts[(verb, resource.group_resource if resource else "")] += 1
