"""Legacy container-log symlinks (``/var/log/containers/*.log``).

The kubelet links ``<pod>_<namespace>_<container>-<containerID>.log`` to each
container's log for log shippers. Removing a container removes its link;
links left dangling (their target is gone) are swept on every pass. These
helpers are the pure halves of that sweep: naming a link, reading the
container id back out of it, and deciding what a dangling link deserves.
"""

from __future__ import annotations

from ownergc.nodegc._types import ContainerState

__all__ = [
    "DEFAULT_CONTAINER_LOGS_DIR",
    "DEFAULT_POD_LOGS_DIR",
    "container_id_from_legacy_log_symlink",
    "dangling_symlink_removable",
    "legacy_log_symlink_name",
]

DEFAULT_POD_LOGS_DIR = "/var/log/pods"
DEFAULT_CONTAINER_LOGS_DIR = "/var/log/containers"

# ext4 allows 255 bytes per name; the kubelet cuts the stem to leave room for ".log".
_MAX_NAME = 255
_SUFFIX = ".log"
_MIN_ID_LEN = 6


def legacy_log_symlink_name(
    pod_name: str, pod_namespace: str, container_name: str, container_id: str
) -> str:
    """The file name of a container's legacy log symlink (at most 255 chars).

    A cut name can lose the container id; such a link then fails to parse
    and is removed once it dangles, which is what the kubelet does too.
    """
    stem = f"{pod_name}_{pod_namespace}_{container_name}-{container_id}"
    return stem[: _MAX_NAME - len(_SUFFIX)] + _SUFFIX


def container_id_from_legacy_log_symlink(path: str) -> str:
    """The container id at the end of a legacy symlink path.

    Raises ``ValueError`` when the part after the last ``-`` does not end in
    ``.log`` or leaves fewer than 6 characters of id.
    """
    last = path.split("-")[-1]
    if not last.endswith(_SUFFIX):
        raise ValueError(f"unable to find separator in {path!r}")
    cid = last[: -len(_SUFFIX)]
    if len(cid) < _MIN_ID_LEN:
        raise ValueError(f"unable to find container id in {path!r}")
    return cid


def dangling_symlink_removable(
    *, parsed: bool, lookup_failed: bool = False, state: ContainerState | None = None
) -> bool:
    """Whether a dangling legacy symlink goes.

    * unparsable name, or ``ContainerStatus`` failed (container gone): remove;
    * the runtime answered without a status: keep (newest kubelet);
    * the container is not EXITED: keep (its log may be mid-rotation);
    * EXITED: remove.
    """
    if not parsed or lookup_failed:
        return True
    if state is None:
        return False
    return state == ContainerState.EXITED
