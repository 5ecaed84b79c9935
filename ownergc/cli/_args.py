"""argparse value types shared by the subcommands: clear messages, no tracebacks."""

from __future__ import annotations

import argparse

from ownergc.nodegc._time import parse_duration

__all__ = ["port", "positive_float", "positive_int", "positive_seconds"]


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def port(text: str) -> int:
    """A TCP port; 0 asks the system for a free one."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """A Go duration (``30s``, ``1m30s``, ``500ms``) in seconds, greater than zero."""
    try:
        value = parse_duration(text).total_seconds()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"duration must be positive, got {text!r}")
    return value
