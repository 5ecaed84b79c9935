"""Command output: one way to write to stdout, one way to go quiet when the reader leaves."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from ownergc.errors import OwnerGCError

__all__ = ["emit", "is_broken_pipe", "refusals", "silence_stdout"]


def silence_stdout() -> None:
    """Point stdout at devnull so the exit-time flush stays quiet (Python's recipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def is_broken_pipe(exc: BaseException) -> bool:
    """True for a BrokenPipeError, or an exception group made only of them (task groups)."""
    if isinstance(exc, BrokenPipeError):
        return True
    inner: Sequence[BaseException] = getattr(exc, "exceptions", None) or ()
    return bool(inner) and all(is_broken_pipe(e) for e in inner)


def refusals(exc: BaseException) -> list[OwnerGCError]:
    """The ownergc errors ``exc`` is made of (a task group's included), or [] if anything else
    is in it: a refusal by the store or the server is a message for the user, a bug is not."""
    inner: Sequence[BaseException] = getattr(exc, "exceptions", None) or ()
    if isinstance(exc, OwnerGCError):
        return [exc]
    if not inner:
        return []
    found = [refusal for e in inner for refusal in refusals(e)]
    return found if all(refusals(e) for e in inner) else []


def emit(text: str) -> None:
    """Write command output to stdout; a reader that went away (``| head``) is not an error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
