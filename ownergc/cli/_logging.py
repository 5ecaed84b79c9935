"""Logging for the command line: ``-v`` levels, text or JSON lines (klog-style key/value fields)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from datetime import datetime, timezone
from typing import Any

__all__ = ["JSONFormatter", "add_logging_arguments", "configure_logging"]

_STANDARD = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__.keys() | {"message", "asctime"}
)


class JSONFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, and every ``extra`` field."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, timezone.utc).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD:
                out[key] = value
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def add_logging_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, default: bool
) -> None:
    """``-v`` and ``--log-format``; a command's copy (``default=False``) keeps the global value."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0 if default else argparse.SUPPRESS,
        help="more log output (-v: info, -vv: debug)",
    )
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text" if default else argparse.SUPPRESS,
        help="log line format (default: text)",
    )


def configure_logging(verbosity: int, fmt: str) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JSONFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
