"""ownergc lint: find ownerReferences that get objects silently deleted or stuck.

Checks manifests (-f) or a live cluster (read-only) for: cross-namespace
owners, cluster-scoped dependents of namespaced owners, dangling owners, uid
mismatches, references whose kind/name disagree with the uid, more than one
controller: true, owner kinds that are not served, ownership cycles, and
blockOwnerDeletion that the RBAC among the manifests cannot satisfy.

One line per finding: severity, object, [rule], what the garbage collector
will do, and the fix. Exit status: 1 if any error, else 0 (warnings and info
do not fail). Rules and the RBAC heuristic: docs/lint.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

import anyio

from ownergc._kit.gcpause import gc_paused
from ownergc.cli._output import emit
from ownergc.cli._sources import (
    Inventory,
    SourceError,
    add_source_arguments,
    inventory_from_args,
)
from ownergc.errors import OwnerGCError
from ownergc.lint import SEVERITIES, Finding, KindInfo, lint_objects

HELP = "check ownerReferences in manifests or a cluster (exit 1 on errors)"


def add_parser(parser: argparse.ArgumentParser) -> None:
    """The ``lint`` command's arguments."""
    add_source_arguments(parser)
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument(
        "--min-severity",
        choices=SEVERITIES,
        default="info",
        help="hide findings below this severity (default: info, i.e. show all)",
    )


def run(args: argparse.Namespace) -> int:
    # One pass over a whole cluster: hundreds of thousands of acyclic dicts, nodes
    # and strings, which the cyclic collector would otherwise walk again and again
    # (a third of the command's CPU at 100k objects). Nothing else runs meanwhile.
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        inv = anyio.run(_read, args)
        kinds = _kinds(inv)
    except (SourceError, OwnerGCError) as exc:
        print(f"ownergc lint: {exc}", file=sys.stderr)
        return 2
    findings = lint_objects(
        inv.objects, kinds=kinds, complete=inv.origin == "cluster", sources=inv.sources
    )
    shown = [
        f for f in findings if SEVERITIES.index(f.severity) <= SEVERITIES.index(args.min_severity)
    ]
    errors = sum(f.severity == "error" for f in findings)
    if args.output == "json":
        body = {
            "objects": len(inv.objects),
            "errors": errors,
            "warnings": sum(f.severity == "warning" for f in findings),
            "findings": [f.to_json() for f in shown],
        }
        emit(json.dumps(body, indent=2) + "\n")
    else:
        _print(shown, len(inv.objects), findings)
    return 1 if errors else 0


async def _read(args: argparse.Namespace) -> Inventory:
    # A whole cluster from the watch cache: only references are checked.
    return await inventory_from_args(args, cached=True)


#: Findings written at once (a whole cluster's are tens of megabytes of text).
PRINT_BATCH = 5000


def _print(shown: list[Finding], count: int, findings: list[Finding]) -> None:
    tally = Counter(f.severity for f in findings)
    for start in range(0, len(shown), PRINT_BATCH):
        emit("".join(f.line() + "\n" for f in shown[start : start + PRINT_BATCH]))
    emit(
        f"{count} objects checked: {tally['error']} errors, {tally['warning']} warnings, "
        f"{tally['info']} info\n"
    )


def _kinds(inv: Inventory) -> dict[tuple[str, str], KindInfo]:
    """What is served: the cluster's discovery, or built-in kinds plus the input's CRDs."""
    resources = inv.resources
    if resources is None:
        from ownergc._kit.manifests import is_crd
        from ownergc_backends.memory import InMemoryStore

        store = InMemoryStore()
        for obj in inv.objects:
            if is_crd(obj):
                try:
                    store.load_objects([obj])
                except OwnerGCError as exc:
                    label = (obj.get("metadata") or {}).get("name")
                    raise SourceError(f"CustomResourceDefinition {label}: {exc}") from None
        resources = list(anyio.run(store.discover).resources)
    return {
        (r.api_version, r.kind): KindInfo(r.namespaced, r.resource)
        for r in resources
        if "/" not in r.resource
    }
