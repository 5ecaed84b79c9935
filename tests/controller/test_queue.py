"""Work-queue semantics and rate limiting (gc-semantics items 70, 71; unit cases §15)."""

from __future__ import annotations

import anyio
import pytest

from ownergc.controller._queue import (
    FIFOQueue,
    ItemExponentialRateLimiter,
    WorkQueue,
    default_bucket,
)

pytestmark = pytest.mark.anyio


def test_per_item_backoff_doubles_from_5ms_and_caps_at_1000s() -> None:
    lim: ItemExponentialRateLimiter[str] = ItemExponentialRateLimiter()
    delays = [lim.when("a") for _ in range(5)]
    assert delays == [0.005, 0.01, 0.02, 0.04, 0.08]
    assert lim.when("b") == 0.005  # per item
    for _ in range(30):
        lim.when("a")
    assert lim.when("a") == 1000.0
    lim.forget("a")
    assert lim.when("a") == 0.005
    assert lim.num_requeues("a") == 1


def test_token_bucket_is_10_qps_with_burst_100() -> None:
    now = [0.0]
    bucket = default_bucket(clock=lambda: now[0])
    assert [bucket.reserve() for _ in range(100)] == [0.0] * 100
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)
    now[0] = 10.0  # refills at 10 tokens per second, up to the burst
    assert bucket.reserve() == 0.0


async def test_dedup_and_readd_while_processing() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    item = await q.get()
    assert item == "a"
    q.add("a")  # re-added while processing: not handed out again yet
    assert await q.get() == "b"
    assert len(q) == 0
    q.done("a")  # now it is queued again
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    q.done("b")
    assert q.is_idle()
    assert q.metrics.adds_total == 3


async def test_add_many_is_add_of_each_item_in_order() -> None:
    """The batch the graph builder hands over (an owner's dependents) is queued as
    one ``add`` per item would queue it: order, dedup, re-add while processing."""
    one: WorkQueue[str] = WorkQueue("one")
    many: WorkQueue[str] = WorkQueue("many")
    for q in (one, many):
        q.add("p")
        assert await q.get() == "p"  # "p" is being processed
    batch = ["c", "a", "c", "p", "b", "a"]
    for item in batch:
        one.add(item)
    many.add_many(batch)
    assert len(many) == len(one) == 3
    assert many.metrics.adds_total == one.metrics.adds_total == 5
    many.done("p")
    one.done("p")
    assert [await many.get() for _ in range(4)] == [await one.get() for _ in range(4)]
    many.shutdown()
    many.add_many(["z"])
    assert len(many) == 0


async def test_add_rate_limited_waits_then_delivers_and_dedups_due_copies() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    async with anyio.create_task_group() as tg:
        tg.start_soon(q.run_delays)
        q.add_rate_limited("x")  # 5 ms
        assert len(q) == 0 and q.delayed == 1
        assert not q.is_idle(horizon=1.0)
        with anyio.fail_after(2):
            assert await q.get() == "x"
        q.done("x")
        for _ in range(3):
            q.add_after("y", 0.01)  # all fall due while "y" is still queued
        await anyio.sleep(0.05)
        assert len(q) == 1
        assert q.metrics.retries_total == 1
        tg.cancel_scope.cancel()


async def test_many_workers_never_process_one_item_twice_at_once() -> None:
    q: WorkQueue[int] = WorkQueue("t")
    in_flight: set[int] = set()
    processed: list[int] = []

    async def worker() -> None:
        while True:
            item = await q.get()
            assert item not in in_flight
            in_flight.add(item)
            await anyio.sleep(0.001)
            in_flight.discard(item)
            processed.append(item)
            q.done(item)

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(worker)
        for _round in range(20):
            for i in range(10):
                q.add(i)
            await anyio.sleep(0)
        with anyio.fail_after(5):
            while not q.is_idle():
                await anyio.sleep(0.005)
        tg.cancel_scope.cancel()
    assert set(processed) == set(range(10))


async def test_fifo_keeps_order_and_counts() -> None:
    q: FIFOQueue[int] = FIFOQueue("g")
    for i in range(5):
        q.add(i)
    batch = await q.drain()
    assert list(batch) == [0, 1, 2, 3, 4]
    q.done_batch(5)
    assert q.metrics.adds_total == 5 and q.is_idle()


async def test_a_worker_finishes_requeues_and_survives_errors_until_shutdown() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    seen: list[str] = []
    failures: list[tuple[str, str]] = []
    attempts = {"flaky": 0, "later": 0}

    async def process(item: str) -> bool:
        seen.append(item)
        if item in attempts:
            attempts[item] += 1
            if item == "flaky" and attempts[item] == 1:
                raise RuntimeError("boom")
            return attempts[item] >= 2  # "later": not finished the first time
        return True

    async with anyio.create_task_group() as tg:
        tg.start_soon(q.run_delays)
        for item in ("ok", "flaky", "later"):
            q.add(item)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as workers:
                workers.start_soon(q.work, process, lambda i, e: failures.append((i, str(e))))
                while sorted(seen) != ["flaky", "flaky", "later", "later", "ok"]:
                    await anyio.sleep(0.01)
                q.shutdown()  # the worker returns instead of dying
        tg.cancel_scope.cancel()
    assert failures == [("flaky", "boom")]
    assert q.metrics.retries_total == 2  # one error, one "not finished"
    assert q.num_requeues("flaky") == 0 and q.num_requeues("later") == 0  # forgotten
