"""The store's registry: which resources are served (built-ins, CRDs), discovery failures,
and the mapping from apiVersion/kind or a resource name to a storage.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence

import anyio
import anyio.lowlevel

from ownergc.errors import (
    BadRequest,
    InvalidObject,
    MethodNotAllowed,
    NotFound,
    RESTMappingError,
)
from ownergc.protocols import (
    APIResource,
    JSONDict,
)

from ._core import StoreCore
from ._crd import CRDServing, crd_serving, crd_status
from ._objects import (
    _meta,
    _Storage,
    _with_rv,
    format_time,
)
from ._resources import STANDARD_VERBS, GCPolicy, ResourceSpec
from ._validation import (
    FieldError,
)

__all__ = ["StoreRegistry"]


class StoreRegistry(StoreCore):
    """Served resources and CRDs of :class:`~ownergc_backends.memory.InMemoryStore`."""

    def register_resource(
        self,
        *,
        group: str,
        versions: str | Sequence[str],
        resource: str,
        kind: str,
        namespaced: bool = True,
        preferred_version: str | None = None,
        verbs: Iterable[str] | None = None,
        default_gc_policy: GCPolicy | str | Mapping[str, GCPolicy | str] = GCPolicy.BACKGROUND,
        strategic_merge_patch: bool = False,
        allow_unconditional_update: bool | None = None,
    ) -> APIResource:
        """Serve a kind at run time, like creating a CustomResourceDefinition.

        Defaults describe a custom resource: strategic merge patch is refused
        with 415, PUT needs a resourceVersion, DELETE without a policy is
        Background. ``default_gc_policy`` may map versions to policies (the
        default can depend on the request version). Registering an existing
        group/resource again replaces its versions and behaviour but keeps
        its objects (e.g. to stop serving a version). Returns the preferred
        version's :class:`APIResource`.
        """
        version_list = (versions,) if isinstance(versions, str) else tuple(versions)
        if not version_list or not all(version_list) or len(set(version_list)) != len(version_list):
            raise InvalidObject(f"versions must be distinct and non-empty: {versions!r}")
        preferred = preferred_version or version_list[0]
        if preferred not in version_list:
            raise InvalidObject(f"preferred version {preferred!r} is not in {version_list!r}")
        if not resource or not kind or resource != resource.lower() or "/" in resource:
            raise InvalidObject(f"bad resource {resource!r} / kind {kind!r}")
        try:
            if isinstance(default_gc_policy, Mapping):
                policies = {v: GCPolicy(p) for v, p in default_gc_policy.items()}
            else:
                policies = {v: GCPolicy(default_gc_policy) for v in version_list}
        except ValueError:
            raise InvalidObject(
                f"default_gc_policy must be Background, Orphan or Unsupported: "
                f"{default_gc_policy!r}"
            ) from None
        spec = ResourceSpec(
            group=group,
            resource=resource,
            kind=kind,
            namespaced=namespaced,
            versions=version_list,
            preferred_version=preferred,
            verbs=frozenset(verbs) if verbs is not None else STANDARD_VERBS,
            gc_policies=policies,
            strategic_merge_patch=strategic_merge_patch,
            allow_unconditional_update=(
                strategic_merge_patch
                if allow_unconditional_update is None
                else allow_unconditional_update
            ),
        )
        with self._write() as wake:
            self._register_locked(spec, wake)
        return spec.api_resource(preferred)

    def _register_locked(self, spec: ResourceSpec, wake: builtins.list[anyio.Event]) -> None:
        group, resource, kind = spec.group, spec.resource, spec.kind
        existing = self._storages.get((group, resource))
        if existing is not None:
            if existing.spec.kind != kind or existing.spec.namespaced != spec.namespaced:
                raise InvalidObject(
                    f"{existing.group_resource} is already served as kind "
                    f"{existing.spec.kind!r} (namespaced={existing.spec.namespaced})"
                )
            self._uninstall(existing)
            existing.spec = spec
            self._install_storage(existing)
            existing.log.take_waiter(wake)  # watchers of dropped versions must notice
        else:
            for v in spec.versions:
                other = self._by_gvk.get((group, v, kind))
                if other is not None:
                    raise InvalidObject(
                        f"kind {kind!r} in {group or 'core'}/{v} is already served by "
                        f"{other.group_resource}"
                    )
            self._install(spec)

    def unregister_resource(self, group: str, resource: str) -> bool:
        """Stop serving a group/resource, like deleting its CRD; False if it was not served.

        Its objects are removed (watchers get a DELETED event for each, then
        their stream ends) and every later request for it answers 404.
        """
        with self._write() as wake:
            storage = self._storages.get((group, resource))
            if storage is None:
                return False
            self._unregister_locked(storage, wake)
        return True

    def _unregister_locked(self, storage: _Storage, wake: builtins.list[anyio.Event]) -> None:
        key = (storage.spec.group, storage.spec.resource)
        for obj in builtins.list(storage.iter_sorted(None)):
            meta = _meta(obj)
            self._remove_locked(storage, meta.get("namespace", ""), meta["name"], obj, wake)
        self._uninstall(storage)
        del self._storages[key]
        self._crd_served.pop(key, None)
        storage.log.closed = True
        storage.log.take_waiter(wake)

    @staticmethod
    def _is_crd_storage(storage: _Storage) -> bool:
        spec = storage.spec
        return spec.group == "apiextensions.k8s.io" and spec.resource == "customresourcedefinitions"

    def _crd_admit(
        self, obj: JSONDict, old: JSONDict | None
    ) -> tuple[CRDServing, builtins.list[FieldError]]:
        """Validate a CRD about to be stored (created or updated) and fill its status."""
        serving, errors = crd_serving(obj)
        if serving is None:
            return CRDServing("", "", "", True, (), ""), errors
        key = (serving.group, serving.resource)
        name = _meta(obj)["name"]
        if old is not None:
            before, _ = crd_serving(old)
            if before is not None:
                for field_name, was, now in (
                    ("spec.scope", before.namespaced, serving.namespaced),
                    ("spec.names.kind", before.kind, serving.kind),
                ):
                    if was != now:
                        errors.append(
                            FieldError(field_name, "FieldValueInvalid", "field is immutable", now)
                        )
        existing = self._storages.get(key)
        if existing is not None and self._crd_served.get(key) != name:
            errors.append(
                FieldError(
                    "spec.names.plural",
                    "FieldValueInvalid",
                    f"{existing.group_resource} is already served by the apiserver",
                    serving.resource,
                )
            )
        for v in serving.served:
            other = self._by_gvk.get((serving.group, v, serving.kind))
            if other is not None and other is not existing:
                errors.append(
                    FieldError(
                        "spec.names.kind",
                        "FieldValueInvalid",
                        f"kind is already served by {other.group_resource}",
                        serving.kind,
                    )
                )
        if not errors:
            obj["status"] = crd_status(obj, serving, format_time(self._clock()))
        return serving, errors

    def _crd_serve_locked(
        self, name: str, serving: CRDServing, wake: builtins.list[anyio.Event]
    ) -> None:
        key = (serving.group, serving.resource)
        if not serving.served:
            storage = self._storages.get(key)
            if storage is not None and self._crd_served.get(key) == name:
                self._unregister_locked(storage, wake)
            return
        spec = ResourceSpec(
            group=serving.group,
            resource=serving.resource,
            kind=serving.kind,
            namespaced=serving.namespaced,
            versions=serving.served,
            preferred_version=serving.served[0],
            verbs=STANDARD_VERBS,
            gc_policies={v: GCPolicy.BACKGROUND for v in serving.served},
            strategic_merge_patch=False,
            allow_unconditional_update=False,
            subresources=serving.subresources,
            scale_paths=serving.scale,
        )
        self._register_locked(spec, wake)
        self._crd_served[key] = name

    def _crd_removed_locked(self, crd: JSONDict, wake: builtins.list[anyio.Event]) -> None:
        name = _meta(crd)["name"]
        for key, owner in builtins.list(self._crd_served.items()):
            if owner == name:
                storage = self._storages.get(key)
                if storage is not None:
                    self._unregister_locked(storage, wake)

    def _install(self, spec: ResourceSpec) -> None:
        storage = _Storage(spec, self._window)
        self._storages[(spec.group, spec.resource)] = storage
        self._install_storage(storage)

    def _install_storage(self, storage: _Storage) -> None:
        spec = storage.spec
        for v in spec.versions:
            self._by_gvr[(spec.group, v, spec.resource)] = storage
            self._by_gvk[(spec.group, v, spec.kind)] = storage

    def _uninstall(self, storage: _Storage) -> None:
        spec = storage.spec
        for v in spec.versions:
            self._by_gvr.pop((spec.group, v, spec.resource), None)
            self._by_gvk.pop((spec.group, v, spec.kind), None)

    def set_discovery_failure(self, group_version: str, message: str | None) -> None:
        """Make discovery report ``group_version`` as failed (None clears it), as an
        unavailable aggregated API would; its resources are then missing from discovery."""
        with self._lock:
            if message is None:
                self._discovery_failures.pop(group_version, None)
            else:
                self._discovery_failures[group_version] = message

    def resource_for(self, api_version: str, kind: str) -> APIResource:
        """The served resource for (apiVersion, kind); raises :class:`RESTMappingError`."""
        group, _, version = api_version.rpartition("/")
        with self._lock:
            storage = self._by_gvk.get((group, version, kind))
            if storage is None:
                raise RESTMappingError(api_version, kind)
            return storage.spec.api_resource(version)

    def resource_by_name(self, name: str) -> APIResource:
        """``pods``, ``deployments.apps`` or ``deployments.v1.apps`` → the served resource
        (preferred version unless one is named); raises :class:`RESTMappingError`."""
        resource, _, rest = name.partition(".")
        with self._lock:
            candidates: list[tuple[str, str | None]] = [(rest, None)]
            version, _, group = rest.partition(".")
            if version:
                candidates.append((group, version))
            for group_name, wanted in candidates:
                storage = self._storages.get((group_name, resource))
                if storage is None:
                    continue
                if wanted is None:
                    return storage.spec.api_resource(storage.spec.preferred_version)
                if wanted in storage.spec.versions:
                    return storage.spec.api_resource(wanted)
        raise RESTMappingError("", name, f"no served resource named {name!r}")

    def _storage(self, resource: APIResource) -> _Storage:
        storage = self._by_gvr.get((resource.group, resource.version, resource.resource))
        if storage is None:
            raise NotFound(
                "the server could not find the requested resource",
                reason="NotFound",
                details={"group": resource.group, "kind": resource.resource},
            )
        return storage

    @staticmethod
    def _check_verb(storage: _Storage, verb: str) -> None:
        if verb not in storage.spec.verbs:
            raise MethodNotAllowed(
                f"the server does not allow this method on the requested resource "
                f"({verb} {storage.group_resource})",
                reason="MethodNotAllowed",
            )

    @staticmethod
    def _object_namespace(storage: _Storage, namespace: str | None) -> str:
        if storage.spec.namespaced:
            if not namespace:
                raise BadRequest(
                    f"a namespace is required for the namespaced resource {storage.group_resource}",
                    reason="BadRequest",
                )
            return namespace
        return _cluster_scoped(storage, namespace)

    @staticmethod
    def _collection_namespace(storage: _Storage, namespace: str | None) -> str | None:
        if storage.spec.namespaced:
            return namespace or None
        return _cluster_scoped(storage, namespace)

    def _remove_locked(
        self, storage: _Storage, namespace: str, name: str, last: JSONDict, wake: list[anyio.Event]
    ) -> JSONDict:
        rv = self._next_rv()
        storage.remove(namespace, name)
        gone = _with_rv(last, rv)
        self._emit(storage, "DELETED", gone, wake)
        if self._is_crd_storage(storage):
            self._crd_removed_locked(gone, wake)
        else:
            crd = self._crd_serving_storage(storage)
            if crd is not None:
                self._crd_instance_removed_locked(crd, wake)
        return gone

    def _crd_serving_storage(self, storage: _Storage) -> JSONDict | None:
        """The CRD that serves ``storage``, if a CRD does."""
        name = self._crd_served.get((storage.spec.group, storage.spec.resource))
        if name is None:
            return None
        crds = self._storages[("apiextensions.k8s.io", "customresourcedefinitions")]
        return crds.lookup("", name)

    def _crd_instance_removed_locked(self, crd: JSONDict, wake: builtins.list[anyio.Event]) -> None:
        """A custom object of ``crd`` was removed (the CRD cleanup hooks in here)."""


def _cluster_scoped(storage: _Storage, namespace: str | None) -> str:
    """The (empty) namespace of a cluster-scoped resource; naming one is a 400."""
    if namespace:
        raise BadRequest(
            f"{storage.group_resource} is cluster-scoped; namespace {namespace!r} "
            "must not be given",
            reason="BadRequest",
        )
    return ""
