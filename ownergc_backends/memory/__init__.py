"""In-process backends: an apiserver-like object store and a container runtime."""

from __future__ import annotations

from ownergc_backends.memory.store import GCPolicy, InMemoryStore, RequestRecord

__all__ = ["GCPolicy", "InMemoryStore", "RequestRecord"]

# --- runtime (added separately) --------------------------------------------
from ownergc_backends.memory.runtime import InMemoryRuntime

__all__ += ["InMemoryRuntime"]
