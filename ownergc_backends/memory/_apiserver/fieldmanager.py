"""The field-management seam: ``managedFields`` on every write, and server-side apply.

Shaped like k8s.io/apiserver's ``fieldmanager`` (read for structure only).
Two calls, both made by the REST handlers:

* :meth:`FieldManager.on_write` for every create, update and patch, with the
  write's admission attributes (after admission) and the manager's name;
  it returns the object to store (with ``metadata.managedFields`` brought up
  to date). For a patch ``attrs.obj`` is the patched object.
* :meth:`FieldManager.apply` for a PATCH with ``application/apply-patch+yaml``
  (server-side apply); it returns the object as stored.

Today's manager does neither: objects pass unchanged and an apply patch is
refused with 415, as the facade always answered it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from ownergc._kit.http import Request
from ownergc.errors import UnsupportedPatchType
from ownergc.protocols import JSONDict

from .admission import AdmissionAttributes
from .context import ResourceRoute, UserInfo

__all__ = [
    "APPLY_PATCH",
    "ApplyAdmission",
    "FieldManager",
    "NoFieldManagement",
    "unsupported_patch_type",
]

#: The content type of a server-side apply patch.
APPLY_PATCH = "application/apply-patch+yaml"


def unsupported_patch_type(content_type: str, note: str = "") -> UnsupportedPatchType:
    """The 415 kube-apiserver answers a patch in a format it does not take."""
    return UnsupportedPatchType(
        f'the body of the request was in an unknown format "{content_type}"{note} - '
        "accepted media types include: application/json-patch+json, "
        "application/merge-patch+json, application/strategic-merge-patch+json",
        reason="UnsupportedMediaType",
    )


def manager_name(request: Request) -> str:
    """``fieldManager``, else the client's user agent up to the first ``/`` (kube-apiserver's
    default for updates)."""
    explicit = request.param("fieldManager")
    if explicit:
        return explicit
    return request.headers.get("user-agent", "").split("/", 1)[0][:128]


#: Admission of an apply's result: (operation ``CREATE``/``UPDATE``, the object to store,
#: the live object or None) -> the object to store after the mutating plugins.
ApplyAdmission = Callable[[str, JSONDict, "JSONDict | None"], Awaitable[JSONDict]]


class FieldManager(Protocol):
    #: True when :meth:`on_write` needs ``attrs.old_obj`` (the handlers then read it).
    wants_old_object: bool

    def on_write(self, attrs: AdmissionAttributes, manager: str) -> JSONDict | None:
        """The object to store for this write (``attrs.obj`` with managedFields updated)."""
        ...

    async def apply(
        self,
        request: Request,
        route: ResourceRoute,
        *,
        user: UserInfo,
        dry_run: bool,
        admit: ApplyAdmission | None = None,
        warnings: list[str] | None = None,
    ) -> tuple[JSONDict, bool]:
        """Server-side apply of ``request.body`` to the object ``route`` names; the result
        and whether the apply created it (answered 201). ``admit`` runs admission on the
        object the apply would store, before it is written; what the client should be
        warned of goes to ``warnings``."""
        ...


class NoFieldManagement:
    """No managedFields bookkeeping, and no server-side apply (415)."""

    wants_old_object = False

    def on_write(self, attrs: AdmissionAttributes, manager: str) -> JSONDict | None:
        return attrs.obj

    async def apply(
        self,
        request: Request,
        route: ResourceRoute,
        *,
        user: UserInfo,
        dry_run: bool,
        admit: ApplyAdmission | None = None,
        warnings: list[str] | None = None,
    ) -> tuple[JSONDict, bool]:
        raise unsupported_patch_type(
            APPLY_PATCH, " (server-side apply is not supported by this server)"
        )
