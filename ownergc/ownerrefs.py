"""Set owner references that cannot go wrong, on the objects operators already hold.

The functions mirror controller-runtime's ``controllerutil`` for Python
operators::

    from ownergc.ownerrefs import set_controller_reference

    child = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "web-config", "namespace": "shop"}}
    set_controller_reference(owner, child)      # owner: the parent you read back

Before writing anything they apply the rules ``ownergc lint`` checks (one
implementation, :mod:`ownergc._core.ownerref_rules`) and raise one typed
error per rule (all :class:`~ownergc.errors.InvalidOwnerReference`):

=================================  ===================================================
error                              when
=================================  ===================================================
``OwnerNotCreated``                the owner has no uid (not created, or not read back)
``EventOwner``                     the owner is a core v1 Event
``UnknownOwnerKind``               the owner's kind is not in ``kinds`` (discovered)
``AlreadyOwned``                   another controller owns the object (``.owner``)
``MultipleControllers``            the object already has several controllers
``CrossNamespaceOwner``            the owner is in another namespace
``NamespacedOwnerOfClusterScoped`` a cluster-scoped object names a namespaced owner
=================================  ===================================================

References are upserted as controllerutil does: a reference to the same
group, kind and name (any version) is replaced, others are kept.

Objects may be plain dicts or what the clients hand out: the official
``kubernetes`` client's models (and kubernetes-asyncio's), lightkube's
resources, kr8s objects (their ``.raw`` dict), kopf bodies (read-only: a new
``Body`` comes back) and kopf patches (pass ``body=`` for the object the
patch applies to). Mutable objects are changed in place and returned; no
client library is imported unless one of its objects is passed in.

Scope (namespaced or not) comes from the owner's own namespace, the kinds a
stock kube-apiserver serves, and for custom resources from ``kinds``: pass
``await discover_kinds(store)`` (any :class:`~ownergc.protocols.ObjectStore`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ownergc._core.ownerref_rules import (
    KindInfo,
    Violation,
    builtin_kinds,
    check_controllers,
    check_owner_kind,
    check_owner_namespace,
    check_owner_scope,
    check_reference_fields,
    group_of,
    ref_label,
)
from ownergc.errors import (
    AlreadyOwned,
    CrossNamespaceOwner,
    EventOwner,
    InvalidObject,
    InvalidOwnerReference,
    MultipleControllers,
    NamespacedOwnerOfClusterScoped,
    OwnerNotCreated,
    UnknownOwnerKind,
)
from ownergc.protocols import ObjectStore

__all__ = [
    "KindInfo",
    "Kinds",
    "discover_kinds",
    "get_controller_of",
    "has_controller_reference",
    "has_owner_reference",
    "owner_reference",
    "owner_references",
    "remove_controller_reference",
    "remove_owner_reference",
    "set_controller_reference",
    "set_owner_reference",
    "validate_owner_references",
]

_T = TypeVar("_T")

#: (apiVersion, kind) → how it is served; ``discover_kinds`` builds one for a cluster.
Kinds = Mapping[tuple[str, str], KindInfo]

_BUILTIN: dict[tuple[str, str], KindInfo] | None = None


def _builtin() -> dict[tuple[str, str], KindInfo]:
    global _BUILTIN
    if _BUILTIN is None:
        _BUILTIN = builtin_kinds()
    return _BUILTIN


async def discover_kinds(store: ObjectStore) -> dict[tuple[str, str], KindInfo]:
    """Every kind the cluster behind ``store`` serves (custom resources included).

    Pass the result as ``kinds=`` so scope is known for CRDs and an owner
    whose kind is not served raises :class:`~ownergc.errors.UnknownOwnerKind`.
    """
    found = await store.discover()
    return {
        (r.api_version, r.kind): KindInfo(r.namespaced, r.resource)
        for r in found.resources
        if "/" not in r.resource
    }


# --- reading and writing each client's objects ------------------------------------------

_MODEL_NAME = re.compile(r"^(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")


@dataclass(frozen=True, slots=True)
class _View:
    """What the rules need from an object, whatever its flavour."""

    api_version: str | None
    kind: str | None
    name: str | None
    namespace: str | None
    uid: str | None
    refs: list[dict[str, Any]]


def _flavour(obj: object) -> str:
    module = type(obj).__module__
    root = module.partition(".")[0]
    if root == "kr8s" and isinstance(getattr(obj, "raw", None), MutableMapping):
        return "kr8s"
    if isinstance(obj, Mapping):
        return "mapping"
    if root == "lightkube":
        return "lightkube"
    if hasattr(type(obj), "openapi_types") and hasattr(type(obj), "attribute_map"):
        return "openapi"  # kubernetes and kubernetes_asyncio models
    raise InvalidObject(
        f"cannot read a {type(obj).__name__} as a Kubernetes object: pass a dict, a kubernetes "
        "or kubernetes-asyncio model, a lightkube resource, a kr8s object or a kopf body"
    )


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _ref_from_model(ref: Any, camel: bool) -> dict[str, Any]:
    if isinstance(ref, Mapping):
        return dict(ref)
    names = (
        ("apiVersion", "apiVersion" if camel else "api_version"),
        ("kind", "kind"),
        ("name", "name"),
        ("uid", "uid"),
        ("controller", "controller"),
        ("blockOwnerDeletion", "blockOwnerDeletion" if camel else "block_owner_deletion"),
    )
    out = {}
    for key, attr in names:
        value = getattr(ref, attr, None)
        if value is not None:
            out[key] = value
    return out


def _infer_type(obj: object) -> tuple[str | None, str | None]:
    """apiVersion and kind of a typed model that lacks them (kubernetes list items)."""
    match = _MODEL_NAME.match(type(obj).__name__)
    if match is None:
        return None, None
    version, kind = match.group(1).lower(), match.group(2)
    groups = {av for (av, k) in _builtin() if k == kind and av.rpartition("/")[2] == version}
    return (groups.pop(), kind) if len(groups) == 1 else (None, kind)


def _view(obj: object) -> _View:
    flavour = _flavour(obj)
    if flavour in ("mapping", "kr8s"):
        raw: Mapping[str, Any] = obj.raw if flavour == "kr8s" else obj  # type: ignore[attr-defined,assignment]
        meta = raw.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        refs = meta.get("ownerReferences") or []
        return _View(
            _str(raw.get("apiVersion")),
            _str(raw.get("kind")),
            _str(meta.get("name")),
            _str(meta.get("namespace")),
            _str(meta.get("uid")),
            [dict(r) if isinstance(r, Mapping) else r for r in refs]
            if isinstance(refs, list)
            else [],
        )
    camel = flavour == "lightkube"
    meta = getattr(obj, "metadata", None)
    api_version = _str(getattr(obj, "apiVersion" if camel else "api_version", None))
    kind = _str(getattr(obj, "kind", None))
    if api_version is None or kind is None:
        inferred = _infer_type(obj)
        api_version, kind = api_version or inferred[0], kind or inferred[1]
    refs = getattr(meta, "ownerReferences" if camel else "owner_references", None) or []
    return _View(
        api_version,
        kind,
        _str(getattr(meta, "name", None)),
        _str(getattr(meta, "namespace", None)),
        _str(getattr(meta, "uid", None)),
        [_ref_from_model(r, camel) for r in refs],
    )


def _write(obj: _T, refs: list[dict[str, Any]]) -> _T:
    """``obj`` with ``metadata.ownerReferences`` replaced, in its own flavour."""
    flavour = _flavour(obj)
    if flavour == "kr8s":
        meta = obj.raw.setdefault("metadata", {})  # type: ignore[attr-defined]
        meta["ownerReferences"] = refs
        return obj
    if flavour == "mapping":
        if isinstance(obj, MutableMapping):
            meta = obj.get("metadata")
            if not isinstance(meta, MutableMapping):
                meta = obj["metadata"] = dict(meta or {})
            meta["ownerReferences"] = refs
            return obj
        # Read-only (kopf.Body): a new object of the same type, the original untouched.
        assert isinstance(obj, Mapping)
        new = dict(obj)
        new["metadata"] = {**(obj.get("metadata") or {}), "ownerReferences": refs}
        try:
            return type(obj)(new)  # type: ignore[call-arg]
        except TypeError:
            return new  # type: ignore[return-value]
    package = type(obj).__module__.partition(".")[0]
    if flavour == "lightkube":
        models = importlib.import_module("lightkube.models.meta_v1")
        made = [models.OwnerReference(**r) for r in refs]
        meta = getattr(obj, "metadata", None)
        if meta is None:
            meta = models.ObjectMeta()
            obj.metadata = meta  # type: ignore[attr-defined]
        meta.ownerReferences = made
        return obj
    client = importlib.import_module(f"{package}.client")
    snake = {"apiVersion": "api_version", "blockOwnerDeletion": "block_owner_deletion"}
    made = [client.V1OwnerReference(**{snake.get(k, k): v for k, v in r.items()}) for r in refs]
    meta = getattr(obj, "metadata", None)
    if meta is None:
        meta = client.V1ObjectMeta()
        obj.metadata = meta  # type: ignore[attr-defined]
    meta.owner_references = made
    return obj


# --- the API ------------------------------------------------------------------------------


def owner_references(obj: object) -> list[dict[str, Any]]:
    """The object's ownerReferences as plain dicts (camelCase keys), in order."""
    return _view(obj).refs


def owner_reference(
    owner: object,
    *,
    controller: bool | None = None,
    block_owner_deletion: bool | None = None,
) -> dict[str, Any]:
    """The reference to ``owner`` (checked: it has a uid and is no core Event)."""
    view = _view(owner)
    missing = [
        f
        for f, v in (("apiVersion", view.api_version), ("kind", view.kind), ("name", view.name))
        if v is None
    ]
    if missing:
        raise InvalidOwnerReference(
            f"the owner lacks {', '.join(missing)}; pass the object as read from the apiserver"
        )
    label = f"{view.kind} {view.name}"
    if view.api_version == "v1" and view.kind == "Event":
        raise EventOwner(
            f"{label}: a core v1 Event cannot be an owner; the apiserver rejects this",
            fix="own the object by what the event is about, or drop the reference",
        )
    if view.uid is None:
        raise OwnerNotCreated(
            f"{label} has no metadata.uid: it was not created yet, or not read back",
            fix="create the owner first and use the object the apiserver returned",
        )
    ref: dict[str, Any] = {
        "apiVersion": view.api_version,
        "kind": view.kind,
        "name": view.name,
        "uid": view.uid,
    }
    if block_owner_deletion is not None:
        ref["blockOwnerDeletion"] = block_owner_deletion
    if controller is not None:
        ref["controller"] = controller
    return ref


def _same_object(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """controllerutil's identity of a reference: group, kind and name (not the version)."""
    return (
        group_of(str(a.get("apiVersion", ""))) == group_of(str(b.get("apiVersion", "")))
        and a.get("kind") == b.get("kind")
        and a.get("name") == b.get("name")
    )


def _raise(violation: Violation | None, cls: Callable[..., InvalidOwnerReference]) -> None:
    if violation is not None:
        raise cls(violation.message, fix=violation.fix)


def _validate(owner: _View, ref: Mapping[str, Any], dependent: _View, kinds: Kinds | None) -> None:
    """The scope and namespace rules for ``ref`` (to ``owner``) on ``dependent``."""
    table = kinds if kinds is not None else _builtin()
    key = (str(ref["apiVersion"]), str(ref["kind"]))
    owner_kind = table.get(key)
    if owner_kind is None and kinds is not None:
        raise UnknownOwnerKind(
            f"owner kind {key[1]} in {key[0]} is not served; the GC cannot map it and "
            "never collects this object",
            fix="fix apiVersion/kind, or install the owner's CRD (with that version served)",
        )
    owner_namespaced = owner.namespace is not None or (
        owner_kind is not None and owner_kind.namespaced
    )
    dep_kind = (
        table.get((dependent.api_version, dependent.kind))
        if dependent.api_version and dependent.kind
        else None
    )
    dependent_namespaced = (
        dep_kind.namespaced if dep_kind is not None else dependent.namespace is not None
    )
    _raise(
        check_owner_scope(ref, owner_namespaced, dependent_namespaced),
        NamespacedOwnerOfClusterScoped,
    )
    if owner_namespaced and (owner.namespace is None or dependent.namespace is None):
        where = "the owner" if owner.namespace is None else "the object"
        raise CrossNamespaceOwner(
            f"{where} has no metadata.namespace, so the owner {ref_label(ref)} cannot be "
            "checked to be in the object's namespace (the only place the GC looks)",
            fix="set metadata.namespace on the object (the owner's namespace)",
        )
    _raise(
        check_owner_namespace(
            f"{owner.kind} {owner.namespace}/{owner.name}", owner.namespace, dependent.namespace
        ),
        CrossNamespaceOwner,
    )


def _existing(dependent: _View) -> list[dict[str, Any]]:
    _raise(check_controllers(dependent.refs), MultipleControllers)
    return dependent.refs


def _upsert(refs: list[dict[str, Any]], ref: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(refs)
    for i, existing in enumerate(out):
        if _same_object(existing, ref):
            out[i] = ref
            return out
    out.append(ref)
    return out


def set_controller_reference(
    owner: object,
    obj: _T,
    *,
    block_owner_deletion: bool = True,
    kinds: Kinds | None = None,
    body: object | None = None,
) -> _T:
    """Make ``owner`` the controller of ``obj`` (controllerutil.SetControllerReference).

    Writes ``controller: true`` and ``blockOwnerDeletion`` (true by default, as
    controllerutil does; foreground deletion of the owner then waits for
    ``obj``). Raises :class:`~ownergc.errors.AlreadyOwned` when another
    controller owns ``obj``. ``body``: the object a kopf ``Patch`` applies to.
    """
    ref = owner_reference(owner, controller=True, block_owner_deletion=block_owner_deletion)
    dependent = _view(body if body is not None else obj)
    _validate(_view(owner), ref, dependent, kinds)
    refs = _existing(dependent)
    current = next((r for r in refs if r.get("controller") is True), None)
    if current is not None and not _same_object(current, ref):
        raise AlreadyOwned(
            f"{dependent.kind} {dependent.name} is already controlled by {ref_label(current)}",
            owner=dict(current),
            fix="only one controller may own an object: use set_owner_reference for a "
            "non-controller reference, or remove the other controller's reference first",
        )
    return _write(obj, _upsert(refs, ref))


def set_owner_reference(
    owner: object,
    obj: _T,
    *,
    block_owner_deletion: bool | None = None,
    kinds: Kinds | None = None,
    body: object | None = None,
) -> _T:
    """Add (or replace) a non-controller reference to ``owner`` (controllerutil.SetOwnerReference).

    A reference to the same group/kind/name is replaced whole, as
    controllerutil does (a controller reference to ``owner`` becomes a plain one).
    """
    ref = owner_reference(owner, block_owner_deletion=block_owner_deletion)
    dependent = _view(body if body is not None else obj)
    _validate(_view(owner), ref, dependent, kinds)
    return _write(obj, _upsert(_existing(dependent), ref))


def remove_owner_reference(owner: object, obj: _T, *, body: object | None = None) -> _T:
    """Drop every reference to ``owner`` (same group/kind/name); absent is no error."""
    target = _ref_coordinates(owner)
    refs = _view(body if body is not None else obj).refs
    kept = [r for r in refs if not _same_object(r, target)]
    return obj if len(kept) == len(refs) and body is None else _write(obj, kept)


def remove_controller_reference(owner: object, obj: _T, *, body: object | None = None) -> _T:
    """Drop ``owner``'s controller reference; another controller raises AlreadyOwned."""
    target = _ref_coordinates(owner)
    dependent = _view(body if body is not None else obj)
    current = next((r for r in dependent.refs if r.get("controller") is True), None)
    if current is None:
        return obj
    if not _same_object(current, target):
        raise AlreadyOwned(
            f"{dependent.kind} {dependent.name} is controlled by {ref_label(current)}, "
            f"not by {target['kind']} {target['name']}",
            owner=dict(current),
            fix="remove the reference of the controller that owns it",
        )
    return _write(obj, [r for r in dependent.refs if r is not current])


def _ref_coordinates(owner: object) -> dict[str, Any]:
    view = _view(owner)
    return {"apiVersion": view.api_version or "", "kind": view.kind, "name": view.name}


def has_owner_reference(owner: object, obj: object) -> bool:
    """Whether ``obj`` has a reference to ``owner`` (same group/kind/name)."""
    target = _ref_coordinates(owner)
    return any(_same_object(r, target) for r in _view(obj).refs)


def has_controller_reference(obj: object) -> bool:
    """Whether any reference of ``obj`` says ``controller: true``."""
    return get_controller_of(obj) is not None


def get_controller_of(obj: object) -> dict[str, Any] | None:
    """The controller reference of ``obj`` as a dict, or None."""
    return next((r for r in _view(obj).refs if r.get("controller") is True), None)


def validate_owner_references(obj: object, *, kinds: Kinds | None = None) -> None:
    """Check the references ``obj`` already carries, without the owners at hand.

    The rules that need no owner object: fields, core Event owners, one
    controller at most, served kinds (with ``kinds``) and scope.
    """
    dependent = _view(obj)
    _existing(dependent)
    table = kinds if kinds is not None else _builtin()
    for ref in dependent.refs:
        violation = check_reference_fields(ref)
        if violation is not None:
            if violation.detail == "event-owner":
                _raise(violation, EventOwner)
            if violation.detail == "missing-uid":
                _raise(violation, OwnerNotCreated)
            raise InvalidOwnerReference(f"{violation.message}. Fix: {violation.fix}")
        owner_kind = table.get((str(ref["apiVersion"]), str(ref["kind"])))
        if owner_kind is None:
            if kinds is not None:
                _raise(check_owner_kind(ref, None), UnknownOwnerKind)
            continue
        dep_kind = table.get((dependent.api_version or "", dependent.kind or ""))
        dependent_namespaced = (
            dep_kind.namespaced if dep_kind is not None else dependent.namespace is not None
        )
        _raise(
            check_owner_scope(ref, owner_kind.namespaced, dependent_namespaced),
            NamespacedOwnerOfClusterScoped,
        )
