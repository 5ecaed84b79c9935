"""``ownergc node``: the kubelet's node GC as a stand-alone process.

Flags are named and defaulted like the kubelet's so that a node's existing
settings carry over. Durations are Go durations (``2m``, ``1h30m``, ``0s``).
The main CLI calls :func:`add_parser`, then :func:`run` (sync;
:func:`run_node_async` for callers in a loop).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import time
from datetime import timedelta
from typing import Any

import anyio

from ownergc._kit.backends import load_class
from ownergc.controller import (
    ContainerGCResult,
    ImageGCResult,
    NodeGarbageCollector,
    ObjectStorePodStateSource,
    PodStateSource,
    RuntimePodStateSource,
)
from ownergc.errors import BackendUnavailable
from ownergc.nodegc import (
    CONTAINER_GC_PERIOD_SECONDS,
    DEFAULT_CONTAINER_LOGS_DIR,
    DEFAULT_POD_LOGS_DIR,
    IMAGE_GC_PERIOD_SECONDS,
    ContainerGCPolicy,
    ContainerState,
    Image,
    ImageGCPolicy,
    ImageRecord,
    InvalidPolicy,
    SandboxState,
    parse_duration,
)
from ownergc.protocols import ContainerRuntime

__all__ = [
    "add_parser",
    "build_policies",
    "load_image_records",
    "run",
    "run_node_async",
    "save_image_records",
]

log = logging.getLogger("ownergc.nodegc")

DEFAULT_RUNTIME_ENDPOINT = "unix:///run/containerd/containerd.sock"
AUTO = "auto"


def _duration(text: str) -> timedelta:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _percent(text: str) -> int:
    try:
        return int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid integer percentage: {text!r}") from exc


HELP = "run the kubelet's node GC (dead containers, sandboxes, logs, images)"
FORMATTER = argparse.ArgumentDefaultsHelpFormatter
DESCRIPTION = (
    "Garbage-collect dead containers, pod sandboxes, pod log directories and unused "
    "images exactly as the kubelet does, against a CRI runtime."
)


def add_parser(p: argparse.ArgumentParser) -> None:
    """The ``node`` command's arguments."""
    rt = p.add_argument_group("runtime")
    rt.add_argument(
        "--runtime",
        choices=("cri", "memory"),
        default="cri",
        help="cri: a real CRI endpoint; memory: an in-process demo node",
    )
    rt.add_argument(
        "--runtime-endpoint",
        "--container-runtime-endpoint",
        dest="runtime_endpoint",
        default=DEFAULT_RUNTIME_ENDPOINT,
        help="CRI runtime socket",
    )
    rt.add_argument(
        "--image-service-endpoint", default="", help="CRI image socket (default: runtime endpoint)"
    )
    rt.add_argument(
        "--runtime-request-timeout",
        type=_duration,
        default=timedelta(minutes=2),
        help="timeout of each CRI call",
    )
    rt.add_argument(
        "--kubeconfig",
        default="",
        help="judge pods from this cluster; without it pods are judged from the "
        "runtime alone and no pod is ever considered deleted",
    )

    c = p.add_argument_group("container GC (kubelet flags)")
    c.add_argument(
        "--minimum-container-ttl-duration",
        type=_duration,
        default=timedelta(0),
        help="minimum age (since creation) of a dead container before it can be removed",
    )
    c.add_argument(
        "--maximum-dead-containers-per-container",
        type=int,
        default=1,
        help="dead containers kept per (pod, container name); negative: no limit",
    )
    c.add_argument(
        "--maximum-dead-containers",
        type=int,
        default=-1,
        help="dead containers kept on the node; negative: no limit",
    )

    i = p.add_argument_group("image GC (kubelet flags)")
    i.add_argument(
        "--image-gc-high-threshold",
        type=_percent,
        default=85,
        help="disk usage percent that starts image GC (100 with no max age: off)",
    )
    i.add_argument(
        "--image-gc-low-threshold",
        type=_percent,
        default=80,
        help="disk usage percent image GC frees down to",
    )
    i.add_argument(
        "--minimum-image-ttl-duration",
        type=_duration,
        default=timedelta(minutes=2),
        help="minimum age (since first seen) of an unused image before GC",
    )
    i.add_argument(
        "--image-maximum-gc-age",
        type=_duration,
        default=timedelta(0),
        help="remove images unused for longer than this (0s: off)",
    )
    i.add_argument(
        "--pod-infra-container-image",
        default=AUTO,
        help="sandbox image never to remove; 'auto' asks the runtime, '' protects "
        "nothing beyond images the runtime pins",
    )

    f = p.add_argument_group("logs")
    f.add_argument(
        "--pod-logs-dir",
        default=None,
        help=f"pod log directories to GC ('' to leave logs alone; default "
        f"{DEFAULT_POD_LOGS_DIR} with --runtime cri, none with memory)",
    )
    f.add_argument(
        "--container-logs-dir",
        default=None,
        help=f"legacy container log symlinks (default {DEFAULT_CONTAINER_LOGS_DIR} "
        "with --runtime cri, none with memory)",
    )

    r = p.add_argument_group("running")
    r.add_argument("--dry-run", action="store_true", help="plan and log, remove nothing")
    r.add_argument(
        "--once",
        action="store_true",
        help="one container pass and one image pass, print a JSON summary, exit",
    )
    r.add_argument(
        "--container-gc-period",
        type=_duration,
        default=timedelta(seconds=CONTAINER_GC_PERIOD_SECONDS),
        help="container loop period (the kubelet hard-codes 1m)",
    )
    r.add_argument(
        "--image-gc-period",
        type=_duration,
        default=timedelta(seconds=IMAGE_GC_PERIOD_SECONDS),
        help="image loop period (the kubelet hard-codes 5m)",
    )
    r.add_argument(
        "--metrics-file",
        default="",
        help="write Prometheus text metrics here after every pass (node_exporter "
        "textfile collector)",
    )
    r.add_argument(
        "--image-records-file",
        default="",
        help="keep image first-seen/last-used records here across runs (useful with --once: "
        "without it every image is new to each run and must wait the minimum image TTL)",
    )
    p.set_defaults(_node_parser=p)


def build_policies(args: argparse.Namespace) -> tuple[ContainerGCPolicy, ImageGCPolicy]:
    """Policies from flags, validated as the kubelet validates its configuration.

    Raises :class:`~ownergc.nodegc.InvalidPolicy` with the kubelet's message.
    """
    cpol = ContainerGCPolicy(
        args.minimum_container_ttl_duration,
        args.maximum_dead_containers_per_container,
        args.maximum_dead_containers,
    )
    ipol = ImageGCPolicy(
        args.image_gc_high_threshold,
        args.image_gc_low_threshold,
        args.minimum_image_ttl_duration,
        args.image_maximum_gc_age,
    )
    errors = ipol.validate()
    if errors:
        raise InvalidPolicy("; ".join(errors))
    return cpol, ipol


def run(args: argparse.Namespace) -> int:
    """Entry point for the main CLI (``func`` on the parsed namespace)."""
    parser: argparse.ArgumentParser | None = getattr(args, "_node_parser", None)
    try:
        build_policies(args)
    except InvalidPolicy as exc:
        if parser is not None:
            parser.error(str(exc))  # exits 2 with usage, like any bad flag
        raise
    result: int = anyio.run(run_node_async, args)
    return result


def demo_runtime(now: int) -> ContainerRuntime:
    """An in-memory node with something for every GC rule to do."""
    from ownergc_backends.memory import InMemoryRuntime

    gib = 1 << 30
    rt = InMemoryRuntime(capacity_bytes=20 * gib, other_used_bytes=13 * gib)
    minute = 60 * 10**9
    web = rt.run_pod("web", "uid-web", created_at=now - 90 * minute, attempt=1)
    rt.run_pod("web", "uid-web", created_at=now - 120 * minute, state=SandboxState.NOTREADY)
    rt.add_image(Image("sha256:nginx", 2 * gib, repo_tags=("docker.io/library/nginx:1.27",)))
    rt.add_image(Image("sha256:old-app", 2 * gib, repo_tags=("docker.io/library/app:0.9",)))
    rt.add_image(Image("sha256:tools", 1 * gib, repo_tags=("docker.io/library/tools:1",)))
    rt.add_image(
        Image("sha256:pause", 1 << 20, repo_tags=("registry.k8s.io/pause:3.10",), pinned=True)
    )
    for attempt in range(4):
        rt.create_container(
            web,
            "nginx",
            attempt=attempt,
            created_at=now - (60 - attempt) * minute,
            image_id="sha256:nginx",
        )
    rt.create_container(
        web,
        "nginx",
        attempt=4,
        state=ContainerState.RUNNING,
        created_at=now - 10 * minute,
        image_id="sha256:nginx",
    )
    return rt


async def _make_runtime(args: argparse.Namespace, now: int) -> tuple[ContainerRuntime, Any]:
    if args.runtime == "memory":
        return demo_runtime(now), None
    try:
        cri_runtime = load_class("cri", "CRIRuntime")
    except BackendUnavailable as exc:
        raise SystemExit(f"ownergc node: --runtime cri: {exc}") from exc
    rt: ContainerRuntime = cri_runtime(
        args.runtime_endpoint,
        image_endpoint=args.image_service_endpoint or None,
        timeout=args.runtime_request_timeout.total_seconds(),
    )
    return rt, rt


async def _pod_state_source(args: argparse.Namespace) -> PodStateSource:
    if not args.kubeconfig:
        return RuntimePodStateSource()
    try:
        kube_store = load_class("kube", "KubeStore")
    except BackendUnavailable as exc:
        raise SystemExit(f"ownergc node: --kubeconfig: {exc}") from exc
    store = await kube_store.from_config(args.kubeconfig)
    return ObjectStorePodStateSource(store)


def _summary(c: ContainerGCResult, i: ImageGCResult | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "dry_run": c.dry_run,
        "containers": {
            "planned": [{"id": r.id, "reason": r.reason.value} for r in c.plan.containers],
            "removed": c.removed_containers,
        },
        "sandboxes": {
            "planned": [{"id": s.id, "reason": s.reason.value} for s in c.plan.sandboxes],
            "removed": c.removed_sandboxes,
        },
        "pod_log_dirs": {"planned": list(c.plan.pod_log_dirs), "removed": c.removed_pod_log_dirs},
        "log_symlinks_removed": c.removed_log_symlinks,
        "errors": [str(e) for e in c.errors],
        "removal_errors": [str(e) for e in c.removal_errors],
    }
    if i is not None:
        out["images"] = {
            "usage_percent": i.plan.usage_percent,
            "bytes_to_free": i.plan.bytes_to_free,
            "planned": [
                {"id": r.image_id, "reason": r.reason.value, "size": r.size} for r in i.plan.images
            ],
            "removed": i.removed,
            "freed_bytes": i.freed_bytes,
            "error": None if i.error is None else str(i.error),
        }
    return out


def load_image_records(path: str) -> dict[str, ImageRecord]:
    """Image records saved by :func:`save_image_records` (empty when the file is absent)."""
    try:
        with open(path, encoding="utf-8") as fh:
            raw = json.load(fh)
    except FileNotFoundError:
        return {}
    return {key: ImageRecord(**value) for key, value in raw.items()}


def save_image_records(path: str, records: dict[str, ImageRecord]) -> None:
    _write_atomic(path, json.dumps({k: dataclasses.asdict(v) for k, v in records.items()}))


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _write_metrics(path: str, text: str) -> None:
    _write_atomic(path, text)


async def run_node_async(args: argparse.Namespace) -> int:
    """Run ``ownergc node`` inside an existing event loop (asyncio for ``--runtime cri``)."""
    container_policy, image_policy = build_policies(args)
    now = time.time_ns()
    runtime, closable = await _make_runtime(args, now)
    cri = args.runtime == "cri"
    pod_logs = (
        args.pod_logs_dir
        if args.pod_logs_dir is not None
        else (DEFAULT_POD_LOGS_DIR if cri else "")
    )
    links = (
        args.container_logs_dir
        if args.container_logs_dir is not None
        else (DEFAULT_CONTAINER_LOGS_DIR if cri else "")
    )
    try:
        sandbox_image: str | None = args.pod_infra_container_image
        if sandbox_image == AUTO:
            probe = getattr(runtime, "sandbox_image", None)
            sandbox_image = await probe() if probe is not None else None
            log.info("sandbox image: %s", sandbox_image or "(none reported)")
        gc = NodeGarbageCollector(
            runtime,
            container_policy=container_policy,
            image_policy=image_policy,
            pod_states=await _pod_state_source(args),
            pod_logs_dir=pod_logs or None,
            container_logs_dir=links or None,
            sandbox_image=sandbox_image,
            dry_run=args.dry_run,
            container_gc_period=args.container_gc_period.total_seconds(),
            image_gc_period=args.image_gc_period.total_seconds(),
        )
        if args.image_records_file:
            gc.image_records = load_image_records(args.image_records_file)
        elif args.runtime == "memory":
            # The demo node has been up for an hour: its images are past the minimum TTL.
            gc.image_records = {
                i.id: ImageRecord(first_detected=now - 3600 * 10**9, size=i.size, image_id=i.id)
                for i in await runtime.list_images()
            }
        if args.once:
            res = await gc.run_once(images=image_policy.periodic)
            if args.image_records_file:
                save_image_records(args.image_records_file, gc.image_records)
            print(json.dumps(_summary(res.containers, res.images), indent=2, sort_keys=True))
            if args.metrics_file:
                _write_metrics(args.metrics_file, gc.metrics.render())
            failed = res.containers.errors or (res.images is not None and res.images.error)
            return 1 if failed else 0
        async with anyio.create_task_group() as tg:
            tg.start_soon(gc.run)
            if args.metrics_file or args.image_records_file:
                while True:
                    await anyio.sleep(min(args.container_gc_period.total_seconds(), 15.0))
                    if args.metrics_file:
                        _write_metrics(args.metrics_file, gc.metrics.render())
                    if args.image_records_file:
                        save_image_records(args.image_records_file, gc.image_records)
        return 0  # pragma: no cover - gc.run only ends by cancellation
    finally:
        if closable is not None:
            await closable.aclose()
