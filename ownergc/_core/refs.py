"""Value types: owner references and object identities, parsed from Kubernetes JSON.

These sit on the hot path of every watch event, so parsing is written for
speed (one pass, no intermediate dicts) while still rejecting malformed input
with a clear :class:`~ownergc.errors.InvalidOwnerReference` instead of a
``KeyError`` deep inside the collector.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ownergc.errors import InvalidObject, InvalidOwnerReference

__all__ = [
    "FINALIZER_DELETE_DEPENDENTS",
    "FINALIZER_KUBERNETES",
    "FINALIZER_ORPHAN_DEPENDENTS",
    "ObjectReference",
    "OwnerReference",
    "metadata_of",
    "owner_references_of",
]

#: ``metav1.FinalizerDeleteDependents``: set by a Foreground delete.
FINALIZER_DELETE_DEPENDENTS = "foregroundDeletion"
#: ``metav1.FinalizerOrphanDependents``: set by an Orphan delete.
FINALIZER_ORPHAN_DEPENDENTS = "orphan"
#: ``v1.FinalizerKubernetes``: the namespace controller's finalizer on a Namespace.
FINALIZER_KUBERNETES = "kubernetes"

_REQUIRED = ("apiVersion", "kind", "name", "uid")


@dataclass(frozen=True, slots=True)
class OwnerReference:
    """One entry of ``metadata.ownerReferences``.

    Equality compares every field, and ``None`` differs from ``False`` for
    ``controller`` and ``block_owner_deletion``, exactly as the GC's
    ``referencesDiffs`` sees a change from unset to ``false``.
    """

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OwnerReference:
        """Parse the Kubernetes JSON form; raise InvalidOwnerReference when unusable."""
        if type(data) is not dict and not isinstance(data, Mapping):
            raise InvalidOwnerReference(
                f"ownerReferences entry must be an object, got {type(data).__name__}"
            )
        try:
            api_version = data["apiVersion"]
            kind = data["kind"]
            name = data["name"]
            uid = data["uid"]
        except KeyError as exc:
            raise InvalidOwnerReference(
                f"ownerReferences entry {dict(data)!r} lacks required field {exc.args[0]!r}"
            ) from None
        if not (
            type(api_version) is str
            and type(kind) is str
            and type(name) is str
            and type(uid) is str
            and api_version
            and kind
            and name
            and uid
        ):
            for key in _REQUIRED:
                value = data[key]
                if not isinstance(value, str) or not value:
                    raise InvalidOwnerReference(
                        f"ownerReferences entry field {key!r} must be a non-empty string, "
                        f"got {value!r}"
                    )
        controller = data.get("controller")
        block = data.get("blockOwnerDeletion")
        if controller is not None and type(controller) is not bool:
            raise InvalidOwnerReference(
                f"ownerReferences entry {uid!r}: 'controller' must be a boolean, got {controller!r}"
            )
        if block is not None and type(block) is not bool:
            raise InvalidOwnerReference(
                f"ownerReferences entry {uid!r}: 'blockOwnerDeletion' must be a boolean, "
                f"got {block!r}"
            )
        return cls(api_version, kind, name, uid, controller, block)

    def to_dict(self) -> dict[str, Any]:
        """The Kubernetes JSON form, keys in the order the apiserver writes them."""
        out: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
        }
        if self.controller is not None:
            out["controller"] = self.controller
        if self.block_owner_deletion is not None:
            out["blockOwnerDeletion"] = self.block_owner_deletion
        return out

    @property
    def coordinates(self) -> tuple[str, str, str, str]:
        """(apiVersion, kind, name, uid): what identifies the owner, without the flags."""
        return (self.api_version, self.kind, self.name, self.uid)

    def __str__(self) -> str:
        return f"{self.api_version}/{self.kind} {self.name} ({self.uid})"


@dataclass(frozen=True, slots=True)
class ObjectReference:
    """An object's identity: an owner reference's coordinates plus its namespace.

    ``namespace`` is ``None`` for cluster-scoped objects (Kubernetes writes
    the empty string; both parse to ``None``).
    """

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str | None = None

    @property
    def coordinates(self) -> tuple[str, str, str, str]:
        return (self.api_version, self.kind, self.name, self.uid)

    @classmethod
    def from_owner_reference(cls, ref: OwnerReference, namespace: str | None) -> ObjectReference:
        return cls(ref.api_version, ref.kind, ref.name, ref.uid, namespace or None)

    @classmethod
    def from_object(
        cls, obj: Mapping[str, Any], *, api_version: str | None = None, kind: str | None = None
    ) -> ObjectReference:
        """Identity of a Kubernetes object; ``api_version``/``kind`` override the body's.

        The collector passes the informer's group-version-kind, since a
        metadata-only object's own apiVersion is ``meta.k8s.io/v1``.
        """
        meta = metadata_of(obj)
        av = api_version if api_version is not None else obj.get("apiVersion")
        k = kind if kind is not None else obj.get("kind")
        name = meta.get("name")
        uid = meta.get("uid")
        for field_name, value in (("apiVersion", av), ("kind", k), ("name", name), ("uid", uid)):
            if not isinstance(value, str) or not value:
                raise InvalidObject(f"object has no usable {field_name}: {value!r}")
        ns = meta.get("namespace") or None
        if ns is not None and not isinstance(ns, str):
            raise InvalidObject(f"metadata.namespace must be a string, got {ns!r}")
        assert isinstance(av, str) and isinstance(k, str)
        assert isinstance(name, str) and isinstance(uid, str)
        return cls(av, k, name, uid, ns)

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"[{self.api_version}/{self.kind}, {where}{self.name}, uid {self.uid}]"


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj['metadata']``, checked to be a mapping."""
    if type(obj) is dict:  # what decoders hand over: spare the ABC checks
        meta = obj.get("metadata")
        if type(meta) is dict:
            return meta
    elif not isinstance(obj, Mapping):
        raise InvalidObject(f"object must be a JSON object, got {type(obj).__name__}")
    meta = obj.get("metadata")
    if meta is None:
        return {}
    if type(meta) is not dict and not isinstance(meta, Mapping):
        raise InvalidObject(f"metadata must be a JSON object, got {type(meta).__name__}")
    return meta


def owner_references_of(obj: Mapping[str, Any]) -> tuple[OwnerReference, ...]:
    """Parse ``metadata.ownerReferences``; a missing or null field is no owners."""
    raw = metadata_of(obj).get("ownerReferences")
    if not raw:
        if raw is None or isinstance(raw, list):
            return ()
        raise InvalidOwnerReference(
            f"metadata.ownerReferences must be a list, got {type(raw).__name__}"
        )
    if not isinstance(raw, list):
        raise InvalidOwnerReference(
            f"metadata.ownerReferences must be a list, got {type(raw).__name__}"
        )
    parse = OwnerReference.from_dict
    return tuple([parse(entry) for entry in raw])
