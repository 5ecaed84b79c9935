"""ownergc webhook: stop bad ownerReferences at the door (a validating admission webhook).

Serves admission.k8s.io/v1 AdmissionReviews over HTTPS on /validate. Every
create or update that adds ownerReferences is checked against the rules of
`ownergc lint` plus what the live cluster knows: the owner's kind is served,
a cluster-scoped object names no namespaced owner, and an owner with that
uid exists where the garbage collector will look for it (the object's
namespace, or cluster scope). A cross-namespace owner, which the collector
answers by deleting the object, is refused before it is ever stored.

  --mode warn   admit, with warnings kubectl prints (the default)
  --mode deny   refuse, with each rule and its fix

It fails open: when the cluster cannot be asked in time the request is
admitted with a warning (--fail-closed refuses instead), and the
ValidatingWebhookConfiguration in deploy/webhook/ uses failurePolicy: Ignore
so writes succeed while the webhook is down. Owners are cached (one lookup
in flight per owner). TLS comes from --tls-cert/--tls-key, or a self-signed
pair made in --cert-dir whose caBundle --print-ca-bundle prints.
Install: docs/webhook.md.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import logging
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from ownergc.cli._args import port, positive_seconds
from ownergc.cli._sources import (
    SourceError,
    inventory_from_manifests,
    load_into_store,
    open_cluster,
)
from ownergc.errors import OwnerGCError

log = logging.getLogger("ownergc.cli")

HELP = "validating admission webhook that refuses or warns about bad ownerReferences"

DEFAULT_DNS_NAMES = [
    "ownergc-webhook",
    "ownergc-webhook.ownergc-system",
    "ownergc-webhook.ownergc-system.svc",
    "localhost",
    "127.0.0.1",
]


def add_parser(p: argparse.ArgumentParser) -> None:
    """The ``webhook`` command's arguments."""
    src = p.add_argument_group("the cluster owners are looked up in (one of)")
    src.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig file")
    src.add_argument("--context", help="kubeconfig context (default: the current one)")
    src.add_argument(
        "--cluster",
        action="store_true",
        help="the cluster found the kubectl way (KUBECONFIG, ~/.kube/config, in-cluster)",
    )
    src.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        metavar="PATH",
        help="an in-memory cluster holding these manifests (to try the webhook, and for tests)",
    )
    chk = p.add_argument_group("checks")
    chk.add_argument(
        "--mode",
        choices=("warn", "deny"),
        default="warn",
        help="warn: admit with warnings; deny: refuse with the rule and its fix (default: warn)",
    )
    chk.add_argument(
        "--fail-closed",
        action="store_true",
        help="refuse when the cluster cannot be asked in time (default: admit, with a warning)",
    )
    chk.add_argument(
        "--check-timeout",
        type=positive_seconds,
        default=2.0,
        metavar="DURATION",
        help="answer (failing open) after this long; keep it under the configuration's "
        "timeoutSeconds (default: 2s)",
    )
    chk.add_argument(
        "--owner-cache-ttl",
        type=positive_seconds,
        default=30.0,
        metavar="DURATION",
        help="how long an owner looked up is trusted (default: 30s; absences: 1s)",
    )
    tls = p.add_argument_group("serving")
    tls.add_argument("--bind-address", default="0.0.0.0", help="default: 0.0.0.0")
    tls.add_argument("--port", type=port, default=9443, help="HTTPS port (default: 9443)")
    tls.add_argument("--tls-cert", metavar="PATH", help="serving certificate (PEM)")
    tls.add_argument("--tls-key", metavar="PATH", help="its private key (PEM)")
    tls.add_argument(
        "--cert-dir",
        metavar="DIR",
        help="without --tls-cert: where the self-signed CA and certificate are made and "
        "reused (ca.crt, tls.crt, tls.key; default: a temporary directory)",
    )
    tls.add_argument(
        "--dns-name",
        action="append",
        default=[],
        metavar="NAME",
        help="a name (or IP) for the self-signed certificate (repeatable; default: "
        + ", ".join(DEFAULT_DNS_NAMES)
        + ")",
    )
    tls.add_argument(
        "--print-ca-bundle",
        action="store_true",
        help="print the base64 caBundle of the self-signed CA (made in --cert-dir) and exit",
    )
    tls.add_argument(
        "--metrics-port",
        type=port,
        default=None,
        help="also serve /metrics and /healthz over plain HTTP on this port "
        "(they are always on the HTTPS port)",
    )


def run(args: argparse.Namespace) -> int:
    if bool(args.tls_cert) != bool(args.tls_key):
        print("ownergc webhook: give both --tls-cert and --tls-key", file=sys.stderr)
        return 2
    if args.print_ca_bundle:
        if args.tls_cert:
            print("ownergc webhook: --print-ca-bundle is for the self-signed pair", file=sys.stderr)
            return 2
        if not args.cert_dir:
            print(
                "ownergc webhook: --print-ca-bundle needs --cert-dir (where the pair is kept)",
                file=sys.stderr,
            )
            return 2
        try:
            paths = _self_signed(args, Path(args.cert_dir))
        except (RuntimeError, OSError) as exc:
            print(f"ownergc webhook: {exc}", file=sys.stderr)
            return 1
        print(base64.b64encode(paths.ca.read_bytes()).decode())
        return 0
    live = bool(args.kubeconfig or args.context or args.cluster)
    if live == bool(args.filename):
        print(
            "ownergc webhook: give a cluster (--kubeconfig PATH, --cluster) or manifests "
            "for an in-memory one (-f PATH), not both",
            file=sys.stderr,
        )
        return 2
    try:
        return anyio.run(_run, args)
    except ImportError as exc:  # h11 or cryptography missing
        print(
            f"ownergc webhook: {exc}; install the extra: pip install 'ownergc[webhook]'",
            file=sys.stderr,
        )
        return 1
    except (OwnerGCError, RuntimeError, OSError) as exc:
        print(f"ownergc webhook: {exc}", file=sys.stderr, flush=True)
        return 1


def _self_signed(args: argparse.Namespace, directory: Path) -> Any:
    from ownergc.controller._webhook_server import ensure_self_signed

    return ensure_self_signed(directory, args.dns_name or DEFAULT_DNS_NAMES)


async def _open_store(args: argparse.Namespace) -> Any:
    if args.filename:
        from ownergc_backends.memory import InMemoryStore

        store = InMemoryStore()
        load_into_store(store, inventory_from_manifests(args.filename))
        return store
    try:
        store, _ = await open_cluster(args.kubeconfig, args.context)
    except SourceError as exc:
        raise OwnerGCError(str(exc)) from None
    return store


async def _run(args: argparse.Namespace) -> int:
    store = await _open_store(args)
    if hasattr(store, "__aenter__"):
        async with store:
            return await _serve(args, store)
    return await _serve(args, store)


async def _serve(args: argparse.Namespace, store: Any) -> int:
    from ownergc.controller._webhook import AdmissionChecker, OwnerCache
    from ownergc.controller._webhook_server import (
        WebhookApp,
        serve_webhook,
        server_ssl_context,
    )

    cache = OwnerCache(store, ttl=args.owner_cache_ttl)
    checker = AdmissionChecker(
        cache, mode=args.mode, fail_closed=args.fail_closed, timeout=args.check_timeout
    )
    with contextlib.ExitStack() as stack:
        if args.tls_cert:
            cert, key, ca = Path(args.tls_cert), Path(args.tls_key), None
        else:  # a temporary directory only when making a pair (the root fs may be read-only)
            where = args.cert_dir or stack.enter_context(
                tempfile.TemporaryDirectory(prefix="ownergc-webhook-")
            )
            paths = _self_signed(args, Path(where))
            cert, key, ca = paths.cert, paths.key, paths.ca
        try:
            ctx = server_ssl_context(cert, key)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            raise OwnerGCError(f"cannot serve TLS with {cert} and {key}: {exc}") from None
        try:
            await cache.kinds()  # discovery once before serving: fail early, answer fast
        except (OwnerGCError, OSError) as exc:
            log.warning("discovery failed (%s); will retry per request, failing open", exc)
        app = WebhookApp(checker, ready=lambda: cache.discovered)
        async with anyio.create_task_group() as tg:
            bound = await tg.start(
                lambda task_status: serve_webhook(
                    app,
                    host=args.bind_address,
                    port=args.port,
                    ssl_context=ctx,
                    task_status=task_status,
                )
            )
            if args.metrics_port is not None:
                metrics_port = await tg.start(
                    lambda task_status: serve_webhook(
                        app,
                        host=args.bind_address,
                        port=args.metrics_port,
                        ssl_context=None,
                        task_status=task_status,
                    )
                )
                print(f"metrics at http://{args.bind_address}:{metrics_port}/metrics")
            if ca is not None:
                print(f"self-signed CA (caBundle): {ca}")
            print(
                f"ownergc webhook ({args.mode} mode) at https://{args.bind_address}:{bound}/validate",
                flush=True,
            )
            tg.start_soon(_reload_certificate, ctx, cert, key)
            tg.start_soon(_stop_on_signal, tg.cancel_scope)
    return 0


async def _reload_certificate(ctx: Any, cert: Path, key: Path) -> None:
    """Pick up a renewed certificate (cert-manager rotates the Secret) without a restart."""
    seen = _mtime(cert), _mtime(key)
    while True:
        await anyio.sleep(30)
        now = _mtime(cert), _mtime(key)
        if now != seen:
            try:
                ctx.load_cert_chain(str(cert), str(key))
            except (OSError, ValueError) as exc:  # half-written pair: try again next time
                log.warning("reloading %s failed: %s", cert, exc)
                continue
            seen = now
            log.info("reloaded the serving certificate %s", cert)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("received %s; shutting down", signal.Signals(signum).name)
            scope.cancel()
            return
