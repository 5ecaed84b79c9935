"""``FaultyStore``: an :class:`~ownergc.protocols.ObjectStore` wrapper that injects faults.

Wrap any ObjectStore (the in-memory store, a KubeStore, another wrapper) and
hand the wrapper to the code under test::

    from ownergc.testing.faults import FaultRates, FaultyStore

    faulty = FaultyStore(store, seed=1234, rates=FaultRates.uniform(0.1))
    gc = GarbageCollector(faulty)
    ...
    print(faulty.counts())          # what was injected, by kind
    faulty.enabled = False          # heal: from now on every call goes through

Every fault is one a real kube-apiserver (or the network in front of it) can
produce, with the side effects it would have:

============================  ===========================================================
kind                          what the caller sees, and what happened on the server
============================  ===========================================================
``conflict``                  A concurrent writer touched the target object just before
                              this write (a real merge patch adding the annotation
                              :data:`TOUCH_ANNOTATION`, so resourceVersion moves and a
                              MODIFIED event is sent). The write is then forwarded: if it
                              carries a resourceVersion precondition (DELETE
                              preconditions, ``metadata.resourceVersion`` in a patch) the
                              server answers 409 and nothing is applied. A PATCH without
                              one gets a 409 without being applied (kube-apiserver gives
                              up after 5 internal retries on contention). A DELETE
                              without one goes through: the apiserver retries those
                              internally until they succeed.
``too_many_requests``         429 with ``retry_after`` (max-in-flight / priority and
                              fairness rejected it before any handler ran). Not applied.
``server_error``              500. Not applied (an internal error before storage; the
                              "maybe applied" case is ``timeout``).
``timeout``                   :class:`~ownergc.errors.ServerTimeout` (504) or
                              :class:`~ownergc.errors.Unavailable` (connection lost). For
                              writes the request was applied or not, with equal
                              probability: the nasty real case where only a re-read tells.
``drop_watch``                A watch stream ends early (before its first event or after
                              any event), as when a connection or a load balancer drops.
``expire_watch``              A watch raises :class:`~ownergc.errors.ResourceExpired` at
                              its start or mid-stream (410: the client fell behind the
                              watch window / etcd compaction); the caller must relist.
``duplicate_events``          After an event, the stream replays the last 1..``max_replay``
                              events it delivered, in their order, then carries on. This
                              is what a client sees when its watch is re-established from
                              an older resourceVersion than the last one it processed
                              (informer restart, reconnect to a lagging apiserver). The
                              replayed events are genuine past states, in order; the
                              consumer's view goes back in time briefly and then catches
                              up again.
``reorder_events``            The stream holds its next event for up to ``max_lag``
                              seconds. Events of *one* watch are never reordered (a real
                              watch delivers one resource's changes in resourceVersion
                              order, and the ObjectStore contract promises it), but
                              separate watches are independent streams: a lagging stream
                              lets other resources' later events overtake its earlier
                              ones. That cross-resource reordering is the one real
                              clusters show (e.g. a Pod's ADDED before its owner
                              ReplicaSet's), so it is the one injected here.
``latency``                   ``anyio.sleep`` of up to ``max_latency`` before a request,
                              and for writes also after it was applied (before the
                              answer), which widens every read-decide-write race window.
============================  ===========================================================

What is deliberately *not* injected: reordering inside one watch stream,
dropping single events from a stream that goes on, or answering a write with
success without applying it. A real apiserver never does these, and no
client (client-go's informers included) could be correct if it did.

Determinism. Each decision draws from a :class:`random.Random` seeded with
the seed plus the call's key (verb, resource, namespace, name and how many
calls with that key came before; for watches also the resourceVersion it
starts from), so the faults a given request gets do not depend on how many
*other* requests ran before it. A run with the same seed and the same
sequence of calls per key therefore gets exactly the same faults. Task
scheduling is not deterministic, though (several workers, latency and
watches interleave differently from run to run), so a run with a concurrent
caller such as the GarbageCollector is reproducible in its faults per call,
not in its exact interleaving; the :attr:`FaultyStore.log` says what
happened in a given run.
"""

from __future__ import annotations

import builtins
import enum
import random
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final

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
from ownergc.nodegc import Container, ContainerStatus, FsStats, Image, PodSandbox
from ownergc.protocols import (
    APIResource,
    ContainerRuntime,
    DiscoveryResult,
    JSONDict,
    ObjectList,
    ObjectStore,
    PatchType,
    Preconditions,
    PropagationPolicy,
    WatchEvent,
)

__all__ = [
    "TOUCH_ANNOTATION",
    "FaultKind",
    "FaultRates",
    "FaultyRuntime",
    "FaultyStore",
    "InjectedFault",
]

#: The annotation a simulated concurrent writer sets (``conflict`` faults).
TOUCH_ANNOTATION: Final = "faults.ownergc.io/touched"

_WRITE_VERBS: Final = frozenset({"create", "patch", "delete"})


class FaultKind(str, enum.Enum):
    """The kinds of fault :class:`FaultyStore` injects (see the module docs)."""

    CONFLICT = "conflict"
    TOO_MANY_REQUESTS = "too_many_requests"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    DROP_WATCH = "drop_watch"
    EXPIRE_WATCH = "expire_watch"
    DUPLICATE_EVENTS = "duplicate_events"
    REORDER_EVENTS = "reorder_events"
    LATENCY = "latency"


@dataclass(frozen=True, slots=True)
class FaultRates:
    """Probability of each fault kind, per request (or per watch event for stream faults).

    Request faults are drawn in the order timeout, 429, 500, conflict; at
    most one of them hits a request. ``drop_watch`` and ``expire_watch``
    apply at a watch's start and after each event; ``duplicate_events`` and
    ``reorder_events`` after/before each event; ``latency`` to every request.
    """

    conflict: float = 0.0
    too_many_requests: float = 0.0
    server_error: float = 0.0
    timeout: float = 0.0
    drop_watch: float = 0.0
    expire_watch: float = 0.0
    duplicate_events: float = 0.0
    reorder_events: float = 0.0
    latency: float = 0.0
    #: Upper bound of one injected latency, seconds.
    max_latency: float = 0.005
    #: The Retry-After of injected 429s, seconds.
    retry_after: float = 0.01
    #: How many past events a duplicate replay re-sends at most.
    max_replay: int = 3
    #: Upper bound of one stream lag (``reorder_events``), seconds.
    max_lag: float = 0.02

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _RATE_NAMES and not 0.0 <= value <= 1.0:
                raise ValueError(f"{f.name} must be a probability in [0, 1], got {value!r}")
            if f.name not in _RATE_NAMES and value < 0:
                raise ValueError(f"{f.name} must not be negative, got {value!r}")

    @classmethod
    def uniform(cls, rate: float, **overrides: Any) -> FaultRates:
        """Every fault kind at ``rate`` (keyword arguments override single fields)."""
        rates: dict[str, Any] = {name: rate for name in _RATE_NAMES}
        return replace(cls(**rates), **overrides)

    @classmethod
    def only(cls, kind: FaultKind | str, rate: float, **overrides: Any) -> FaultRates:
        """Just one fault kind at ``rate``."""
        rates: dict[str, Any] = {FaultKind(kind).value: rate}
        return replace(cls(**rates), **overrides)

    def rate(self, kind: FaultKind) -> float:
        value: float = getattr(self, kind.value)
        return value


_RATE_NAMES: Final = frozenset(k.value for k in FaultKind)


@dataclass(frozen=True, slots=True)
class InjectedFault:
    """One fault that was injected.

    ``applied`` is set for write faults: whether the write took effect on
    the server despite the error (``None`` when not a write fault).
    """

    seq: int
    kind: FaultKind
    verb: str
    resource: str
    namespace: str | None = None
    name: str | None = None
    applied: bool | None = None
    detail: str = ""


@dataclass(slots=True)
class _Keys:
    counts: Counter[tuple[Any, ...]] = field(default_factory=Counter)


@dataclass
class _Scripted:
    """A fault a test asked for (:meth:`FaultyStore.fail_next`)."""

    verb: str
    error: APIError
    resource: tuple[str, str] | None
    name: str | None
    remaining: int


class FaultyStore:
    """An ObjectStore that forwards to ``inner`` and injects faults from ``seed``.

    Calls outside the ObjectStore Protocol (``resource_for``,
    ``create_object``, ... of the wrapped store) are forwarded untouched.
    ``enabled = False`` turns every fault off (and back on when set again);
    :meth:`paused` does so for a ``with`` block.
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
        self._scripted: list[_Scripted] = []

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
        self,
        verb: str,
        error: APIError,
        *,
        resource: APIResource | None = None,
        name: str | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` matching calls with ``error`` (a scripted fault).

        ``verb`` is one of discover, list, watch, get, create, patch, delete;
        ``resource`` and ``name`` narrow the match. The failing call is not
        forwarded, so it changes nothing. Scripted faults fire whether or not
        the random ones are ``enabled``.
        """
        if times < 1:
            raise ValueError("times must be at least 1")
        key = (resource.group, resource.resource) if resource is not None else None
        self._scripted.append(_Scripted(verb, error, key, name, times))

    def _scripted_fault(
        self, verb: str, resource: APIResource | None, name: str | None
    ) -> APIError | None:
        for entry in self._scripted:
            if entry.verb != verb or (entry.name is not None and entry.name != name):
                continue
            if entry.resource is not None and (
                resource is None or entry.resource != (resource.group, resource.resource)
            ):
                continue
            entry.remaining -= 1
            if entry.remaining <= 0:
                self._scripted.remove(entry)
            return entry.error
        return None

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

        A scripted fault (:meth:`fail_next`) for the call is raised at once.
        """
        scripted = self._scripted_fault(verb, resource, name)
        if scripted is not None:
            raise scripted
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

    async def discover(self) -> DiscoveryResult:
        rng = self._rng("discover")
        fault = await self._request_fault(rng, "discover", None, None, None)
        if fault is not None:
            raise self._fail(fault, rng, "discover", None, None, None)
        return await self.inner.discover()

    async def list(
        self,
        resource: APIResource,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
    ) -> ObjectList:
        rng = self._rng("list", str(resource), namespace)
        fault = await self._request_fault(rng, "list", resource, namespace, None)
        if fault is not None:
            raise self._fail(fault, rng, "list", resource, namespace, None)
        return await self.inner.list(resource, namespace=namespace, metadata_only=metadata_only)

    async def get(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
    ) -> JSONDict:
        rng = self._rng("get", str(resource), namespace, name)
        fault = await self._request_fault(rng, "get", resource, namespace, name)
        if fault is not None:
            raise self._fail(fault, rng, "get", resource, namespace, name)
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
        try:
            async for event in stream:
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
                        FaultKind.EXPIRE_WATCH, "watch", resource, namespace, detail="mid-stream"
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
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def _patch_has_rv_precondition(patch: JSONDict | builtins.list[JSONDict]) -> bool:
    if isinstance(patch, dict):
        meta = patch.get("metadata")
        return isinstance(meta, dict) and meta.get("resourceVersion") is not None
    return any(
        isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" for op in patch
    )


class FaultyRuntime:
    """A ContainerRuntime that forwards to ``inner`` and fails the calls it is told to.

    ``fail("remove_container", container_id, ServerError("boom"))`` makes that
    call raise from now on (what a runtime that cannot remove one container
    does); ``clear()`` heals it. Everything else of ``inner`` (an
    ``InMemoryRuntime``'s ``calls``, ``add_image``, ...) is forwarded.
    """

    def __init__(self, inner: ContainerRuntime) -> None:
        self.inner = inner
        self._failures: dict[tuple[str, str], BaseException] = {}

    def fail(self, operation: str, target_id: str, error: BaseException) -> None:
        """``operation`` (a ContainerRuntime method name) on ``target_id`` raises ``error``."""
        self._failures[(operation, target_id)] = error

    def clear(self) -> None:
        self._failures.clear()

    def _check(self, operation: str, target_id: str = "") -> None:
        error = self._failures.get((operation, target_id))
        if error is not None:
            raise error

    async def list_containers(self) -> Sequence[Container]:
        self._check("list_containers")
        return await self.inner.list_containers()

    async def list_pod_sandboxes(self) -> Sequence[PodSandbox]:
        self._check("list_pod_sandboxes")
        return await self.inner.list_pod_sandboxes()

    async def container_status(self, container_id: str) -> ContainerStatus:
        self._check("container_status", container_id)
        return await self.inner.container_status(container_id)

    async def stop_container(self, container_id: str, timeout: int) -> None:
        self._check("stop_container", container_id)
        await self.inner.stop_container(container_id, timeout)

    async def remove_container(self, container_id: str) -> None:
        self._check("remove_container", container_id)
        await self.inner.remove_container(container_id)

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        self._check("stop_pod_sandbox", sandbox_id)
        await self.inner.stop_pod_sandbox(sandbox_id)

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        self._check("remove_pod_sandbox", sandbox_id)
        await self.inner.remove_pod_sandbox(sandbox_id)

    async def list_images(self) -> Sequence[Image]:
        self._check("list_images")
        return await self.inner.list_images()

    async def image_status(self, ref: str) -> Image | None:
        self._check("image_status", ref)
        return await self.inner.image_status(ref)

    async def remove_image(self, image_id: str) -> None:
        self._check("remove_image", image_id)
        await self.inner.remove_image(image_id)

    async def image_fs_stats(self) -> FsStats:
        self._check("image_fs_stats")
        return await self.inner.image_fs_stats()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
