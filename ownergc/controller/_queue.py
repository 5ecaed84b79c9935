"""A rate-limited work queue on anyio with client-go's semantics.

* An item already queued is not queued twice (dedup by identity/hash).
* An item re-added while a worker processes it is queued again once the
  worker calls ``done`` — so one item is never processed by two workers.
* ``add_rate_limited`` waits max(per-item exponential backoff, global token
  bucket) before re-adding: 5 ms doubling to 1000 s per item, 10 qps burst
  100 overall (``DefaultControllerRateLimiter``). ``forget`` resets the
  per-item backoff. Plain ``add`` is immediate.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio

from ownergc._kit.ratelimit import TokenBucket

__all__ = [
    "FIFOQueue",
    "Histogram",
    "ItemExponentialRateLimiter",
    "QueueMetrics",
    "WorkQueue",
    "default_bucket",
    "wait_quiet",
]

T = TypeVar("T", bound=Hashable)
U = TypeVar("U")

#: Clock for the duration metrics only (scheduling uses the event loop's clock).
_now = time.monotonic


class ItemExponentialRateLimiter(Generic[T]):
    """Per-item backoff: ``base * 2**failures``, capped."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        n = self._failures.get(item, 0)
        self._failures[item] = n + 1
        if n > 64:
            return self.cap
        return min(self.base * float(1 << n), self.cap)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


def default_bucket(clock: Callable[[], float] | None = None) -> TokenBucket:
    """client-go's ``DefaultControllerRateLimiter`` overall bucket: 10 qps, burst 100."""
    return TokenBucket(10.0, 100, clock=clock)


#: client-go's workqueue histogram buckets: 10ns .. 10s, factor 10.
DURATION_BUCKETS: tuple[float, ...] = tuple(1e-8 * 10**i for i in range(10))


@dataclass
class Histogram:
    """A cumulative-bucket histogram as Prometheus renders it."""

    buckets: tuple[float, ...] = DURATION_BUCKETS
    counts: list[int] = field(default_factory=lambda: [0] * len(DURATION_BUCKETS))
    sum: float = 0.0
    count: int = 0

    def observe(self, value: float) -> None:
        self.sum += value
        self.count += 1
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1
                break

    def cumulative(self) -> list[tuple[float, int]]:
        out = []
        running = 0
        for bound, n in zip(self.buckets, self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


@dataclass
class QueueMetrics:
    """client-go workqueue metrics for one queue (label ``name``)."""

    name: str
    adds_total: int = 0
    retries_total: int = 0
    queue_duration: Histogram = field(default_factory=Histogram)
    work_duration: Histogram = field(default_factory=Histogram)


async def wait_quiet(is_idle: Callable[[], bool], settle: float) -> None:
    """Return once ``is_idle()`` has held for ``settle`` seconds in a row.

    Polled (every 10 ms at most): tests and ``settle`` helpers wait for a
    controller to have nothing left to do, which no single event signals.
    """
    quiet_since: float | None = None
    while True:
        now = anyio.current_time()
        if not is_idle():
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= settle:
            return
        await anyio.sleep(min(0.01, settle / 2) if settle > 0 else 0)


class WorkQueue(Generic[T]):
    """The queue. ``get`` hands out an item and marks it processing until ``done``."""

    def __init__(
        self,
        name: str,
        *,
        item_limiter: ItemExponentialRateLimiter[T] | None = None,
        bucket: TokenBucket | None = None,
    ) -> None:
        self.name = name
        self.metrics = QueueMetrics(name)
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._added_at: dict[T, float] = {}
        self._started_at: dict[T, float] = {}
        self._item_limiter: ItemExponentialRateLimiter[T] = (
            item_limiter or ItemExponentialRateLimiter()
        )
        self._bucket = bucket or default_bucket()
        self._waiting: list[tuple[float, int, T]] = []
        self._counter = itertools.count()
        self._wakeup = anyio.Event()
        self._delay_wakeup = anyio.Event()
        self._shutdown = False
        self._waiters = 0

    # -- producer side ---------------------------------------------------

    def add(self, item: T) -> None:
        if self._shutdown or item in self._dirty:
            return
        self.metrics.adds_total += 1
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        self._added_at.setdefault(item, _now())
        self._wake()

    def add_many(self, items: Iterable[T]) -> None:
        """``add`` each item, in order: one clock read and one wake-up for all.

        The graph builder hands over many dependents at once (an owner deleted
        enqueues all of its dependents); here the per-item steps are C loops.
        """
        if self._shutdown:
            return
        dirty = self._dirty
        # C loops instead of one interpreted step per item: an item not dirty is in
        # neither the queue nor ``_added_at`` (both follow ``_dirty``), so it needs
        # no further check unless a worker is processing it.
        fresh: list[T] = items if type(items) is list else list(items)
        if not dirty.isdisjoint(fresh):  # (the common case, none dirty, tested in C)
            fresh = [item for item in fresh if item not in dirty]
        if not fresh:
            return
        before = len(dirty)
        dirty.update(fresh)
        if len(dirty) - before != len(fresh):  # a repeated item: the first one counts
            fresh = list(dict.fromkeys(fresh))
        self.metrics.adds_total += len(fresh)
        processing = self._processing
        if processing:
            fresh = [item for item in fresh if item not in processing]
            if not fresh:
                return
        self._queue.extend(fresh)
        self._added_at.update(dict.fromkeys(fresh, _now()))
        self._wake()

    def add_after(self, item: T, delay: float) -> None:
        if self._shutdown:
            return
        if delay <= 0:
            self.add(item)
            return
        heapq.heappush(self._waiting, (anyio.current_time() + delay, next(self._counter), item))
        self._delay_wakeup.set()

    def add_rate_limited(self, item: T) -> None:
        self.metrics.retries_total += 1
        delay = max(self._item_limiter.when(item), self._bucket.reserve())
        self.add_after(item, delay)

    def forget(self, item: T) -> None:
        self._item_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._item_limiter.num_requeues(item)

    # -- consumer side ---------------------------------------------------

    async def get(self) -> T:
        while not self._queue:
            if self._shutdown:
                raise anyio.EndOfStream
            event = self._wakeup
            self._waiters += 1
            try:
                await event.wait()
            finally:
                self._waiters -= 1
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        now = _now()
        added = self._added_at.pop(item, None)
        if added is not None:
            self.metrics.queue_duration.observe(now - added)
        self._started_at[item] = now
        if self._queue:
            # More work: keep other workers awake.
            self._wake()
        return item

    def done(self, item: T) -> None:
        self._processing.discard(item)
        started = self._started_at.pop(item, None)
        if started is not None:
            self.metrics.work_duration.observe(_now() - started)
        if item in self._dirty:
            self._queue.append(item)
            self._added_at.setdefault(item, _now())
            self._wake()

    async def work(
        self,
        process: Callable[[T], Awaitable[bool]],
        on_error: Callable[[T, Exception], object],
    ) -> None:
        """One worker, until the queue shuts down: ``process`` each item.

        ``process`` returns whether the item is finished (its backoff is
        forgotten) or must come back later; an exception is reported to
        ``on_error`` and the item comes back with backoff too. A worker never
        dies of one item.
        """
        while True:
            try:
                item = await self.get()
            except anyio.EndOfStream:
                return
            try:
                finished = await process(item)
            except Exception as exc:
                on_error(item, exc)
                self.add_rate_limited(item)
            else:
                if finished:
                    self.forget(item)
                else:
                    self.add_rate_limited(item)
            finally:
                self.done(item)

    def shutdown(self) -> None:
        self._shutdown = True
        self._wakeup.set()
        self._delay_wakeup.set()

    async def run_delays(self) -> None:
        """Move delayed items into the queue when due; run this in a task."""
        while not self._shutdown:
            now = anyio.current_time()
            while self._waiting and self._waiting[0][0] <= now:
                _, _, item = heapq.heappop(self._waiting)
                self.add(item)
            timeout = self._waiting[0][0] - now if self._waiting else math.inf
            self._delay_wakeup = anyio.Event()
            with anyio.move_on_after(timeout):
                await self._delay_wakeup.wait()

    # -- introspection ---------------------------------------------------

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def processing(self) -> int:
        return len(self._processing)

    @property
    def delayed(self) -> int:
        return len(self._waiting)

    def unfinished_work(self) -> tuple[float, float]:
        """(total seconds in flight, longest single item in flight), as client-go reports."""
        if not self._started_at:
            return 0.0, 0.0
        now = _now()
        ages = [now - t for t in self._started_at.values()]
        return sum(ages), max(ages)

    def next_delayed_due(self) -> float | None:
        return self._waiting[0][0] if self._waiting else None

    def is_idle(self, horizon: float = 0.0) -> bool:
        """Nothing queued, nothing processing, nothing delayed due within ``horizon`` s."""
        if self._queue or self._processing:
            return False
        if not self._waiting:
            return True
        return self._waiting[0][0] > anyio.current_time() + horizon

    def _wake(self) -> None:
        # Only replace the event when a consumer waits on it: adds on the hot
        # path (every watch event) then cost no allocation.
        if self._waiters:
            self._wakeup.set()
            self._wakeup = anyio.Event()


class FIFOQueue(Generic[U]):
    """The graph-changes queue: strict FIFO, no dedup, no rate limiting.

    Watch events are distinct occurrences that must all be applied in order,
    so the work queue's dedup and per-item bookkeeping would only cost time
    on the hottest path of the controller. Exposes the same metrics surface.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.metrics = QueueMetrics(name)
        self._items: deque[U] = deque()
        self._wakeup = anyio.Event()
        self._waiting = False
        self._busy_since: float | None = None

    def add(self, item: U) -> None:
        self._items.append(item)
        if self._waiting:
            self._waiting = False
            self._wakeup.set()

    async def drain(self) -> deque[U]:
        """Wait for items, then take all of them (the caller applies them in order)."""
        while not self._items:
            self._wakeup = anyio.Event()
            self._waiting = True
            await self._wakeup.wait()
        items = self._items
        self._items = deque()
        self.metrics.adds_total += len(items)
        self._busy_since = _now()
        return items

    def done_batch(self, count: int) -> None:
        if self._busy_since is not None:
            elapsed = _now() - self._busy_since
            self.metrics.work_duration.observe(elapsed / max(count, 1))
        self._busy_since = None

    def __len__(self) -> int:
        return len(self._items)

    @property
    def processing(self) -> int:
        return 0 if self._busy_since is None else 1

    def unfinished_work(self) -> tuple[float, float]:
        if self._busy_since is None:
            return 0.0, 0.0
        age = _now() - self._busy_since
        return age, age

    def is_idle(self, horizon: float = 0.0) -> bool:
        return not self._items and self._busy_since is None

    async def run_delays(self) -> None:
        """Nothing is ever delayed here; present for a uniform queue surface."""
        await anyio.sleep_forever()

    def shutdown(self) -> None:
        self._wakeup.set()
