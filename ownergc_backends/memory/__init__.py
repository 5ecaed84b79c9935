"""In-process backends: an apiserver-like object store, its REST facade, a container runtime."""

from __future__ import annotations

from ownergc_backends.memory._objects import RequestRecord
from ownergc_backends.memory._resources import GCPolicy
from ownergc_backends.memory.runtime import InMemoryRuntime
from ownergc_backends.memory.store import InMemoryStore

__all__ = ["GCPolicy", "InMemoryRuntime", "InMemoryStore", "RequestRecord"]
