"""The ``ownergc`` command line (also ``python -m ownergc`` and ``kubectl ownergc``).

Each command is a module of this package with the same shape: ``HELP`` (one
line for ``ownergc --help``), ``add_parser(parser)`` (its arguments) and
``run(args) -> int`` (its exit status). The module docstring is the command's
``--help`` text. Backends are imported only when a command needs them, so
``ownergc --help`` works without the optional extras installed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ownergc import __version__
from ownergc._core.graph import COMPILED
from ownergc.cli._logging import add_logging_arguments, configure_logging
from ownergc.cli._output import is_broken_pipe, refusals, silence_stdout

__all__ = ["COMMANDS", "build_parser", "main"]

#: The commands, in the order ``ownergc --help`` lists them (module ``ownergc.cli.<name>``).
COMMANDS: tuple[str, ...] = (
    "demo",
    "controller",
    "node",
    "serve",
    "preview",
    "lint",
    "webhook",
    "graph",
    "why",
)


def _chosen_command(argv: Sequence[str] | None) -> str | None:
    """The command ``argv`` names, when it plainly does (its first word): then only
    that command's module is imported to build the parser (start-up time)."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words and words[0] in COMMANDS:
        return words[0]
    return None


def build_parser(
    argv: Sequence[str] | None = None, *, lazy: bool = False
) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ownergc",
        description=(
            "Kubernetes garbage collection, exactly: ownerReferences, cascading deletion "
            "(Background / Foreground / Orphan), finalizers and kubelet-style node GC."
        ),
    )
    core = "compiled" if COMPILED else "pure Python"
    parser.add_argument(
        "--version", action="version", version=f"ownergc {__version__} ({core} graph core)"
    )
    add_logging_arguments(parser, default=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    chosen = _chosen_command(argv) if lazy else None
    for name in COMMANDS:
        if chosen is not None and name != chosen:
            # Never parsed into: a bare entry so the command names stay valid choices.
            sub.add_parser(name)
            continue
        command = importlib.import_module(f"ownergc.cli.{name}")
        subparser = sub.add_parser(
            name,
            help=command.HELP,
            description=getattr(command, "DESCRIPTION", command.__doc__),
            formatter_class=getattr(command, "FORMATTER", argparse.RawDescriptionHelpFormatter),
        )
        command.add_parser(subparser)
        subparser.set_defaults(func=command.run)
        # The global options after the command too (`ownergc controller
        # --log-format=json`), as manifests and muscle memory tend to put them.
        add_logging_arguments(subparser.add_argument_group("logging"), default=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(argv, lazy=True)
    args = parser.parse_args(argv)
    configure_logging(args.verbose, args.log_format)
    try:
        result = args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if is_broken_pipe(exc):
            # Output piped into `head` and the like: stop quietly, as Unix tools do.
            silence_stdout()
            return 141
        errors = refusals(exc)
        if not errors:
            raise
        # A refusal by the store or the server (a 403 on deleting kube-public, an
        # unreachable cluster): one line each, as kubectl prints them, and no traceback.
        for message in dict.fromkeys(str(error) for error in errors):
            print(f"ownergc {args.command}: {message}", file=sys.stderr)
        return 1
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
