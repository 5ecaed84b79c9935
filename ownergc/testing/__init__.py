"""Test support shipped with ownergc: fault injection and the pytest plugin.

Submodules are imported on demand so that ``import ownergc.testing`` stays
cheap and never needs pytest or hypothesis.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ownergc.testing._fixtures import (
        ClusterThread as ClusterThread,
    )
    from ownergc.testing._fixtures import (
        OwnerGCStore as OwnerGCStore,
    )
    from ownergc.testing._fixtures import (
        running_store as running_store,
    )
    from ownergc.testing._fixtures import (
        start_in_thread as start_in_thread,
    )

#: Names served lazily from ownergc.testing._fixtures (the pytest plugin's objects).
_FIXTURE_EXPORTS = ("ClusterThread", "OwnerGCStore", "running_store", "start_in_thread")

__all__ = ["ClusterThread", "OwnerGCStore", "running_store", "start_in_thread"]


def __getattr__(name: str) -> Any:
    if name in _FIXTURE_EXPORTS:
        return getattr(importlib.import_module("ownergc.testing._fixtures"), name)
    raise AttributeError(f"module 'ownergc.testing' has no attribute {name!r}")
