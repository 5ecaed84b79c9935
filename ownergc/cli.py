"""The ``ownergc`` command line (also ``python -m ownergc``).

Subcommands are added by small modules so that each stays importable on its
own; backends are imported only when a subcommand needs them, so ``ownergc
--help`` works without the optional extras installed.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from ownergc import __version__

__all__ = ["build_parser", "main"]

#: (module, function adding its subparser): each subcommand lives in its own module.
_SUBCOMMANDS: tuple[tuple[str, str], ...] = (
    ("ownergc._cli_demo", "add_parser"),
    ("ownergc._cli_controller", "add_parser"),
    ("ownergc._cli_node", "add_node_parser"),
    ("ownergc._cli_serve", "add_parser"),
    ("ownergc._cli_preview", "add_parser"),
    ("ownergc._cli_lint", "add_parser"),
    ("ownergc._cli_graph", "add_parser"),
    ("ownergc._cli_why", "add_parser"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ownergc",
        description=(
            "Kubernetes garbage collection, exactly: ownerReferences, cascading deletion "
            "(Background / Foreground / Orphan), finalizers and kubelet-style node GC."
        ),
    )
    parser.add_argument("--version", action="version", version=f"ownergc {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="more log output (-v: info, -vv: debug)",
    )
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="log line format (default: text)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    for module_name, hook in _SUBCOMMANDS:
        module = importlib.import_module(module_name)
        getattr(module, hook)(sub)
    # Accept the global options after the subcommand too (`ownergc controller
    # --log-format=json`), as manifests and muscle memory tend to put them.
    for subparser in sub.choices.values():
        group = subparser.add_argument_group("logging")
        group.add_argument(
            "-v",
            "--verbose",
            action="count",
            default=argparse.SUPPRESS,
            help="more log output (-v: info, -vv: debug)",
        )
        group.add_argument(
            "--log-format",
            choices=("text", "json"),
            default=argparse.SUPPRESS,
            help="log line format (default: text)",
        )
    return parser


def _configure_logging(verbosity: int, fmt: str) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        from ownergc._logging import JSONFormatter

        handler.setFormatter(JSONFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def _only_broken_pipes(exc: BaseException) -> bool:
    """True for a BrokenPipeError, or an exception group made only of them (task groups)."""
    if isinstance(exc, BrokenPipeError):
        return True
    inner: Sequence[BaseException] = getattr(exc, "exceptions", None) or ()
    return bool(inner) and all(_only_broken_pipes(e) for e in inner)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose, args.log_format)
    func = getattr(args, "func", None)
    if func is None:  # pragma: no cover - argparse enforces a subcommand
        parser.print_help()
        return 2
    try:
        result = func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if not _only_broken_pipes(exc):
            raise
        # Output piped into `head` and the like: stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
