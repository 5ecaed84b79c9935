"""The ContainerRuntime Protocol (node GC backend seam). Owned by the node-GC work."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class ContainerRuntime(Protocol):
    """Placeholder; the node-GC work defines the methods."""
