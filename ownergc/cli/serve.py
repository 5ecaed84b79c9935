"""ownergc serve: a Kubernetes API with a garbage collector, in one process, no cluster.

Serves the in-memory apiserver over HTTP (no TLS, no authentication) with
kube-controller-manager's garbage collector and namespace controller running
against it, so kubectl and the official clients see objects really cascade:

  kubectl apply / get / delete --cascade=background|foreground|orphan
  CustomResourceDefinitions serve their kinds; namespaces terminate and
  their contents are deleted.

Every namespace gets its ServiceAccount ``default`` and ConfigMap
``kube-root-ca.crt`` (with a fake CA), and Pods are admitted as a 1.21+
server's ServiceAccount plugin admits them (token volume and mounts; a
missing service account is refused).

The kubeconfig is printed (or written with --kubeconfig-out); with the
default port, kubectl without any kubeconfig finds it too (it falls back to
http://localhost:8080, the old insecure apiserver port this mimics). Runs until
Ctrl-C / SIGTERM. For tests, see the pytest plugin (ownergc.testing.plugin).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Any, TextIO

import anyio

from ownergc._kit.manifests import ManifestError, read_manifests
from ownergc.cli._args import port, positive_int

DEFAULT_PORT = 8080


HELP = "serve an in-memory Kubernetes API with the garbage collector running"


def add_parser(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` command's arguments."""
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    parser.add_argument(
        "--port",
        type=port,
        default=DEFAULT_PORT,
        help=f"port to listen on; 0 picks a free one (default: {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--kubeconfig-out",
        metavar="PATH",
        help="write the kubeconfig to PATH instead of printing it",
    )
    parser.add_argument(
        "--load",
        metavar="PATH",
        action="append",
        default=[],
        help="seed from manifests: a YAML/JSON file or a directory of them (repeatable); "
        "CRDs are loaded first, metadata.uid is kept when given",
    )
    parser.add_argument("--workers", type=positive_int, default=20, help="GC workers (default: 20)")
    parser.add_argument(
        "--actions",
        action="store_true",
        help="print every action of the garbage collector and namespace controller",
    )


def kubeconfig_yaml(config: dict[str, Any]) -> str:
    """The facade's kubeconfig as YAML (JSON strings are valid YAML scalars)."""
    cluster = config["clusters"][0]
    context = config["contexts"][0]
    q = json.dumps
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        f"- name: {q(cluster['name'])}\n"
        f"  cluster:\n    server: {q(cluster['cluster']['server'])}\n"
        "users:\n"
        f"- name: {q(config['users'][0]['name'])}\n  user: {{}}\n"
        "contexts:\n"
        f"- name: {q(context['name'])}\n"
        "  context:\n"
        f"    cluster: {q(context['context']['cluster'])}\n"
        f"    user: {q(context['context']['user'])}\n"
        f"    namespace: {q(context['context']['namespace'])}\n"
        f"current-context: {q(config['current-context'])}\n"
    )


def run(args: argparse.Namespace) -> int:
    try:
        manifests = read_manifests(args.load) if args.load else []
    except ManifestError as exc:
        print(f"ownergc serve: {exc}", file=sys.stderr)
        return 2
    try:
        return anyio.run(_serve, args, manifests, sys.stdout)
    except OSError as exc:
        print(f"ownergc serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        if args.port != 0:
            print("  (pick another port with --port, or --port 0 for a free one)", file=sys.stderr)
        return 1


async def _serve(args: argparse.Namespace, manifests: list[Any], out: TextIO) -> int:
    from ownergc.testing._cluster import EmbeddedCluster, load_manifests, new_store

    store = new_store()
    try:
        loaded = load_manifests(store, manifests)
    except ManifestError as exc:
        print(f"ownergc serve: {exc}", file=sys.stderr)
        return 2

    def on_action(what: str, details: Any) -> None:
        extra = f" ({details['policy']})" if "policy" in details else ""
        why = f" — {details['why']}" if details.get("why") else ""
        out.write(f"action: {what}{extra} {details.get('target')}{why}\n")
        out.flush()

    cluster = EmbeddedCluster(
        store,
        host=args.host,
        port=args.port,
        workers=args.workers,
        discovery_period=1.0,
        on_action=on_action if args.actions else None,
        service_accounts=True,
    )
    # Signals are taken over before the banner: a SIGTERM right after it must stop us cleanly.
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as tg:
            await tg.start(cluster.run)
            code = _announce(args, cluster, loaded, out)
            if code == 0:
                async for signum in signals:
                    out.write(f"ownergc serve: {signal.Signals(signum).name}, stopping\n")
                    out.flush()
                    break
            tg.cancel_scope.cancel()
    return code


def _announce(args: argparse.Namespace, cluster: Any, loaded: int, out: TextIO) -> int:
    """Print where the API is and how to reach it (or write the kubeconfig)."""
    server = cluster.server
    assert server is not None
    out.write(
        f"ownergc serve: Kubernetes API at {server.url} "
        "(in-memory, garbage collector and namespace controller running)\n"
    )
    if loaded:
        out.write(f"loaded {loaded} objects from {', '.join(args.load)}\n")
    if args.kubeconfig_out:
        path = Path(args.kubeconfig_out)
        try:
            server.write_kubeconfig(path)
        except OSError as exc:
            print(f"ownergc serve: cannot write {path}: {exc}", file=sys.stderr)
            return 1
        out.write(f"kubeconfig written to {path}; try:\n")
        out.write(f"  export KUBECONFIG={path}\n  kubectl get namespaces\n")
    else:
        out.write("kubeconfig (save it and point KUBECONFIG at it, or use kubectl --server):\n")
        out.write("---\n" + kubeconfig_yaml(server.kubeconfig()) + "---\n")
    out.write("Ctrl-C to stop.\n")
    out.flush()
    return 0
