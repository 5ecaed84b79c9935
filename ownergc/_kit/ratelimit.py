"""The token bucket of client-go (``flowcontrol.NewTokenBucketRateLimiter``, ``rate.Limiter``).

One implementation for the kube backend's request budget (qps/burst) and the
work queues' overall rate limit (10 qps, burst 100, as client-go's default
controller rate limiter).

Every request (watch starts included, as in client-go) takes one token. The
bucket holds ``burst`` tokens and refills at ``qps`` per second. Waiters
reserve their token up front (the count may go negative), so they are served
in arrival order without a lock and a burst of workers cannot starve anyone.
The clock and sleep are injectable so tests measure with a fake clock.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

import anyio

__all__ = ["TokenBucket"]


class TokenBucket:
    """``qps`` tokens per second, at most ``burst`` banked; ``qps <= 0`` disables it."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if burst < 1 and qps > 0:
            raise ValueError("burst must be at least 1 when qps is set")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock or anyio.current_time
        self._sleep = sleep or anyio.sleep
        self._tokens = float(burst)
        self._last: float | None = None
        #: Total seconds callers spent waiting for a token (for logs and benchmarks).
        self.waited = 0.0
        #: How many acquisitions had to wait.
        self.throttled = 0

    @property
    def enabled(self) -> bool:
        return self.qps > 0 and math.isfinite(self.qps)

    def _refill(self, now: float) -> None:
        if self._last is None:
            self._last = now
            return
        elapsed = max(0.0, now - self._last)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        self._last = now

    def reserve(self) -> float:
        """Take a token now; return how long the caller must wait before using it."""
        if not self.enabled:
            return 0.0
        self._refill(self._clock())
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    def cancel_reservation(self) -> None:
        """Give a token back (a waiter was cancelled before using it)."""
        if self.enabled:
            self._tokens = min(float(self.burst), self._tokens + 1.0)

    async def acquire(self) -> float:
        """Wait for a token; returns the seconds waited."""
        delay = self.reserve()
        if delay <= 0:
            return 0.0
        self.throttled += 1
        try:
            await self._sleep(delay)
        except BaseException:
            self.cancel_reservation()
            raise
        self.waited += delay
        return delay
