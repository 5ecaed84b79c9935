"""``FaultyStore``: the ObjectStore wrapper (see the package docs for the fault kinds)."""

from __future__ import annotations

import builtins
import random
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from ownergc.errors import (
    APIError,
    Conflict,
    ResourceExpired,
    ServerError,
    ServerTimeout,
    TooManyRequests,
    Unavailable,
)
from ownergc.protocols import (
    APIResource,
    DiscoveryResult,
    JSONDict,
    ObjectList,
    ObjectStore,
    PatchType,
    Preconditions,
    PropagationPolicy,
    WatchEvent,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

from ._kinds import TOUCH_ANNOTATION, FaultKind, FaultRates, InjectedFault
from ._scripted import CallMatch, OpenWatches, Script


@dataclass(slots=True)
class _Keys:
    counts: Counter[tuple[Any, ...]] = field(default_factory=Counter)


class FaultyStore:
    """An ObjectStore that forwards to ``inner`` and injects faults from ``seed``.

    Calls outside the ObjectStore Protocol (``resource_for``,
    ``create_object``, ... of the wrapped store) are forwarded untouched.
    ``enabled = False`` turns every random fault off (and back on when set
    again); :meth:`paused` does so for a ``with`` block. Scripted faults
    (:meth:`fail_next`, :meth:`delay_next`, :meth:`drop_watches`,
    :meth:`expire_watches`) fire either way.

    Served over HTTP (``KubeAPIServer(FaultyStore(mem))``), every request is
    first admitted here (:meth:`admit`: the scripted faults, turned into the
    HTTP status a client sees) and every watch stream is read through this
    wrapper, so a dropped watch closes the client's connection mid-stream.
    """

    def __init__(
        self,
        inner: ObjectStore,
        *,
        seed: int | str = 0,
        rates: FaultRates | None = None,
        enabled: bool = True,
    ) -> None:
        self.inner = inner
        self.seed = seed
        self.rates = rates if rates is not None else FaultRates()
        self.enabled = enabled
        #: Every injected fault, in the order they were injected.
        self.log: list[InjectedFault] = []
        self._keys = _Keys()
        self._script = Script()
        self._watches = OpenWatches()
        #: Watches from a resourceVersion below this get 410 (``expire_watches``).
        self._expired_before = 0
        #: The newest resourceVersion this wrapper passed on (lists and watch events).
        self._newest_rv = 0

    # -- bookkeeping -----------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """How many faults of each kind were injected."""
        return dict(Counter(f.kind.value for f in self.log))

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No faults inside the block."""
        before = self.enabled
        self.enabled = False
        try:
            yield
        finally:
            self.enabled = before

    def _rng(self, *key: Any) -> random.Random:
        n = self._keys.counts[key]
        self._keys.counts[key] = n + 1
        text = "|".join(str(part) for part in (self.seed, *key, n))
        return random.Random(text)

    def _record(
        self,
        kind: FaultKind,
        verb: str,
        resource: APIResource | None,
        namespace: str | None = None,
        name: str | None = None,
        *,
        applied: bool | None = None,
        detail: str = "",
    ) -> None:
        self.log.append(
            InjectedFault(
                len(self.log),
                kind,
                verb,
                str(resource) if resource is not None else "",
                namespace,
                name,
                applied,
                detail,
            )
        )

    def _hit(self, rng: random.Random, kind: FaultKind) -> bool:
        rate = self.rates.rate(kind)
        # Always draw, so one kind's rate does not shift the others' draws.
        return rng.random() < rate and self.enabled

    def fail_next(
        self, verb: str, error: APIError, *, delay: float = 0.0, **match: Unpack[CallMatch]
    ) -> None:
        """Answer the next matching calls with ``error`` (a scripted fault).

        ``verb`` is one of discover, list, watch, get, create, patch, delete
        (and update, deletecollection for requests a server admits);
        ``resource`` and ``name`` narrow the match (for ``discover``, ``name``
        is one group version such as ``"example.com/v1"``, as a client
        discovering group by group asks), ``times`` (default 1) says how many
        calls it hits. ``delay`` seconds pass first. The failing call is not
        forwarded, so it changes nothing.
        """
        self._script.add(verb, error, delay, **match)

    def delay_next(self, verb: str, seconds: float, **match: Unpack[CallMatch]) -> None:
        """The next matching calls wait ``seconds``, then go through (a slow answer)."""
        self._script.add(verb, None, seconds, **match)

    def clear_scripted(self) -> None:
        """Forget every scripted fault that has not fired yet."""
        self._script.clear()

    async def admit(
        self, verb: str, resource: APIResource | None = None, *, name: str | None = None
    ) -> None:
        """Apply the scripted faults of one request without making it.

        For a server that serves the wrapped store through calls of its own
        (the REST facade's update, subresources, DELETE reporting the last
        state): it admits each request here first, and raises what a client
        must see as the answer.
        """
        await self._script.apply(verb, resource, name)

    @property
    def open_watches(self) -> int:
        """How many watch streams are open through this wrapper right now."""
        return len(self._watches)

    def drop_watches(self) -> int:
        """End every open watch now, as a lost connection does; returns how many.

        Each stream raises :class:`~ownergc.errors.Unavailable` at its next
        step (a server serving it closes the connection mid-stream, without
        the terminating chunk). Callable from any thread.
        """
        return self._watches.end_all(
            lambda: Unavailable("injected: the watch connection was dropped")
        )

    def expire_watches(self, before: str | None = None) -> int:
        """Compaction: every open watch ends with 410 Expired, and so does every
        later watch from a resourceVersion older than ``before``; returns how many
        streams were open.

        ``before`` defaults to the wrapped store's current resourceVersion when
        it tells one (``InMemoryStore.resource_version``), else the newest one
        this wrapper passed on. Callers must relist. Callable from any thread.
        """
        if before is None:
            current = getattr(self.inner, "resource_version", None)
            before = str(current) if current is not None else str(self._newest_rv)
        self._expired_before = max(self._expired_before, int(before))
        return self._watches.end_all(lambda: self._expired("the watch was expired"))

    def _expired(self, why: str) -> ResourceExpired:
        return ResourceExpired(
            f"injected: too old resource version: {why} (resourceVersion {self._expired_before})",
            reason="Expired",
        )

    def _saw(self, resource_version: str | None) -> None:
        if resource_version and resource_version.isdigit():
            self._newest_rv = max(self._newest_rv, int(resource_version))

    async def _latency(
        self,
        rng: random.Random,
        verb: str,
        resource: APIResource | None,
        namespace: str | None,
        name: str | None,
    ) -> None:
        delay = rng.random() * self.rates.max_latency
        if self._hit(rng, FaultKind.LATENCY) and delay > 0:
            self._record(FaultKind.LATENCY, verb, resource, namespace, name, detail=f"{delay:.4f}s")
            await anyio.sleep(delay)

    async def _request_fault(
        self,
        rng: random.Random,
        verb: str,
        resource: APIResource | None,
        namespace: str | None,
        name: str | None,
    ) -> FaultKind | None:
        """Which request fault (if any) this call gets; sleeps the latency first.

        A scripted fault (:meth:`fail_next`, :meth:`delay_next`) for the call applies first.
        """
        await self._script.apply(verb, resource, name)
        await self._latency(rng, verb, resource, namespace, name)
        # One draw per kind, always in this order (see _hit).
        hits = [
            k
            for k in (
                FaultKind.TIMEOUT,
                FaultKind.TOO_MANY_REQUESTS,
                FaultKind.SERVER_ERROR,
                FaultKind.CONFLICT,
            )
            if self._hit(rng, k)
        ]
        if not hits:
            return None
        kind = hits[0]
        if kind is FaultKind.CONFLICT and verb not in ("patch", "delete"):
            return None
        return kind

    def _fail(
        self,
        kind: FaultKind,
        rng: random.Random,
        verb: str,
        resource: APIResource | None,
        namespace: str | None,
        name: str | None,
        *,
        applied: bool | None = None,
    ) -> APIError:
        """Record ``kind`` and build the error the caller gets."""
        where = f"{verb} {resource}" + (f" {namespace}/{name}" if name else "")
        error: APIError
        if kind is FaultKind.TOO_MANY_REQUESTS:
            error = TooManyRequests(
                f"injected: too many requests ({where})",
                reason="TooManyRequests",
                retry_after=self.rates.retry_after,
            )
        elif kind is FaultKind.SERVER_ERROR:
            error = ServerError(f"injected: internal error ({where})", reason="InternalError")
        else:
            if rng.random() < 0.5:
                error = ServerTimeout(
                    f"injected: the server was unable to return a response in the time "
                    f"allotted ({where})",
                    reason="Timeout",
                )
            else:
                error = Unavailable(f"injected: connection lost ({where})")
        self._record(
            kind,
            verb,
            resource,
            namespace,
            name,
            applied=applied,
            detail=type(error).__name__,
        )
        return error

    async def _touch(self, resource: APIResource, name: str, namespace: str | None) -> bool:
        """A concurrent writer modifies the object (resourceVersion moves)."""
        n = sum(1 for f in self.log if f.kind is FaultKind.CONFLICT)
        try:
            await self.inner.patch(
                resource,
                name,
                {"metadata": {"annotations": {TOUCH_ANNOTATION: str(n)}}},
                patch_type=PatchType.MERGE,
                namespace=namespace,
            )
        except APIError:
            return False
        return True

    # -- ObjectStore: reads ----------------------------------------------------

    async def _read_fault(
        self,
        verb: str,
        resource: APIResource | None,
        namespace: str | None,
        name: str | None,
        *key: Any,
    ) -> None:
        """A read fails whole or goes through: draw its faults (seeded by ``verb``
        and ``key``) and raise the one it gets."""
        rng = self._rng(verb, *key)
        fault = await self._request_fault(rng, verb, resource, namespace, name)
        if fault is not None:
            raise self._fail(fault, rng, verb, resource, namespace, name)

    async def discover(self) -> DiscoveryResult:
        await self._read_fault("discover", None, None, None)
        return await self.inner.discover()

    async def list(
        self,
        resource: APIResource,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
        consistent: bool = True,
    ) -> ObjectList:
        await self._read_fault("list", resource, namespace, None, str(resource), namespace)
        listed = await self.inner.list(
            resource, namespace=namespace, metadata_only=metadata_only, consistent=consistent
        )
        self._saw(listed.resource_version)
        return listed

    async def get(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
    ) -> JSONDict:
        await self._read_fault("get", resource, namespace, name, str(resource), namespace, name)
        return await self.inner.get(
            resource, name, namespace=namespace, metadata_only=metadata_only
        )

    # -- ObjectStore: writes ---------------------------------------------------

    async def create(
        self,
        resource: APIResource,
        obj: JSONDict,
        *,
        namespace: str | None = None,
    ) -> JSONDict:
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        name = name if isinstance(name, str) else None
        rng = self._rng("create", str(resource), namespace, name)
        fault = await self._request_fault(rng, "create", resource, namespace, name)
        if fault is FaultKind.TIMEOUT:
            applied = rng.random() < 0.5
            if applied:
                try:
                    await self.inner.create(resource, obj, namespace=namespace)
                except APIError:
                    applied = False
            raise self._fail(fault, rng, "create", resource, namespace, name, applied=applied)
        if fault is not None:
            raise self._fail(fault, rng, "create", resource, namespace, name, applied=False)
        result = await self.inner.create(resource, obj, namespace=namespace)
        await self._latency(rng, "create", resource, namespace, name)
        return result

    async def patch(
        self,
        resource: APIResource,
        name: str,
        patch: JSONDict | builtins.list[JSONDict],
        *,
        patch_type: PatchType,
        namespace: str | None = None,
    ) -> JSONDict:
        rng = self._rng("patch", str(resource), namespace, name)
        fault = await self._request_fault(rng, "patch", resource, namespace, name)
        if fault is FaultKind.CONFLICT:
            touched = await self._touch(resource, name, namespace)
            if _patch_has_rv_precondition(patch):
                # The touch made the precondition stale: the server answers 409 itself.
                self._record(
                    FaultKind.CONFLICT,
                    "patch",
                    resource,
                    namespace,
                    name,
                    applied=False,
                    detail=f"concurrent write (touched={touched}); stale resourceVersion",
                )
            else:
                self._record(
                    FaultKind.CONFLICT,
                    "patch",
                    resource,
                    namespace,
                    name,
                    applied=False,
                    detail=f"concurrent write (touched={touched}); patch retries exhausted",
                )
                raise Conflict(
                    f"injected: Operation cannot be fulfilled on {resource.resource} "
                    f'"{name}": the object has been modified; please apply your changes '
                    "to the latest version and try again",
                    reason="Conflict",
                )
        elif fault is FaultKind.TIMEOUT:
            applied = rng.random() < 0.5
            if applied:
                try:
                    await self.inner.patch(
                        resource, name, patch, patch_type=patch_type, namespace=namespace
                    )
                except APIError:
                    applied = False  # it failed anyway; the caller sees the timeout
            raise self._fail(fault, rng, "patch", resource, namespace, name, applied=applied)
        elif fault is not None:
            raise self._fail(fault, rng, "patch", resource, namespace, name, applied=False)
        result = await self.inner.patch(
            resource, name, patch, patch_type=patch_type, namespace=namespace
        )
        await self._latency(rng, "patch", resource, namespace, name)
        return result

    async def delete(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        preconditions: Preconditions | None = None,
    ) -> JSONDict | None:
        rng = self._rng("delete", str(resource), namespace, name)
        fault = await self._request_fault(rng, "delete", resource, namespace, name)
        if fault is FaultKind.CONFLICT:
            touched = await self._touch(resource, name, namespace)
            guarded = preconditions is not None and preconditions.resource_version is not None
            self._record(
                FaultKind.CONFLICT,
                "delete",
                resource,
                namespace,
                name,
                applied=None,
                detail=f"concurrent write (touched={touched}); "
                + ("stale resourceVersion precondition" if guarded else "no rv precondition"),
            )
        elif fault is FaultKind.TIMEOUT:
            applied = rng.random() < 0.5
            if applied:
                try:
                    await self.inner.delete(
                        resource,
                        name,
                        namespace=namespace,
                        propagation_policy=propagation_policy,
                        preconditions=preconditions,
                    )
                except APIError:
                    applied = False
            raise self._fail(fault, rng, "delete", resource, namespace, name, applied=applied)
        elif fault is not None:
            raise self._fail(fault, rng, "delete", resource, namespace, name, applied=False)
        result = await self.inner.delete(
            resource,
            name,
            namespace=namespace,
            propagation_policy=propagation_policy,
            preconditions=preconditions,
        )
        await self._latency(rng, "delete", resource, namespace, name)
        return result

    # -- ObjectStore: watch ----------------------------------------------------

    def watch(
        self,
        resource: APIResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        metadata_only: bool = True,
        timeout_seconds: float | None = None,
    ) -> AsyncIterator[WatchEvent]:
        return self._watch(resource, resource_version, namespace, metadata_only, timeout_seconds)

    async def _watch(
        self,
        resource: APIResource,
        resource_version: str,
        namespace: str | None,
        metadata_only: bool,
        timeout_seconds: float | None,
    ) -> AsyncGenerator[WatchEvent, None]:
        rng = self._rng("watch", str(resource), namespace, resource_version)
        fault = await self._request_fault(rng, "watch", resource, namespace, None)
        if fault is not None:
            raise self._fail(fault, rng, "watch", resource, namespace, None)
        if resource_version.isdigit() and 0 < int(resource_version) < self._expired_before:
            raise self._expired(f"{resource_version} is older than the last compaction")
        if self._hit(rng, FaultKind.EXPIRE_WATCH):
            self._record(FaultKind.EXPIRE_WATCH, "watch", resource, namespace, detail="at start")
            raise ResourceExpired(
                f"injected: too old resource version: {resource_version}", reason="Expired"
            )
        if self._hit(rng, FaultKind.DROP_WATCH):
            self._record(FaultKind.DROP_WATCH, "watch", resource, namespace, detail="at start")
            await anyio.lowlevel.checkpoint()
            return
        stream = self.inner.watch(
            resource,
            resource_version=resource_version,
            namespace=namespace,
            metadata_only=metadata_only,
            timeout_seconds=timeout_seconds,
        )
        delivered: builtins.list[WatchEvent] = []
        keep = max(self.rates.max_replay, 0)
        events = aiter(stream)
        try:
            with self._watches.track() as handle:
                while True:
                    try:
                        with self._watches.waiting(handle):
                            event = await anext(events)
                    except StopAsyncIteration:
                        return
                    self._saw(event.object.get("metadata", {}).get("resourceVersion"))
                    if self._hit(rng, FaultKind.REORDER_EVENTS):
                        lag = rng.random() * self.rates.max_lag
                        self._record(
                            FaultKind.REORDER_EVENTS,
                            "watch",
                            resource,
                            namespace,
                            detail=f"stream held {lag:.4f}s",
                        )
                        await anyio.sleep(lag)
                    yield event
                    if keep:
                        delivered.append(event)
                        if len(delivered) > keep:
                            del delivered[0]
                    if delivered and self._hit(rng, FaultKind.DUPLICATE_EVENTS):
                        count = rng.randint(1, len(delivered))
                        replay = delivered[-count:]
                        self._record(
                            FaultKind.DUPLICATE_EVENTS,
                            "watch",
                            resource,
                            namespace,
                            detail=f"replayed {count} event(s)",
                        )
                        for old in replay:
                            yield old
                    if self._hit(rng, FaultKind.EXPIRE_WATCH):
                        self._record(
                            FaultKind.EXPIRE_WATCH,
                            "watch",
                            resource,
                            namespace,
                            detail="mid-stream",
                        )
                        raise ResourceExpired(
                            "injected: too old resource version (the watcher fell behind)",
                            reason="Expired",
                        )
                    if self._hit(rng, FaultKind.DROP_WATCH):
                        self._record(
                            FaultKind.DROP_WATCH, "watch", resource, namespace, detail="mid-stream"
                        )
                        return
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()

    # -- everything else -------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes FaultyStore lacks: test conveniences of the
        # wrapped store (resource_for, create_object, snapshot, ...), unfaulted.
        if name in ("inner", "list_in_batches"):
            # list_in_batches would list past the faults: the wrapper lists with list().
            raise AttributeError(name)
        return getattr(self.inner, name)


def _patch_has_rv_precondition(patch: JSONDict | builtins.list[JSONDict]) -> bool:
    if isinstance(patch, dict):
        meta = patch.get("metadata")
        return isinstance(meta, dict) and meta.get("resourceVersion") is not None
    return any(
        isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" for op in patch
    )
