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

import errno
import glob
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
import anyio.to_thread

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
    ContainerState,
    FreeDiskSpaceFailed,
    ImageCandidate,
    ImageDeletionFailed,
    ImageGCPlan,
    ImageGCPolicy,
    ImageRecord,
    ImageRemoval,
    PodSandbox,
    PodStates,
    SandboxState,
    container_id_from_legacy_log_symlink,
    dangling_symlink_removable,
    detect_images,
    format_duration,
    image_eviction_candidates,
    image_usage,
    images_in_use,
    legacy_log_symlink_name,
    plan_container_gc,
    plan_delete_unused_images,
    plan_free_space,
    plan_image_gc,
    plan_max_age,
    plan_pod_log_dir_eviction,
    plan_sandbox_eviction,
    space_target,
)
from ownergc.protocols import APIResource, ContainerRuntime, ObjectStore

__all__ = [
    "ContainerGCResult",
    "ImageGCResult",
    "NodeGCMetrics",
    "NodeGCResult",
    "NodeGarbageCollector",
    "ObjectStorePodStateSource",
    "PodStateSource",
    "RuntimePodStateSource",
    "StaticPodStateSource",
]

log = logging.getLogger("ownergc.nodegc")

Clock = Callable[[], int]


# --------------------------------------------------------------------------------------
# Pod-state sources
# --------------------------------------------------------------------------------------


@runtime_checkable
class PodStateSource(Protocol):
    """Answers the kubelet's pod-worker questions for the pods on this node.

    ``PodStates.synced`` doubles as ``allSourcesReady``: until the source has
    seen every pod once, nothing is judged deleted.
    """

    async def pod_states(
        self, sandboxes: Sequence[PodSandbox], containers: Sequence[Container]
    ) -> PodStates: ...


def _runtime_active(
    sandboxes: Sequence[PodSandbox], containers: Sequence[Container]
) -> tuple[set[str], set[str]]:
    """(every pod UID the runtime knows, the UIDs with something still running)."""
    seen: set[str] = set()
    active: set[str] = set()
    for sb in sandboxes:
        seen.add(sb.uid)
        if sb.state == SandboxState.READY:
            active.add(sb.uid)
    for c in containers:
        seen.add(c.pod_uid)
        if c.state in (ContainerState.RUNNING, ContainerState.UNKNOWN):
            active.add(c.pod_uid)
    return seen, active


class StaticPodStateSource:
    """Fixed answers (tests, embedding, or a caller that tracks pods itself)."""

    def __init__(self, states: PodStates) -> None:
        self.states = states

    async def pod_states(
        self, sandboxes: Sequence[PodSandbox], containers: Sequence[Container]
    ) -> PodStates:
        return self.states


class RuntimePodStateSource:
    """Pod state from the runtime alone: every pod exists, idle ones are terminated.

    Without the apiserver nothing tells a deleted pod from a pod that merely
    finished, so no pod is reported deleted and ``synced`` stays False (the
    kubelet's "sources not ready"): per-container and per-node caps and the
    sandbox rule (keep the newest) still apply; whole-pod cleanup and log
    directory GC never happen.
    """

    async def pod_states(
        self, sandboxes: Sequence[PodSandbox], containers: Sequence[Container]
    ) -> PodStates:
        seen, active = _runtime_active(sandboxes, containers)
        return PodStates(terminated=frozenset(seen - active), live=frozenset(active), synced=False)


PODS = APIResource(group="", version="v1", resource="pods", kind="Pod", namespaced=True)
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class ObjectStorePodStateSource:
    """Pod state from the apiserver (any :class:`~ownergc.protocols.ObjectStore`).

    Approximates the kubelet's pod workers from what the API and the runtime
    show: a pod is *terminated* when nothing of it runs any more (no READY
    sandbox, no running container) and it is finished (phase Succeeded or
    Failed) or being deleted; it is *deleted* when it was evicted, or is
    being deleted and terminated. A UID the apiserver does not know is an
    orphan and, once a list has succeeded, counts as deleted. Static pods
    are matched through their mirror pod's ``kubernetes.io/config.mirror``.
    If listing fails, the last good answer is reused; before the first
    success nothing is judged deleted.
    """

    def __init__(self, store: ObjectStore, *, resource: APIResource = PODS) -> None:
        self.store = store
        self.resource = resource
        self._pods: dict[str, dict[str, Any]] | None = None

    async def _refresh(self) -> None:
        try:
            listing = await self.store.list(self.resource, metadata_only=False)
        except Exception as exc:  # any backend failure: keep the previous view
            log.warning("listing pods failed, reusing the last pod view: %s", exc)
            return
        pods: dict[str, dict[str, Any]] = {}
        for obj in listing.items:
            meta = obj.get("metadata") or {}
            uid = meta.get("uid")
            if not uid:
                continue
            pods[uid] = obj
            mirror = (meta.get("annotations") or {}).get(_MIRROR_ANNOTATION)
            if mirror:
                pods.setdefault(mirror, obj)
        self._pods = pods

    async def pod_states(
        self, sandboxes: Sequence[PodSandbox], containers: Sequence[Container]
    ) -> PodStates:
        await self._refresh()
        seen, active = _runtime_active(sandboxes, containers)
        if self._pods is None:
            return PodStates(live=frozenset(seen), synced=False)
        deleted: set[str] = set()
        terminated: set[str] = set()
        live: set[str] = set()
        for uid, pod in self._pods.items():
            meta = pod.get("metadata") or {}
            status = pod.get("status") or {}
            deleting = bool(meta.get("deletionTimestamp"))
            phase = status.get("phase")
            done = uid not in active and (deleting or phase in ("Succeeded", "Failed"))
            evicted = phase == "Failed" and status.get("reason") == "Evicted"
            if done:
                terminated.add(uid)
            if evicted or (deleting and done):
                deleted.add(uid)
            elif not done:
                live.add(uid)
        return PodStates(
            deleted=frozenset(deleted),
            terminated=frozenset(terminated),
            live=frozenset(live),
            synced=True,
        )


# --------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


@dataclass
class _Family:
    name: str
    kind: str  # "counter" | "gauge"
    help: str
    label_names: tuple[str, ...] = ()
    values: dict[tuple[str, ...], float] = field(default_factory=dict)


class NodeGCMetrics:
    """In-process counters and gauges, rendered in the Prometheus text format.

    ``kubelet_image_garbage_collected_total{reason}`` is the kubelet's own
    metric; the others are ownergc's (the kubelet has no counter for
    containers or sandboxes it removes).
    """

    def __init__(self) -> None:
        self._families: dict[str, _Family] = {}
        specs: list[tuple[str, str, str, tuple[str, ...]]] = [
            (
                "kubelet_image_garbage_collected_total",
                "counter",
                "Total number of images garbage collected by the kubelet, whether through disk "
                "usage or image age.",
                ("reason",),
            ),
            (
                "ownergc_nodegc_image_bytes_freed_total",
                "counter",
                "Bytes of images removed, by reason.",
                ("reason",),
            ),
            (
                "ownergc_nodegc_containers_removed_total",
                "counter",
                "Dead containers removed, by reason.",
                ("reason",),
            ),
            (
                "ownergc_nodegc_sandboxes_removed_total",
                "counter",
                "Pod sandboxes removed, by reason.",
                ("reason",),
            ),
            (
                "ownergc_nodegc_pod_log_dirs_removed_total",
                "counter",
                "Pod log directories removed.",
                (),
            ),
            (
                "ownergc_nodegc_log_symlinks_removed_total",
                "counter",
                "Dangling legacy container log symlinks removed.",
                (),
            ),
            (
                "ownergc_nodegc_removal_errors_total",
                "counter",
                "Failed stop or remove calls, by object kind.",
                ("kind",),
            ),
            (
                "ownergc_nodegc_runs_total",
                "counter",
                "GC passes, by loop and result.",
                ("loop", "result"),
            ),
            (
                "ownergc_nodegc_planned_removals",
                "gauge",
                "Objects the last pass planned to remove (dry runs remove nothing).",
                ("kind",),
            ),
            (
                "ownergc_nodegc_last_run_duration_seconds",
                "gauge",
                "Wall time of the last pass, by loop.",
                ("loop",),
            ),
            (
                "ownergc_nodegc_last_run_timestamp_seconds",
                "gauge",
                "When the last pass of each loop finished (Unix seconds).",
                ("loop",),
            ),
            (
                "ownergc_nodegc_image_fs_usage_percent",
                "gauge",
                "Image filesystem usage as the image GC computes it (rounded up).",
                (),
            ),
            ("ownergc_nodegc_image_fs_capacity_bytes", "gauge", "Image filesystem capacity.", ()),
            (
                "ownergc_nodegc_image_fs_available_bytes",
                "gauge",
                "Image filesystem available bytes.",
                (),
            ),
        ]
        for name, kind, text, labels in specs:
            self._families[name] = _Family(name, kind, text, labels)

    def inc(self, name: str, amount: float = 1, **labels: str) -> None:
        fam = self._families[name]
        key = tuple(labels[n] for n in fam.label_names)
        fam.values[key] = fam.values.get(key, 0) + amount

    def set(self, name: str, value: float, **labels: str) -> None:
        fam = self._families[name]
        fam.values[tuple(labels[n] for n in fam.label_names)] = value

    def get(self, name: str, **labels: str) -> float:
        """Current value (0 when never touched), for tests and callers."""
        fam = self._families[name]
        return fam.values.get(tuple(labels[n] for n in fam.label_names), 0)

    def render(self) -> str:
        """The Prometheus text exposition format (version 0.0.4)."""
        lines: list[str] = []
        for fam in self._families.values():
            lines.append(f"# HELP {fam.name} {fam.help}")
            lines.append(f"# TYPE {fam.name} {fam.kind}")
            for key in sorted(fam.values):
                if key:
                    pairs = ",".join(
                        f'{n}="{_escape(v)}"' for n, v in zip(fam.label_names, key, strict=True)
                    )
                    lines.append(f"{fam.name}{{{pairs}}} {_fmt(fam.values[key])}")
                else:
                    lines.append(f"{fam.name} {_fmt(fam.values[key])}")
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# The collector
# --------------------------------------------------------------------------------------


def _unlink_quiet(path: str) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


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
                try:
                    await self.runtime.stop_pod_sandbox(s.id)
                except NotFound:
                    continue  # already gone
                except Exception as exc:
                    self._removal_failed(result, "sandbox", f"stop sandbox {s.id}", exc)
                    continue
                try:
                    await self.runtime.remove_pod_sandbox(s.id)
                except Exception as exc:
                    self._removal_failed(result, "sandbox", f"remove sandbox {s.id}", exc)
                    continue
                result.removed_sandboxes.append(s.id)
                m.inc("ownergc_nodegc_sandboxes_removed_total", reason=s.reason.value)

        # (c) pod log directories and dangling legacy symlinks
        if self.pod_logs_dir is not None:
            for entry in plan_pod_log_dir_eviction(entries, pods, all_sources_ready=ready):
                path = self.pod_logs_dir / entry
                try:
                    await anyio.to_thread.run_sync(shutil.rmtree, path)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    self._removal_failed(result, "pod_log_dir", f"remove {path}", exc)
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

    def _removal_failed(
        self, result: ContainerGCResult, kind: str, what: str, exc: BaseException
    ) -> None:
        log.warning("failed to %s: %s", what, exc)
        result.removal_errors.append(exc)
        self.metrics.inc("ownergc_nodegc_removal_errors_total", kind=kind)

    async def _remove_container(
        self, r: ContainerRemoval, c: Container, result: ContainerGCResult
    ) -> None:
        if r.stop_first:
            try:
                await self.runtime.stop_container(r.id, r.stop_timeout)
            except NotFound:
                return  # already gone
            except Exception as exc:
                self._removal_failed(result, "container", f"stop container {r.id}", exc)
                return
        # Like the kubelet: learn the log path first; if that fails the
        # container is left alone.
        try:
            status = await self.runtime.container_status(r.id)
        except NotFound:
            return
        except Exception as exc:
            self._removal_failed(result, "container", f"get status of container {r.id}", exc)
            return
        try:
            await anyio.to_thread.run_sync(
                self._remove_container_logs, status.log_path, status.labels, r.id
            )
        except OSError as exc:
            self._removal_failed(result, "container", f"remove logs of container {r.id}", exc)
            return
        try:
            await self.runtime.remove_container(r.id)
        except Exception as exc:
            self._removal_failed(result, "container", f"remove container {r.id}", exc)
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
            try:
                await anyio.to_thread.run_sync(_unlink_quiet, link)
            except OSError as exc:
                self._removal_failed(result, "log_symlink", f"remove {link}", exc)
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
        if self.dry_run:
            stats = await self.runtime.image_fs_stats()
            self._observe_fs(stats.capacity_bytes, stats.available_bytes)
            plan = plan_image_gc(
                stats,
                images,
                self.image_records,
                in_use,
                policy,
                now,
                began_gc=self.began_gc,
                per_runtime_handler=self.per_runtime_handler,
            )
            self.image_records = dict(plan.records)
            result.plan = plan
            result.error = plan.error
            self.metrics.set("ownergc_nodegc_planned_removals", len(plan.images), kind="image")
            for r in plan.images:
                log.info(
                    "dry-run: would remove image %s (%s, %d bytes)",
                    r.image_id,
                    r.reason.value,
                    r.size,
                )
            return

        self.image_records = detect_images(
            self.image_records,
            images,
            in_use,
            now,
            now,
            per_runtime_handler=self.per_runtime_handler,
        )
        candidates = image_eviction_candidates(self.image_records, in_use)
        aged, left = plan_max_age(candidates, policy.max_age, now, began_gc=self.began_gc)
        await self._remove_images(aged, result)
        planned: list[ImageRemoval] = list(aged)
        if result.removal_errors:
            result.plan = ImageGCPlan(images=tuple(planned), records=dict(self.image_records))
            result.error = ImageDeletionFailed(
                f"wanted to free images older than {format_duration(policy.max_age)}, "
                f"encountered errors in image deletion: {self._join(result)}",
                list(result.removal_errors),
            )
            return

        stats = await self.runtime.image_fs_stats()
        self._observe_fs(stats.capacity_bytes, stats.available_bytes)
        usage = image_usage(stats)  # raises InvalidDiskCapacity
        self.metrics.set("ownergc_nodegc_image_fs_usage_percent", usage.usage_percent)
        if usage.usage_percent < policy.high_threshold_percent:
            result.plan = ImageGCPlan(
                images=tuple(planned),
                bytes_freed=result.freed_bytes,
                usage_percent=usage.usage_percent,
                records=dict(self.image_records),
            )
            return
        wanted = space_target(usage, policy)
        log.info(
            "Disk usage on image filesystem is over the high threshold (%d%% >= %d%%), "
            "trying to free %d bytes down to the low threshold (%d%%)",
            usage.usage_percent,
            policy.high_threshold_percent,
            wanted,
            policy.low_threshold_percent,
        )
        space_freed = await self._free_space(left, wanted, now, result, planned)
        shortfall = None
        if result.removal_errors:
            result.error = ImageDeletionFailed(
                f"wanted to free {wanted} bytes, but freed {space_freed} bytes space with errors "
                f"in image deletion: {self._join(result)}",
                list(result.removal_errors),
            )
        elif space_freed < wanted:
            result.error = shortfall = FreeDiskSpaceFailed(wanted, space_freed)
        result.plan = ImageGCPlan(
            images=tuple(planned),
            bytes_to_free=wanted,
            bytes_freed=result.freed_bytes,
            space_freed=space_freed,
            usage_percent=usage.usage_percent,
            error=shortfall,
            records=dict(self.image_records),
        )

    async def _free_space(
        self,
        candidates: list[ImageCandidate],
        wanted: int,
        now: int,
        result: ImageGCResult,
        planned: list[ImageRemoval],
    ) -> int:
        """Execute the threshold pass; a failed removal moves on to the next candidate."""
        freed = 0
        pending = candidates
        while True:
            plan = plan_free_space(pending, wanted - freed, now, self.image_policy.min_age)
            if not plan.removals:
                return freed
            for r in plan.removals:
                planned.append(r)
                if await self._remove_image(r, result):
                    freed += r.size
                    continue
                # Re-plan from the candidates after the one that failed.
                idx = next(i for i, c in enumerate(pending) if c.key == r.key)
                pending = pending[idx + 1 :]
                break
            else:
                return freed

    async def _remove_images(self, removals: Iterable[ImageRemoval], result: ImageGCResult) -> None:
        for r in removals:
            await self._remove_image(r, result)

    async def _remove_image(self, r: ImageRemoval, result: ImageGCResult) -> bool:
        log.info("Removing image %s to free %d bytes (%s)", r.image_id, r.size, r.reason.value)
        try:
            await self.runtime.remove_image(r.image_id)
        except Exception as exc:
            log.warning("failed to remove image %s: %s", r.image_id, exc)
            result.removal_errors.append(exc)
            self.metrics.inc("ownergc_nodegc_removal_errors_total", kind="image")
            return False
        self.image_records.pop(r.key, None)
        result.removed.append(r.image_id)
        result.freed_bytes += r.size
        self.metrics.inc("kubelet_image_garbage_collected_total", reason=r.reason.value)
        self.metrics.inc("ownergc_nodegc_image_bytes_freed_total", r.size, reason=r.reason.value)
        return True

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
