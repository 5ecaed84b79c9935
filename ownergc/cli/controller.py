"""ownergc controller: kube-controller-manager's garbage collector against a real cluster.

Point it at a cluster with --kubeconfig (or KUBECONFIG, or run it in a pod
with a ServiceAccount). It watches every deletable resource through
metadata-only requests and collects objects whose owners are gone, exactly as
kube-controller-manager does. Probes, Prometheus metrics and the debug graph
are served on --bind-address:--port.
"""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
import uuid
from typing import Any

import anyio

from ownergc._kit.backends import load_class
from ownergc.cli._args import port, positive_float, positive_int, positive_seconds
from ownergc.controller import DEFAULT_IGNORED_RESOURCES, GarbageCollector
from ownergc.controller._http import ControllerEndpoints, serve_http
from ownergc.controller._leader import LeaderElector, LeadershipLost
from ownergc.errors import OwnerGCError

log = logging.getLogger("ownergc.cli")

#: kube-controller-manager's --kube-api-qps 20, doubled for its GC's metadata client.
DEFAULT_QPS = 40.0
#: kube-controller-manager's --kube-api-burst (the GC client keeps it).
DEFAULT_BURST = 30

NO_CLUSTER_HINT = "To see the collector work without a cluster, run `ownergc demo`."


def parse_group_resource(text: str) -> tuple[str, str]:
    """``group/resource`` (``/events`` or ``events`` for the core group) -> (group, resource)."""
    if "/" in text:
        group, _, resource = text.rpartition("/")
    else:
        group, resource = "", text
    if not resource or "/" in group or resource != resource.lower():
        raise argparse.ArgumentTypeError(
            f"expected group/resource such as events.k8s.io/events or /events, got {text!r}"
        )
    return group, resource


HELP = "run the garbage collector against a cluster (kube-controller-manager's GC)"


def add_parser(p: argparse.ArgumentParser) -> None:
    """The ``controller`` command's arguments."""
    conn = p.add_argument_group("connection")
    conn.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, in-cluster)")
    conn.add_argument("--context", help="kubeconfig context to use (default: current-context)")
    conn.add_argument(
        "--qps",
        type=positive_float,
        default=DEFAULT_QPS,
        help=f"client-side request rate limit (default: {DEFAULT_QPS:g}, "
        "kube-controller-manager's --kube-api-qps doubled, as its GC client does)",
    )
    conn.add_argument(
        "--burst",
        type=positive_int,
        default=DEFAULT_BURST,
        help=f"client-side burst above --qps (default: {DEFAULT_BURST})",
    )
    gc = p.add_argument_group("garbage collector")
    gc.add_argument(
        "--workers",
        "--concurrent-gc-syncs",
        dest="workers",
        type=positive_int,
        default=20,
        help="attemptToDelete and attemptToOrphan workers each (default: 20)",
    )
    gc.add_argument(
        "--ignore-resource",
        action="append",
        type=parse_group_resource,
        default=[],
        metavar="GROUP/RESOURCE",
        help="never watch or collect this resource (repeatable; always ignored: "
        + ", ".join(f"{g}/{r}" for g, r in sorted(DEFAULT_IGNORED_RESOURCES))
        + ")",
    )
    gc.add_argument(
        "--resync-period",
        type=positive_seconds,
        default=30.0,
        metavar="DURATION",
        help="how often to rediscover resources, e.g. 30s (default: 30s)",
    )
    gc.add_argument(
        "--initial-sync-timeout",
        type=positive_seconds,
        default=30.0,
        metavar="DURATION",
        help="start workers after this long even if some monitors have not synced (default: 30s)",
    )
    gc.add_argument(
        "--dry-run",
        action="store_true",
        help="log every deletion and patch it would make, change nothing",
    )
    le = p.add_argument_group("leader election (coordination.k8s.io/v1 Lease)")
    le.add_argument("--leader-elect", action="store_true", help="run only while holding the Lease")
    for flag, seconds in (("lease-duration", 15), ("renew-deadline", 10), ("retry-period", 2)):
        le.add_argument(
            f"--leader-elect-{flag}",
            type=positive_seconds,
            default=float(seconds),
            metavar="DURATION",
            help=f"default: {seconds}s",
        )
    le.add_argument("--leader-elect-resource-name", default="ownergc", help="default: ownergc")
    le.add_argument(
        "--leader-elect-resource-namespace",
        default=None,
        help="default: the pod's namespace in a cluster, else kube-system",
    )
    srv = p.add_argument_group("serving")
    srv.add_argument("--bind-address", default="0.0.0.0", help="default: 0.0.0.0")
    srv.add_argument(
        "--port",
        type=port,
        default=10257,
        help="port for /healthz, /readyz, /metrics and /debug/controllers/garbagecollector/graph "
        "(default: 10257; 0 picks a free port)",
    )


def _in_cluster_namespace() -> str | None:
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() or None
    except OSError:
        return None


async def _make_store(args: argparse.Namespace) -> Any:
    kube_store = load_class("kube", "KubeStore")
    try:
        return await kube_store.from_config(
            args.kubeconfig, args.context, qps=args.qps, burst=args.burst
        )
    except OwnerGCError as exc:
        raise OwnerGCError(f"{exc}\n{NO_CLUSTER_HINT}") from exc


def run(args: argparse.Namespace) -> int:
    try:
        return anyio.run(_run, args)
    except OwnerGCError as exc:
        print(f"ownergc controller: {exc}", file=sys.stderr, flush=True)
        return 1


async def _run(args: argparse.Namespace) -> int:
    store = await _make_store(args)
    async with store:
        return await _serve(args, store)


async def _serve(args: argparse.Namespace, store: Any) -> int:
    ignored = set(DEFAULT_IGNORED_RESOURCES) | set(args.ignore_resource)
    gc = GarbageCollector(
        store,
        workers=args.workers,
        ignored_resources=ignored,
        discovery_period=args.resync_period,
        initial_sync_timeout=args.initial_sync_timeout,
        dry_run=args.dry_run,
    )
    elector: LeaderElector | None = None
    if args.leader_elect:
        namespace = args.leader_elect_resource_namespace or _in_cluster_namespace() or "kube-system"
        elector = LeaderElector(
            store,
            name=args.leader_elect_resource_name,
            namespace=namespace,
            identity=f"{socket.gethostname()}_{uuid.uuid4()}",
            lease_duration=args.leader_elect_lease_duration,
            renew_deadline=args.leader_elect_renew_deadline,
            retry_period=args.leader_elect_retry_period,
        )

    def ready() -> tuple[bool, str]:
        if elector is not None and not elector.is_leader:
            return True, f"standby (leader: {elector.leader or 'unknown'})"
        return gc.is_synced(), "caches synced" if gc.is_synced() else "caches not synced"

    def extra() -> dict[str, float]:
        if elector is None:
            return {}
        return {"ownergc_leader": 1.0 if elector.is_leader else 0.0}

    endpoints = ControllerEndpoints(gc, ready=ready, extra_metrics=extra)
    exit_code = 0
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            lambda task_status: serve_http(
                endpoints, host=args.bind_address, port=args.port, task_status=task_status
            )
        )
        log.info(
            "serving probes and metrics on %s:%s%s",
            args.bind_address,
            port,
            " (dry run: nothing will be changed)" if args.dry_run else "",
        )
        tg.start_soon(_stop_on_signal, tg.cancel_scope)
        try:
            if elector is not None:
                await elector.run(gc.run)
            else:
                await gc.run()
        except LeadershipLost as exc:
            log.error("%s; exiting so a new leader can take over", exc)
            exit_code = 1
        tg.cancel_scope.cancel()
    return exit_code


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("received %s; shutting down", signal.Signals(signum).name)
            scope.cancel()
            return
