"""NodeGarbageCollector over the in-memory runtime: execution order, failures, loops, metrics."""

from __future__ import annotations

import os
from datetime import timedelta

import anyio
import pytest

from ownergc.controller import (
    NodeGarbageCollector,
    ObjectStorePodStateSource,
    RuntimePodStateSource,
    StaticPodStateSource,
)
from ownergc.errors import NotFound, ServerError, Unavailable
from ownergc.nodegc import (
    ContainerGCPolicy,
    ContainerState,
    FreeDiskSpaceFailed,
    Image,
    ImageDeletionFailed,
    ImageGCPolicy,
    InvalidDiskCapacity,
    PodStates,
    SandboxState,
    legacy_log_symlink_name,
)
from ownergc.protocols import ObjectList
from ownergc.testing.faults import FaultyRuntime
from ownergc_backends.memory import InMemoryRuntime

pytestmark = pytest.mark.anyio

NOW = 1_700_000_000 * 10**9
SEC = 10**9
MB = 1 << 20


class Clock:
    def __init__(self, t: int = NOW) -> None:
        self.t = t

    def __call__(self) -> int:
        return self.t


def deleted(*uids: str, live: tuple[str, ...] = ()) -> StaticPodStateSource:
    return StaticPodStateSource(
        PodStates(deleted=frozenset(uids), live=frozenset(live), synced=True)
    )


@pytest.fixture
def node(tmp_path):
    """A runtime with one live pod (3 dead attempts of 'app') and one deleted pod."""
    rt = InMemoryRuntime()
    pods_dir = tmp_path / "pods"
    links_dir = tmp_path / "containers"
    pods_dir.mkdir()
    links_dir.mkdir()
    live = rt.run_pod("web", "uid-live", created_at=1)
    gone = rt.run_pod("old", "uid-gone", created_at=1, state=SandboxState.NOTREADY)
    for sb, n in ((live, 3), (gone, 2)):
        d = pods_dir / f"default_{sb.name}_{sb.uid}"
        (d / "app").mkdir(parents=True)
        for attempt in range(n):
            log = d / "app" / f"{attempt}.log"
            log.write_text("x")
            (d / "app" / f"{attempt}.log.20240101-000000").write_text("rotated")
            c = rt.create_container(
                sb, "app", attempt=attempt, created_at=10 + attempt, log_path=str(log)
            )
            link = links_dir / legacy_log_symlink_name(sb.name, "default", "app", c.id)
            link.symlink_to(log)
    rt.create_container(live, "side", attempt=0, state=ContainerState.RUNNING, created_at=5)
    return rt, pods_dir, links_dir


async def test_container_pass_removes_in_kubelet_order(node):
    rt, pods_dir, links_dir = node
    gc = NodeGarbageCollector(
        rt,
        container_policy=ContainerGCPolicy(timedelta(0), 1, -1),
        pod_states=deleted("uid-gone", live=("uid-live",)),
        pod_logs_dir=pods_dir,
        container_logs_dir=links_dir,
        clock=Clock(),
    )
    res = await gc.collect_containers()
    assert res.ok and not res.removal_errors
    live_id = "web_default_uid-live_0_app_{}".format
    gone_id = "old_default_uid-gone_0_app_{}".format
    assert sorted(res.removed_containers) == sorted(
        [live_id(0), live_id(1), gone_id(0), gone_id(1)]
    )
    assert set(rt.containers) == {live_id(2), "web_default_uid-live_0_side_0"}
    assert res.removed_sandboxes == ["old_default_uid-gone_0"]
    assert set(rt.sandboxes) == {"web_default_uid-live_0"}
    assert res.removed_pod_log_dirs == [str(pods_dir / "default_old_uid-gone")]
    assert not (pods_dir / "default_old_uid-gone").exists()
    app = pods_dir / "default_web_uid-live" / "app"
    assert sorted(os.listdir(app)) == ["2.log", "2.log.20240101-000000"]
    assert os.listdir(links_dir) == [legacy_log_symlink_name("web", "default", "app", live_id(2))]
    # Containers go before sandboxes, each container's status is read before removal.
    ops = [op for op, _ in rt.calls]
    assert ops.index("remove_pod_sandbox") > max(
        i for i, op in enumerate(ops) if op == "remove_container"
    )
    first_remove = ops.index("remove_container")
    assert rt.calls[first_remove - 1] == ("container_status", rt.calls[first_remove][1])
    assert gc.metrics.get("ownergc_nodegc_containers_removed_total", reason="deleted-pod") == 2
    assert (
        gc.metrics.get("ownergc_nodegc_containers_removed_total", reason="max-per-pod-container")
        == 2
    )
    assert gc.metrics.get("ownergc_nodegc_sandboxes_removed_total", reason="deleted-pod") == 1


async def test_unknown_container_is_stopped_then_removed():
    rt = InMemoryRuntime()
    sb = rt.run_pod("foo", "foo")
    c = rt.create_container(sb, "bar", state=ContainerState.UNKNOWN, created_at=0)
    gc = NodeGarbageCollector(
        rt,
        container_policy=ContainerGCPolicy(timedelta(hours=1), 0, 0),
        pod_states=live_pods(),
        clock=Clock(),
    )
    res = await gc.collect_containers()
    assert res.removed_containers == [c.id]
    ops = [call for call in rt.calls if call[1] == c.id]
    assert ops == [("stop_container", c.id), ("container_status", c.id), ("remove_container", c.id)]


def live_pods() -> StaticPodStateSource:
    return StaticPodStateSource(PodStates(synced=True, live=frozenset({"foo", "p"})))


async def test_failures_are_not_made_up_for_and_protect_the_sandbox():
    rt = InMemoryRuntime()
    sb0 = rt.run_pod("p", "p", attempt=0, created_at=1, state=SandboxState.NOTREADY)
    sb1 = rt.run_pod("p", "p", attempt=1, created_at=2)
    old = rt.create_container(sb0, "c", attempt=0, created_at=1)
    mid = rt.create_container(sb0, "c", attempt=1, created_at=2)
    new = rt.create_container(sb1, "c", attempt=2, created_at=3)
    unknown = rt.create_container(sb1, "u", state=ContainerState.UNKNOWN, created_at=1)
    rt.create_container(sb1, "u", attempt=1, created_at=2)
    rt = FaultyRuntime(rt)  # the runtime fails these calls
    rt.fail("remove_container", old.id, ServerError("boom"))
    rt.fail("container_status", mid.id, Unavailable("down"))
    rt.fail("stop_container", unknown.id, ServerError("stuck"))
    gc = NodeGarbageCollector(
        rt,
        container_policy=ContainerGCPolicy(timedelta(0), 1, -1),
        pod_states=live_pods(),
        clock=Clock(),
    )
    res = await gc.collect_containers()
    assert res.ok  # removal failures are logged, not a failed pass
    assert len(res.removal_errors) == 3
    assert res.removed_containers == []
    # Nothing newer was removed to make up for the failures.
    assert {old.id, mid.id, new.id, unknown.id} <= set(rt.containers)
    # The old sandbox still holds containers after the re-list: it stays.
    assert sb0.id in rt.sandboxes and res.removed_sandboxes == []
    assert gc.metrics.get("ownergc_nodegc_removal_errors_total", kind="container") == 3


async def test_dangling_symlink_sweep(tmp_path):
    rt = InMemoryRuntime()
    sb = rt.run_pod("p", "p")
    running = rt.create_container(sb, "r", state=ContainerState.RUNNING, created_at=NOW)
    exited = rt.create_container(sb, "e", state=ContainerState.EXITED, created_at=NOW)
    links = tmp_path / "containers"
    links.mkdir()
    target = tmp_path / "missing.log"
    names = {
        "gone": "p_default_x-abcdef012345.log",
        "running": legacy_log_symlink_name("p", "default", "r", running.id),
        "exited": legacy_log_symlink_name("p", "default", "e", exited.id),
        "unparsable": "p_default_x-123.log",
    }
    for name in names.values():
        (links / name).symlink_to(target)
    alive = tmp_path / "alive.log"
    alive.write_text("x")
    (links / "p_default_y-fedcba543210.log").symlink_to(alive)
    gc = NodeGarbageCollector(
        rt,
        container_policy=ContainerGCPolicy(timedelta(hours=1), 1, -1),
        pod_states=live_pods(),
        container_logs_dir=links,
        clock=Clock(),
    )
    res = await gc.collect_containers()
    left = sorted(os.listdir(links))
    assert left == sorted([names["running"], "p_default_y-fedcba543210.log"])
    assert len(res.removed_log_symlinks) == 3


async def test_unreadable_pod_logs_dir_fails_the_pass_but_other_steps_run(tmp_path):
    rt = InMemoryRuntime()
    sb = rt.run_pod("p", "gone", state=SandboxState.NOTREADY)
    rt.create_container(sb, "c", created_at=0)
    gc = NodeGarbageCollector(
        rt,
        container_policy=ContainerGCPolicy(timedelta(0), 1, -1),
        pod_states=deleted("gone"),
        pod_logs_dir=tmp_path / "does-not-exist",
        clock=Clock(),
    )
    res = await gc.collect_containers()
    assert not res.ok and "failed to read podLogsDirectory" in str(res.errors[0])
    assert rt.containers == {} and rt.sandboxes == {}


async def test_listing_failure_is_a_failed_pass():
    rt = InMemoryRuntime()
    rt = FaultyRuntime(rt)  # the runtime fails these calls
    rt.fail("list_containers", "", Unavailable("runtime down"))
    gc = NodeGarbageCollector(rt, clock=Clock())
    res = await gc.collect_containers()
    assert not res.ok and isinstance(res.errors[0], Unavailable)
    assert gc.metrics.get("ownergc_nodegc_runs_total", loop="containers", result="failure") == 1


async def test_dry_run_removes_nothing(node):
    rt, pods_dir, links_dir = node
    before = (dict(rt.containers), dict(rt.sandboxes), sorted(os.listdir(pods_dir)))
    gc = NodeGarbageCollector(
        rt,
        container_policy=ContainerGCPolicy(timedelta(0), 1, -1),
        image_policy=ImageGCPolicy(0, 0, timedelta(0)),
        pod_states=deleted("uid-gone", live=("uid-live",)),
        pod_logs_dir=pods_dir,
        container_logs_dir=links_dir,
        dry_run=True,
        clock=Clock(),
    )
    rt.add_image(Image("sha256:unused", 10 * MB))
    res = await gc.run_once()
    assert len(res.containers.plan.containers) == 4
    assert res.containers.plan.sandbox_ids == ["old_default_uid-gone_0"]
    assert res.containers.plan.pod_log_dirs == ("default_old_uid-gone",)
    assert res.images is not None and res.images.plan.image_ids == ["sha256:unused"]
    assert (dict(rt.containers), dict(rt.sandboxes), sorted(os.listdir(pods_dir))) == before
    assert "sha256:unused" in rt.images
    removing = {op for op, _ in rt.calls if op.startswith(("remove", "stop"))}
    assert removing == set()
    assert gc.metrics.get("ownergc_nodegc_planned_removals", kind="container") == 4


# --- images -------------------------------------------------------------------------


def image_node(capacity=1000 * MB, other=0):
    rt = InMemoryRuntime(capacity_bytes=capacity, other_used_bytes=other)
    sb = rt.run_pod("p", "p")
    rt.add_image(Image("sha256:used", 100 * MB, repo_tags=("docker.io/library/app:1",)))
    rt.add_image(Image("sha256:pause", 1 * MB, repo_tags=("registry.k8s.io/pause:3.10",)))
    rt.add_image(Image("sha256:pinned", 50 * MB, pinned=True))
    rt.add_image(Image("sha256:a", 200 * MB))
    rt.add_image(Image("sha256:b", 300 * MB))
    rt.create_container(sb, "c", state=ContainerState.EXITED, image_id="sha256:used")
    return rt


async def test_threshold_pass_frees_down_to_low():
    # 651 MB of images + 200 MB other on 1000 MB: usage 86 % >= 85.
    rt = image_node(other=200 * MB)
    clock = Clock()
    gc = NodeGarbageCollector(
        rt,
        image_policy=ImageGCPolicy(85, 80, timedelta(minutes=2)),
        sandbox_image="registry.k8s.io/pause:3.10",
        clock=clock,
    )
    await gc.detect_images()  # first seen at NOW
    clock.t += 2 * 60 * SEC  # exactly MinAge later: old enough
    res = await gc.collect_images()
    assert res.ok, res.error
    # want 1000*20/100 - 149 = 51 MB (+ a bit): the LRU unused image "a" (never used, id order) goes
    assert res.removed == ["sha256:a"]
    assert set(rt.images) == {"sha256:used", "sha256:pause", "sha256:pinned", "sha256:b"}
    assert res.plan.usage_percent == 86
    assert gc.metrics.get("kubelet_image_garbage_collected_total", reason="space") == 1
    assert "sha256:a" not in gc.image_records


async def test_min_age_holds_back_fresh_images_and_reports_shortfall():
    rt = image_node(other=200 * MB)
    gc = NodeGarbageCollector(
        rt, image_policy=ImageGCPolicy(85, 80, timedelta(minutes=2)), clock=Clock()
    )
    res = await gc.collect_images()
    assert res.removed == []
    assert isinstance(res.error, FreeDiskSpaceFailed)
    assert res.error.freed == 0 and res.error.wanted > 0


async def test_max_age_pass_uses_uptime_and_labels_age():
    rt = image_node()
    clock = Clock()
    gc = NodeGarbageCollector(
        rt,
        image_policy=ImageGCPolicy(85, 80, timedelta(minutes=2), timedelta(hours=1)),
        sandbox_image="registry.k8s.io/pause:3.10",
        clock=clock,
    )
    first = await gc.collect_images()
    assert first.removed == []  # uptime 0 <= MaxAge
    clock.t += 3600 * SEC + 1
    second = await gc.collect_images()
    assert sorted(second.removed) == ["sha256:a", "sha256:b"]
    assert gc.metrics.get("kubelet_image_garbage_collected_total", reason="age") == 2
    text = gc.metrics.render()
    assert 'kubelet_image_garbage_collected_total{reason="age"} 2' in text
    assert "# TYPE kubelet_image_garbage_collected_total counter" in text


async def test_sandbox_image_unprotected_without_the_flag():
    rt = image_node()
    gc = NodeGarbageCollector(rt, image_policy=ImageGCPolicy(0, 0, timedelta(0)), clock=Clock())
    res = await gc.delete_unused_images()
    assert sorted(res.removed) == ["sha256:a", "sha256:b", "sha256:pause"]


async def test_failed_image_removal_moves_on_and_reports():
    rt = image_node(other=200 * MB)
    rt = FaultyRuntime(rt)  # the runtime fails these calls
    rt.fail("remove_image", "sha256:a", ServerError("busy"))
    gc = NodeGarbageCollector(
        rt,
        image_policy=ImageGCPolicy(85, 80, timedelta(0)),
        sandbox_image="pause:3.10",
        clock=Clock(),
    )
    res = await gc.collect_images()
    assert res.removed == ["sha256:b"]
    assert isinstance(res.error, ImageDeletionFailed)
    assert "wanted to free" in str(res.error) and "busy" in str(res.error)
    assert "sha256:a" in rt.images


async def test_capacity_zero_and_stats_failure():
    gc = NodeGarbageCollector(image_node(capacity=None), clock=Clock())
    res = await gc.collect_images()
    assert isinstance(res.error, InvalidDiskCapacity)
    rt = image_node()
    rt = FaultyRuntime(rt)  # the runtime fails these calls
    rt.fail("image_fs_stats", "", Unavailable("no stats"))
    res = await NodeGarbageCollector(rt, clock=Clock()).collect_images()
    assert isinstance(res.error, Unavailable)


async def test_below_threshold_removes_nothing():
    rt = image_node()  # 651 MB of 1000: 66 %
    res = await NodeGarbageCollector(rt, clock=Clock()).collect_images()
    assert res.ok and res.removed == [] and res.plan.usage_percent == 66


# --- loops ----------------------------------------------------------------------------


async def test_run_loops_until_cancelled():
    rt = InMemoryRuntime()
    gc = NodeGarbageCollector(
        rt,
        image_policy=ImageGCPolicy(100, 80),  # periodic image loop disabled
        container_gc_period=0.001,
        image_gc_period=0.001,
        image_detection_period=0.001,
    )
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gc.run)
            while (
                gc.metrics.get("ownergc_nodegc_runs_total", loop="containers", result="success") < 3
            ):
                await anyio.sleep(0.001)
            tg.cancel_scope.cancel()
    assert gc.metrics.get("ownergc_nodegc_runs_total", loop="images", result="success") == 0
    assert ("list_images", "") in rt.calls  # the detection loop still runs


async def test_loop_survives_failing_passes():
    rt = InMemoryRuntime()
    rt = FaultyRuntime(rt)  # the runtime fails these calls
    rt.fail("list_containers", "", Unavailable("down"))
    gc = NodeGarbageCollector(
        rt, container_gc_period=0.001, image_gc_period=0.001, image_detection_period=0.001
    )
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gc.run)
            while gc.metrics.get("ownergc_nodegc_runs_total", loop="images", result="failure") < 2:
                await anyio.sleep(0.001)
            tg.cancel_scope.cancel()
    assert gc.metrics.get("ownergc_nodegc_runs_total", loop="containers", result="failure") >= 1


# --- pod-state sources ------------------------------------------------------------------


class FakeStore:
    def __init__(self, pods=None, error=None):
        self.pods = pods or []
        self.error = error

    async def list(self, resource, *, namespace=None, metadata_only=True):
        assert resource.resource == "pods" and not metadata_only
        if self.error:
            raise self.error
        return ObjectList(items=self.pods, resource_version="1")


def pod(uid, *, phase="Running", deleting=False, reason=None, mirror=None):
    meta = {"uid": uid, "name": uid, "namespace": "default"}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if mirror:
        meta["annotations"] = {"kubernetes.io/config.mirror": mirror}
    status = {"phase": phase}
    if reason:
        status["reason"] = reason
    return {"metadata": meta, "status": status}


async def test_object_store_pod_states():
    rt = InMemoryRuntime()
    for uid in ("running", "deleting-idle", "deleting-busy", "evicted", "done", "orphan", "hash"):
        rt.run_pod(uid, uid, state=SandboxState.NOTREADY)
    rt.set_sandbox_state("running_default_running_0", SandboxState.READY)
    busy = rt.sandboxes["deleting-busy_default_deleting-busy_0"]
    rt.create_container(busy, "c", state=ContainerState.RUNNING)
    store = FakeStore(
        [
            pod("running"),
            pod("deleting-idle", deleting=True),
            pod("deleting-busy", deleting=True),
            pod("evicted", phase="Failed", reason="Evicted"),
            pod("done", phase="Succeeded"),
            pod("mirror-uid", mirror="hash"),
        ]
    )
    src = ObjectStorePodStateSource(store)
    states = await src.pod_states(
        list(await rt.list_pod_sandboxes()), list(await rt.list_containers())
    )
    assert states.synced
    removable = {
        u
        for u in ("running", "deleting-idle", "deleting-busy", "evicted", "done", "orphan", "hash")
        if states.should_pod_content_be_removed(u)
    }
    assert removable == {"deleting-idle", "evicted", "orphan"}
    assert states.should_pod_runtime_be_removed("done")
    assert not states.should_pod_runtime_be_removed("running")
    # A failing list keeps the last good view; before any success nothing is deleted.
    store.error = Unavailable("apiserver down")
    again = await src.pod_states([], [])
    assert again.should_pod_content_be_removed("deleting-idle")
    fresh = await ObjectStorePodStateSource(FakeStore(error=NotFound("x"))).pod_states([], [])
    assert not fresh.synced and not fresh.should_pod_content_be_removed("anything")


async def test_runtime_only_pod_states_never_delete():
    rt = InMemoryRuntime()
    rt.run_pod("a", "a", state=SandboxState.NOTREADY)
    rt.run_pod("b", "b")
    states = await RuntimePodStateSource().pod_states(list(await rt.list_pod_sandboxes()), [])
    assert not states.synced
    assert not any(states.should_pod_content_be_removed(u) for u in ("a", "b", "unknown"))
    assert states.should_pod_runtime_be_removed("a")
    assert not states.should_pod_runtime_be_removed("b")


async def test_delete_all_unused_containers_takes_terminated_pods():
    rt = InMemoryRuntime()
    sb = rt.run_pod("t", "t", state=SandboxState.NOTREADY)
    c = rt.create_container(sb, "c", created_at=0)
    states = StaticPodStateSource(PodStates(terminated=frozenset({"t"}), synced=True))
    gc = NodeGarbageCollector(rt, pod_states=states, clock=Clock())
    periodic = await gc.collect_containers()
    assert periodic.removed_containers == []
    reclaim = await gc.delete_all_unused_containers()
    assert reclaim.removed_containers == [c.id]
    assert reclaim.removed_sandboxes == [sb.id]
