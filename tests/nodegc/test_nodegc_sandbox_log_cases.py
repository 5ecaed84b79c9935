"""Upstream ``TestSandboxGC`` (B1-B8), ``TestPodLogDirectoryGC`` (C) and derived cases."""

from __future__ import annotations

import pytest

from ownergc.nodegc import (
    Container,
    ContainerState,
    PodSandbox,
    PodStates,
    RemovalReason,
    SandboxState,
    container_id_from_legacy_log_symlink,
    dangling_symlink_removable,
    legacy_log_symlink_name,
    plan_pod_log_dir_eviction,
    plan_sandbox_eviction,
    pod_uid_from_log_dir,
)

UIDS = {"foo1": "1234", "foo2": "5678", "deleted": "9012"}
READY = SandboxState.READY
NOTREADY = SandboxState.NOTREADY


def sid(pod: str, attempt: int) -> str:
    return f"{pod}_new_{UIDS[pod]}_{attempt}"


def sandboxes(rows):
    return [
        PodSandbox(
            id=sid(p, a), uid=UIDS[p], name=p, namespace="new", attempt=a, state=s, created_at=c
        )
        for p, a, s, c in rows
    ]


def containers(rows):
    return [
        Container(
            id=f"{sid(p, a)}_{n}_0",
            pod_sandbox_id=sid(p, a),
            name=n,
            state=ContainerState.EXITED,
            labels={"io.kubernetes.pod.uid": UIDS[p]},
        )
        for p, n, a in rows
    ]


B4_SANDBOXES = [("foo1", 1, NOTREADY, 1), ("foo1", 0, NOTREADY, 0)]

CASES = [
    pytest.param(
        [("deleted", 0, NOTREADY, 0)],
        [],
        {"9012"},
        set(),
        False,
        ["deleted_new_9012_0"],
        id="B1-notready-deleted-pod-sandbox-gcd",
    ),
    pytest.param(
        [("deleted", 0, READY, 0)],
        [],
        {"9012"},
        set(),
        False,
        [],
        id="B2-ready-deleted-pod-sandbox-kept",
    ),
    pytest.param(
        [("foo1", 0, READY, 0), ("foo2", 0, NOTREADY, 0)],
        [],
        set(),
        set(),
        False,
        [],
        id="B3-existing-pods-sandboxes-kept",
    ),
    pytest.param(
        B4_SANDBOXES, [], set(), set(), False, ["foo1_new_1234_0"], id="B4-older-exited-sandbox-gcd"
    ),
    pytest.param(
        B4_SANDBOXES,
        [("foo1", "bar1", 0)],
        set(),
        set(),
        False,
        [],
        id="B5-older-sandbox-with-containers-kept",
    ),
    pytest.param(
        [("foo1", 0, READY, 0), ("foo2", 0, NOTREADY, 0)],
        [],
        set(),
        {"1234", "5678"},
        True,
        ["foo2_new_5678_0"],
        id="B6-evict-terminating-pods",
    ),
    pytest.param(
        [("foo1", 0, NOTREADY, 0)],
        [("foo1", "bar1", 0)],
        set(),
        set(),
        False,
        [],
        id="B7-sandbox-with-containers-kept",
    ),
    pytest.param(
        [
            ("foo1", 1, READY, 1),
            ("foo1", 0, NOTREADY, 0),
            ("foo2", 1, NOTREADY, 1),
            ("foo2", 0, NOTREADY, 0),
            ("deleted", 0, NOTREADY, 0),
        ],
        [("foo2", "bar3", 1)],
        {"9012"},
        {"9012"},
        False,
        ["foo1_new_1234_0", "foo2_new_5678_0", "deleted_new_9012_0"],
        id="B8-multiple-sandboxes",
    ),
]


@pytest.mark.parametrize(("sbs", "cs", "deleted", "terminated", "evict", "removed"), CASES)
def test_upstream_sandbox_gc(sbs, cs, deleted, terminated, evict, removed):
    plan = plan_sandbox_eviction(
        sandboxes(sbs),
        containers(cs),
        PodStates(deleted=frozenset(deleted), terminated=frozenset(terminated)),
        evict_terminated_pods=evict,
    )
    assert sorted(r.id for r in plan) == sorted(removed)
    created = [r.created_at for r in plan]
    assert created == sorted(created)


@pytest.mark.parametrize("ready", [True, False])
def test_sandbox_gc_ignores_all_sources_ready(ready):
    # Derived: sandbox GC has no allSourcesReady gate, only the oracle.
    from datetime import timedelta

    from ownergc.nodegc import ContainerGCPolicy, plan_container_gc

    plan = plan_container_gc(
        [],
        sandboxes([("deleted", 0, NOTREADY, 0)]),
        PodStates(deleted=frozenset({"9012"})),
        ContainerGCPolicy(timedelta(0), 1, -1),
        0,
        all_sources_ready=ready,
    )
    assert plan.sandbox_ids == ["deleted_new_9012_0"]
    assert plan.sandboxes[0].reason == RemovalReason.DELETED_POD


def test_newest_sandbox_of_live_pod_kept_even_notready():
    plan = plan_sandbox_eviction(
        sandboxes([("foo1", 0, NOTREADY, 5), ("foo1", 1, NOTREADY, 9), ("foo1", 2, NOTREADY, 7)]),
        [],
        PodStates(live=frozenset({"1234"})),
    )
    assert [r.id for r in plan] == ["foo1_new_1234_0", "foo1_new_1234_2"]
    assert {r.reason for r in plan} == {RemovalReason.SUPERSEDED_SANDBOX}


# --- C: pod log directories -------------------------------------------------------

LOG_ENTRIES = ["123", "456", "789", "012", "name_namespace_321", "name_namespace_654"]


@pytest.mark.parametrize(
    ("ready", "expected"),
    [
        (True, ["/var/log/pods/789", "/var/log/pods/012", "/var/log/pods/name_namespace_654"]),
        (False, []),
    ],
)
def test_upstream_pod_log_directory_gc(ready, expected):
    pods = PodStates(deleted=frozenset({"012", "789", "654"}))
    got = plan_pod_log_dir_eviction(LOG_ENTRIES, pods, all_sources_ready=ready)
    assert [f"/var/log/pods/{e}" for e in got] == expected


def test_log_dirs_of_terminated_pods_are_kept():
    pods = PodStates(terminated=frozenset({"123"}), live=frozenset({"456"}))
    assert plan_pod_log_dir_eviction(["ns_a_123", "ns_b_456"], pods, all_sources_ready=True) == ()


@pytest.mark.parametrize(
    ("entry", "uid"),
    [("ns_pod_abc-def", "abc-def"), ("abc-def", "abc-def"), ("a_b_c_d", "d"), ("x_", "")],
)
def test_pod_uid_from_log_dir(entry, uid):
    assert pod_uid_from_log_dir(entry) == uid


# --- legacy /var/log/containers symlinks ------------------------------------------


def test_parse_legacy_symlink():
    path = "/var/log/containers/web_default_nginx-0123456789ab.log"
    assert container_id_from_legacy_log_symlink(path) == "0123456789ab"
    with pytest.raises(ValueError):
        container_id_from_legacy_log_symlink("/var/log/containers/a_b_c-12345.log")
    with pytest.raises(ValueError):
        container_id_from_legacy_log_symlink("/var/log/containers/a_b_c-abcdef.txt")


def test_symlink_name_round_trips_and_is_cut_at_255():
    name = legacy_log_symlink_name("web", "default", "nginx", "0123456789ab")
    assert name == "web_default_nginx-0123456789ab.log"
    assert container_id_from_legacy_log_symlink("/d/" + name) == "0123456789ab"
    long = legacy_log_symlink_name("p" * 200, "ns", "c" * 40, "f" * 64)
    assert len(long) == 255 and long.endswith(".log")
    # The id was cut: what is left still parses (as a partial id) or not at all.
    assert "f" * 64 not in long


@pytest.mark.parametrize(
    ("kwargs", "removable"),
    [
        ({"parsed": False}, True),
        ({"parsed": True, "lookup_failed": True}, True),
        ({"parsed": True, "state": None}, False),
        ({"parsed": True, "state": ContainerState.RUNNING}, False),
        ({"parsed": True, "state": ContainerState.CREATED}, False),
        ({"parsed": True, "state": ContainerState.EXITED}, True),
    ],
)
def test_dangling_symlink_decision(kwargs, removable):
    assert dangling_symlink_removable(**kwargs) is removable
