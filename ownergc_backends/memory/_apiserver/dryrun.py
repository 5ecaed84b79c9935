"""The dry-run seam: how a write handler reads ``dryRun``.

Every create, update, patch, delete and deletecollection handler asks its
:class:`DryRunPolicy` whether the request is a dry run, from the query's
``dryRun`` values and (for deletes) the DeleteOptions body's. The answer is
passed on to admission (:class:`~.admission.AdmissionAttributes.dry_run`).

Today's policy refuses dry run with a 400, as the facade always did; a policy
that accepts ``dryRun=All`` must also keep the write out of the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ownergc.errors import BadRequest

__all__ = ["DryRunPolicy", "RefuseDryRun"]


class DryRunPolicy(Protocol):
    """True for a dry run, False for a real write; raises for a value it refuses."""

    def dry_run(self, query: Sequence[str] | None, options: Any = None) -> bool: ...


class RefuseDryRun:
    """No dry run on this server: any ``dryRun`` value is a 400."""

    def dry_run(self, query: Sequence[str] | None, options: Any = None) -> bool:
        if query or options:
            raise BadRequest("dryRun is not supported by this server", reason="BadRequest")
        return False
