"""The ownerReference admission check behind ``ownergc webhook``.

An ``admission.k8s.io/v1`` AdmissionReview in, the review with its response
out. A create or update that adds ownerReferences is checked against the
rules ``ownergc lint`` applies (:mod:`ownergc._core.ownerref_rules`) plus
what only the live cluster knows, through any
:class:`~ownergc.protocols.ObjectStore`:

* the owner's apiVersion/kind is served (discovery);
* a cluster-scoped object does not name a namespaced owner;
* an owner with the reference's uid exists *where the collector will look
  for it*: the dependent's namespace for a namespaced owner, cluster scope
  otherwise. Absent there but present with that uid in another namespace
  is the cross-namespace incident (the collector deletes the dependent).

Only references the request adds are checked (an update that leaves them
alone is admitted at once), so objects already in the cluster keep working.
Owners are looked up through :class:`OwnerCache`: time-bounded, with one
lookup in flight per owner however many requests ask (200 replicas of a
StatefulSet's pods cost one GET of the StatefulSet).

The webhook fails open: when the store cannot answer in time the request is
admitted with a warning saying what could not be checked (``fail_closed``
refuses instead). ``warn`` mode admits with admission warnings (kubectl prints
them); ``deny`` mode refuses with each rule and its fix.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from ownergc._core.ownerref_rules import (
    Violation,
    check_controllers,
    check_owner_kind,
    check_owner_namespace,
    check_owner_scope,
    check_owner_uid,
    check_reference_fields,
    dangling_owner,
)
from ownergc._kit.prometheus import TextWriter
from ownergc.errors import NotFound, OwnerGCError
from ownergc.protocols import APIResource, ObjectStore

__all__ = [
    "AdmissionChecker",
    "OwnerCache",
    "WebhookMetrics",
    "review_response",
]

log = logging.getLogger("ownergc.webhook")

Mode = Literal["warn", "deny"]

#: Upper bounds of the admission latency histogram, in seconds.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


@dataclass
class WebhookMetrics:
    """Counters and the latency histogram ``/metrics`` exposes."""

    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    violations: Counter[str] = field(default_factory=Counter)
    cache: Counter[str] = field(default_factory=Counter)
    lookups: Counter[str] = field(default_factory=Counter)
    buckets: list[int] = field(default_factory=lambda: [0] * len(LATENCY_BUCKETS))
    latency_count: int = 0
    latency_sum: float = 0.0

    def observe(self, seconds: float) -> None:
        self.latency_count += 1
        self.latency_sum += seconds
        for i, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                self.buckets[i] += 1

    def render(self, extra: Mapping[str, float] | None = None) -> str:
        w = TextWriter()
        w.declare(
            "ownergc_webhook_admission_requests_total",
            "counter",
            "AdmissionReviews answered, by operation and decision",
        )
        for (operation, decision), n in sorted(self.requests.items()):
            w.sample(
                "ownergc_webhook_admission_requests_total",
                n,
                {"operation": operation, "decision": decision},
            )
        w.declare(
            "ownergc_webhook_violations_total", "counter", "ownerReference rules broken, by rule"
        )
        for rule, n in sorted(self.violations.items()):
            w.sample("ownergc_webhook_violations_total", n, {"rule": rule})
        w.declare(
            "ownergc_webhook_owner_cache_total",
            "counter",
            "owner cache lookups: hit, miss (fetched), shared (waited for a fetch in flight) "
            "or stale (served the last answer while it is refreshed)",
        )
        for result, n in sorted(self.cache.items()):
            w.sample("ownergc_webhook_owner_cache_total", n, {"result": result})
        w.declare(
            "ownergc_webhook_store_requests_total",
            "counter",
            "requests sent to the apiserver, by verb (get, list, discover)",
        )
        for verb, n in sorted(self.lookups.items()):
            w.sample("ownergc_webhook_store_requests_total", n, {"verb": verb})
        w.declare(
            "ownergc_webhook_admission_duration_seconds",
            "histogram",
            "time to answer one AdmissionReview",
        )
        w.histogram(
            "ownergc_webhook_admission_duration_seconds",
            zip(LATENCY_BUCKETS, self.buckets, strict=True),
            self.latency_count,
            self.latency_sum,
            {},
        )
        for name, value in (extra or {}).items():
            w.declare(name, "gauge", name.replace("_", " "))
            w.sample(name, value)
        return w.text()


@dataclass
class _Entry:
    value: Any = None
    expires: float = -math.inf
    fetched: float = -math.inf
    pending: anyio.Event | None = None
    error: Exception | None = None
    cancelled: bool = False
    #: While a refresh is in flight: the previous (positive) answer.
    stale: Any = None


class OwnerCache:
    """Discovery and owners' metadata, cached with a TTL, one fetch in flight per key.

    Positive answers live ``ttl`` seconds; absences only ``negative_ttl`` (an
    owner created a moment ago must be seen). A cached uid that disagrees
    with a reference is re-read once it is ``negative_ttl`` old, so a
    recreated owner is noticed at once.
    """

    def __init__(
        self,
        store: ObjectStore,
        *,
        ttl: float = 30.0,
        negative_ttl: float = 1.0,
        discovery_ttl: float = 60.0,
        max_entries: int = 100_000,
        metrics: WebhookMetrics | None = None,
        clock: Callable[[], float] = anyio.current_time,
    ) -> None:
        self.store = store
        self.ttl = ttl
        self.negative_ttl = negative_ttl
        self.discovery_ttl = discovery_ttl
        self.max_entries = max_entries
        self.metrics = metrics or WebhookMetrics()
        self.clock = clock
        self._entries: dict[tuple[Any, ...], _Entry] = {}

    async def _cached(
        self,
        key: tuple[Any, ...],
        fetch: Callable[[], Awaitable[Any]],
        ttl_of: Callable[[Any], float],
        *,
        stale_after: float | None = None,
        deadline: float = math.inf,
    ) -> Any:
        while True:
            entry = self._entries.get(key)
            if entry is None or entry.pending is None:
                break
            if stale_after is None and entry.stale is not None:
                # Being refreshed: the last answer serves meanwhile (nobody waits on a
                # refresh but the request that started it).
                self.metrics.cache["stale"] += 1
                return entry.stale
            self.metrics.cache["shared"] += 1
            await entry.pending.wait()
            if entry.cancelled:
                continue  # the fetching request was cancelled: fetch again ourselves
            if entry.error is not None:
                raise entry.error
            return entry.value
        now = self.clock()
        fresh = entry is not None and entry.expires > now
        if fresh and stale_after is not None and entry is not None:
            fresh = now - entry.fetched < stale_after
        if fresh and entry is not None:
            self.metrics.cache["hit"] += 1
            return entry.value
        self.metrics.cache["miss"] += 1
        if len(self._entries) >= self.max_entries:
            self._evict(now)
        event = anyio.Event()
        new = _Entry(pending=event, stale=entry.value if entry is not None else None)
        self._entries[key] = new
        try:
            # Bounded by the asking request's deadline (waiters share the fetch).
            with anyio.fail_after(max(deadline - self.clock(), 0.0)):
                value = await fetch()
        except anyio.get_cancelled_exc_class():
            new.cancelled = True
            self._entries.pop(key, None)
            raise
        except Exception as exc:
            new.error = exc
            self._entries.pop(key, None)
            raise
        else:
            new.value = value
            new.stale = None
            new.fetched = self.clock()
            new.expires = new.fetched + ttl_of(value)
            return value
        finally:
            new.pending = None
            event.set()

    def _evict(self, now: float) -> None:
        expired = [k for k, e in self._entries.items() if e.pending is None and e.expires <= now]
        for k in expired:
            del self._entries[k]
        if len(self._entries) >= self.max_entries:  # still full: drop the oldest half
            done = sorted((e.fetched, k) for k, e in self._entries.items() if e.pending is None)
            for _, k in done[: len(done) // 2]:
                del self._entries[k]

    @property
    def discovered(self) -> bool:
        """Whether discovery has answered at least once (readiness)."""
        entry = self._entries.get(("discovery",))
        return entry is not None and entry.pending is None and entry.value is not None

    async def kinds(
        self, *, refresh: bool = False, deadline: float = math.inf
    ) -> dict[tuple[str, str], APIResource]:
        """(apiVersion, kind) → resource; ``refresh`` re-reads discovery at most once a second."""

        async def fetch() -> dict[tuple[str, str], APIResource]:
            self.metrics.lookups["discover"] += 1
            found = await self.store.discover()
            return {(r.api_version, r.kind): r for r in found.resources if "/" not in r.resource}

        value: dict[tuple[str, str], APIResource] = await self._cached(
            ("discovery",),
            fetch,
            lambda _: self.discovery_ttl,
            stale_after=self.negative_ttl if refresh else None,
            deadline=deadline,
        )
        return value

    async def owner(
        self,
        resource: APIResource,
        namespace: str | None,
        name: str,
        *,
        recheck: bool = False,
        deadline: float = math.inf,
    ) -> Mapping[str, Any] | None:
        """The owner's metadata where the collector looks, or None when it is absent."""

        async def fetch() -> Mapping[str, Any] | None:
            self.metrics.lookups["get"] += 1
            try:
                obj = await self.store.get(resource, name, namespace=namespace, metadata_only=True)
            except NotFound:
                return None
            meta = obj.get("metadata")
            return meta if isinstance(meta, Mapping) else {}

        value: Mapping[str, Any] | None = await self._cached(
            ("owner", resource.api_version, resource.kind, namespace, name),
            fetch,
            lambda v: self.ttl if v is not None else self.negative_ttl,
            stale_after=self.negative_ttl if recheck else None,
            deadline=deadline,
        )
        return value

    async def namespace_of_uid(
        self, resource: APIResource, uid: str, *, deadline: float = math.inf
    ) -> str | None:
        """Which namespace holds an object of ``resource`` with ``uid`` (one cached list).

        Only asked when the owner is not where the collector looks, to tell the
        cross-namespace incident from a missing owner. The list comes from the
        apiserver's watch cache (one answer, as the collector's monitors list): a
        consistent list of a big collection is hundreds of pages from etcd and
        took longer than the check's deadline on 100k ConfigMaps.
        """

        async def fetch() -> dict[str, str]:
            self.metrics.lookups["list"] += 1
            listed = await self.store.list(resource, metadata_only=True, consistent=False)
            out = {}
            for item in listed.items:
                meta = item.get("metadata") or {}
                if meta.get("uid") and meta.get("namespace"):
                    out[str(meta["uid"])] = str(meta["namespace"])
            return out

        key = ("uids", resource.api_version, resource.kind)
        index: dict[str, str] = await self._cached(
            key, fetch, lambda _: self.ttl, deadline=deadline
        )
        if uid not in index:  # an owner created since: re-list once the index is a second old
            recheck = self.negative_ttl
            index = await self._cached(
                key, fetch, lambda _: self.ttl, stale_after=recheck, deadline=deadline
            )
        return index.get(uid)


def _owner_label(resource: APIResource, namespace: str | None, name: str) -> str:
    return f"{resource.kind} {namespace + '/' if namespace else ''}{name}"


class AdmissionChecker:
    """Answers AdmissionReviews: the rules on every added ownerReference."""

    def __init__(
        self,
        cache: OwnerCache,
        *,
        mode: Mode = "warn",
        fail_closed: bool = False,
        timeout: float = 2.0,
    ) -> None:
        if mode not in ("warn", "deny"):
            raise ValueError(f"mode must be warn or deny, not {mode!r}")
        self.cache = cache
        self.mode = mode
        self.fail_closed = fail_closed
        self.timeout = timeout
        self.metrics = cache.metrics

    async def review(self, body: Any) -> dict[str, Any]:
        """The AdmissionReview to send back for ``body`` (a decoded AdmissionReview)."""
        start = anyio.current_time()
        request = body.get("request") if isinstance(body, Mapping) else None
        if not isinstance(request, Mapping) or not request.get("uid"):
            raise ValueError("not an admission.k8s.io/v1 AdmissionReview with a request.uid")
        operation = str(request.get("operation") or "")
        violations: list[Violation] = []
        failure: str | None = None
        # No cancel scope per review (they cost): every lookup that has to ask the
        # apiserver is bounded by this deadline instead; cache hits never wait.
        deadline = start + self.timeout
        try:
            violations = await self.check(request, deadline=deadline)
        except TimeoutError:
            failure = f"could not check ownerReferences within {self.timeout:g}s"
        except (OwnerGCError, OSError) as exc:
            failure = f"could not check ownerReferences: {exc}"
        if failure is not None:
            decision = "failed_closed" if self.fail_closed else "failed_open"
            log.warning("%s %s: %s", operation, _what(request), failure)
            answer = review_response(
                request,
                allowed=not self.fail_closed,
                warnings=[f"ownergc webhook {failure}"],
                message=f"ownergc webhook {failure} (failing closed)",
            )
        else:
            for v in violations:
                self.metrics.violations[v.rule] += 1
            lines = [f"[{v.rule}] {v.message}. Fix: {v.fix}." for v in violations]
            if not violations:
                decision = "allowed"
            elif self.mode == "warn":
                decision = "warned"
            else:
                decision = "denied"
            if violations and log.isEnabledFor(logging.INFO):  # formatted only when logged
                log.info("%s %s %s: %s", decision, operation, _what(request), "; ".join(lines))
            answer = review_response(
                request,
                allowed=decision != "denied",
                warnings=[f"ownerReferences: {line}" for line in lines]
                if decision == "warned"
                else [],
                message="ownerReferences the garbage collector would mishandle: " + " ".join(lines),
            )
        self.metrics.requests[(operation or "UNKNOWN", decision)] += 1
        self.metrics.observe(anyio.current_time() - start)
        return answer

    async def check(
        self, request: Mapping[str, Any], *, deadline: float = math.inf
    ) -> list[Violation]:
        """Every rule the references a create or update adds break (empty: admit)."""
        if request.get("operation") not in ("CREATE", "UPDATE"):
            return []
        obj = request.get("object")
        if not isinstance(obj, Mapping):
            return []
        refs = _refs(obj)
        if not refs:
            return []
        old = request.get("oldObject")
        old_refs = _refs(old) if isinstance(old, Mapping) else []
        added = [r for r in refs if r not in old_refs]
        if not added:
            return []
        namespace = str(request.get("namespace") or "") or None
        out: list[Violation] = []
        controllers = check_controllers(refs)
        if controllers is not None:
            out.append(controllers)
        for ref in added:
            violation = check_reference_fields(ref)
            if violation is None:
                violation = await self._check_live(ref, namespace, deadline)
            if violation is not None:
                out.append(violation)
        return out

    async def _check_live(
        self, ref: Mapping[str, Any], namespace: str | None, deadline: float
    ) -> Violation | None:
        key = (str(ref["apiVersion"]), str(ref["kind"]))
        kinds = await self.cache.kinds(deadline=deadline)
        resource = kinds.get(key)
        if resource is None:  # a CRD installed a moment ago?
            resource = (await self.cache.kinds(refresh=True, deadline=deadline)).get(key)
        if resource is None:
            return check_owner_kind(ref, None)
        scope = check_owner_scope(ref, resource.namespaced, namespace is not None)
        if scope is not None:
            return scope
        owner_ns = namespace if resource.namespaced else None
        name = str(ref["name"])
        meta = await self.cache.owner(resource, owner_ns, name, deadline=deadline)
        if meta is not None and meta.get("uid") != ref.get("uid"):
            meta = await self.cache.owner(resource, owner_ns, name, recheck=True, deadline=deadline)
        if meta is not None and meta.get("uid") == ref.get("uid"):
            return None
        if resource.namespaced and namespace is not None:
            # The uid in another namespace is the root cause, whatever is here.
            elsewhere = await self.cache.namespace_of_uid(
                resource, str(ref["uid"]), deadline=deadline
            )
            if elsewhere is not None and elsewhere != namespace:
                return check_owner_namespace(
                    _owner_label(resource, elsewhere, name), elsewhere, namespace
                )
        if meta is not None:
            return check_owner_uid(
                _owner_label(resource, owner_ns, name), str(meta.get("uid")), ref
            )
        return dangling_owner(ref, complete=True)


def _refs(obj: Mapping[str, Any]) -> list[Any]:
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    return list(refs) if isinstance(refs, list) else []


def _what(request: Mapping[str, Any]) -> str:
    kind = request.get("kind") or {}
    ns = request.get("namespace")
    name = request.get("name") or (request.get("object") or {}).get("metadata", {}).get(
        "generateName", ""
    )
    what = kind.get("kind") if isinstance(kind, Mapping) else kind
    return f"{what} {ns + '/' if ns else ''}{name}"


def review_response(
    request: Mapping[str, Any], *, allowed: bool, warnings: list[str], message: str
) -> dict[str, Any]:
    """The AdmissionReview answer; a refusal carries a 403 Status with ``message``."""
    response: dict[str, Any] = {"uid": request.get("uid"), "allowed": allowed}
    if warnings:
        response["warnings"] = warnings
    if not allowed:
        response["status"] = {
            "code": 403,
            "reason": "Forbidden",
            "message": message,
        }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
