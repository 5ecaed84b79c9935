"""The dry-run seam: how a write handler reads ``dryRun``.

Every create, update, patch, delete and deletecollection handler asks its
:class:`DryRunPolicy` whether the request is a dry run, from the query's
``dryRun`` values and (for deletes) the DeleteOptions body's. The answer is
passed on to admission (:class:`~.admission.AdmissionAttributes.dry_run`) and
to the store's ``dry_run=`` keyword, which computes the write without
committing it.

:class:`AcceptDryRun` (the default) answers as kube-apiserver does:
``dryRun=All`` is a dry run, any other value is a 422 naming the options kind
of the verb (``CreateOptions``, ``UpdateOptions``, ``PatchOptions``,
``DeleteOptions``). :class:`RefuseDryRun` keeps the facade's old 400.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, Protocol

from ownergc.errors import BadRequest, Invalid

__all__ = ["DRY_RUN_ALL", "AcceptDryRun", "DryRunPolicy", "RefuseDryRun"]

#: The one dryRun value kube-apiserver supports.
DRY_RUN_ALL: Final = "All"


class DryRunPolicy(Protocol):
    """True for a dry run, False for a real write; raises for a value it refuses.

    ``options_kind`` names the verb's options (``CreateOptions``, ...) for the
    error an unsupported value gets.
    """

    def dry_run(
        self,
        query: Sequence[str] | None,
        options: Any = None,
        *,
        options_kind: str = "CreateOptions",
    ) -> bool: ...


class RefuseDryRun:
    """No dry run on this server: any ``dryRun`` value is a 400."""

    def dry_run(
        self,
        query: Sequence[str] | None,
        options: Any = None,
        *,
        options_kind: str = "CreateOptions",
    ) -> bool:
        if query or options:
            raise BadRequest("dryRun is not supported by this server", reason="BadRequest")
        return False


class AcceptDryRun:
    """``dryRun=All`` as kube-apiserver takes it (``ValidateDryRun`` of the verb's options).

    The values are the query's, or for a DELETE with a body the DeleteOptions'
    ``dryRun`` list. An empty list is a real write; a list holding anything
    but ``All`` is refused whole with a 422 ``Invalid`` in the
    ``meta.k8s.io`` group, one ``FieldValueNotSupported`` cause on ``dryRun``,
    worded as the real server words it.
    """

    def dry_run(
        self,
        query: Sequence[str] | None,
        options: Any = None,
        *,
        options_kind: str = "CreateOptions",
    ) -> bool:
        values: list[str] = list(query or ())
        if options is not None:
            if not isinstance(options, list) or not all(isinstance(v, str) for v in options):
                raise BadRequest(
                    f"{options_kind}.dryRun must be a list of strings, got {options!r}",
                    reason="BadRequest",
                )
            values += options
        if any(v != DRY_RUN_ALL for v in values):
            raise unsupported_dry_run(values, options_kind)
        return bool(values)


def unsupported_dry_run(values: Sequence[str], options_kind: str) -> Invalid:
    """The 422 kube-apiserver answers a ``dryRun`` it does not support."""
    shown = "[]string{" + ", ".join(json.dumps(v) for v in values) + "}"
    detail = f'Unsupported value: {shown}: supported values: "{DRY_RUN_ALL}"'
    return Invalid(
        f'{options_kind}.meta.k8s.io "" is invalid: dryRun: {detail}',
        reason="Invalid",
        details={
            "group": "meta.k8s.io",
            "kind": options_kind,
            "causes": [{"reason": "FieldValueNotSupported", "message": detail, "field": "dryRun"}],
        },
    )
