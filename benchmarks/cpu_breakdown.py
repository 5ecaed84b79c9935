"""Where the collector's CPU goes: a py-spy profile summed by category.

Reads the collapsed stacks ``benchmarks/cascade.py --profile PATH`` writes
(any PATH not ending in ``.json``) and prints one Markdown table row per
category: microseconds per collected object and the share of busy samples.
A sample counts for the category of its innermost frame that has one (so
time in aiohttp under KubeStore is the HTTP client's, and time in the event
loop's own frames is the loop's). Samples waiting in epoll and the idle
thread-pool thread are not busy and are left out.

Run: ``python benchmarks/cpu_breakdown.py PROFILE=US [PROFILE=US ...]``,
where US is the CPU per object the unprofiled runs measured (the profile
gives the shares, the runs the total), one column per profile.
"""

from __future__ import annotations

import re
import sys
from collections import Counter

#: (category, pattern on a frame "function (path:line)"), first match wins.
CATEGORIES = [
    ("logging", r"\(logging/"),
    (
        "metrics",
        r"^(Histogram|QueueMetrics)\.|\(ownergc/controller/_metrics|\(ownergc/_kit/prometheus",
    ),
    ("JSON encoding and decoding (orjson)", r"orjson|^_loads \(|\(json/"),
    ("the `kubernetes` client's own layers", r"\(kubernetes/|\(kubernetes_asyncio/"),
    (
        "HTTP client (aiohttp, yarl, multidict; ownergc's `_http1`)",
        r"\(aiohttp/|\(yarl/|\(multidict/|\(propcache/|\(ownergc_backends/kube/_http1\.py"
        r"|\(urllib/parse",
    ),
    ("`KubeStore` (request building, watch decoding)", r"\(ownergc_backends/kube/"),
    ("graph builder (`ownergc/_core/graph*`)", r"\(ownergc/_core/graph"),
    ("decisions, references (`ownergc/_core`)", r"\(ownergc/_core/|\(<string>|\(<frozen abc>"),
    ("queues, rate limiter", r"\(ownergc/controller/_queue|\(ownergc/_kit/ratelimit"),
    ("controller: monitors, workers, operations", r"\(ownergc/controller/"),
    ("anyio", r"\(anyio/"),
    ("event loop, sockets (asyncio, system calls)", r"\(asyncio/|\(selectors|\(socket|\(ssl"),
]
_IDLE = ("EpollSelector.select", "_worker (concurrent/futures/thread.py")


def categorize(path: str) -> tuple[Counter[str], int]:
    """Busy samples per category, and the busy total."""
    compiled = [(name, re.compile(rx)) for name, rx in CATEGORIES]
    found: Counter[str] = Counter()
    busy = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            stack, _, count = line.rstrip().rpartition(" ")
            frames = stack.split(";")
            if frames[-1].startswith(_IDLE):
                continue
            samples = int(count)
            busy += samples
            category = "other"
            for frame in reversed(frames):
                hit = next((name for name, rx in compiled if rx.search(frame)), None)
                if hit is not None:
                    category = hit
                    break
            found[category] += samples
    return found, busy


def main(argv: list[str]) -> None:
    columns = []
    for arg in argv:
        path, _, us = arg.rpartition("=")
        columns.append((categorize(path), float(us)))
    for name in [n for n, _ in CATEGORIES] + ["other"]:
        cells = []
        for (found, busy), us in columns:
            share = found[name] / busy if busy else 0.0
            cells.append(f"{us * share:.1f} µs ({100 * share:.0f} %)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| busy samples | " + " | ".join(str(busy) for (_, busy), _ in columns) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
