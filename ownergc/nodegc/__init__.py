"""Node garbage collection as the kubelet does it, as pure policies.

Everything here is a function from a snapshot (what the runtime lists, what
the pod-state source says, the time) to a plan (what to remove, in order).
No I/O, no clock, no anyio: :class:`ownergc.controller.NodeGarbageCollector`
gathers the snapshot and executes the plan.

Time points are ``int`` nanoseconds since the epoch (CRI's unit); durations
in policies are :class:`datetime.timedelta`.
"""

from __future__ import annotations

from ownergc.nodegc._container_gc import (
    MIN_STOP_GRACE_PERIOD_SECONDS,
    ContainerGCPlan,
    ContainerGCPolicy,
    ContainerRemoval,
    RemovalReason,
    SandboxRemoval,
    plan_container_eviction,
    plan_container_gc,
    plan_pod_log_dir_eviction,
    plan_sandbox_eviction,
    pod_uid_from_log_dir,
    stop_timeout_seconds,
)
from ownergc.nodegc._errors import (
    FreeDiskSpaceFailed,
    ImageDeletionFailed,
    ImageGCError,
    InvalidDiskCapacity,
    InvalidPolicy,
    NodeGCError,
)
from ownergc.nodegc._image_gc import (
    FREE_ALL,
    FreeSpacePlan,
    ImageCandidate,
    ImageGCPlan,
    ImageGCPolicy,
    ImageGCReason,
    ImageRecord,
    ImageRemoval,
    ImageUsage,
    detect_images,
    image_eviction_candidates,
    image_record_key,
    image_usage,
    images_in_use,
    plan_delete_unused_images,
    plan_free_space,
    plan_image_gc,
    plan_max_age,
    resolve_image,
    space_target,
)
from ownergc.nodegc._logs import (
    DEFAULT_CONTAINER_LOGS_DIR,
    DEFAULT_POD_LOGS_DIR,
    container_id_from_legacy_log_symlink,
    dangling_symlink_removable,
    legacy_log_symlink_name,
)
from ownergc.nodegc._time import (
    MAX_DURATION_NS,
    ZERO_TIME,
    duration_ns,
    format_duration,
    parse_duration,
    parse_duration_ns,
    since_ns,
)
from ownergc.nodegc._types import (
    CONTAINER_NAME_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    Container,
    ContainerState,
    ContainerStatus,
    FsStats,
    Image,
    PodSandbox,
    PodStates,
    SandboxState,
)

#: Kubelet constants: how often each loop runs (not configurable upstream).
CONTAINER_GC_PERIOD_SECONDS = 60.0
IMAGE_GC_PERIOD_SECONDS = 300.0
IMAGE_DETECTION_PERIOD_SECONDS = 300.0

__all__ = [
    "CONTAINER_GC_PERIOD_SECONDS",
    "CONTAINER_NAME_LABEL",
    "DEFAULT_CONTAINER_LOGS_DIR",
    "DEFAULT_POD_LOGS_DIR",
    "FREE_ALL",
    "IMAGE_DETECTION_PERIOD_SECONDS",
    "IMAGE_GC_PERIOD_SECONDS",
    "MAX_DURATION_NS",
    "MIN_STOP_GRACE_PERIOD_SECONDS",
    "POD_NAMESPACE_LABEL",
    "POD_NAME_LABEL",
    "POD_UID_LABEL",
    "ZERO_TIME",
    "Container",
    "ContainerGCPlan",
    "ContainerGCPolicy",
    "ContainerRemoval",
    "ContainerState",
    "ContainerStatus",
    "FreeDiskSpaceFailed",
    "FreeSpacePlan",
    "FsStats",
    "Image",
    "ImageCandidate",
    "ImageDeletionFailed",
    "ImageGCError",
    "ImageGCPlan",
    "ImageGCPolicy",
    "ImageGCReason",
    "ImageRecord",
    "ImageRemoval",
    "ImageUsage",
    "InvalidDiskCapacity",
    "InvalidPolicy",
    "NodeGCError",
    "PodSandbox",
    "PodStates",
    "RemovalReason",
    "SandboxRemoval",
    "SandboxState",
    "container_id_from_legacy_log_symlink",
    "dangling_symlink_removable",
    "detect_images",
    "duration_ns",
    "format_duration",
    "image_eviction_candidates",
    "image_record_key",
    "image_usage",
    "images_in_use",
    "legacy_log_symlink_name",
    "parse_duration",
    "parse_duration_ns",
    "plan_container_eviction",
    "plan_container_gc",
    "plan_delete_unused_images",
    "plan_free_space",
    "plan_image_gc",
    "plan_max_age",
    "plan_pod_log_dir_eviction",
    "plan_sandbox_eviction",
    "pod_uid_from_log_dir",
    "resolve_image",
    "since_ns",
    "space_target",
    "stop_timeout_seconds",
]
