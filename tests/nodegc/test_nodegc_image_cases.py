"""Upstream ``image_gc_manager_test.go`` cases (D1-D5) and the derived edge tables."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ownergc.nodegc import (
    FREE_ALL,
    ZERO_TIME,
    Container,
    FreeDiskSpaceFailed,
    FsStats,
    Image,
    ImageCandidate,
    ImageGCPolicy,
    ImageGCReason,
    InvalidDiskCapacity,
    InvalidPolicy,
    detect_images,
    image_eviction_candidates,
    images_in_use,
    plan_delete_unused_images,
    plan_free_space,
    plan_image_gc,
    plan_max_age,
    resolve_image,
)

NOW = 1_700_000_000 * 10**9
SEC = 10**9
MIN = 60 * SEC
HOUR = 60 * MIN
ZERO_POLICY = ImageGCPolicy(0, 0, timedelta(0), timedelta(0))


def img(n, size, **kw):
    return Image(id=f"image-{n}", size=size, **kw)


def ctr(n, *, with_name=True, handler=""):
    # upstream makeContainer: image id in image_ref; "no image name" leaves image empty
    return Container(
        id=f"c-{n}",
        image=f"image-{n}-name" if with_name else "",
        image_ref=f"image-{n}",
        image_runtime_handler=handler,
    )


# --- D1: detection -----------------------------------------------------------------


def test_detect_initial():
    images = [img(0, 1024), img(1, 2048), img(2, 2048)]
    in_use = images_in_use([ctr(1, with_name=False), ctr(2)])
    recs = detect_images({}, images, in_use, ZERO_TIME, NOW)
    assert set(recs) == {"image-0", "image-1", "image-2"}
    assert (recs["image-0"].first_detected, recs["image-0"].last_used) == (ZERO_TIME, ZERO_TIME)
    assert not recs["image-0"].ever_used
    for k in ("image-1", "image-2"):
        assert (recs[k].first_detected, recs[k].last_used) == (ZERO_TIME, NOW)


def test_detect_with_new_image_overwrites_sizes():
    in_use = images_in_use([ctr(1)])
    recs = detect_images({}, [img(0, 1024), img(1, 2048)], in_use, ZERO_TIME, NOW)
    assert len(recs) == 2
    later = NOW + SEC
    recs = detect_images(
        recs, [img(0, 1024), img(1, 1024), img(2, 1024)], in_use, ZERO_TIME + SEC, later
    )
    assert len(recs) == 3
    assert (recs["image-0"].first_detected, recs["image-0"].last_used) == (ZERO_TIME, ZERO_TIME)
    assert (recs["image-1"].first_detected, recs["image-1"].last_used) == (ZERO_TIME, later)
    assert recs["image-1"].size == 1024
    assert (recs["image-2"].first_detected, recs["image-2"].last_used) == (
        ZERO_TIME + SEC,
        ZERO_TIME,
    )


def test_detect_container_stopped_keeps_last_used():
    images = [img(0, 1024), img(1, 2048)]
    recs = detect_images({}, images, images_in_use([ctr(1)]), ZERO_TIME, NOW)
    first_last = recs["image-1"].last_used
    recs = detect_images(recs, images, frozenset(), NOW + SEC, NOW + SEC)
    assert len(recs) == 2
    assert (recs["image-0"].first_detected, recs["image-0"].last_used) == (ZERO_TIME, ZERO_TIME)
    assert recs["image-1"].first_detected == ZERO_TIME
    assert recs["image-1"].last_used == first_last == NOW


def test_detect_with_removed_images():
    images = [img(0, 1024), img(1, 2048)]
    recs = detect_images({}, images, images_in_use([ctr(1)]), ZERO_TIME, NOW)
    assert detect_images(recs, [], frozenset(), NOW, NOW) == {}


def test_detect_keyed_by_runtime_handler():
    h = "test-runtimeHandler"
    images = [img(0, 1024, runtime_handler=h), img(1, 2048, runtime_handler=h), img(2, 2048)]
    in_use = images_in_use([ctr(1, handler=h), ctr(2)], per_runtime_handler=True)
    recs = detect_images({}, images, in_use, ZERO_TIME, NOW, per_runtime_handler=True)
    assert set(recs) == {"image-0,test-runtimeHandler", "image-1,test-runtimeHandler", "image-2"}
    r0 = recs["image-0,test-runtimeHandler"]
    assert (r0.first_detected, r0.last_used, r0.runtime_handler) == (ZERO_TIME, ZERO_TIME, h)
    assert recs["image-1,test-runtimeHandler"].last_used == NOW
    assert (recs["image-2"].last_used, recs["image-2"].runtime_handler) == (NOW, "")
    # RemoveImage is still issued by plain id.
    assert {c.image_id for c in image_eviction_candidates(recs, in_use)} == {"image-0"}


def test_image_id_preferred_over_image_ref():
    c = Container(id="c", image_ref="sha256:digest-ref", image_id="sha256:the-id")
    assert images_in_use([c]) == {"sha256:the-id"}
    assert images_in_use([Container(id="d", image_ref="sha256:x")]) == {"sha256:x"}


# --- D2: free space / delete unused -------------------------------------------------


def free_space(images, target, free_time, *, in_use=frozenset(), min_age=timedelta(0)):
    recs = detect_images({}, images, in_use, free_time, free_time)
    return plan_free_space(image_eviction_candidates(recs, in_use), target, free_time, min_age)


def test_do_not_delete_pinned_image():
    plan = free_space([Image("1", 1024, pinned=True), Image("2", 1024)], 4096, NOW)
    assert [r.image_id for r in plan.removals] == ["2"]
    assert plan.freed == 1024  # a shortfall is not an error at this level


def test_delete_unpinned_image():
    plan = free_space([Image("1", 1024, pinned=False), Image("2", 1024)], 2048, NOW)
    assert sorted(r.image_id for r in plan.removals) == ["1", "2"]
    assert plan.freed == 2048


def test_all_pinned_images():
    plan = free_space([Image("1", 1024, pinned=True), Image("2", 1024, pinned=True)], 2048, NOW)
    assert plan.removals == () and plan.freed == 0


def test_free_space_images_in_use_are_ignored():
    in_use = images_in_use([ctr(1)])
    plan = free_space([img(0, 1024), img(1, 2048)], 2048, NOW, in_use=in_use)
    assert [r.image_id for r in plan.removals] == ["image-0"]
    assert plan.freed == 1024


def test_delete_unused_images_removes_all_unused():
    images = [img(0, 1024), img(1, 2048), img(2, 2048)]
    in_use = images_in_use([ctr(2)])
    plan = plan_delete_unused_images(images, {}, in_use, ZERO_POLICY, NOW)
    assert sorted(plan.image_ids) == ["image-0", "image-1"]
    assert plan.error is None
    assert plan.bytes_to_free == FREE_ALL


def test_free_space_remove_by_least_recently_used():
    images = [img(0, 1024), img(1, 2048)]
    t1, t2, t3 = NOW, NOW + SEC, NOW + 2 * SEC
    recs = detect_images({}, images, images_in_use([ctr(0), ctr(1)]), ZERO_TIME, t1)
    recs = detect_images(recs, images, images_in_use([ctr(1)]), t2, t2)
    assert recs["image-1"].last_used > recs["image-0"].last_used
    recs = detect_images(recs, images, frozenset(), t3, t3)
    plan = plan_free_space(
        image_eviction_candidates(recs, frozenset()), 1024, t3 + MIN, timedelta(0)
    )
    assert [r.image_id for r in plan.removals] == ["image-0"]
    assert plan.freed == 1024


def test_free_space_never_used_goes_first():
    t1, t2, t3 = NOW, NOW + SEC, NOW + 2 * SEC
    used0 = images_in_use([ctr(0)])
    recs = detect_images({}, [img(0, 1024)], used0, ZERO_TIME, t1)
    recs = detect_images(recs, [img(0, 1024), img(1, 2048)], used0, t2, t2)
    assert (recs["image-1"].first_detected, recs["image-1"].last_used) == (t2, ZERO_TIME)
    recs = detect_images(recs, [img(0, 1024), img(1, 2048)], frozenset(), t3, t3)
    plan = plan_free_space(image_eviction_candidates(recs, frozenset()), 1024, t3, timedelta(0))
    assert [r.image_id for r in plan.removals] == ["image-1"]
    assert plan.freed == 2048


def test_image_not_old_enough():
    images = [img(0, 1024), img(1, 2048)]
    in_use = images_in_use([ctr(1)])
    recs = detect_images({}, images, in_use, NOW, NOW)
    cands = image_eviction_candidates(recs, in_use)
    first = plan_free_space(cands, 1024, NOW, timedelta(minutes=1))
    assert (first.removals, first.freed, first.left_in_place) == ((), 0, ("image-0",))
    second = plan_free_space(cands, 1024, NOW + MIN, timedelta(minutes=1))
    assert [r.image_id for r in second.removals] == ["image-0"]  # age == MinAge is eligible
    assert second.freed == 1024


def test_sandbox_image_exempt_newest_by_pin():
    sandbox = "registry.k8s.io/pause-amd64:latest"
    plan = plan_delete_unused_images(
        [Image(sandbox, 1024, pinned=True)], {}, frozenset(), ZERO_POLICY, NOW
    )
    assert plan.images == () and plan.error is None


def test_sandbox_image_exempt_2022_by_in_use():
    sandbox = "k8s.gcr.io/pause-amd64:latest"
    images = [Image(sandbox, 1024)]
    resolved = resolve_image(images, sandbox)
    assert resolved is not None
    plan = plan_delete_unused_images(images, {}, frozenset({resolved.id}), ZERO_POLICY, NOW)
    assert plan.images == ()


def test_delete_pinned_image_last_duplicate_wins():
    sandbox = "registry.k8s.io/pause-amd64:latest"
    images = [Image(sandbox, 1024, pinned=True), Image(sandbox, 1024, pinned=False)]
    newest = plan_delete_unused_images(images, {}, frozenset(), ZERO_POLICY, NOW)
    assert newest.image_ids == [sandbox]  # the record is unpinned: removed
    old = plan_delete_unused_images(images, {}, frozenset({sandbox}), ZERO_POLICY, NOW)
    assert old.image_ids == []  # 2022: in use as the sandbox image


def test_delete_unused_images_limit_by_live_time():
    policy = ImageGCPolicy(0, 0, timedelta(seconds=3), timedelta(0))
    images = [img(0, 1024), img(1, 2048), img(2, 2048)]
    in_use = images_in_use([ctr(2)])
    recs = detect_images({}, images, in_use, NOW, NOW)  # Start() detection
    first = plan_delete_unused_images(images, recs, in_use, policy, NOW)
    assert first.images == ()
    later = plan_delete_unused_images(images, first.records, in_use, policy, NOW + 3 * SEC)
    assert sorted(later.image_ids) == ["image-0", "image-1"]


def test_target_zero_still_removes_one():
    plan = free_space([img(0, 10), img(1, 10)], 0, NOW)
    assert len(plan.removals) == 1


# --- Derived threshold edges ---------------------------------------------------------


@pytest.mark.parametrize(
    ("capacity", "available", "high", "low", "usage", "wanted", "removed", "error"),
    [
        (1000, 160, 85, 80, 84, 0, [], None),
        (1000, 159, 85, 80, 85, 41, ["a"], FreeDiskSpaceFailed),
        (1000, 151, 85, 80, 85, 49, ["a"], FreeDiskSpaceFailed),
        (1000, 200, 80, 80, 80, 0, ["a"], None),
        (1000, 1200, 85, 80, 0, 0, [], None),
    ],
)
def test_threshold_edges(capacity, available, high, low, usage, wanted, removed, error):
    images = [Image("a", 10), Image("b", 10)] if high == low else [Image("a", 10)]
    plan = plan_image_gc(
        FsStats(capacity, available),
        images,
        {},
        frozenset(),
        ImageGCPolicy(high, low, timedelta(0)),
        NOW,
    )
    assert plan.usage_percent == usage
    assert plan.bytes_to_free == wanted
    assert plan.image_ids == removed
    if error is None:
        assert plan.error is None
    else:
        assert isinstance(plan.error, error)
        assert plan.error.wanted == wanted and plan.error.freed == 10


@pytest.mark.parametrize("stats", [FsStats(0, 0), FsStats(None, None)])
def test_capacity_zero_is_an_error(stats):
    plan = plan_image_gc(stats, [Image("a", 10)], {}, frozenset(), ImageGCPolicy(), NOW)
    assert isinstance(plan.error, InvalidDiskCapacity)
    assert str(plan.error) == "invalid capacity 0 on image filesystem"
    assert plan.images == ()


# --- D3: threshold GC ------------------------------------------------------------------

D3_POLICY = ImageGCPolicy(90, 80, timedelta(0))


def test_gc_below_low_threshold():
    plan = plan_image_gc(FsStats(1000, 600), [img(0, 450)], {}, frozenset(), D3_POLICY, NOW)
    assert plan.usage_percent == 40
    assert plan.images == () and plan.error is None


def test_gc_below_success():
    plan = plan_image_gc(FsStats(1000, 50), [img(0, 450)], {}, frozenset(), D3_POLICY, NOW)
    assert plan.bytes_to_free == 150
    assert plan.image_ids == ["image-0"]
    assert [r.reason for r in plan.images] == [ImageGCReason.SPACE]
    assert plan.error is None and plan.bytes_freed == 450


def test_gc_not_enough_freed():
    plan = plan_image_gc(FsStats(1000, 50), [img(0, 50)], {}, frozenset(), D3_POLICY, NOW)
    assert plan.image_ids == ["image-0"]
    assert isinstance(plan.error, FreeDiskSpaceFailed)
    assert str(plan.error) == (
        "Failed to garbage collect required amount of images. "
        "Attempted to free 150 bytes, but only found 50 bytes eligible to free."
    )


# --- D4: MaxAge ---------------------------------------------------------------------------


def cand(last_used, first=ZERO_TIME):
    return ImageCandidate("image-0", "image-0", 1024, first, last_used)


def test_gc_image_too_old():
    t0 = NOW
    gone, left = plan_max_age([cand(t0)], timedelta(minutes=1), t0, began_gc=t0)
    assert gone == () and [c.key for c in left] == ["image-0"]
    gone, left = plan_max_age([cand(t0)], timedelta(minutes=1), t0 + MIN + 1, began_gc=t0)
    assert [r.image_id for r in gone] == ["image-0"] and left == []
    assert gone[0].reason == ImageGCReason.AGE


def test_gc_image_max_age_disabled():
    for when in (NOW, (1 << 63) - 1):
        gone, left = plan_max_age([cand(NOW)], timedelta(0), when, began_gc=NOW)
        assert gone == () and len(left) == 1


@pytest.mark.parametrize(
    ("free_after", "last_used", "first_detected", "removed"),
    [
        (30 * MIN, None, 29 * MIN, False),
        (2 * HOUR, None, 2 * HOUR - SEC, True),
        (2 * HOUR, 1 * HOUR, 0, False),
        (2 * HOUR, 59 * MIN, 0, True),
    ],
)
def test_max_age_derived(free_after, last_used, first_detected, removed):
    t = NOW
    last = ZERO_TIME if last_used is None else t + last_used
    gone, _ = plan_max_age(
        [cand(last, t + first_detected)], timedelta(hours=1), t + free_after, began_gc=t
    )
    assert bool(gone) is removed


def test_max_age_ignores_min_age_in_full_pass():
    # A never-used image pulled a second ago goes once uptime exceeds MaxAge.
    policy = ImageGCPolicy(90, 80, timedelta(minutes=2), timedelta(hours=1))
    recs = detect_images({}, [img(0, 10)], frozenset(), NOW - SEC, NOW - SEC)
    plan = plan_image_gc(
        FsStats(1000, 900), [img(0, 10)], recs, frozenset(), policy, NOW, began_gc=NOW - 2 * HOUR
    )
    assert plan.image_ids == ["image-0"] and plan.images[0].reason == ImageGCReason.AGE
    assert plan.error is None and plan.bytes_freed == 10


def test_max_age_removals_survive_capacity_error_and_credit_space():
    policy = ImageGCPolicy(90, 80, timedelta(0), timedelta(hours=1))
    images = [img(0, 100), img(1, 100)]
    used = images_in_use([ctr(1)])
    recs = detect_images({}, images, used, NOW - 3 * HOUR, NOW - 3 * HOUR)
    bad = plan_image_gc(FsStats(0, 0), images, recs, frozenset(), policy, NOW, began_gc=0)
    assert bad.image_ids == ["image-0", "image-1"]
    assert isinstance(bad.error, InvalidDiskCapacity)
    # 1000 bytes, 50 free: usage 95 %. MaxAge frees 100 first, leaving usage 85 %,
    # under the high threshold: the threshold pass removes nothing more.
    ok = plan_image_gc(FsStats(1000, 50), images, recs, used, policy, NOW, began_gc=0)
    assert ok.image_ids == ["image-0"]
    assert ok.usage_percent == 85 and ok.bytes_to_free == 0


# --- D5: policy validation -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("high", "low", "message"),
    [
        (2, 1, None),
        (-1, 0, "invalid HighThresholdPercent -1, must be in range [0-100]"),
        (101, 0, "invalid HighThresholdPercent 101, must be in range [0-100]"),
        (0, -1, "invalid LowThresholdPercent -1, must be in range [0-100]"),
        (0, 101, "invalid LowThresholdPercent 101, must be in range [0-100]"),
        (1, 2, "LowThresholdPercent 2 can not be higher than HighThresholdPercent 1"),
    ],
)
def test_validate_image_gc_policy(high, low, message):
    if message is None:
        assert ImageGCPolicy(high, low).high_threshold_percent == high
    else:
        with pytest.raises(InvalidPolicy) as info:
            ImageGCPolicy(high, low)
        assert str(info.value) == message


def test_config_validation_is_stricter():
    assert ImageGCPolicy(80, 80).validate()  # the manager allows low == high, config does not
    assert ImageGCPolicy(85, 80).validate() == []
    errs = ImageGCPolicy(85, 80, timedelta(minutes=2), timedelta(minutes=2)).validate()
    assert errs == ["imageMaximumGCAge 2m0s must be greater than imageMinimumGCAge 2m0s"]
    assert ImageGCPolicy(85, 80, max_age=timedelta(seconds=-1)).validate()


def test_periodic_loop_disabled_only_at_100_without_max_age():
    assert not ImageGCPolicy(100, 80).periodic
    assert ImageGCPolicy(100, 80, timedelta(0), timedelta(hours=1)).periodic
    assert ImageGCPolicy().periodic


def test_container_policy_rejects_negative_min_age():
    from ownergc.nodegc import ContainerGCPolicy

    with pytest.raises(InvalidPolicy, match="invalid minimum garbage collection age: -1s"):
        ContainerGCPolicy(timedelta(seconds=-1))


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("pause:3.6", "sha256:p"),
        ("docker.io/library/pause:3.6", "sha256:p"),
        ("sha256:p", "sha256:p"),
        ("busybox", "sha256:b"),
        ("example.com/busybox:latest", None),
        ("", None),
    ],
)
def test_resolve_image(ref, expected):
    images = [
        Image("sha256:p", repo_tags=("docker.io/library/pause:3.6",)),
        Image("sha256:b", repo_tags=("docker.io/library/busybox:latest",)),
    ]
    got = resolve_image(images, ref)
    assert (got.id if got else None) == expected
