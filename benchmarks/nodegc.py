"""Node GC benchmarks; prints one JSON object per line.

1. ``plan_container_gc`` over 10,000 containers (2,000 pods) and
   ``plan_image_gc`` over 5,000 images: pure planning time.
2. One full ``NodeGarbageCollector`` container pass against a private
   containerd holding 300 containers in 30 pods (needs root, containerd and
   the ``cri`` extra; ``--skip-cri`` to leave it out).

Run: ``python benchmarks/nodegc.py [--repeat N] [--skip-cri]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

from ownergc.nodegc import (
    POD_UID_LABEL,
    Container,
    ContainerGCPolicy,
    ContainerState,
    FsStats,
    Image,
    ImageGCPolicy,
    PodSandbox,
    PodStates,
    SandboxState,
    detect_images,
    images_in_use,
    plan_container_gc,
    plan_image_gc,
)

NOW = 1_700_000_000 * 10**9
SEC = 10**9


def emit(**fields: object) -> None:
    fields.setdefault("python", platform.python_version())
    print(json.dumps(fields, sort_keys=True), flush=True)


def timed(fn: object, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - t0)
    return out


def container_fixture(
    pods: int = 2000, per_pod: int = 5
) -> tuple[list[Container], list[PodSandbox], PodStates]:
    containers: list[Container] = []
    sandboxes: list[PodSandbox] = []
    deleted = set()
    for p in range(pods):
        uid = f"uid-{p}"
        if p % 10 == 0:
            deleted.add(uid)
        for a in range(2):
            sandboxes.append(
                PodSandbox(
                    id=f"sb-{p}-{a}",
                    uid=uid,
                    attempt=a,
                    created_at=NOW - (100 - a) * SEC,
                    state=SandboxState.READY if a else SandboxState.NOTREADY,
                )
            )
        for i in range(per_pod):
            containers.append(
                Container(
                    id=f"c-{p}-{i}",
                    pod_sandbox_id=f"sb-{p}-1",
                    name=f"n{i % 2}",
                    attempt=i,
                    state=ContainerState.RUNNING if i == per_pod - 1 else ContainerState.EXITED,
                    created_at=NOW - (1000 - i) * SEC - p,
                    labels={POD_UID_LABEL: uid},
                    image_id=f"sha256:{p % 5000:064x}",
                )
            )
    live = frozenset(f"uid-{p}" for p in range(pods)) - deleted
    return containers, sandboxes, PodStates(deleted=frozenset(deleted), live=live, synced=True)


def bench_plans(repeat: int) -> None:
    containers, sandboxes, pods = container_fixture()
    policy = ContainerGCPolicy(timedelta(minutes=1), 1, 5000)
    plan = plan_container_gc(containers, sandboxes, pods, policy, NOW, all_sources_ready=True)
    times = timed(
        lambda: plan_container_gc(containers, sandboxes, pods, policy, NOW, all_sources_ready=True),
        repeat,
    )
    emit(
        bench="plan_container_gc",
        containers=len(containers),
        sandboxes=len(sandboxes),
        planned_containers=len(plan.containers),
        planned_sandboxes=len(plan.sandboxes),
        min_ms=round(min(times) * 1e3, 2),
        median_ms=round(statistics.median(times) * 1e3, 2),
        repeat=repeat,
    )

    images = [Image(f"sha256:{i:064x}", size=(i % 97 + 1) * 10**6) for i in range(5000)]
    in_use = images_in_use(containers[:4000])
    records = detect_images({}, images, in_use, NOW - 3600 * SEC, NOW - 3600 * SEC)
    total = sum(i.size for i in images)
    fs = FsStats(capacity_bytes=int(total * 1.05), available_bytes=int(total * 0.05))
    ipol = ImageGCPolicy(85, 80, timedelta(minutes=2), timedelta(0))
    iplan = plan_image_gc(fs, images, records, in_use, ipol, NOW)
    times = timed(lambda: plan_image_gc(fs, images, records, in_use, ipol, NOW), repeat)
    emit(
        bench="plan_image_gc",
        images=len(images),
        in_use=len(in_use),
        planned_images=len(iplan.images),
        usage_percent=iplan.usage_percent,
        min_ms=round(min(times) * 1e3, 2),
        median_ms=round(statistics.median(times) * 1e3, 2),
        repeat=repeat,
    )


async def _cri_pass(env: object, pods: int, per_pod: int) -> None:
    from ownergc.controller import NodeGarbageCollector, StaticPodStateSource
    from ownergc_backends.cri import CRIRuntime

    async with CRIRuntime(env.endpoint, timeout=120) as rt:  # type: ignore[attr-defined]
        await env.reset(rt)  # type: ignore[attr-defined]
        t0 = time.perf_counter()
        deleted = set()
        for p in range(pods):
            sb = await env.run_pod(rt, f"bench{p}", f"uid-bench-{p}")  # type: ignore[attr-defined]
            for i in range(per_pod):
                await env.run_container(rt, sb, f"c{i % 2}", i, start=False)  # type: ignore[attr-defined]
            if p % 2 == 0:
                deleted.add(f"uid-bench-{p}")
                await rt.stop_pod_sandbox(sb[0])
        setup = time.perf_counter() - t0
        before = len(await rt.list_containers())
        gc = NodeGarbageCollector(
            rt,
            container_policy=ContainerGCPolicy(timedelta(0), 1, -1),
            pod_states=StaticPodStateSource(
                PodStates(
                    deleted=frozenset(deleted),
                    live=frozenset(f"uid-bench-{p}" for p in range(pods)) - deleted,
                    synced=True,
                )
            ),
            pod_logs_dir=env.pod_logs_dir,  # type: ignore[attr-defined]
            container_logs_dir=env.container_logs_dir,  # type: ignore[attr-defined]
        )
        t0 = time.perf_counter()
        res = await gc.collect_containers()
        elapsed = time.perf_counter() - t0
        after = len(await rt.list_containers())
        emit(
            bench="cri_container_pass",
            runtime="containerd",
            containers_before=before,
            containers_after=after,
            removed_containers=len(res.removed_containers),
            removed_sandboxes=len(res.removed_sandboxes),
            removed_pod_log_dirs=len(res.removed_pod_log_dirs),
            errors=len(res.removal_errors),
            seconds=round(elapsed, 3),
            ms_per_removed_container=round(elapsed * 1e3 / max(len(res.removed_containers), 1), 2),
            setup_seconds=round(setup, 3),
        )
        await env.remove_everything()  # type: ignore[attr-defined]


def bench_cri(pods: int, per_pod: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "nodegc"))
    import anyio
    from _nodegc_cri_env import CRIEnv, missing_tools, new_base

    if missing_tools():
        emit(bench="cri_container_pass", skipped=f"missing {missing_tools()}")
        return
    env = CRIEnv(new_base())
    try:
        env.start()
        anyio.run(_cri_pass, env, pods, per_pod)
    finally:
        env.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-cri", action="store_true")
    ap.add_argument("--pods", type=int, default=30)
    ap.add_argument("--per-pod", type=int, default=10)
    args = ap.parse_args()
    bench_plans(args.repeat)
    if not args.skip_cri:
        bench_cri(args.pods, args.per_pod)


if __name__ == "__main__":
    main()
