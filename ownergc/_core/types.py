"""Small value types shared by the core and the backend Protocols."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["JSONDict", "PatchType", "Preconditions", "PropagationPolicy"]

JSONDict = dict[str, Any]


class PropagationPolicy(str, enum.Enum):
    """``DeleteOptions.propagationPolicy``."""

    ORPHAN = "Orphan"
    BACKGROUND = "Background"
    FOREGROUND = "Foreground"


class PatchType(str, enum.Enum):
    """Patch content types, valued as the HTTP Content-Type the apiserver expects."""

    STRATEGIC_MERGE = "application/strategic-merge-patch+json"
    MERGE = "application/merge-patch+json"
    JSON = "application/json-patch+json"


@dataclass(frozen=True, slots=True)
class Preconditions:
    """``DeleteOptions.preconditions``: the write only happens if these still match."""

    uid: str | None = None
    resource_version: str | None = None

    def to_dict(self) -> JSONDict:
        out: JSONDict = {}
        if self.uid is not None:
            out["uid"] = self.uid
        if self.resource_version is not None:
            out["resourceVersion"] = self.resource_version
        return out
