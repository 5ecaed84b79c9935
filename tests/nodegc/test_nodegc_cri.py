"""NodeGarbageCollector through CRIRuntime against a real containerd.

Every test starts from an empty runtime (``env.reset``) with the base images
imported, builds real sandboxes and containers, runs a GC pass and checks
what containerd still has.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest

from ownergc.controller import NodeGarbageCollector, StaticPodStateSource
from ownergc.errors import NotFound
from ownergc.nodegc import (
    ContainerGCPolicy,
    ContainerState,
    FreeDiskSpaceFailed,
    ImageGCPolicy,
    PodStates,
    SandboxState,
    legacy_log_symlink_name,
)
from tests.nodegc._nodegc_cri_env import BUSYBOX, EXTRA, PAUSE

pytestmark = [pytest.mark.anyio, pytest.mark.cri]


@pytest.fixture
async def cri(containerd):
    from ownergc_backends.cri import CRIRuntime

    async with CRIRuntime(containerd.endpoint, timeout=60) as rt:
        await containerd.reset(rt)
        yield containerd, rt
        await containerd.remove_everything()


async def test_version_and_error_mapping(cri):
    _, rt = cri
    name, _, api = await rt.version()
    assert name == "containerd" and api == "v1"
    assert await rt.sandbox_image() == PAUSE  # from containerd's CRI config
    with pytest.raises(NotFound):
        await rt.container_status("0123456789abcdef")
    with pytest.raises(NotFound):
        await rt.stop_pod_sandbox("0123456789abcdef")
    # Removing what is already gone is success.
    await rt.remove_container("0123456789abcdef")
    await rt.remove_pod_sandbox("0123456789abcdef")
    await rt.remove_image("docker.io/library/does-not-exist:1")
    assert await rt.image_status("docker.io/library/does-not-exist:1") is None


async def test_image_fs_stats_from_statvfs(cri):
    env, rt = cri
    stats = await rt.image_fs_stats()
    assert stats.mountpoint.startswith(str(env.base))
    assert stats.capacity_bytes and stats.capacity_bytes > 0
    assert stats.available_bytes is not None and 0 <= stats.available_bytes <= stats.capacity_bytes
    st = os.statvfs(stats.mountpoint)
    assert stats.capacity_bytes == st.f_blocks * st.f_frsize


async def test_container_sandbox_and_log_gc(cri):
    env, rt = cri
    live = await env.run_pod(rt, "web", "uid-live")
    gone = await env.run_pod(rt, "old", "uid-gone")
    app = [await env.run_container(rt, live, "app", a) for a in range(3)]
    sleeper = await env.run_container(
        rt, live, "sleeper", command=["/bin/sleep", "3600"], wait_exit=False
    )
    created = await env.run_container(rt, live, "init", 0, start=False)  # CREATED state
    old_app = await env.run_container(rt, gone, "app", 0)
    # The kubelet stops a deleted pod's sandbox before GC gets to it.
    await rt.stop_pod_sandbox(gone[0])

    # Legacy symlinks the kubelet would have made, plus one dangling for a gone container.
    links = env.container_logs_dir
    for cid, (pod, name) in {
        **{c: ("web", "app") for c in app},
        old_app: ("old", "app"),
        sleeper: ("web", "sleeper"),
    }.items():
        status = await rt.container_status(cid)
        assert status.log_path and os.path.exists(status.log_path)
        os.symlink(status.log_path, links / legacy_log_symlink_name(pod, "ogc", name, cid))
    os.symlink("/nonexistent", links / "x_ogc_y-abcdef0123456789.log")

    gc = NodeGarbageCollector(
        rt,
        container_policy=ContainerGCPolicy(timedelta(0), 1, -1),
        pod_states=StaticPodStateSource(
            PodStates(deleted=frozenset({"uid-gone"}), live=frozenset({"uid-live"}), synced=True)
        ),
        pod_logs_dir=env.pod_logs_dir,
        container_logs_dir=links,
    )
    res = await gc.collect_containers()
    assert res.ok and not res.removal_errors, (res.errors, res.removal_errors)

    left = {c.id: c for c in await rt.list_containers()}
    assert set(left) == {app[2], sleeper, created}
    assert left[sleeper].state == ContainerState.RUNNING
    assert sorted(res.removed_containers) == sorted([app[0], app[1], old_app])
    sandboxes = {s.id: s for s in await rt.list_pod_sandboxes()}
    assert set(sandboxes) == {live[0]}
    assert sandboxes[live[0]].state == SandboxState.READY
    assert res.removed_sandboxes == [gone[0]]

    assert sorted(os.listdir(env.pod_logs_dir)) == ["ogc_web_uid-live"]
    assert sorted(os.listdir(env.pod_logs_dir / "ogc_web_uid-live" / "app")) == ["2.log"]
    assert sorted(os.listdir(links)) == sorted(
        [
            legacy_log_symlink_name("web", "ogc", "app", app[2]),
            legacy_log_symlink_name("web", "ogc", "sleeper", sleeper),
        ]
    )


async def test_max_containers_and_a_failed_sandbox_stays_protected(cri):
    env, rt = cri
    pods = [await env.run_pod(rt, f"p{i}", f"uid-{i}") for i in range(3)]
    made = {}
    for i, sb in enumerate(pods):
        made[i] = [await env.run_container(rt, sb, "c", a) for a in range(2)]
    gc = NodeGarbageCollector(
        rt,
        container_policy=ContainerGCPolicy(timedelta(0), -1, 4),
        pod_states=StaticPodStateSource(PodStates(live=frozenset(f"uid-{i}" for i in range(3)))),
    )
    res = await gc.collect_containers()
    # 6 dead > 4: one per unit would leave 3, so each unit keeps just its newest.
    assert sorted(res.removed_containers) == sorted(made[i][0] for i in range(3))
    assert {c.id for c in await rt.list_containers()} == {made[i][1] for i in range(3)}
    assert res.removed_sandboxes == []  # a live pod's only sandbox always stays


async def test_image_gc_space_keeps_in_use_and_sandbox_image(cri):
    env, rt = cri
    sb = await env.run_pod(rt, "img", "uid-img")
    await env.run_container(rt, sb, "c", 0, image=BUSYBOX)  # EXITED, still pins busybox
    ids = {ref: (await rt.image_status(ref)).id for ref in (PAUSE, BUSYBOX, *EXTRA)}
    gc = NodeGarbageCollector(
        rt,
        image_policy=ImageGCPolicy(0, 0, timedelta(0)),  # "free everything": always short
        sandbox_image=PAUSE,
    )
    res = await gc.collect_images()
    assert sorted(res.removed) == sorted(ids[r] for r in EXTRA)
    assert isinstance(res.error, FreeDiskSpaceFailed)  # the disk is never "empty enough"
    left = {i.id for i in await rt.list_images()}
    assert ids[PAUSE] in left and ids[BUSYBOX] in left
    assert not {ids[r] for r in EXTRA} & left
    text = gc.metrics.render()
    assert 'kubelet_image_garbage_collected_total{reason="space"} 2' in text


async def test_image_gc_max_age(cri):
    env, rt = cri
    t = [1_700_000_000 * 10**9]
    gc = NodeGarbageCollector(
        rt,
        image_policy=ImageGCPolicy(100, 80, timedelta(minutes=2), timedelta(hours=1)),
        sandbox_image=PAUSE,
        clock=lambda: t[0],
    )
    sb = await env.run_pod(rt, "age", "uid-age")
    await env.run_container(rt, sb, "c", 0, image=BUSYBOX)
    first = await gc.collect_images()
    assert first.ok and first.removed == []  # not up longer than MaxAge yet
    t[0] += 3600 * 10**9 + 1
    second = await gc.collect_images()
    assert second.ok, second.error
    extra_ids = {(await rt.image_status(r)) for r in EXTRA}
    assert extra_ids == {None}
    assert len(second.removed) == 2
    assert gc.metrics.get("kubelet_image_garbage_collected_total", reason="age") == 2
    assert await rt.image_status(BUSYBOX) is not None
    assert await rt.image_status(PAUSE) is not None
