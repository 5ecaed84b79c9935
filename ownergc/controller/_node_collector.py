"""NodeGarbageCollector: the kubelet's node-side GC loops over a ContainerRuntime.

The decisions are the pure policies of :mod:`ownergc.nodegc`; this module
gathers their inputs (runtime listings, pod states, the clock, the log
directories), executes the plans in the kubelet's order and keeps the image
records and metrics between passes.

Loops, as ``kubelet.StartGarbageCollection`` runs them (each body runs at
once, then ``period`` after it *returns*; a failing pass is logged and the
loop goes on):

* containers every 1 min: containers, then (after a re-list) sandboxes, then
  pod log directories and dangling legacy log symlinks;
* images every 5 min: MaxAge pass, then the threshold pass; not started at
  all when ``high_threshold_percent == 100`` and MaxAge is off;
* image detection every 5 min: refreshes first-detected / last-used records.

Pod state: the GC asks a :class:`PodStateSource` which pods are deleted or
terminated. :class:`ObjectStorePodStateSource` answers from the apiserver;
:class:`RuntimePodStateSource` (the default) answers from the runtime alone,
which means *no pod is ever considered deleted*: dead containers are still
capped per container and per node, and superseded sandboxes still go, but
whole-pod cleanup (all containers, the last sandbox, the log directory) never
happens.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from ownergc.controller._node_metrics import NodeGCMetrics
from ownergc.controller._node_pods import PodStateSource, RuntimePodStateSource
from ownergc.errors import NotFound
from ownergc.nodegc import (
    CONTAINER_GC_PERIOD_SECONDS,
    CONTAINER_NAME_LABEL,
    FREE_ALL,
    IMAGE_DETECTION_PERIOD_SECONDS,
    IMAGE_GC_PERIOD_SECONDS,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    Container,
    ContainerGCPlan,
    ContainerGCPolicy,
    ContainerRemoval,
    FsStats,
    ImageDeletionFailed,
    ImageGCPlan,
    ImageGCPolicy,
    ImageRecord,
    ImageRemoval,
    PodSandbox,
    ReadImageFs,
    RecordsDetected,
    RemoveImage,
    container_id_from_legacy_log_symlink,
    credit_freed,
    dangling_symlink_removable,
    detect_images,
    image_gc_pass,
    images_in_use,
    legacy_log_symlink_name,
    plan_container_gc,
    plan_delete_unused_images,
    plan_pod_log_dir_eviction,
    plan_sandbox_eviction,
)
from ownergc.protocols import ContainerRuntime

__all__ = [
    "Clock",
    "ContainerGCResult",
    "ImageGCResult",
    "NodeGCResult",
    "NodeGarbageCollector",
]

log = logging.getLogger("ownergc.nodegc")


Clock = Callable[[], int]


@dataclass
class ContainerGCResult:
    """What a runtime-GC pass planned, removed and failed at."""

    plan: ContainerGCPlan
    dry_run: bool = False
    removed_containers: list[str] = field(default_factory=list)
    removed_sandboxes: list[str] = field(default_factory=list)
    removed_pod_log_dirs: list[str] = field(default_factory=list)
    removed_log_symlinks: list[str] = field(default_factory=list)
    #: Step failures (listing, reading the log dir): the kubelet's ContainerGCFailed.
    errors: list[BaseException] = field(default_factory=list)
    #: Individual stop/remove failures: logged only, as upstream.
    removal_errors: list[BaseException] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass
class ImageGCResult:
    """What an image-GC pass planned, removed and the error it ends with."""

    plan: ImageGCPlan
    dry_run: bool = False
    removed: list[str] = field(default_factory=list)
    freed_bytes: int = 0
    error: BaseException | None = None
    removal_errors: list[BaseException] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class NodeGCResult:
    containers: ContainerGCResult
    images: ImageGCResult | None


def _unlink_quiet(path: str) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def _rmtree_quiet(path: Path) -> None:
    """Remove a directory tree; one already gone is success."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(path)


def _remove_log_files(log_path: str) -> list[str]:
    gone = []
    for p in glob.glob(glob.escape(log_path) + "*"):
        if _unlink_quiet(p):
            gone.append(p)
    return gone


def _dangling_symlinks(directory: str) -> list[str]:
    return sorted(
        p for p in glob.glob(os.path.join(glob.escape(directory), "*.log")) if not os.path.exists(p)
    )


def _within(path: str, root: Path) -> bool:
    try:
        return Path(os.path.abspath(path)).is_relative_to(root)
    except ValueError:  # pragma: no cover - different drives
        return False


class NodeGarbageCollector:
    """The kubelet's container, sandbox, log and image GC over a ContainerRuntime.

    ``await gc.run()`` runs the loops until cancelled; ``await gc.run_once()``
    does one container pass and one image pass (what tests and ``--once``
    use). Log files are only touched inside ``pod_logs_dir`` and
    ``container_logs_dir``; leave them ``None`` to keep the GC off the disk.
    ``clock`` returns nanoseconds since the epoch (tests inject a fake one).
    """

    def __init__(
        self,
        runtime: ContainerRuntime,
        *,
        container_policy: ContainerGCPolicy | None = None,
        image_policy: ImageGCPolicy | None = None,
        pod_states: PodStateSource | None = None,
        pod_logs_dir: str | os.PathLike[str] | None = None,
        container_logs_dir: str | os.PathLike[str] | None = None,
        sandbox_image: str | None = None,
        dry_run: bool = False,
        container_gc_period: float = CONTAINER_GC_PERIOD_SECONDS,
        image_gc_period: float = IMAGE_GC_PERIOD_SECONDS,
        image_detection_period: float = IMAGE_DETECTION_PERIOD_SECONDS,
        clock: Clock = time.time_ns,
        metrics: NodeGCMetrics | None = None,
        per_runtime_handler: bool = False,
    ) -> None:
        self.runtime = runtime
        self.container_policy = container_policy or ContainerGCPolicy()
        self.image_policy = image_policy or ImageGCPolicy()
        self.pod_state_source: PodStateSource = pod_states or RuntimePodStateSource()
        self.pod_logs_dir = Path(os.path.abspath(pod_logs_dir)) if pod_logs_dir else None
        self.container_logs_dir = (
            Path(os.path.abspath(container_logs_dir)) if container_logs_dir else None
        )
        self.sandbox_image = sandbox_image or None
        self.dry_run = dry_run
        self.container_gc_period = container_gc_period
        self.image_gc_period = image_gc_period
        self.image_detection_period = image_detection_period
        self.clock = clock
        self.metrics = metrics or NodeGCMetrics()
        self.per_runtime_handler = per_runtime_handler
        #: The image records (first detected / last used) kept between passes.
        self.image_records: dict[str, ImageRecord] = {}
        #: When the image GC started (the kubelet's ``beganGC``, MaxAge's uptime gate).
        self.began_gc: int = clock()
        self._image_failures = 0

    # --- loops ---------------------------------------------------------------------

    async def run(self) -> None:
        """Run the container, image and detection loops until cancelled."""
        self.began_gc = self.clock()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._loop, "containers", self.container_gc_period, self._container_tick)
            if self.image_policy.periodic:
                tg.start_soon(self._loop, "images", self.image_gc_period, self._image_tick)
            else:
                log.info("image GC loop not started: high threshold 100%% and no MaxAge")
            tg.start_soon(self._loop, "detect", self.image_detection_period, self.detect_images)

    async def _loop(self, name: str, period: float, body: Callable[[], Awaitable[Any]]) -> None:
        while True:
            try:
                await body()
            except Exception:  # a loop must survive any pass
                log.exception("node GC %s pass crashed", name)
            await anyio.sleep(period)

    async def _container_tick(self) -> None:
        res = await self.collect_containers()
        if res.errors:
            log.error("Container garbage collection failed: %s", "; ".join(map(str, res.errors)))

    async def _image_tick(self) -> None:
        res = await self.collect_images()
        if res.error is None:
            self._image_failures = 0
            return
        self._image_failures += 1
        if self._image_failures == 1:
            log.warning(
                "Image garbage collection failed once. Stats initialization may not have "
                "completed yet: %s",
                res.error,
            )
        else:
            log.error("Image garbage collection failed multiple times in a row: %s", res.error)

    async def run_once(self, *, images: bool = True) -> NodeGCResult:
        """One container pass, then (unless ``images=False``) one image pass."""
        c = await self.collect_containers()
        i = await self.collect_images() if images else None
        return NodeGCResult(c, i)

    def _finish(self, loop: str, started: float, ok: bool) -> None:
        self.metrics.inc(
            "ownergc_nodegc_runs_total", loop=loop, result="success" if ok else "failure"
        )
        self.metrics.set(
            "ownergc_nodegc_last_run_duration_seconds", time.monotonic() - started, loop=loop
        )
        self.metrics.set("ownergc_nodegc_last_run_timestamp_seconds", self.clock() / 1e9, loop=loop)

    # --- container / sandbox / log GC ----------------------------------------------------

    async def collect_containers(self, *, evict_terminated_pods: bool = False) -> ContainerGCResult:
        """One runtime-GC pass: containers, sandboxes, then logs (each step runs regardless)."""
        started = time.monotonic()
        result = ContainerGCResult(ContainerGCPlan(), dry_run=self.dry_run)
        try:
            await self._collect_containers(result, evict_terminated_pods)
        finally:
            self._finish("containers", started, result.ok)
        return result

    async def delete_all_unused_containers(self) -> ContainerGCResult:
        """The eviction manager's reclaim: terminated pods' containers and sandboxes go too."""
        return await self.collect_containers(evict_terminated_pods=True)

    async def _list_runtime(self) -> tuple[list[Container], list[PodSandbox]]:
        return list(await self.runtime.list_containers()), list(
            await self.runtime.list_pod_sandboxes()
        )

    async def _collect_containers(self, result: ContainerGCResult, evict: bool) -> None:
        try:
            containers, sandboxes = await self._list_runtime()
            pods = await self.pod_state_source.pod_states(sandboxes, containers)
        except Exception as exc:
            result.errors.append(exc)
            return
        now = self.clock()
        ready = pods.synced
        entries = await self._log_dir_entries(result) if self.pod_logs_dir else []
        full = plan_container_gc(
            containers,
            sandboxes,
            pods,
            self.container_policy,
            now,
            all_sources_ready=ready,
            evict_terminated_pods=evict,
            pod_log_dirs=entries,
        )
        result.plan = full
        m = self.metrics
        m.set("ownergc_nodegc_planned_removals", len(full.containers), kind="container")
        m.set("ownergc_nodegc_planned_removals", len(full.sandboxes), kind="sandbox")
        m.set("ownergc_nodegc_planned_removals", len(full.pod_log_dirs), kind="pod_log_dir")
        if self.dry_run:
            for r in full.containers:
                log.info("dry-run: would remove container %s (%s)", r.id, r.reason.value)
            for s in full.sandboxes:
                log.info("dry-run: would remove sandbox %s (%s)", s.id, s.reason.value)
            for d in full.pod_log_dirs:
                log.info("dry-run: would remove pod log dir %s", d)
            return

        # (a) containers
        by_id = {c.id: c for c in containers}
        for r in full.containers:
            await self._remove_container(r, by_id[r.id], result)

        # (b) sandboxes, judged on a fresh listing like the kubelet's, so a
        # container that failed to go still protects its sandbox.
        try:
            containers, sandboxes = await self._list_runtime()
        except Exception as exc:
            result.errors.append(exc)
        else:
            for s in plan_sandbox_eviction(
                sandboxes, containers, pods, evict_terminated_pods=evict
            ):
                stop, remove = self.runtime.stop_pod_sandbox, self.runtime.remove_pod_sandbox
                if not (await self._step(result, "sandbox", f"stop sandbox {s.id}", stop, s.id))[0]:
                    continue
                if not (
                    await self._step(
                        result, "sandbox", f"remove sandbox {s.id}", remove, s.id, gone=False
                    )
                )[0]:
                    continue
                result.removed_sandboxes.append(s.id)
                m.inc("ownergc_nodegc_sandboxes_removed_total", reason=s.reason.value)

        # (c) pod log directories and dangling legacy symlinks
        if self.pod_logs_dir is not None:
            for entry in plan_pod_log_dir_eviction(entries, pods, all_sources_ready=ready):
                path = self.pod_logs_dir / entry
                removed, _ = await self._step(
                    result,
                    "pod_log_dir",
                    f"remove {path}",
                    anyio.to_thread.run_sync,
                    _rmtree_quiet,
                    path,
                    errors=OSError,
                )
                if not removed:
                    continue
                result.removed_pod_log_dirs.append(str(path))
                m.inc("ownergc_nodegc_pod_log_dirs_removed_total")
        if self.container_logs_dir is not None:
            await self._sweep_dangling_symlinks(result)

    async def _log_dir_entries(self, result: ContainerGCResult) -> list[str]:
        assert self.pod_logs_dir is not None
        try:
            return sorted(await anyio.to_thread.run_sync(os.listdir, self.pod_logs_dir))
        except OSError as exc:
            err = OSError(
                exc.errno or errno.EIO,
                f"failed to read podLogsDirectory {str(self.pod_logs_dir)!r}: {exc}",
            )
            result.errors.append(err)
            return []

    async def _step(
        self,
        result: ContainerGCResult,
        kind: str,
        what: str,
        call: Callable[..., Awaitable[Any]],
        *args: Any,
        gone: bool = True,
        errors: type[BaseException] | tuple[type[BaseException], ...] = Exception,
    ) -> tuple[bool, Any]:
        """One runtime call of a removal: ``(True, its value)``, or ``(False, None)``.

        A failure is logged and counted, and the removal stops there (the next
        pass retries); with ``gone``, NotFound means the object is already
        gone, which stops the removal without counting a failure.
        """
        try:
            return True, await call(*args)
        except NotFound as exc:
            if gone:
                return False, None
            failure: BaseException = exc
        except errors as exc:
            failure = exc
        log.warning("failed to %s: %s", what, failure)
        result.removal_errors.append(failure)
        self.metrics.inc("ownergc_nodegc_removal_errors_total", kind=kind)
        return False, None

    async def _remove_container(
        self, r: ContainerRemoval, c: Container, result: ContainerGCResult
    ) -> None:
        runtime, cid = self.runtime, r.id
        if r.stop_first:
            stopped, _ = await self._step(
                result,
                "container",
                f"stop container {cid}",
                runtime.stop_container,
                cid,
                r.stop_timeout,
            )
            if not stopped:
                return
        # Like the kubelet: learn the log path first; if that fails the
        # container is left alone.
        known, status = await self._step(
            result, "container", f"get status of container {cid}", runtime.container_status, cid
        )
        if not known:
            return
        logs_gone, _ = await self._step(
            result,
            "container",
            f"remove logs of container {cid}",
            anyio.to_thread.run_sync,
            self._remove_container_logs,
            status.log_path,
            status.labels,
            cid,
            errors=OSError,
        )
        if not logs_gone:
            return
        removed, _ = await self._step(
            result,
            "container",
            f"remove container {cid}",
            runtime.remove_container,
            cid,
            gone=False,
        )
        if not removed:
            return
        result.removed_containers.append(r.id)
        self.metrics.inc("ownergc_nodegc_containers_removed_total", reason=r.reason.value)

    def _remove_container_logs(self, log_path: str, labels: Mapping[str, str], cid: str) -> None:
        if log_path and self.pod_logs_dir is not None and _within(log_path, self.pod_logs_dir):
            _remove_log_files(log_path)
        if self.container_logs_dir is not None:
            name = legacy_log_symlink_name(
                labels.get(POD_NAME_LABEL, ""),
                labels.get(POD_NAMESPACE_LABEL, ""),
                labels.get(CONTAINER_NAME_LABEL, ""),
                cid,
            )
            _unlink_quiet(str(self.container_logs_dir / name))

    async def _sweep_dangling_symlinks(self, result: ContainerGCResult) -> None:
        assert self.container_logs_dir is not None
        links = await anyio.to_thread.run_sync(_dangling_symlinks, str(self.container_logs_dir))
        for link in links:
            try:
                cid: str | None = container_id_from_legacy_log_symlink(link)
            except ValueError:
                cid = None
            failed, state = False, None
            if cid is not None:
                try:
                    state = (await self.runtime.container_status(cid)).state
                except Exception:
                    failed = True
            if not dangling_symlink_removable(
                parsed=cid is not None, lookup_failed=failed, state=state
            ):
                continue
            removed, _ = await self._step(
                result,
                "log_symlink",
                f"remove {link}",
                anyio.to_thread.run_sync,
                _unlink_quiet,
                link,
                errors=OSError,
            )
            if not removed:
                continue
            result.removed_log_symlinks.append(link)
            self.metrics.inc("ownergc_nodegc_log_symlinks_removed_total")

    # --- image GC ------------------------------------------------------------------------

    async def _images_in_use(self, containers: Iterable[Container]) -> frozenset[str]:
        keys = set(images_in_use(containers, per_runtime_handler=self.per_runtime_handler))
        if self.sandbox_image:
            # The 2022 kubelet protected the sandbox image by name; the newest relies
            # on the runtime pinning it, which containerd 1.6 never does.
            try:
                img = await self.runtime.image_status(self.sandbox_image)
            except Exception as exc:
                log.warning("resolving sandbox image %s failed: %s", self.sandbox_image, exc)
                img = None
            if img is not None:
                keys.add(img.id)
        return frozenset(keys)

    async def detect_images(self) -> dict[str, ImageRecord]:
        """Refresh the image records (the image manager's 5-minute detection loop)."""
        containers = await self.runtime.list_containers()
        images = await self.runtime.list_images()
        in_use = await self._images_in_use(containers)
        now = self.clock()
        self.image_records = detect_images(
            self.image_records,
            images,
            in_use,
            now,
            now,
            per_runtime_handler=self.per_runtime_handler,
        )
        return self.image_records

    async def collect_images(self) -> ImageGCResult:
        """One periodic image-GC pass (MaxAge, then thresholds), in the kubelet's order."""
        started = time.monotonic()
        result = ImageGCResult(ImageGCPlan(), dry_run=self.dry_run)
        try:
            await self._collect_images(result)
        except Exception as exc:
            result.error = exc
        self._finish("images", started, result.ok)
        return result

    async def delete_unused_images(self) -> ImageGCResult:
        """The eviction manager's reclaim: every eligible image, no MaxAge, no thresholds."""
        started = time.monotonic()
        result = ImageGCResult(ImageGCPlan(), dry_run=self.dry_run)
        try:
            containers = await self.runtime.list_containers()
            images = await self.runtime.list_images()
            in_use = await self._images_in_use(containers)
            now = self.clock()
            plan = plan_delete_unused_images(
                images,
                self.image_records,
                in_use,
                self.image_policy,
                now,
                per_runtime_handler=self.per_runtime_handler,
            )
            self.image_records = dict(plan.records)
            result.plan = plan
            if not self.dry_run:
                await self._remove_images(plan.images, result)
                if result.removal_errors:
                    result.error = self._deletion_error(str(FREE_ALL), result)
        except Exception as exc:
            result.error = exc
        self._finish("images", started, result.ok)
        return result

    async def _collect_images(self, result: ImageGCResult) -> None:
        policy = self.image_policy
        containers = await self.runtime.list_containers()
        images = await self.runtime.list_images()
        in_use = await self._images_in_use(containers)
        now = self.clock()
        # The pass of plan_image_gc, each step executed against the runtime; a
        # dry run removes nothing and credits the bytes it would have freed.
        steps = image_gc_pass(
            images,
            self.image_records,
            in_use,
            policy,
            now,
            began_gc=self.began_gc,
            per_runtime_handler=self.per_runtime_handler,
        )
        would_free = 0
        answer: BaseException | FsStats | None = None
        while True:
            try:
                step = steps.send(answer)
            except StopIteration as done:
                executed: ImageGCPlan = done.value
                break
            answer = None
            if isinstance(step, RemoveImage):
                r = step.removal
                if self.dry_run:
                    log.info(
                        "dry-run: would remove image %s (%s, %d bytes)",
                        r.image_id,
                        r.reason.value,
                        r.size,
                    )
                    would_free += r.size
                else:
                    answer = await self._remove_image(r, result)
            elif isinstance(step, ReadImageFs):
                stats = await self.runtime.image_fs_stats()
                self._observe_fs(stats.capacity_bytes, stats.available_bytes)
                answer = credit_freed(stats, would_free)
            elif isinstance(step, RecordsDetected):
                self.image_records = dict(step.records)
            else:
                log.info(
                    "Disk usage on image filesystem is over the high threshold (%d%% >= %d%%), "
                    "trying to free %d bytes down to the low threshold (%d%%)",
                    step.usage.usage_percent,
                    policy.high_threshold_percent,
                    step.wanted,
                    policy.low_threshold_percent,
                )
        if executed.usage_percent is not None:
            self.metrics.set("ownergc_nodegc_image_fs_usage_percent", executed.usage_percent)
        result.plan = executed
        result.error = executed.error
        if self.dry_run:
            self.metrics.set("ownergc_nodegc_planned_removals", len(executed.images), kind="image")

    async def _remove_images(self, removals: Iterable[ImageRemoval], result: ImageGCResult) -> None:
        for r in removals:
            await self._remove_image(r, result)

    async def _remove_image(self, r: ImageRemoval, result: ImageGCResult) -> Exception | None:
        """Remove one image; the exception if it stayed (the pass carries on)."""
        log.info("Removing image %s to free %d bytes (%s)", r.image_id, r.size, r.reason.value)
        try:
            await self.runtime.remove_image(r.image_id)
        except Exception as exc:
            log.warning("failed to remove image %s: %s", r.image_id, exc)
            result.removal_errors.append(exc)
            self.metrics.inc("ownergc_nodegc_removal_errors_total", kind="image")
            return exc
        self.image_records.pop(r.key, None)
        result.removed.append(r.image_id)
        result.freed_bytes += r.size
        self.metrics.inc("kubelet_image_garbage_collected_total", reason=r.reason.value)
        self.metrics.inc("ownergc_nodegc_image_bytes_freed_total", r.size, reason=r.reason.value)
        return None

    def _observe_fs(self, capacity: int | None, available: int | None) -> None:
        if capacity is not None:
            self.metrics.set("ownergc_nodegc_image_fs_capacity_bytes", capacity)
        if available is not None:
            self.metrics.set("ownergc_nodegc_image_fs_available_bytes", available)

    @staticmethod
    def _join(result: ImageGCResult) -> str:
        return "[" + ", ".join(str(e) for e in result.removal_errors) + "]"

    def _deletion_error(self, target: str, result: ImageGCResult) -> ImageDeletionFailed:
        return ImageDeletionFailed(
            f"wanted to free {target} bytes, but freed {result.freed_bytes} bytes space with "
            f"errors in image deletion: {self._join(result)}",
            list(result.removal_errors),
        )
