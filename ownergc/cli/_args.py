"""argparse value types shared by the subcommands: clear messages, no tracebacks."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

from ownergc.nodegc._time import parse_duration

__all__ = ["port", "positive_float", "positive_int", "positive_seconds"]

N = TypeVar("N", int, float)


def _checked(
    text: str, parse: Callable[[str], N], what: str, ok: Callable[[N], bool], rule: str
) -> N:
    """Parse ``text`` as ``what``; argparse prints the message (no traceback) otherwise."""
    try:
        value = parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{rule}, got {text}")
    return value


def positive_int(text: str) -> int:
    return _checked(text, int, "an integer", lambda v: v >= 1, "must be at least 1")


def positive_float(text: str) -> float:
    return _checked(text, float, "a number", lambda v: v > 0, "must be positive")


def port(text: str) -> int:
    """A TCP port; 0 asks the system for a free one."""
    return _checked(text, int, "a port number", lambda v: 0 <= v <= 65535, "not a port number")


def positive_seconds(text: str) -> float:
    """A Go duration (``30s``, ``1m30s``, ``500ms``) in seconds, greater than zero."""
    try:
        value = parse_duration(text).total_seconds()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"duration must be positive, got {text!r}")
    return value
