"""The store's resource registry: which resources are served (built-ins, registered kinds,
CRDs' kinds), their scopes and verbs, discovery failures, and the mapping from
apiVersion/kind or a resource name to the storage bucket holding its objects.

It owns no objects: it asks the :class:`ObjectStorage` it is given for a
bucket when a resource is first served, and hands an emptied bucket back when
the resource stops being served. Removing the objects of a resource that goes
is the write rules' business (a removal may end a CRD's deletion).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence

import anyio

from ownergc.errors import (
    BadRequest,
    InvalidObject,
    MethodNotAllowed,
    NotFound,
    RESTMappingError,
)
from ownergc.protocols import APIResource, JSONDict

from ._crd import CRDServing
from ._objects import _Storage
from ._resources import BUILTIN_RESOURCES, STANDARD_VERBS, GCPolicy, ResourceSpec
from ._storage import ObjectStorage
from ._validation import FieldError

__all__ = ["CRD_KEY", "ResourceRegistry"]

#: The bucket of CustomResourceDefinitions.
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
_API_SERVICES = ("apiregistration.k8s.io", "apiservices")


class ResourceRegistry:
    """Served resources over an :class:`ObjectStorage` (whose lock guards this too).

    ``resources`` are served from the start (default: the built-in kinds).
    """

    def __init__(
        self, storage: ObjectStorage, resources: Iterable[ResourceSpec] = BUILTIN_RESOURCES
    ) -> None:
        self._storage = storage
        self._by_gvr: dict[tuple[str, str, str], _Storage] = {}
        self._by_gvk: dict[tuple[str, str, str], _Storage] = {}
        self._discovery_failures: dict[str, str] = {}
        #: (group, resource) served because of a CRD -> the CRD's name.
        self._crd_served: dict[tuple[str, str], str] = {}
        for spec in resources:
            self._install(spec)

    # -- serving and unserving

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
        """Serve a kind (see ``InMemoryStore.register_resource``); returns its preferred version."""
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
        with self._storage.write() as wake:
            self.register_locked(spec, wake)
        return spec.api_resource(preferred)

    def register_locked(self, spec: ResourceSpec, wake: builtins.list[anyio.Event]) -> None:
        """Serve ``spec``; an existing group/resource keeps its objects and changes its versions."""
        group, resource, kind = spec.group, spec.resource, spec.kind
        existing = self._storage.buckets.get((group, resource))
        if existing is not None:
            if existing.spec.kind != kind or existing.spec.namespaced != spec.namespaced:
                raise InvalidObject(
                    f"{existing.group_resource} is already served as kind "
                    f"{existing.spec.kind!r} (namespaced={existing.spec.namespaced})"
                )
            self._uninstall(existing)
            existing.spec = spec
            self._map(existing)
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

    def forget_locked(self, bucket: _Storage, wake: builtins.list[anyio.Event]) -> None:
        """Stop serving an emptied bucket's resource; its watches end."""
        self._uninstall(bucket)
        self._crd_served.pop((bucket.spec.group, bucket.spec.resource), None)
        self._storage.drop_bucket(bucket, wake)

    def _install(self, spec: ResourceSpec) -> None:
        self._map(self._storage.add_bucket(spec))

    def _map(self, bucket: _Storage) -> None:
        spec = bucket.spec
        for v in spec.versions:
            self._by_gvr[(spec.group, v, spec.resource)] = bucket
            self._by_gvk[(spec.group, v, spec.kind)] = bucket

    def _uninstall(self, bucket: _Storage) -> None:
        spec = bucket.spec
        for v in spec.versions:
            self._by_gvr.pop((spec.group, v, spec.resource), None)
            self._by_gvk.pop((spec.group, v, spec.kind), None)

    # -- lookups (callers hold the lock)

    def bucket(self, group: str, resource: str) -> _Storage | None:
        """The bucket of a served group/resource."""
        return self._storage.buckets.get((group, resource))

    def bucket_for(self, resource: APIResource) -> _Storage:
        """The bucket serving ``resource`` (in its version); 404 if it is not served."""
        bucket = self._by_gvr.get((resource.group, resource.version, resource.resource))
        if bucket is None:
            raise NotFound(
                "the server could not find the requested resource",
                reason="NotFound",
                details={"group": resource.group, "kind": resource.resource},
            )
        return bucket

    def bucket_for_kind(self, group: str, version: str, kind: str) -> _Storage | None:
        return self._by_gvk.get((group, version, kind))

    def serves(self, resource: APIResource, bucket: _Storage) -> bool:
        """Is ``resource`` still served by ``bucket`` (a watch of it goes on)?"""
        return self._by_gvr.get((resource.group, resource.version, resource.resource)) is bucket

    def buckets(self) -> builtins.list[_Storage]:
        """Every served bucket, in the order resources were first served."""
        return builtins.list(self._storage.buckets.values())

    # -- public lookups (take the lock)

    def resource_for(self, api_version: str, kind: str) -> APIResource:
        """The served resource for (apiVersion, kind); raises :class:`RESTMappingError`."""
        group, _, version = api_version.rpartition("/")
        with self._storage.lock:
            bucket = self._by_gvk.get((group, version, kind))
            if bucket is None:
                raise RESTMappingError(api_version, kind)
            return bucket.spec.api_resource(version)

    def resource_by_name(self, name: str) -> APIResource:
        """``pods``, ``deployments.apps`` or ``deployments.v1.apps`` → the served resource
        (preferred version unless one is named); raises :class:`RESTMappingError`."""
        resource, _, rest = name.partition(".")
        with self._storage.lock:
            candidates: builtins.list[tuple[str, str | None]] = [(rest, None)]
            version, _, group = rest.partition(".")
            if version:
                candidates.append((group, version))
            for group_name, wanted in candidates:
                bucket = self._storage.buckets.get((group_name, resource))
                if bucket is None:
                    continue
                if wanted is None:
                    return bucket.spec.api_resource(bucket.spec.preferred_version)
                if wanted in bucket.spec.versions:
                    return bucket.spec.api_resource(wanted)
        raise RESTMappingError("", name, f"no served resource named {name!r}")

    # -- discovery

    def set_discovery_failure(self, group_version: str, message: str | None) -> None:
        """Make discovery report ``group_version`` as failed (None clears it)."""
        with self._storage.lock:
            if message is None:
                self._discovery_failures.pop(group_version, None)
            else:
                self._discovery_failures[group_version] = message

    def discovery_locked(self) -> tuple[tuple[APIResource, ...], dict[str, str]]:
        """Every served resource version minus the failed group versions, and those."""
        failed = {**self._unavailable_api_services(), **self._discovery_failures}
        resources = tuple(
            r
            for bucket in self._storage.buckets.values()
            for r in bucket.spec.api_resources()
            if r.api_version not in failed
        )
        return resources, failed

    def _unavailable_api_services(self) -> dict[str, str]:
        """Group versions of aggregated APIServices that are not Available.

        kube-apiserver proxies their discovery to the extension server; when it
        is down, discovery of that group version fails with a 503, which is
        what makes namespace deletion hang (NamespaceDeletionDiscoveryFailure).
        An in-memory store has no extension servers: an APIService with a
        ``spec.service`` is unavailable (its status says why) unless a status
        given with it says Available.
        """
        bucket = self._storage.buckets.get(_API_SERVICES)
        failed: dict[str, str] = {}
        for svc in bucket.iter_sorted(None) if bucket is not None else ():
            spec = svc.get("spec") or {}
            if not spec.get("service"):
                continue  # local: served by kube-apiserver itself
            conditions = (svc.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions):
                continue
            group, version = spec.get("group", ""), spec.get("version", "")
            gv = f"{group}/{version}" if group else str(version)
            failed[gv] = "the server is currently unable to handle the request"
        return failed

    # -- scope and verbs

    @staticmethod
    def check_verb(bucket: _Storage, verb: str) -> None:
        if verb not in bucket.spec.verbs:
            raise MethodNotAllowed(
                f"the server does not allow this method on the requested resource "
                f"({verb} {bucket.group_resource})",
                reason="MethodNotAllowed",
            )

    @staticmethod
    def object_namespace(bucket: _Storage, namespace: str | None) -> str:
        """The namespace of one object of ``bucket`` ("" if cluster-scoped); 400 if wrong."""
        if bucket.spec.namespaced:
            if not namespace:
                raise BadRequest(
                    f"a namespace is required for the namespaced resource {bucket.group_resource}",
                    reason="BadRequest",
                )
            return namespace
        return _cluster_scoped(bucket, namespace)

    @staticmethod
    def collection_namespace(bucket: _Storage, namespace: str | None) -> str | None:
        """The namespace a list or watch covers (None: all of them)."""
        if bucket.spec.namespaced:
            return namespace or None
        return _cluster_scoped(bucket, namespace)

    # -- CRDs' kinds

    @staticmethod
    def is_crd_bucket(bucket: _Storage) -> bool:
        return (bucket.spec.group, bucket.spec.resource) == CRD_KEY

    def crd_serving(self, bucket: _Storage) -> JSONDict | None:
        """The CRD that serves ``bucket``'s resource, if a CRD does."""
        name = self._crd_served.get((bucket.spec.group, bucket.spec.resource))
        if name is None:
            return None
        return self._storage.buckets[CRD_KEY].lookup("", name)

    def served_by_crd(self, name: str) -> builtins.list[_Storage]:
        """The buckets the CRD ``name`` serves."""
        return [
            self._storage.buckets[key]
            for key, owner in self._crd_served.items()
            if owner == name and key in self._storage.buckets
        ]

    def crd_conflicts(self, name: str, serving: CRDServing) -> builtins.list[FieldError]:
        """Why the CRD ``name`` cannot serve what it asks for: names taken by others."""
        errors: builtins.list[FieldError] = []
        key = (serving.group, serving.resource)
        existing = self._storage.buckets.get(key)
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
        return errors

    def serve_crd_locked(
        self, name: str, serving: CRDServing, wake: builtins.list[anyio.Event]
    ) -> None:
        """Serve what the CRD ``name`` says (it must serve at least one version)."""
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
        self.register_locked(spec, wake)
        self._crd_served[(serving.group, serving.resource)] = name

    def crd_serves(self, name: str, serving: CRDServing) -> _Storage | None:
        """The bucket of ``serving``'s resource if the CRD ``name`` serves it."""
        key = (serving.group, serving.resource)
        if self._crd_served.get(key) != name:
            return None
        return self._storage.buckets.get(key)


def _cluster_scoped(bucket: _Storage, namespace: str | None) -> str:
    """The (empty) namespace of a cluster-scoped resource; naming one is a 400."""
    if namespace:
        raise BadRequest(
            f"{bucket.group_resource} is cluster-scoped; namespace {namespace!r} must not be given",
            reason="BadRequest",
        )
    return ""
