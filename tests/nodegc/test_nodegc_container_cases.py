"""Upstream ``TestContainerGC`` / ``TestUnknownStateContainerGC`` cases (A1-A14) as data.

Each row is (pod name P, container name N, attempt A, createdAt C, state).
Pod UID = P, namespace test-ns, sandbox attempt 0, so container ids read
``P_test-ns_P_0_N_A``. ``deleted`` = pods named "deleted"; ``terminated`` =
every pod except "running" (the upstream test's oracle).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from ownergc.nodegc import (
    POD_UID_LABEL,
    Container,
    ContainerGCPolicy,
    ContainerState,
    PodStates,
    RemovalReason,
    plan_container_eviction,
    plan_container_gc,
)

NOW = 1_700_000_000 * 10**9
R = ContainerState.RUNNING
X = ContainerState.EXITED
U = ContainerState.UNKNOWN
DEFAULT = ContainerGCPolicy(timedelta(hours=1), 2, 6)


def cid(p: str, n: str, a: int) -> str:
    return f"{p}_test-ns_{p}_0_{n}_{a}"


def make(rows):
    out = []
    for row in rows:
        p, n, a, c = row[:4]
        state = row[4] if len(row) > 4 else X
        out.append(
            Container(
                id=cid(p, n, a),
                pod_sandbox_id=f"{p}_test-ns_{p}_0",
                name=n,
                attempt=a,
                state=state,
                created_at=NOW if c == "NOW" else c,
                labels={POD_UID_LABEL: p},
            )
        )
    return out


def oracle(rows) -> PodStates:
    pods = {r[0] for r in rows}
    return PodStates(
        deleted=frozenset(p for p in pods if p == "deleted"),
        terminated=frozenset(p for p in pods if p != "running"),
    )


def two_per_unit(*units):
    return [row for p, n in units for row in ((p, n, 1, 1), (p, n, 0, 0))]


CASES = [
    pytest.param(
        [("foo", "bar", 0, 0)],
        ContainerGCPolicy(timedelta(minutes=1), 1, 0),
        True,
        False,
        [],
        ["foo_test-ns_foo_0_bar_0"],
        id="A1-max-container-limit-0-removes-all",
    ),
    pytest.param(
        [
            ("foo", "bar", 4, 4),
            ("foo", "bar", 3, 3),
            ("foo", "bar", 2, 2),
            ("foo", "bar", 1, 1),
            ("foo", "bar", 0, 0),
        ],
        ContainerGCPolicy(timedelta(minutes=1), -1, 4),
        True,
        False,
        [0, 1, 2, 3],
        ["foo_test-ns_foo_0_bar_0"],
        id="A2-max-containers-without-per-pod-limit",
    ),
    pytest.param(
        [("foo", "bar", 2, 2), ("foo", "bar", 1, 1), ("foo", "bar", 0, 0)],
        ContainerGCPolicy(timedelta(minutes=1), -1, -1),
        True,
        False,
        [0, 1, 2],
        [],
        id="A3-no-limits-no-removal",
    ),
    pytest.param(
        [("foo", "bar", 2, "NOW"), ("foo", "bar", 1, "NOW"), ("foo", "bar", 0, "NOW")],
        DEFAULT,
        True,
        False,
        [0, 1, 2],
        [],
        id="A4-recent-containers-kept",
    ),
    pytest.param(
        [("foo", "bar", 2, 2), ("foo", "bar", 1, 1), ("foo", "bar", 0, 0)],
        DEFAULT,
        True,
        False,
        [0, 1],
        ["foo_test-ns_foo_0_bar_0"],
        id="A5-oldest-removed-over-per-pod-limit",
    ),
    pytest.param(
        [("foo", "bar", 2, 2), ("foo", "bar", 1, 1), ("foo", "bar", 0, 0, R)],
        DEFAULT,
        True,
        False,
        [0, 1, 2],
        [],
        id="A6-running-containers-kept",
    ),
    pytest.param(
        [("foo", "bar", 1, 1), ("foo", "bar", 0, 0)],
        DEFAULT,
        True,
        False,
        [0, 1],
        [],
        id="A7-limits-not-exceeded",
    ),
    pytest.param(
        [
            ("foo", "bar", 2, 2),
            ("foo", "bar", 1, 1),
            ("foo", "bar", 0, 0),
            ("foo1", "baz", 2, 2),
            ("foo1", "baz", 1, 1),
            ("foo1", "baz", 0, 0),
            ("foo2", "bar", 2, 2),
            ("foo2", "bar", 1, 1),
            ("foo2", "bar", 0, 0),
        ],
        DEFAULT,
        True,
        False,
        [0, 1, 3, 4, 6, 7],
        ["foo_test-ns_foo_0_bar_0", "foo1_test-ns_foo1_0_baz_0", "foo2_test-ns_foo2_0_bar_0"],
        id="A8-limit-per-uid-container-pair",
    ),
    pytest.param(
        two_per_unit(
            ("foo", "bar"), ("foo1", "bar1"), ("foo2", "bar2"), ("foo3", "bar3"), ("foo4", "bar4")
        ),
        DEFAULT,
        True,
        False,
        [0, 2, 4, 6, 8],
        [
            "foo_test-ns_foo_0_bar_0",
            "foo1_test-ns_foo1_0_bar1_0",
            "foo2_test-ns_foo2_0_bar2_0",
            "foo3_test-ns_foo3_0_bar3_0",
            "foo4_test-ns_foo4_0_bar4_0",
        ],
        id="A9-max-limit-keeps-one-per-pod-overshoot",
    ),
    pytest.param(
        [
            ("foo", "bar", 2, 2),
            ("foo", "bar", 1, 1),
            ("foo1", "bar1", 2, 2),
            ("foo1", "bar1", 1, 1),
            ("foo2", "bar2", 1, 1),
            ("foo3", "bar3", 0, 0),
            ("foo4", "bar4", 1, 1),
            ("foo5", "bar5", 0, 0),
            ("foo6", "bar6", 2, 2),
            ("foo7", "bar7", 1, 1),
        ],
        DEFAULT,
        True,
        False,
        [0, 2, 4, 6, 8, 9],
        [
            "foo_test-ns_foo_0_bar_1",
            "foo1_test-ns_foo1_0_bar1_1",
            "foo3_test-ns_foo3_0_bar3_0",
            "foo5_test-ns_foo5_0_bar5_0",
        ],
        id="A10-oldest-pods-removed-over-limit",
    ),
    pytest.param(
        [
            ("foo", "bar", 2, 2),
            ("foo", "bar", 1, 1),
            ("foo1", "bar1", 2, 2),
            ("foo1", "bar1", 1, 1),
            ("running", "bar2", 1, 1),
            ("foo3", "bar3", 0, 0, R),
        ],
        DEFAULT,
        True,
        True,
        [4, 5],
        [
            "foo_test-ns_foo_0_bar_2",
            "foo_test-ns_foo_0_bar_1",
            "foo1_test-ns_foo1_0_bar1_2",
            "foo1_test-ns_foo1_0_bar1_1",
        ],
        id="A11-evict-terminating-pods",
    ),
    pytest.param(
        [
            ("foo", "bar", 1, 1),
            ("foo", "bar", 0, 0),
            ("deleted", "bar1", 2, "NOW"),
            ("deleted", "bar1", 1, 1),
            ("deleted", "bar1", 0, 0),
        ],
        DEFAULT,
        True,
        False,
        [0, 1, 2],
        ["deleted_test-ns_deleted_0_bar1_1", "deleted_test-ns_deleted_0_bar1_0"],
        id="A12-deleted-pods-respect-min-age",
    ),
    pytest.param(
        [("deleted", "bar1", 0, 0)],
        DEFAULT,
        False,
        True,
        [0],
        [],
        id="A13-deleted-pods-wait-for-all-sources-ready",
    ),
]


@pytest.mark.parametrize(("rows", "policy", "ready", "evict", "remain", "removed"), CASES)
def test_upstream_container_gc(rows, policy, ready, evict, remain, removed):
    containers = make(rows)
    plan = plan_container_eviction(
        containers,
        oracle(rows),
        policy,
        NOW,
        all_sources_ready=ready,
        evict_terminated_pods=evict,
    )
    got = [r.id for r in plan]
    assert sorted(got) == sorted(removed)
    # "remain" is upstream's list of survivors: removed is exactly its complement.
    assert sorted(got) == sorted(c.id for i, c in enumerate(containers) if i not in remain)
    assert len(set(got)) == len(got)
    # The plan walks oldest first.
    created = [r.created_at for r in plan]
    assert created == sorted(created)


def test_a14_unknown_state_container_is_stopped_then_removed():
    rows = [("foo", "bar", 0, 0, U)]
    plan = plan_container_eviction(
        make(rows),
        oracle(rows),
        ContainerGCPolicy(timedelta(hours=1), 0, 0),
        NOW,
        all_sources_ready=True,
    )
    assert [(r.id, r.stop_first) for r in plan] == [("foo_test-ns_foo_0_bar_0", True)]
    assert plan[0].stop_timeout == 2  # no grace annotations: the kubelet's floor


def test_reasons_are_reported():
    rows = [("deleted", "a", 0, 0), ("foo", "b", 1, 1), ("foo", "b", 0, 0)]
    plan = plan_container_eviction(
        make(rows),
        oracle(rows),
        ContainerGCPolicy(timedelta(0), 1, -1),
        NOW,
        all_sources_ready=True,
    )
    assert {r.id: r.reason for r in plan} == {
        cid("deleted", "a", 0): RemovalReason.DELETED_POD,
        cid("foo", "b", 0): RemovalReason.MAX_PER_POD_CONTAINER,
    }


def test_min_age_boundary_is_inclusive_and_future_never_qualifies():
    hour = 3600 * 10**9
    rows = [
        ("deleted", "a", 0, NOW - hour),  # exactly MinAge old: a candidate
        ("deleted", "a", 1, NOW - hour + 1),  # one ns too young
        ("deleted", "a", 2, NOW + hour),  # created "in the future"
    ]
    plan = plan_container_eviction(make(rows), oracle(rows), DEFAULT, NOW, all_sources_ready=True)
    assert [r.id for r in plan] == [cid("deleted", "a", 0)]


def test_tie_break_is_by_id():
    rows = [("foo", "bar", 1, 5), ("foo", "bar", 0, 5), ("foo", "bar", 2, 5)]
    plan = plan_container_eviction(
        make(rows),
        oracle(rows),
        ContainerGCPolicy(timedelta(0), 1, -1),
        NOW,
        all_sources_ready=True,
    )
    # Same created_at: the smaller ids count as older and go; the largest id stays.
    assert [r.id for r in plan] == [cid("foo", "bar", 0), cid("foo", "bar", 1)]


def test_groups_by_metadata_name_not_label_and_missing_uid_shares_a_unit():
    cs = [
        Container(
            id="a", name="x", created_at=1, state=X, labels={"io.kubernetes.container.name": "same"}
        ),
        Container(
            id="b", name="y", created_at=2, state=X, labels={"io.kubernetes.container.name": "same"}
        ),
        Container(id="c", name="x", created_at=3, state=X),
    ]
    plan = plan_container_eviction(
        cs, PodStates(), ContainerGCPolicy(timedelta(0), 1, -1), NOW, all_sources_ready=True
    )
    # "a" and "c" share the unit ("", "x"); "b" is alone in ("", "y").
    assert [r.id for r in plan] == ["a"]


def test_created_and_unknown_states_are_candidates():
    cs = make([("p", "c", 0, 0, ContainerState.CREATED), ("p", "c", 1, 1, U), ("p", "c", 2, 2)])
    plan = plan_container_eviction(
        cs, PodStates(), ContainerGCPolicy(timedelta(0), 0, -1), NOW, all_sources_ready=True
    )
    assert [(r.id, r.stop_first) for r in plan] == [
        (cid("p", "c", 0), False),
        (cid("p", "c", 1), True),
        (cid("p", "c", 2), False),
    ]


def test_grace_period_annotations_for_unknown_containers():
    def one(annotations):
        c = Container(id="u", name="c", state=U, created_at=0, annotations=annotations)
        (r,) = plan_container_eviction(
            [c], PodStates(), ContainerGCPolicy(timedelta(0), 0, -1), NOW, all_sources_ready=True
        )
        return r.stop_timeout

    assert one({"io.kubernetes.pod.terminationGracePeriod": "30"}) == 30
    assert one({"io.kubernetes.pod.terminationGracePeriod": "1"}) == 2
    assert (
        one(
            {
                "io.kubernetes.pod.terminationGracePeriod": "30",
                "io.kubernetes.pod.deletionGracePeriod": "7",
            }
        )
        == 7
    )
    assert one({"io.kubernetes.pod.terminationGracePeriod": "bogus"}) == 2


def test_unknown_uid_answers_synced():
    rows = [("ghost", "c", 0, 0)]
    policy = ContainerGCPolicy(timedelta(0), 5, -1)
    before = plan_container_eviction(
        make(rows), PodStates(synced=False), policy, NOW, all_sources_ready=True
    )
    after = plan_container_eviction(
        make(rows), PodStates(synced=True), policy, NOW, all_sources_ready=True
    )
    assert before == ()
    assert [r.reason for r in after] == [RemovalReason.DELETED_POD]


def test_whole_pass_frees_the_sandbox_of_removed_containers():
    rows = [("deleted", "c", 0, 0)]
    cs = make(rows)
    from ownergc.nodegc import PodSandbox, SandboxState

    sb = PodSandbox(
        id="deleted_test-ns_deleted_0", uid="deleted", state=SandboxState.NOTREADY, created_at=0
    )
    plan = plan_container_gc(
        cs,
        [sb],
        oracle(rows),
        DEFAULT,
        NOW,
        all_sources_ready=True,
        pod_log_dirs=["test-ns_deleted_deleted", "test-ns_foo_foo"],
    )
    assert plan.container_ids == [cid("deleted", "c", 0)]
    assert plan.sandbox_ids == ["deleted_test-ns_deleted_0"]
    assert plan.pod_log_dirs == ("test-ns_deleted_deleted",)
    assert plan
