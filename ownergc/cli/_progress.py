"""What a command is reading, for a person waiting at a terminal; nothing when piped.

Reading a big cluster takes seconds. After the first second, a single status
line on stderr says which resource is being read and how much has been read
so far (``reading configmaps — 12/48 resources, 90,000 objects``), rewritten
in place and erased when the reading is done. When stderr is not a terminal
(CI logs, pipes, ``2>file``) nothing is written.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """A one-line, self-erasing status on a terminal."""

    def __init__(
        self,
        what: str,
        total: int,
        *,
        stream: TextIO | None = None,
        delay: float = 1.0,
        enabled: bool | None = None,
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._enabled = self._stream.isatty() if enabled is None else enabled
        self._what = what
        self._total = total
        self._done = 0
        self._objects = 0
        self._current = ""
        self._start = time.monotonic()
        self._delay = delay
        self._shown = False

    def reading(self, name: str) -> None:
        self._current = name
        self._show()

    def read(self, name: str, objects: int) -> None:
        self._done += 1
        self._objects += objects
        self._current = name
        self._show()

    def close(self) -> None:
        if self._shown:
            self._stream.write("\r\x1b[2K")
            self._stream.flush()
            self._shown = False

    def line(self) -> str:
        """The status as it stands."""
        return (
            f"{self._what} {self._current} — {self._done}/{self._total} resources, "
            f"{self._objects:,} objects"
        )

    def _show(self) -> None:
        if not self._enabled or time.monotonic() - self._start < self._delay:
            return
        self._stream.write("\r\x1b[2K" + self.line())
        self._stream.flush()
        self._shown = True

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
