"""Image eviction: the kubelet's image GC manager, as pure functions.

Rule 1: no I/O and no clock. Records (first detected / last used) are data
the caller keeps between passes and hands back in; every function returns
new records instead of mutating.

A pass, in the order of the newest kubelet:

1. *Detect*: refresh the records from the image listing and the set of
   images in use (any listed container, whatever its state, pins its image).
   New images are first detected now; in-use images are last used now;
   records of images no longer listed are dropped.
2. *Candidates*: records not in use and not pinned, least recently used
   first, ties broken by first detection, then by id (our deterministic
   choice; upstream's sort is unstable). A never-used image has
   ``last_used == ZERO_TIME`` and therefore goes before any image ever used.
3. *MaxAge* (when ``max_age > 0`` and the GC has been running longer than
   ``max_age``): candidates unused for strictly more than ``max_age`` go.
   MinAge is *not* consulted here, so a never-used image pulled a second ago
   qualifies (upstream behaviour, kubernetes#132372).
4. *Threshold*: ``usage = 100 - floor(available*100/capacity)`` (flooring the
   free share rounds usage *up*). At or above the high threshold, free
   ``floor(capacity*(100-low)/100) - available`` bytes: walk the remaining
   candidates, skip those used during this pass or younger than ``min_age``
   (strictly: age == min_age is old enough), and stop once enough is freed.
   The stop check runs only after a removal, so a target <= 0 still removes
   one image.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Generator, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from types import MappingProxyType

from ownergc.nodegc._errors import (
    FreeDiskSpaceFailed,
    ImageDeletionFailed,
    ImageGCError,
    InvalidDiskCapacity,
    InvalidPolicy,
)
from ownergc.nodegc._time import ZERO_TIME, duration_ns, format_duration, since_ns
from ownergc.nodegc._types import Container, FsStats, Image

__all__ = [
    "FREE_ALL",
    "FreeSpace",
    "FreeSpacePlan",
    "ImageCandidate",
    "ImageGCPass",
    "ImageGCPlan",
    "ImageGCPolicy",
    "ImageGCReason",
    "ImageGCStep",
    "ImageRecord",
    "ImageRemoval",
    "ImageUsage",
    "ReadImageFs",
    "RecordsDetected",
    "RemoveImage",
    "credit_freed",
    "detect_images",
    "image_eviction_candidates",
    "image_gc_pass",
    "image_record_key",
    "image_usage",
    "images_in_use",
    "plan_delete_unused_images",
    "plan_free_space",
    "plan_image_gc",
    "plan_max_age",
    "resolve_image",
    "space_target",
]

#: ``DeleteUnusedImages`` frees "everything eligible": Go's MaxInt64 target.
FREE_ALL = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class ImageGCPolicy:
    """The kubelet's image GC settings.

    * ``high_threshold_percent`` (``--image-gc-high-threshold``, 85): disk
      usage at which GC starts; 100 (with ``max_age`` 0) disables the loop.
    * ``low_threshold_percent`` (``--image-gc-low-threshold``, 80): usage GC
      frees down to.
    * ``min_age`` (``--minimum-image-ttl-duration``, 2m): younger images
      (since first detected) are not removed for space.
    * ``max_age`` (``imageMaximumGCAge``, 0 = off): images unused for longer
      are removed whatever the disk usage.

    Construction applies the image manager's own checks (low == high is
    allowed); :meth:`validate` adds KubeletConfiguration's stricter ones.
    """

    high_threshold_percent: int = 85
    low_threshold_percent: int = 80
    min_age: timedelta = timedelta(minutes=2)
    max_age: timedelta = timedelta(0)

    def __post_init__(self) -> None:
        high, low = self.high_threshold_percent, self.low_threshold_percent
        if not 0 <= high <= 100:
            raise InvalidPolicy(f"invalid HighThresholdPercent {high}, must be in range [0-100]")
        if not 0 <= low <= 100:
            raise InvalidPolicy(f"invalid LowThresholdPercent {low}, must be in range [0-100]")
        if low > high:
            raise InvalidPolicy(
                f"LowThresholdPercent {low} can not be higher than HighThresholdPercent {high}"
            )

    def validate(self) -> list[str]:
        """KubeletConfiguration validation errors (empty when the kubelet would start)."""
        errs: list[str] = []
        high, low = self.high_threshold_percent, self.low_threshold_percent
        if low >= high:
            errs.append(
                f"imageGCLowThresholdPercent (--image-gc-low-threshold) {low} must be less "
                f"than imageGCHighThresholdPercent (--image-gc-high-threshold) {high}"
            )
        if self.min_age < timedelta(0):
            errs.append(f"imageMinimumGCAge {format_duration(self.min_age)} must not be negative")
        if self.max_age < timedelta(0):
            errs.append(f"imageMaximumGCAge {format_duration(self.max_age)} must not be negative")
        elif self.max_age > timedelta(0) and self.max_age <= self.min_age:
            errs.append(
                f"imageMaximumGCAge {format_duration(self.max_age)} must be greater than "
                f"imageMinimumGCAge {format_duration(self.min_age)}"
            )
        return errs

    @property
    def periodic(self) -> bool:
        """Whether the kubelet would start the periodic image GC loop at all."""
        return not (self.high_threshold_percent == 100 and self.max_age == timedelta(0))


@dataclass(frozen=True, slots=True)
class ImageRecord:
    """What the image GC remembers about one image between passes."""

    first_detected: int
    last_used: int = ZERO_TIME
    size: int = 0
    pinned: bool = False
    #: The ``Image.id`` to send to ``RemoveImage`` (the record key may add a handler).
    image_id: str = ""
    runtime_handler: str = ""

    @property
    def ever_used(self) -> bool:
        return self.last_used != ZERO_TIME


class ImageGCReason(str, enum.Enum):
    """Values of the ``reason`` label of ``kubelet_image_garbage_collected_total``."""

    AGE = "age"
    SPACE = "space"


@dataclass(frozen=True, slots=True)
class ImageCandidate:
    """An unused, unpinned image in eviction order."""

    key: str
    image_id: str
    size: int
    first_detected: int
    last_used: int


@dataclass(frozen=True, slots=True)
class ImageRemoval:
    """One ``RemoveImage`` call of a plan."""

    image_id: str
    key: str
    size: int
    reason: ImageGCReason
    first_detected: int
    last_used: int


def image_record_key(image_id: str, runtime_handler: str = "", *, per_runtime_handler: bool) -> str:
    """The record key: the id, or ``"<id>,<handler>"`` (RuntimeClassInImageCriAPI)."""
    if per_runtime_handler and runtime_handler:
        return f"{image_id},{runtime_handler}"
    return image_id


def images_in_use(
    containers: Iterable[Container], *, per_runtime_handler: bool = False
) -> frozenset[str]:
    """Record keys of the images pinned by containers, in any state.

    Dead containers count: their images stay until container GC removes
    them. Matching is exact: a runtime reporting a tag where the image list
    has an id makes that image look unused (as in the kubelet).
    """
    keys = set()
    for c in containers:
        if c.image_key:
            keys.add(
                image_record_key(
                    c.image_key, c.image_runtime_handler, per_runtime_handler=per_runtime_handler
                )
            )
    return frozenset(keys)


def _normalize_ref(ref: str) -> str:
    """Docker-style normalisation so ``pause:3.6`` matches ``docker.io/library/pause:3.6``."""
    name, _, digest = ref.partition("@")
    first, _, rest = name.partition("/")
    if not rest:
        name = f"docker.io/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    if not digest and ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return f"{name}@{digest}" if digest else name


def resolve_image(images: Iterable[Image], ref: str) -> Image | None:
    """The listed image a reference names (by id, tag or digest), like ImageStatus."""
    if not ref:
        return None
    norm = _normalize_ref(ref) if not ref.startswith("sha256:") else ref
    for img in images:
        if img.id == ref or ref in img.repo_tags or ref in img.repo_digests:
            return img
        if norm in img.repo_tags or norm in img.repo_digests:
            return img
    return None


def detect_images(
    records: Mapping[str, ImageRecord],
    images: Iterable[Image],
    in_use: Collection[str],
    detect_time: int,
    now: int,
    *,
    per_runtime_handler: bool = False,
) -> dict[str, ImageRecord]:
    """Refresh image records from a listing (kubelet ``detectImages``).

    ``detect_time`` is what a new record's ``first_detected`` gets (the
    kubelet's GC path passes ``now``; its 2022 start-up detection passed the
    zero time). ``now`` is what an in-use image's ``last_used`` becomes. If
    the runtime lists an id twice, the last entry's size and pinned win.
    """
    fresh: dict[str, ImageRecord] = {}
    for img in images:
        key = image_record_key(img.id, img.runtime_handler, per_runtime_handler=per_runtime_handler)
        old = fresh.get(key) or records.get(key)
        first = old.first_detected if old is not None else detect_time
        last = old.last_used if old is not None else ZERO_TIME
        if key in in_use:
            last = now
        fresh[key] = ImageRecord(
            first_detected=first,
            last_used=last,
            size=img.size,
            pinned=img.pinned,
            image_id=img.id,
            runtime_handler=img.runtime_handler,
        )
    return fresh


def image_eviction_candidates(
    records: Mapping[str, ImageRecord], in_use: Collection[str]
) -> list[ImageCandidate]:
    """Unused, unpinned images, least recently used first (see module docstring)."""
    out = [
        ImageCandidate(
            key=key,
            image_id=rec.image_id or key,
            size=rec.size,
            first_detected=rec.first_detected,
            last_used=rec.last_used,
        )
        for key, rec in records.items()
        if key not in in_use and not rec.pinned
    ]
    out.sort(key=lambda c: (c.last_used, c.first_detected, c.key))
    return out


def _removal(c: ImageCandidate, reason: ImageGCReason) -> ImageRemoval:
    return ImageRemoval(
        image_id=c.image_id,
        key=c.key,
        size=c.size,
        reason=reason,
        first_detected=c.first_detected,
        last_used=c.last_used,
    )


def plan_max_age(
    candidates: Iterable[ImageCandidate],
    max_age: timedelta,
    now: int,
    *,
    began_gc: int | None = None,
) -> tuple[tuple[ImageRemoval, ...], list[ImageCandidate]]:
    """The MaxAge pass: (removals, candidates left for the threshold pass).

    Nothing happens while ``max_age`` is 0, or until the GC has been running
    (since ``began_gc``) for longer than ``max_age``; ``began_gc=None``
    skips that uptime gate.
    """
    left = list(candidates)
    limit = duration_ns(max_age)
    if limit <= 0 or (began_gc is not None and since_ns(now, began_gc) <= limit):
        return (), left
    gone: list[ImageRemoval] = []
    kept: list[ImageCandidate] = []
    for c in left:
        if since_ns(now, c.last_used) > limit:
            gone.append(_removal(c, ImageGCReason.AGE))
        else:
            kept.append(c)
    return tuple(gone), kept


@dataclass(frozen=True, slots=True)
class ImageUsage:
    """The image filesystem as the threshold pass sees it."""

    capacity: int
    available: int
    usage_percent: int


def image_usage(fs: FsStats) -> ImageUsage:
    """Capacity, available (clamped to capacity) and usage percent, rounded up.

    Raises :class:`InvalidDiskCapacity` when the capacity is 0 or unknown.
    """
    capacity = fs.capacity_bytes or 0
    available = fs.available_bytes or 0
    available = min(available, capacity)
    if capacity <= 0:
        raise InvalidDiskCapacity(capacity)
    return ImageUsage(capacity, available, 100 - (available * 100) // capacity)


@dataclass(frozen=True, slots=True)
class FreeSpacePlan:
    """Result of walking the candidates for space (kubelet ``freeSpace``)."""

    removals: tuple[ImageRemoval, ...]
    freed: int
    #: Image ids evaluated and left in place (what the post-GC hooks get).
    left_in_place: tuple[str, ...]


def plan_free_space(
    candidates: Iterable[ImageCandidate],
    target: int,
    free_time: int,
    min_age: timedelta,
    *,
    reason: ImageGCReason = ImageGCReason.SPACE,
) -> FreeSpacePlan:
    """Pick candidates, in order, until ``target`` bytes would be freed."""
    min_age_ns = duration_ns(min_age)
    gone: list[ImageRemoval] = []
    kept: list[str] = []
    freed = 0
    for c in candidates:
        if c.last_used >= free_time or since_ns(free_time, c.first_detected) < min_age_ns:
            kept.append(c.image_id)
            continue
        gone.append(_removal(c, reason))
        freed += c.size
        if freed >= target:
            break
    return FreeSpacePlan(tuple(gone), freed, tuple(kept))


_NO_RECORDS: Mapping[str, ImageRecord] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ImageGCPlan:
    """What one image-GC pass removes, in order (MaxAge removals first)."""

    images: tuple[ImageRemoval, ...] = ()
    #: The threshold pass's target (0 when usage is below the high threshold).
    bytes_to_free: int = 0
    #: Bytes the planned removals free, all reasons together.
    bytes_freed: int = 0
    #: Bytes the threshold pass frees (what is compared with ``bytes_to_free``).
    space_freed: int = 0
    usage_percent: int | None = None
    #: The error the kubelet would report for this pass, if any.
    error: ImageGCError | None = None
    #: Records after detection; the executor drops those of removed images.
    records: Mapping[str, ImageRecord] = field(default_factory=lambda: _NO_RECORDS, compare=False)
    left_in_place: tuple[str, ...] = ()

    @property
    def image_ids(self) -> list[str]:
        return [r.image_id for r in self.images]

    def __bool__(self) -> bool:
        return bool(self.images)


@dataclass(frozen=True, slots=True)
class RecordsDetected:
    """Step: the records after detection; keep them (the caller answers ``None``)."""

    records: Mapping[str, ImageRecord]


@dataclass(frozen=True, slots=True)
class RemoveImage:
    """Step: remove this image now; answer ``None`` when it went, else the exception."""

    removal: ImageRemoval


@dataclass(frozen=True, slots=True)
class ReadImageFs:
    """Step: read the image filesystem's stats now; answer with :class:`FsStats`."""


@dataclass(frozen=True, slots=True)
class FreeSpace:
    """Step: usage is at or over the high threshold; the pass now frees ``wanted`` bytes.

    A notice for the caller's log (answer ``None``).
    """

    usage: ImageUsage
    wanted: int


ImageGCStep = RecordsDetected | RemoveImage | ReadImageFs | FreeSpace
#: One image-GC pass as a sequence of steps: the caller executes each step and
#: sends its outcome back; the pass returns the :class:`ImageGCPlan` it carried out.
ImageGCPass = Generator[ImageGCStep, "BaseException | FsStats | None", ImageGCPlan]


def _joined(errors: Iterable[BaseException]) -> str:
    return "[" + ", ".join(str(e) for e in errors) + "]"


def image_gc_pass(
    images: Iterable[Image],
    records: Mapping[str, ImageRecord],
    in_use: Collection[str],
    policy: ImageGCPolicy,
    now: int,
    *,
    began_gc: int | None = None,
    per_runtime_handler: bool = False,
) -> ImageGCPass:
    """A whole periodic image-GC pass (kubelet ``GarbageCollect``), one step at a time.

    The one sequence both :func:`plan_image_gc` (which answers every removal
    with success) and ``NodeGarbageCollector`` (which answers with what the
    runtime did) run, so the plan and the real pass cannot drift apart. The
    stats are read after the MaxAge removals, as the kubelet reads them; a
    failed threshold removal re-plans from the candidates after it.
    """
    recs = detect_images(records, images, in_use, now, now, per_runtime_handler=per_runtime_handler)
    frozen = MappingProxyType(recs)
    yield RecordsDetected(frozen)
    candidates = image_eviction_candidates(recs, in_use)
    aged, left = plan_max_age(candidates, policy.max_age, now, began_gc=began_gc)
    planned: list[ImageRemoval] = []
    errors: list[BaseException] = []
    freed = 0
    for r in aged:
        planned.append(r)
        outcome = yield RemoveImage(r)
        if isinstance(outcome, BaseException):
            errors.append(outcome)
        else:
            freed += r.size
    if errors:
        failed = ImageDeletionFailed(
            f"wanted to free images older than {format_duration(policy.max_age)}, "
            f"encountered errors in image deletion: {_joined(errors)}",
            errors,
        )
        return ImageGCPlan(tuple(planned), 0, freed, 0, None, failed, frozen)
    stats = yield ReadImageFs()
    assert isinstance(stats, FsStats), "answer ReadImageFs with FsStats"
    try:
        usage = image_usage(stats)
    except InvalidDiskCapacity as exc:
        return ImageGCPlan(tuple(planned), 0, freed, 0, None, exc, frozen)
    if usage.usage_percent < policy.high_threshold_percent:
        return ImageGCPlan(tuple(planned), 0, freed, 0, usage.usage_percent, None, frozen)
    wanted = space_target(usage, policy)
    yield FreeSpace(usage, wanted)
    space_freed = 0
    kept: list[str] = []
    pending = left
    replan = True
    while replan:
        plan = plan_free_space(pending, wanted - space_freed, now, policy.min_age)
        kept.extend(plan.left_in_place)
        replan = False
        for r in plan.removals:
            planned.append(r)
            outcome = yield RemoveImage(r)
            if not isinstance(outcome, BaseException):
                space_freed += r.size
                continue
            errors.append(outcome)
            # Re-plan from the candidates after the one that failed.
            idx = next(i for i, c in enumerate(pending) if c.key == r.key)
            pending = pending[idx + 1 :]
            replan = True
            break
    error: ImageGCError | None = None
    if errors:
        error = ImageDeletionFailed(
            f"wanted to free {wanted} bytes, but freed {space_freed} bytes space with errors "
            f"in image deletion: {_joined(errors)}",
            errors,
        )
    elif space_freed < wanted:
        error = FreeDiskSpaceFailed(wanted, space_freed)
    return ImageGCPlan(
        images=tuple(planned),
        bytes_to_free=wanted,
        bytes_freed=freed + space_freed,
        space_freed=space_freed,
        usage_percent=usage.usage_percent,
        error=error,
        records=frozen,
        left_in_place=tuple(kept),
    )


def credit_freed(stats: FsStats, freed: int) -> FsStats:
    """``stats`` as they would read once ``freed`` more bytes were removed (for dry runs)."""
    if not freed:
        return stats
    return replace(stats, available_bytes=(stats.available_bytes or 0) + freed)


def plan_image_gc(
    fs_stats: FsStats,
    images: Iterable[Image],
    records: Mapping[str, ImageRecord],
    in_use: Collection[str],
    policy: ImageGCPolicy,
    now: int,
    *,
    began_gc: int | None = None,
    per_runtime_handler: bool = False,
) -> ImageGCPlan:
    """A whole periodic image-GC pass, planned at once: :func:`image_gc_pass` run dry.

    ``fs_stats`` is taken as read before any removal: bytes the MaxAge pass
    frees are credited to ``available`` before the threshold pass (the kubelet
    reads the stats after that pass). Errors are returned in ``error``, not
    raised, because the MaxAge removals still happen when the threshold pass
    fails.
    """
    steps = image_gc_pass(
        images,
        records,
        in_use,
        policy,
        now,
        began_gc=began_gc,
        per_runtime_handler=per_runtime_handler,
    )
    freed = 0
    answer: FsStats | None = None
    try:
        while True:
            step = steps.send(answer)
            answer = None
            if isinstance(step, RemoveImage):
                freed += step.removal.size
            elif isinstance(step, ReadImageFs):
                answer = credit_freed(fs_stats, freed)
    except StopIteration as done:
        result: ImageGCPlan = done.value
        return result


def space_target(usage: ImageUsage, policy: ImageGCPolicy) -> int:
    """Bytes to free to get down to the low threshold (may be <= 0)."""
    return (usage.capacity * (100 - policy.low_threshold_percent)) // 100 - usage.available


def plan_delete_unused_images(
    images: Iterable[Image],
    records: Mapping[str, ImageRecord],
    in_use: Collection[str],
    policy: ImageGCPolicy,
    now: int,
    *,
    per_runtime_handler: bool = False,
) -> ImageGCPlan:
    """The eviction manager's ``DeleteUnusedImages``: every eligible image.

    Eligible means unused, unpinned, not used during this pass and at least
    ``min_age`` old. MaxAge plays no part, and no shortfall is an error.
    """
    recs = detect_images(records, images, in_use, now, now, per_runtime_handler=per_runtime_handler)
    space = plan_free_space(image_eviction_candidates(recs, in_use), FREE_ALL, now, policy.min_age)
    return ImageGCPlan(
        images=space.removals,
        bytes_to_free=FREE_ALL,
        bytes_freed=space.freed,
        space_freed=space.freed,
        records=MappingProxyType(recs),
        left_in_place=space.left_in_place,
    )
