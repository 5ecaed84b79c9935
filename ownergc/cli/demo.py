"""``ownergc demo``: cascades on the embedded in-memory apiserver, printed as they happen.

Needs no cluster: it starts an InMemoryStore and a GarbageCollector in this
process, creates a Deployment -> ReplicaSet -> Pods tree per propagation
policy, deletes the Deployment, and prints what the apiserver and the
collector do, in order.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

import anyio

from ownergc.cli._args import positive_int

SCENARIOS = ("background", "foreground", "orphan")


HELP = "run cascading deletions on the embedded in-memory apiserver and print them"


def add_parser(parser: argparse.ArgumentParser) -> None:
    """The ``demo`` command's arguments."""
    parser.add_argument(
        "--policy",
        choices=(*SCENARIOS, "all"),
        default="all",
        help="which propagation policy to show (default: all three)",
    )
    parser.add_argument(
        "--pods", type=positive_int, default=3, help="pods per ReplicaSet (default: 3)"
    )
    parser.add_argument("--workers", type=positive_int, default=20, help="GC workers (default: 20)")


def run(args: argparse.Namespace) -> int:
    policies = SCENARIOS if args.policy == "all" else (args.policy,)
    return anyio.run(_demo, policies, args.pods, args.workers, sys.stdout)


def _label(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {ns}{meta['name']}"


async def _demo(policies: tuple[str, ...], pods: int, workers: int, out: TextIO) -> int:
    from ownergc.controller import GarbageCollector
    from ownergc.protocols import PropagationPolicy
    from ownergc_backends.memory import InMemoryStore

    store = InMemoryStore()
    started = time.monotonic()

    def say(what: str, text: str) -> None:
        out.write(f"{time.monotonic() - started:7.3f}s  {what:<9} {text}\n")
        out.flush()

    def on_action(what: str, details: Any) -> None:
        extra = f" ({details['policy']})" if "policy" in details else ""
        why = f" — {details['why']}" if details.get("why") else ""
        say("gc", f"{what}{extra} {details['target']}{why}")

    out.write("ownergc demo: in-memory apiserver + garbage collector (no cluster needed)\n")
    gc = GarbageCollector(store, workers=workers, discovery_period=1.0, on_action=on_action)
    watched = [("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet"), ("v1", "Pod")]
    async with anyio.create_task_group() as tg:
        tg.start_soon(gc.run)
        await gc.wait_synced()
        for api_version, kind in watched:
            tg.start_soon(_watch, store, api_version, kind, store.resource_version, say)
        for policy in policies:
            out.write(
                f"\n== {policy.capitalize()}: delete the Deployment with "
                f"propagationPolicy={policy.capitalize()}\n"
            )
            name = f"web-{policy}"
            deployment = await store.create_object(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": name, "namespace": "default"},
                }
            )
            rs = await store.create_object(
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": f"{name}-5d8f7",
                        "namespace": "default",
                        "ownerReferences": [_ref(deployment)],
                    },
                }
            )
            for i in range(pods):
                await store.create_object(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {
                            "name": f"{name}-5d8f7-{i}",
                            "namespace": "default",
                            "ownerReferences": [_ref(rs)],
                        },
                    }
                )
            await gc.wait_idle()
            say("DELETE", f"{_label(deployment)} propagationPolicy={policy.capitalize()}")
            await store.delete(
                store.resource_for("apps/v1", "Deployment"),
                name,
                namespace="default",
                propagation_policy=PropagationPolicy(policy.capitalize()),
            )
            await gc.wait_idle()
            left = [
                _label(o)
                + (
                    " (ownerReferences: "
                    + str(len(o["metadata"].get("ownerReferences") or []))
                    + ")"
                )
                for o in store.snapshot()
                if o["kind"] in ("Deployment", "ReplicaSet", "Pod")
                and o["metadata"]["name"].startswith(name)
            ]
            out.write("   left: " + (", ".join(left) if left else "nothing") + "\n")
        tg.cancel_scope.cancel()
    deleted = sum(gc.metrics.deletions.values())
    out.write(
        f"\ndone: the collector sent {deleted} deletes, {gc.metrics.patches} patches and "
        f"removed {gc.metrics.finalizers_removed} finalizers; errors: {gc.metrics.errors}\n"
    )
    return 0 if gc.metrics.errors == 0 else 1


def _ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


async def _watch(store: Any, api_version: str, kind: str, rv: str, say: Any) -> None:
    resource = store.resource_for(api_version, kind)
    async for event in store.watch(resource, resource_version=rv, metadata_only=False):
        obj = event.object
        meta = obj["metadata"]
        if event.type == "ADDED":
            owners = ", ".join(
                r["kind"] + " " + r["name"] for r in meta.get("ownerReferences") or []
            )
            say("created", _label(obj) + (f"  (owner: {owners})" if owners else ""))
        elif event.type == "DELETED":
            say("removed", _label(obj))
        elif event.type == "MODIFIED":
            fins = meta.get("finalizers") or []
            state = "deleting" if meta.get("deletionTimestamp") else "updated"
            say(
                state,
                f"{_label(obj)} finalizers={fins} "
                f"ownerReferences={len(meta.get('ownerReferences') or [])}",
            )
