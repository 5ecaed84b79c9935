"""The admission seam: mutating then validating plugins around every write.

Shaped like k8s.io/apiserver's admission chain (read for structure only):
the create, update, patch and delete handlers build one
:class:`AdmissionAttributes` per write and call :meth:`AdmissionChain.admit`
before they write to the store. Mutating plugins run first, in order, and may
replace the object; validating plugins then see the final object and may only
refuse (by raising an :class:`~ownergc.errors.APIError`, which the client gets
as a Status).

An empty chain is no admission at all; the facade's default chain has the
admission webhook plugins (:mod:`.webhookadmission`), which want the old
object only while a webhook configuration exists. When no plugin wants it the
handlers skip fetching the old object, so the store sees exactly the calls it
saw before the seam existed.

For PATCH the handler applies the patch first, so ``obj`` is the patched
object, ``old_obj`` the object it was computed from, and ``patch`` /
``patch_type`` carry the request as sent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ownergc.protocols import APIResource, JSONDict, PatchType

from .context import UserInfo

__all__ = [
    "AdmissionAttributes",
    "AdmissionChain",
    "MutatingAdmission",
    "ValidatingAdmission",
]


@dataclass(frozen=True, slots=True)
class AdmissionAttributes:
    """One write as admission sees it (k8s ``admission.Attributes``)."""

    #: ``CREATE``, ``UPDATE`` (PUT and PATCH) or ``DELETE``.
    operation: str
    resource: APIResource
    namespace: str | None
    name: str | None
    subresource: str | None
    #: The object to write (None for a delete; for a patch, the patched object).
    obj: JSONDict | None
    #: The object before the write, when a plugin asked for it (``wants_old_object``).
    old_obj: JSONDict | None
    dry_run: bool
    user: UserInfo
    #: DeleteOptions for a delete, ``{}`` otherwise.
    options: JSONDict = dataclasses.field(default_factory=dict)
    patch: Any = None
    patch_type: PatchType | None = None
    #: The request's warnings (``RequestContext.warnings``): plugins append what the
    #: client is to see as ``Warning`` headers.
    warnings: list[str] = dataclasses.field(default_factory=list)
    #: (group, version, kind) of ``obj`` when it is not ``resource``'s kind: a
    #: subresource's own kind, as policy/v1 ``Eviction`` for ``pods/eviction``.
    kind: tuple[str, str, str] | None = None

    def with_object(self, obj: JSONDict | None) -> AdmissionAttributes:
        return dataclasses.replace(self, obj=obj)


class MutatingAdmission(Protocol):
    """May change the object to write: returns the object to go on with.

    A plugin may also have a ``wants_old_object`` attribute saying whether it
    needs the old object now (say, only while some configuration exists); a
    plugin without one always gets it.
    """

    async def admit(self, attrs: AdmissionAttributes) -> JSONDict | None: ...


class ValidatingAdmission(Protocol):
    """May refuse the write (raise an APIError); never changes it."""

    async def validate(self, attrs: AdmissionAttributes) -> None: ...


class AdmissionChain:
    """Mutating plugins in order, then validating ones; empty by default."""

    def __init__(
        self,
        mutating: Sequence[MutatingAdmission] = (),
        validating: Sequence[ValidatingAdmission] = (),
    ) -> None:
        self.mutating = list(mutating)
        self.validating = list(validating)

    @property
    def wants_old_object(self) -> bool:
        """Whether handlers must read the object before writing: when some plugin
        wants it (a plugin that does not say always does)."""
        plugins: list[object] = [*self.mutating, *self.validating]
        return any(getattr(plugin, "wants_old_object", True) for plugin in plugins)

    async def admit(self, attrs: AdmissionAttributes) -> AdmissionAttributes:
        """Run the chain; the attributes with the object the write should store."""
        attrs = await self.mutate(attrs)
        await self.validate(attrs)
        return attrs

    async def mutate(self, attrs: AdmissionAttributes) -> AdmissionAttributes:
        """The mutating half alone, for a handler that checks the mutated object before
        validation (the eviction subresource, as kube-apiserver's)."""
        for plugin in self.mutating:
            obj = await plugin.admit(attrs)
            if obj is not attrs.obj:
                attrs = attrs.with_object(obj)
        return attrs

    async def validate(self, attrs: AdmissionAttributes) -> None:
        """The validating half alone (see :meth:`mutate`)."""
        for validator in self.validating:
            await validator.validate(attrs)
