"""The facade's real field manager: managedFields on every write, and server-side apply.

:class:`ManagedFields` plugs the pure engine (:mod:`.._fieldmanager`) into the
write pipeline at the :class:`~.fieldmanager.FieldManager` seam. Only writes
through the HTTP facade are tracked, as only they carry a manager; objects
written through the Python store API or loaded with ``load_objects`` are
left as they are.

The time stamped on entries is the store's clock (:meth:`InMemoryStore.now`),
so tests with a fake clock see predictable managedFields.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from ownergc._kit.http import Request
from ownergc.errors import AlreadyExists, BadRequest, Conflict, Invalid, NotFound, ServerError
from ownergc.protocols import APIResource, JSONDict

from .._core import name_mismatch
from .._fieldmanager import (
    ApplyConflict,
    ApplyError,
    Node,
    SchemaError,
    apply_after_client_side,
    builtin_schema,
    crd_version_schema,
    untyped,
    update_managed_fields,
)
from .._fieldmanager.typed import typed_patch_error, undeclared_fields
from .._negotiation import query_flag
from .._objects import format_time
from ..store import InMemoryStore, PatchRaced
from .admission import AdmissionAttributes
from .context import ResourceRoute, UserInfo
from .fieldmanager import ApplyAdmission
from .fieldvalidation import duplicate_key_lines, loads_tracking_duplicates

__all__ = ["ManagedFields"]

_STATUS_ONLY: Final = frozenset({("f:status",)})


def _required_manager() -> Invalid:
    """The 422 kube-apiserver answers an apply without ``fieldManager``."""
    return Invalid(
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch",
        reason="Invalid",
        details={
            "group": "meta.k8s.io",
            "kind": "PatchOptions",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: is required for apply patch",
                    "field": "fieldManager",
                }
            ],
        },
    )


def _applied_object(body: bytes, mode: str, warnings: list[str] | None) -> Any:
    """The apply body: YAML (JSON is YAML); read as JSON when PyYAML is absent.

    A key given twice is reported as the server's YAML reader words it (``line
    10: key "paused" already set in map``): a 400 under ``fieldValidation=Strict``,
    a warning under ``Warn``; the last value wins."""
    text = body.decode("utf-8", errors="replace")
    try:
        applied, duplicates = loads_tracking_duplicates(body)
        is_json = True
    except ValueError:
        is_json = False
        duplicates = {}
        try:
            yaml: Any = importlib.import_module("yaml")
        except ImportError:  # pragma: no cover - pyyaml ships with the cli and test extras
            raise BadRequest(
                "a YAML apply patch needs PyYAML (pip install 'ownergc[cli]'); send JSON instead",
                reason="BadRequest",
            ) from None
        try:
            applied = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise BadRequest(f"error decoding YAML: {exc}", reason="BadRequest") from None
    if mode != "Ignore" and (duplicates or not is_json):
        repeated = duplicate_key_lines(text, is_json=is_json)
        if repeated and mode == "Strict":
            raise BadRequest(
                "error strict decoding YAML: error converting YAML to JSON: yaml: "
                "unmarshal errors:\n  " + "\n  ".join(repeated),
                reason="BadRequest",
            )
        if warnings is not None:
            warnings.extend(repeated)
    return applied


def _error(exc: ApplyError) -> Exception:
    if exc.status == 422:
        return Invalid(exc.message, reason="Invalid")
    if exc.status >= 500:
        return ServerError(exc.message, reason="InternalError")
    return BadRequest(exc.message, reason="BadRequest")


class ManagedFields:
    """managedFields as kube-apiserver keeps them, and ``application/apply-patch+yaml``."""

    #: The write handlers read the stored object for :meth:`on_write`.
    wants_old_object = True
    #: Tries before an apply that keeps racing other writers is answered 409.
    attempts: Final = 5

    def __init__(self, store: InMemoryStore, clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self._clock = clock or store.now

    def _now(self) -> str:
        return format_time(self._clock())

    def _schema(self, resource: APIResource) -> tuple[Node, bool]:
        """The kind's merge type and whether it has a status subresource."""
        crd = self.store.crd_for(resource)
        if crd is not None:
            try:
                node = crd_version_schema(crd, resource.version)
            except SchemaError:
                node = untyped()
            status = False
            for version in (crd.get("spec") or {}).get("versions") or []:
                if isinstance(version, dict) and version.get("name") == resource.version:
                    status = "status" in (version.get("subresources") or {})
            return node, status
        node = builtin_schema(resource.group, resource.version, resource.kind) or untyped()
        return node, node.is_named_field("status")

    def _ignored(self, resource: APIResource, subresource: str | None) -> tuple[Node, Any]:
        node, has_status = self._schema(resource)
        return node, (_STATUS_ONLY if has_status and not subresource else frozenset())

    def on_write(self, attrs: AdmissionAttributes, manager: str) -> JSONDict | None:
        """``attrs.obj`` with the writer's ``Update`` entry brought up to date."""
        obj = attrs.obj
        if not isinstance(obj, dict) or attrs.operation not in ("CREATE", "UPDATE"):
            return obj
        node, ignored = self._ignored(attrs.resource, attrs.subresource)
        old = attrs.old_obj if attrs.operation == "UPDATE" else None
        if attrs.operation == "UPDATE" and old is None:
            return obj  # the store answers the missing object itself
        try:
            return update_managed_fields(
                old,
                obj,
                manager=manager,
                schema=node,
                now=self._now(),
                subresource=attrs.subresource or "",
                ignored=ignored,
            )
        except ApplyError:
            # As kube-apiserver's field manager on an update: never the write's
            # failure (the object's own validation speaks next, e.g. an owner
            # reference without its uid key); the object keeps no managedFields.
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                meta.pop("managedFields", None)
            return obj

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
        """Server-side apply of the request body as ``fieldManager``: create or merge;
        ``admit`` sees the object the apply would store (kube-apiserver admits an apply
        like any other write)."""
        manager = request.param("fieldManager")
        if not manager:
            raise _required_manager()
        force = query_flag(request, "force")
        mode = request.param("fieldValidation") or "Warn"
        applied = _applied_object(request.body, mode, warnings)
        if not isinstance(applied, dict):
            raise BadRequest("the applied configuration must be an object", reason="BadRequest")
        assert route.name is not None
        resource = route.resource
        kind = applied.get("kind")
        if kind != resource.kind or applied.get("apiVersion") != resource.api_version:
            raise ServerError(
                "failed to merge config: expected objects of the same type, but got "
                f"{applied.get('apiVersion')}, Kind={kind} and "
                f"{resource.api_version}, Kind={resource.kind}",
                reason="InternalError",
            )
        node, ignored = self._ignored(resource, route.subresource)
        undeclared = undeclared_fields(applied, node)
        if undeclared:
            refused = ServerError(
                typed_patch_error(
                    undeclared,
                    namespace=route.namespace or "",
                    name=route.name,
                    api_version=resource.api_version,
                    kind=resource.kind,
                )
            )
            refused.reason = ""  # a plain error in the server: its Status has no reason
            raise refused
        meta = applied.setdefault("metadata", {})
        if isinstance(meta, dict):
            if meta.setdefault("name", route.name) != route.name:
                raise name_mismatch(meta["name"], route.name)
            if route.namespace and not meta.get("namespace"):
                meta["namespace"] = route.namespace
        for attempt in range(self.attempts):
            try:
                live: JSONDict | None = await self.store.get(
                    resource, route.name, namespace=route.namespace, metadata_only=False
                )
            except NotFound:
                if route.subresource:
                    raise
                live = None
            try:
                result = apply_after_client_side(
                    live,
                    applied,
                    manager=manager,
                    force=force,
                    schema=node,
                    now=self._now(),
                    subresource=route.subresource or "",
                    ignored=ignored,
                )
            except ApplyError as exc:
                raise _error(exc) from None
            if isinstance(result, ApplyConflict):
                raise Conflict(
                    result.message, reason="Conflict", details={"causes": result.causes()}
                )
            last = attempt == self.attempts - 1
            to_store = result.object
            if admit is not None and (live is None or result.changed):
                to_store = await admit("CREATE" if live is None else "UPDATE", to_store, live)
            if live is None:
                try:
                    created = await self.store.create(
                        resource, to_store, namespace=route.namespace, dry_run=dry_run, applied=True
                    )
                    return created, True
                except AlreadyExists:
                    if last:
                        raise
                    continue
            if not result.changed:
                return live, False
            try:
                updated = await self.store.update(
                    resource,
                    to_store,
                    namespace=route.namespace,
                    subresource=route.subresource,
                    patched_from=(live.get("metadata") or {}).get("resourceVersion"),
                    dry_run=dry_run,
                    applied=True,
                )
                return updated, False
            except PatchRaced:
                if last:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover
