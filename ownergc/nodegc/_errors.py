"""Errors of the node GC, worded as the kubelet words them.

They hang off :class:`ownergc.errors.OwnerGCError` so callers catch one tree.
Class names follow the kubelet's Event reasons where there is one
(``InvalidDiskCapacity``, ``FreeDiskSpaceFailed``).
"""

from __future__ import annotations

from ownergc.errors import InvalidObject, OwnerGCError

__all__ = [
    "FreeDiskSpaceFailed",
    "ImageDeletionFailed",
    "ImageGCError",
    "InvalidDiskCapacity",
    "InvalidPolicy",
    "NodeGCError",
]


class NodeGCError(OwnerGCError):
    """Base of every error the node GC reports about a pass."""


class InvalidPolicy(InvalidObject):
    """A GC policy the kubelet would refuse to start with."""


class ImageGCError(NodeGCError):
    """The image GC could not do what its thresholds asked for."""


class InvalidDiskCapacity(ImageGCError):
    """The image filesystem reported capacity 0 (or none): no usage to judge."""

    def __init__(self, capacity: int = 0) -> None:
        self.capacity = capacity
        super().__init__(f"invalid capacity {capacity} on image filesystem")


class FreeDiskSpaceFailed(ImageGCError):
    """Fewer bytes were (or could be) freed than the low threshold requires."""

    def __init__(self, wanted: int, freed: int) -> None:
        self.wanted = wanted
        self.freed = freed
        super().__init__(
            "Failed to garbage collect required amount of images. "
            f"Attempted to free {wanted} bytes, but only found {freed} bytes eligible to free."
        )


class ImageDeletionFailed(ImageGCError):
    """One or more ``RemoveImage`` calls failed during a pass."""

    def __init__(self, message: str, errors: list[BaseException]) -> None:
        self.errors = errors
        super().__init__(message)
