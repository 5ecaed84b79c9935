"""Cyclic garbage collection paused while a big answer is built or decoded."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Cyclic garbage collection off for the block.

    Building or decoding 100k objects allocates a million containers: without
    this the collector runs over and over, each time over every object already
    made (and, in a server, over every object it stores), and costs more than
    the work itself (measured: decoding 100k objects 3.5 s instead of 0.6 s).
    JSON trees have no reference cycles, so nothing is left for the collector
    to find. Never held across an ``await``.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
