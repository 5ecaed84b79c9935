"""The write rules: create, update and DELETE as kube-apiserver's registry does them
(validation, defaulting, server-owned fields, finalizers, the GC finalizers of a
DELETE, removal when the last finalizer goes), the NamespaceLifecycle admission
and the namespace registry's DELETE, and the CRD lifecycle (a CRD serves its
kind; deleting it deletes its objects first). Every method here runs inside the
storage's write section (``..._locked``): the façade takes the lock.

Dry run (``dry_run=True``, kube-apiserver's ``dryRun=All``): the write is
computed exactly as a real one (validation, defaulting, generateName,
admission of namespaces, the finalizers a DELETE leaves) and the would-be
object returned, but the last step, the storage call, is not made: nothing is
stored, no resourceVersion is taken, no watch event is logged, and no side
effect (a CRD's serving, its cleanup) runs. As with kube-apiserver's
``DryRunnableStorage``, a dry-run create answers without a resourceVersion and
a dry-run update or DELETE with the stored object's.
"""

from __future__ import annotations

import builtins
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

import anyio

from ownergc.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    MethodNotAllowed,
    NotFound,
    ServerTimeout,
)
from ownergc.protocols import (
    JSONDict,
    Preconditions,
    PropagationPolicy,
)

from ._admission_policy_validation import admission_policy_errors
from ._conversion import defaults_version, to_storage
from ._core import (
    check_type,
    conflict,
    decode_meta,
    invalid,
    json_body,
    name_mismatch,
    not_found,
)
from ._core_validation import core_spec_errors, core_spec_update_errors
from ._cr_schema import apply_defaults as apply_schema_defaults
from ._cr_schema import prune_nulls, schema_errors
from ._crd import (
    CRD_CLEANUP_FINALIZER,
    NAME_MISMATCH,
    CRDServing,
    crd_serving,
    crd_status,
    required_name,
)
from ._defaults import (
    STATUS_KEPT_ON_CREATE,
    apply_defaults,
    prepare_for_create,
    prepare_for_update,
)
from ._deletion import (
    deletion_finalizers_for_garbage_collection,
    mark_as_deleting,
    should_delete_during_update,
)
from ._fieldmanager.schema import version_schema
from ._flowschemas import FLOWCONTROL, level_named, with_dangling
from ._generation import generation_rule
from ._limitrange_validation import limit_range_errors
from ._networking_validation import networking_errors, networking_update_errors
from ._objects import (
    _GENERATE_NAME_ALPHABET,
    IMMORTAL_NAMESPACES,
    _is_namespaces,
    _meta,
    _ordered,
    _Storage,
    default_namespace_label,
    format_time,
)
from ._patch import (
    json_equal,
)
from ._pod_ips import validate_pod_ips
from ._podspec_validation import pod_spec_errors, pod_spec_update_errors
from ._priority_classes import priority_class_errors, priority_class_update_errors
from ._quota_validation import resource_quota_errors, resource_quota_update_errors
from ._rbac_validation import rbac_errors, rbac_update_errors
from ._registry import CRD_KEY, ResourceRegistry
from ._resources import NameRule, ResourceSpec
from ._service_ips import allocate
from ._spec_validation import selector_errors, selector_update_errors
from ._storage import ObjectStorage, holds_services
from ._storage_validation import resize_refusal, storage_errors, storage_update_errors
from ._subresources import meta_for_status, subresource_errors, subresource_update
from ._validation import (
    FINALIZER_FOREGROUND,
    FINALIZER_ORPHAN,
    FieldError,
    immutable,
    validate_annotations,
    validate_finalizers,
    validate_labels,
    validate_name,
    validate_owner_references,
)
from ._workload_validation import workload_errors, workload_update_errors

__all__ = ["WriteRules"]

_PRIORITY_CLASSES = ("scheduling.k8s.io", "priorityclasses")
_RESOURCE_QUOTAS = ("", "resourcequotas")
_CLAIMS = ("", "persistentvolumeclaims")
_LIMIT_RANGES = ("", "limitranges")
_CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")


class WriteRules:
    """Create, update and delete over a storage and a registry.

    ``clock`` stamps creation and deletion times, ``uid_factory`` makes uids;
    ``terminating_namespaces`` turns on the namespace registry's DELETE (see
    :class:`~ownergc_backends.memory.InMemoryStore`).
    """

    def __init__(
        self,
        storage: ObjectStorage,
        registry: ResourceRegistry,
        *,
        clock: Callable[[], datetime],
        uid_factory: Callable[[], str],
        terminating_namespaces: bool = False,
    ) -> None:
        self._storage = storage
        self._registry = registry
        self._clock = clock
        self._uid_factory = uid_factory
        self._terminating_namespaces = terminating_namespaces
        #: CRDs whose cleanup is running (their objects' removals must not re-enter it).
        self._crd_cleaning: set[str] = set()

    def remove_locked(
        self, bucket: _Storage, namespace: str, name: str, last: JSONDict, wake: list[anyio.Event]
    ) -> JSONDict:
        """Remove an object; removing a CRD stops serving its kinds, removing a custom
        object may end its terminating CRD's cleanup."""
        gone = self._storage.remove_locked(bucket, namespace, name, last, wake)
        if bucket.spec.group == FLOWCONTROL:
            self._priority_level_changed_locked(bucket, name, wake)
        if self._registry.is_crd_bucket(bucket):
            self._crd_removed_locked(gone, wake)
        else:
            crd = self._registry.crd_serving(bucket)
            if crd is not None:
                self._crd_instance_removed_locked(crd, wake)
        return gone

    def unregister_locked(self, bucket: _Storage, wake: list[anyio.Event]) -> None:
        """Stop serving a resource: its objects are removed (watchers get a DELETED
        event for each, then their stream ends)."""
        for obj in builtins.list(bucket.iter_sorted(None)):
            meta = _meta(obj)
            self.remove_locked(bucket, meta.get("namespace", ""), meta["name"], obj, wake)
        self._registry.forget_locked(bucket, wake)

    def _generate_name(self, bucket: _Storage, namespace: str, prefix: str) -> str:
        for _ in range(16):
            suffix = "".join(secrets.choice(_GENERATE_NAME_ALPHABET) for _ in range(5))
            candidate = prefix[: 253 - 5] + suffix
            if bucket.lookup(namespace, candidate) is None:
                return candidate
        raise ServerTimeout(f"could not generate a unique name from {prefix!r}")

    def _admit_resize(self, bucket: _Storage, name: str, body: JSONDict, old: JSONDict) -> None:
        """PersistentVolumeClaimResize admission (after validation, as on a real server)."""
        classes = self._storage.buckets.get(("storage.k8s.io", "storageclasses"))
        why = resize_refusal(
            body, old, lambda class_name: classes.lookup("", class_name) if classes else None
        )
        if why is not None:
            raise Forbidden(
                f'{bucket.group_resource} "{name}" is forbidden: {why}',
                reason="Forbidden",
                details={"name": name, "kind": bucket.spec.resource},
            )

    def _admit_namespace(self, bucket: _Storage, namespace: str, name: str) -> None:
        """NamespaceLifecycle admission for creates."""
        ns_obj = self._storage.buckets[("", "namespaces")].lookup("", namespace)
        if ns_obj is None:
            raise NotFound(
                f'namespaces "{namespace}" not found',
                reason="NotFound",
                details={"name": namespace, "kind": "namespaces"},
            )
        if "deletionTimestamp" in _meta(ns_obj):
            raise Forbidden(
                f'{bucket.group_resource} "{name}" is forbidden: unable to create new content '
                f"in namespace {namespace} because it is being terminated",
                reason="Forbidden",
                details={
                    "name": name,
                    "group": bucket.spec.group,
                    "kind": bucket.spec.resource,
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {namespace} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )

    def create_locked(
        self,
        bucket: _Storage,
        version: str,
        namespace: str | None,
        obj: Any,
        wake: list[anyio.Event],
        *,
        admit: bool = True,
        load: bool = False,
        dry_run: bool = False,
        applied: bool = False,
    ) -> JSONDict:
        """Create; with ``load`` the object keeps the uid, timestamps, generation and
        deletion state it carries (a copy of an object from elsewhere); with
        ``dry_run`` the object that would be stored, without a resourceVersion.
        ``applied``: the object is a server-side apply's result (not a decoded body: a
        custom resource's nulls are not dropped nor its defaults filled in)."""
        spec = bucket.spec
        crd = self._registry.crd_serving(bucket)
        if crd is not None and "deletionTimestamp" in _meta(crd) and not load:
            raise MethodNotAllowed(
                "create not allowed while custom resource definition is terminating",
                reason="MethodNotAllowed",
            )
        body = json_body(obj, "the object to create")
        check_type(bucket, body)
        apply_defaults(spec.group, version, spec.resource, body)
        if crd is not None and not applied:
            self._decode_custom_resource(crd, version, body)
        to_storage(spec.group, spec.resource, version, body)
        meta = decode_meta(body.get("metadata"))
        if spec.namespaced:
            own = meta.get("namespace")
            if namespace and own and own != namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request",
                    reason="BadRequest",
                )
            ns = namespace or own
            if not ns:
                raise BadRequest(
                    f"a namespace is required to create {bucket.group_resource}",
                    reason="BadRequest",
                )
            meta["namespace"] = ns
        else:
            if namespace:
                raise BadRequest(
                    f"{bucket.group_resource} is cluster-scoped; namespace {namespace!r} "
                    "must not be given",
                    reason="BadRequest",
                )
            meta.pop("namespace", None)
            ns = ""
        display_name = meta.get("name") or meta.get("generateName") or ""
        if spec.namespaced and admit:
            self._admit_namespace(bucket, ns, display_name)
        kept: JSONDict = {}
        if load:
            meta.pop("resourceVersion", None)
            kept = {
                k: meta[k]
                for k in (
                    "uid",
                    "creationTimestamp",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generation",
                )
                if meta.get(k) is not None
            }
        elif "resourceVersion" in meta:
            raise BadRequest(
                "resourceVersion should not be set on objects to be created", reason="BadRequest"
            )
        # The create handler wipes these; not generation, which a kind's strategy
        # sets to 1 or, for kinds without one, keeps as the client sent it.
        for server_owned in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ):
            meta.pop(server_owned, None)
        generation = generation_rule(spec.group, spec.resource)
        if load or spec.computed:
            meta.pop("generation", None)
        errors: list[FieldError] = []
        if not generation.set_on_create and meta.get("generation", 0) < 0:
            errors.append(
                FieldError(
                    "metadata.generation",
                    "FieldValueInvalid",
                    "must be greater than or equal to 0",
                    meta["generation"],
                )
            )
        if not meta.get("name") and (spec.group, spec.resource) == _LIMIT_RANGES:
            # A LimitRange is named before generateName is looked at: a fresh UUID.
            meta["name"] = str(self._uid_factory())
        generate_name = meta.get("generateName")
        crd_name = required_name(body) if (spec.group, spec.resource) == _CRDS else None
        if generate_name:
            errors += validate_name(
                generate_name, spec.name_rule.value, "metadata.generateName", prefix=True
            )
            if crd_name is not None and generate_name != crd_name:
                errors.append(
                    FieldError(
                        "metadata.generateName", "FieldValueInvalid", NAME_MISMATCH, generate_name
                    )
                )
        if not meta.get("name"):
            if generate_name:
                meta["name"] = self._generate_name(bucket, ns, generate_name)
            else:
                errors.append(
                    FieldError(
                        "metadata.name", "FieldValueRequired", "name or generateName is required"
                    )
                )
        name = meta.get("name", "")
        if name:
            errors += validate_name(name, spec.name_rule.value)
            if crd_name is not None and name != crd_name:
                errors.append(FieldError("metadata.name", "FieldValueInvalid", NAME_MISMATCH, name))
        errors += validate_labels(meta.get("labels", {}))
        errors += validate_annotations(meta.get("annotations", {}))
        if not load:
            errors += core_spec_errors(spec.group, spec.resource, body)
            errors += workload_errors(spec.group, spec.resource, body)
            errors += storage_errors(spec.group, spec.resource, body)
        errors += validate_finalizers(meta.get("finalizers", []))
        errors += validate_owner_references(meta.get("ownerReferences", []))
        if not load:
            errors += self._custom_resource_errors(bucket, version, body, None)
            if (spec.group, spec.resource) != ("batch", "jobs"):  # (a Job's: once generated)
                errors += selector_errors(spec.group, spec.resource, body)
            errors += pod_spec_errors(spec.group, spec.resource, body)  # (after the selector's)
            errors += networking_errors(spec.group, spec.resource, body)
            if (spec.group, spec.resource) == _PRIORITY_CLASSES:
                errors += priority_class_errors(body)
            if (spec.group, spec.resource) == _RESOURCE_QUOTAS:
                errors += resource_quota_errors(body)
            if (spec.group, spec.resource) == _LIMIT_RANGES:
                errors += limit_range_errors(body)
            errors += rbac_errors(spec.group, spec.resource, body)
            errors += admission_policy_errors(spec.group, spec.resource, body)
        if not errors and spec.name_rule is NameRule.NONE:
            # The rule every object's name meets, checked once the kind's own checks pass.
            if generate_name:
                errors += validate_name(
                    generate_name, NameRule.PATH_SEGMENT.value, "metadata.generateName", prefix=True
                )
            errors += validate_name(name, NameRule.PATH_SEGMENT.value)
        if errors:
            raise invalid(bucket, name, errors)
        if not load:
            default_namespace_label(spec.group, spec.resource, {"metadata": meta})
        if bucket.lookup(ns, name) is not None:
            raise AlreadyExists(
                f'{bucket.group_resource} "{name}" already exists',
                reason="AlreadyExists",
                details={"name": name, "group": spec.group, "kind": spec.resource},
            )
        if spec.computed:  # the apiserver computes these on read: no uid, no timestamps
            meta["creationTimestamp"] = None
        else:
            meta["uid"] = self._uid_factory()
            meta["creationTimestamp"] = format_time(self._clock())
            generation.create(meta)
            meta.update(kept)
        stored: JSONDict = {
            "apiVersion": f"{spec.group}/{version}" if spec.group else version,
            "kind": spec.kind,
            "metadata": meta,
        }
        for key, value in body.items():
            if key not in ("apiVersion", "kind", "metadata"):
                stored[key] = value
        if (
            "status" in spec.subresources
            and not load
            and (spec.group, spec.resource) not in STATUS_KEPT_ON_CREATE
        ):
            stored.pop("status", None)  # set through /status only (a copy keeps its own)
        if not load and not spec.computed:
            prepared = prepare_for_create(spec.group, version, spec.resource, stored)
            if (spec.group, spec.resource) == ("batch", "jobs"):
                prepared += selector_errors(spec.group, spec.resource, stored)
            if holds_services(bucket):
                prepared += self._allocate_service(stored, None)
            if prepared:
                raise invalid(bucket, name, prepared)
        if spec.group == "" and spec.resource == "namespaces":
            ns_spec = stored.get("spec")
            ns_spec = dict(ns_spec) if isinstance(ns_spec, dict) else {}
            # (the namespace registry's PrepareForCreate: ``kubernetes`` is always there)
            finalizers = ns_spec.get("finalizers")
            if not isinstance(finalizers, list) or not finalizers:
                ns_spec["finalizers"] = ["kubernetes"]
            elif "kubernetes" not in finalizers:
                ns_spec["finalizers"] = [*finalizers, "kubernetes"]
            stored["spec"] = ns_spec
            phase = "Terminating" if "deletionTimestamp" in meta else "Active"
            stored["status"] = {"phase": phase}
        if spec.group == "apiregistration.k8s.io" and spec.resource == "apiservices":
            self._api_service_availability(stored, format_time(self._clock()))
        serving: CRDServing | None = None
        if self._registry.is_crd_bucket(bucket):
            serving, crd_errors = self._crd_admit(stored, None)
            if crd_errors:
                raise invalid(bucket, name, crd_errors)
            finalizers = meta.setdefault("finalizers", [])
            if CRD_CLEANUP_FINALIZER not in finalizers and not load:
                finalizers.append(CRD_CLEANUP_FINALIZER)
        if dry_run:
            stored["metadata"] = _ordered(meta)
            return stored
        out = self._storage.store_locked(bucket, "ADDED", stored, wake)
        if serving is not None:
            self._crd_serve_locked(name, serving, wake)
        if spec.group == FLOWCONTROL and not load:
            self._flowcontrol_written_locked(bucket, out, wake)
        return out

    def update_locked(
        self,
        bucket: _Storage,
        existing: JSONDict,
        body: JSONDict,
        wake: list[anyio.Event],
        *,
        is_patch: bool,
        subresource: str | None = None,
        dry_run: bool = False,
        version: str | None = None,
        applied: bool = False,
    ) -> JSONDict:
        """The generic store's Update: rv check, BeforeUpdate, validation, delete-on-empty.

        Returns the stored object, or after an emptying of finalizers on a
        deleting object the updated object carrying the deletion's rv. With a
        ``status`` subresource, an update of the object keeps the stored status
        and an update of ``/status`` changes the status alone. With ``dry_run``,
        the object the update would leave (the stored rv kept), nothing written.
        ``version``: the version the request names, whose defaults the body gets (see
        :func:`defaults_version`; the stored object's when not given).
        """
        spec = bucket.spec
        stored_version = str(existing["apiVersion"]).rpartition("/")[2]
        written = defaults_version(
            spec.group, spec.resource, version or stored_version, stored_version
        )
        if subresource != "status":
            # (in place: the body is the caller's copy, or a patch's result, computed on
            # a rendered copy of the stored object)
            apply_defaults(spec.group, written, spec.resource, body)
        crd = self._registry.crd_serving(bucket)
        if crd is not None and not applied:
            self._decode_custom_resource(crd, version or stored_version, body)
        to_storage(spec.group, spec.resource, version or stored_version, body)
        if subresource is not None:
            check_type(bucket, body)  # (before the stored object's kind stands in for it)
        split = (
            subresource_update(spec.group, spec.resource, existing, body, subresource)
            if subresource is not None
            else None
        )
        body = split if split is not None else _split_status(existing, body, spec, subresource)
        old = _meta(existing)
        name = old["name"]
        namespace = old.get("namespace", "")
        check_type(bucket, body)
        meta = decode_meta(body.get("metadata"))
        if meta.get("name", name) != name:
            raise name_mismatch(meta["name"], name)
        meta["name"] = name
        if spec.namespaced:
            if meta.get("namespace", namespace) != namespace:
                raise BadRequest(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request",
                    reason="BadRequest",
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        default_namespace_label(spec.group, spec.resource, {"metadata": meta})
        rv = meta.get("resourceVersion")
        if rv is None:
            if not is_patch and not spec.allow_unconditional_update:
                raise invalid(
                    bucket,
                    name,
                    [
                        FieldError(
                            "metadata.resourceVersion",
                            "FieldValueInvalid",
                            "must be specified for an update",
                            0,
                        )
                    ],
                )
        elif rv != old["resourceVersion"]:
            raise conflict(
                bucket,
                name,
                "the object has been modified; please apply your changes to the latest "
                "version and try again",
            )
        meta["resourceVersion"] = old["resourceVersion"]
        # BeforeUpdate: fields the server owns or silently keeps.
        if "generation" in old:
            meta["generation"] = old["generation"]
        else:
            meta.pop("generation", None)
        meta.setdefault("uid", old["uid"])
        meta["creationTimestamp"] = old["creationTimestamp"]
        old_deletion = old.get("deletionTimestamp")
        if old_deletion is not None:
            meta["deletionTimestamp"] = old_deletion
        old_grace = old.get("deletionGracePeriodSeconds")
        if old_grace is not None and meta.get("deletionGracePeriodSeconds") is None:
            meta["deletionGracePeriodSeconds"] = old_grace
        finalizers: list[str] = meta.get("finalizers", [])
        errors: list[FieldError] = []
        if old_deletion is not None:
            added = [f for f in finalizers if f not in set(old.get("finalizers", []))]
            if added:
                errors.append(
                    FieldError(
                        "metadata.finalizers",
                        "FieldValueForbidden",
                        "no new finalizers can be added if the object is being deleted, "
                        f"found new finalizers {added!r}",
                    )
                )
        errors += immutable("metadata.uid", meta["uid"], old["uid"])
        errors += immutable(
            "metadata.deletionTimestamp", meta.get("deletionTimestamp"), old_deletion
        )
        errors += immutable(
            "metadata.deletionGracePeriodSeconds",
            meta.get("deletionGracePeriodSeconds"),
            old_grace,
        )
        errors += validate_labels(meta.get("labels", {}))
        errors += validate_annotations(meta.get("annotations", {}))
        errors += core_spec_update_errors(spec.group, spec.resource, body, existing)
        if subresource is None:
            errors += workload_update_errors(spec.group, spec.resource, body, existing)
            errors += storage_update_errors(spec.group, spec.resource, body, existing)
        errors += validate_finalizers(finalizers)
        errors += validate_owner_references(meta.get("ownerReferences", []))
        errors += self._custom_resource_errors(bucket, stored_version, body, existing)
        if subresource == "status" and spec.group == "" and spec.resource == "pods":
            errors += validate_pod_ips(body.get("status"))
        if subresource != "status":  # (a status write keeps the stored spec)
            errors += selector_update_errors(spec.group, spec.resource, body, existing)
        errors += pod_spec_update_errors(spec.group, spec.resource, body, existing, subresource)
        errors += networking_update_errors(spec.group, spec.resource, body, existing, subresource)
        if (spec.group, spec.resource) == _PRIORITY_CLASSES:
            errors += priority_class_errors(body) + priority_class_update_errors(body, existing)
        if (spec.group, spec.resource) == _RESOURCE_QUOTAS:
            errors += resource_quota_errors(body)
            if subresource is None:
                errors += resource_quota_update_errors(body, existing)
        if (spec.group, spec.resource) == _LIMIT_RANGES:
            errors += limit_range_errors(body)
        errors += rbac_update_errors(spec.group, spec.resource, body, existing)
        if subresource is None and not json_equal(body.get("spec"), existing.get("spec")):
            # (an unchanged spec passes: an object loaded from elsewhere stays writable)
            errors += admission_policy_errors(spec.group, spec.resource, body)
        if errors:
            raise invalid(bucket, name, errors)
        if (spec.group, spec.resource) == _CLAIMS and subresource is None:
            self._admit_resize(bucket, name, body, existing)

        new: JSONDict = {"apiVersion": existing["apiVersion"], "kind": spec.kind, "metadata": meta}
        for key, value in body.items():
            if key not in ("apiVersion", "kind", "metadata"):
                new[key] = value
        sub_errors = subresource_errors(spec.group, spec.resource, existing, new, subresource)
        if sub_errors:
            raise invalid(bucket, name, sub_errors)
        if subresource != "status" and generation_rule(spec.group, spec.resource).bumps(
            existing, new
        ):
            meta["generation"] = meta.get("generation", 0) + 1
        if subresource != "status":
            prepare_for_update(spec.group, spec.resource, existing, new)
            if holds_services(bucket):
                allocation_errors = self._allocate_service(new, existing)
                if allocation_errors:
                    raise invalid(bucket, name, allocation_errors)

        serving: CRDServing | None = None
        if self._registry.is_crd_bucket(bucket) and old_deletion is None:
            serving, crd_errors = self._crd_admit(new, existing)
            if crd_errors:
                raise invalid(bucket, name, crd_errors)
        if should_delete_during_update(finalizers, old) and not self._namespace_held(bucket, new):
            # The last finalizer of a deleting object went away.
            if dry_run:
                new["metadata"] = _ordered(meta)
                return new
            gone = self.remove_locked(bucket, namespace, name, existing, wake)
            new["metadata"] = _ordered({**meta, "resourceVersion": _meta(gone)["resourceVersion"]})
            return new
        new["metadata"] = _ordered(meta)
        if json_equal(new, existing):
            return existing  # a no-op write is not stored (no new rv, no event)
        if dry_run:
            return new
        out = self._storage.store_locked(bucket, "MODIFIED", new, wake)
        if serving is not None:
            self._crd_serve_locked(name, serving, wake)
        if spec.group == FLOWCONTROL:
            self._flowcontrol_written_locked(bucket, out, wake)
        return out

    def _allocate_service(self, service: JSONDict, existing: JSONDict | None) -> list[FieldError]:
        """The Service registry's allocation for ``service`` (a create, or an update of
        ``existing``): what every other stored Service holds is taken."""
        spec = service.get("spec")
        if not isinstance(spec, dict):
            return []
        ips, ports = self._storage.service_allocations.held_by_others(existing)
        old_spec = existing.get("spec") if existing is not None else None
        return allocate(spec, ips, ports, old_spec if isinstance(old_spec, dict) else None)

    def _namespace_held(self, bucket: _Storage, obj: JSONDict) -> bool:
        """A terminating namespace stays while ``spec.finalizers`` is not empty
        (``ShouldDeleteNamespaceDuringUpdate``)."""
        if not (self._terminating_namespaces and _is_namespaces(bucket)):
            return False
        ns_spec = obj.get("spec")
        return isinstance(ns_spec, dict) and bool(ns_spec.get("finalizers"))

    def delete_locked(
        self,
        bucket: _Storage,
        version: str,
        namespace: str,
        name: str,
        policy: PropagationPolicy | None,
        orphan_dependents: bool | None,
        preconditions: Preconditions | None,
        wake: list[anyio.Event],
        *,
        dry_run: bool = False,
    ) -> JSONDict | None:
        """DELETE: the object left (marked deleting, held by finalizers) or None when it
        is removed; with ``dry_run`` the same answer, nothing written."""
        # NamespaceLifecycle admission runs before the registry looks at the object.
        is_namespace = bucket.spec.group == "" and bucket.spec.resource == "namespaces"
        if is_namespace and name in IMMORTAL_NAMESPACES:
            raise Forbidden(
                f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                reason="Forbidden",
            )
        existing = bucket.lookup(namespace, name)
        if existing is None:
            raise not_found(bucket, name)
        meta = _meta(existing)
        if preconditions is not None:
            # (present but empty is a precondition too: it never matches, 1.20 and 1.30)
            if preconditions.uid is not None and preconditions.uid != meta["uid"]:
                raise _precondition_conflict(
                    bucket,
                    name,
                    f"the UID in the precondition ({preconditions.uid}) does not match the UID "
                    f"in record ({meta['uid']}). The object might have been deleted and then "
                    "recreated",
                )
            if (
                preconditions.resource_version is not None
                and preconditions.resource_version != meta["resourceVersion"]
            ):
                raise _precondition_conflict(
                    bucket,
                    name,
                    f"the ResourceVersion in the precondition ({preconditions.resource_version}) "
                    f"does not match the ResourceVersion in record ({meta['resourceVersion']}). "
                    "The object might have been modified",
                )
        if is_namespace and self._terminating_namespaces:
            held = self._delete_namespace_locked(
                bucket, existing, policy, orphan_dependents, wake, dry_run=dry_run
            )
            if held is not None:
                return held
        current = meta.get("finalizers", [])
        changed, finalizers = deletion_finalizers_for_garbage_collection(
            current, bucket.spec.gc_policy(version), policy, orphan_dependents
        )
        # The apiserver takes its update path when the object has finalizers or
        # the GC finalizers change; it keeps the object (marked as deleting)
        # iff the resulting list is non-empty, which is all that matters here
        # because nothing is graceful.
        del changed
        if finalizers:
            updated = mark_as_deleting(existing, self._clock())
            updated_meta = dict(_meta(updated))
            updated_meta["finalizers"] = finalizers
            updated["metadata"] = _ordered(updated_meta)
            if json_equal(updated, existing):
                return existing  # nothing changed: no write, no event
            if dry_run:
                return updated
            kept = self._storage.store_locked(bucket, "MODIFIED", updated, wake)
            if self._registry.is_crd_bucket(bucket):
                return self._crd_cleanup_locked(kept, wake)
            return kept
        if not dry_run:
            self.remove_locked(bucket, namespace, name, existing, wake)
        return None

    @staticmethod
    def _decode_custom_resource(crd: JSONDict, version: str, body: JSONDict) -> None:
        """What the server's decoder does to a custom resource's body after pruning its
        unknown fields: the nulls no field takes are dropped, the defaults filled in."""
        schema = version_schema(crd, version)
        if schema is None:
            return
        content = {k: v for k, v in body.items() if k != "metadata"}
        prune_nulls(content, schema)
        apply_schema_defaults(content, schema)
        for key in [k for k in body if k != "metadata"]:
            if key not in content:
                del body[key]
        body.update(content)

    def _custom_resource_errors(
        self, bucket: _Storage, version: str, body: JSONDict, existing: JSONDict | None
    ) -> list[FieldError]:
        """What the CRD's structural schema refuses in a custom resource
        (:func:`schema_errors`; an update ratchets against ``existing``)."""
        crd = self._registry.crd_serving(bucket)
        schema = version_schema(crd, version) if crd is not None else None
        if schema is None:
            return []
        old = (
            {k: v for k, v in existing.items() if k != "metadata"} if existing is not None else None
        )
        return schema_errors(
            schema,
            {k: v for k, v in body.items() if k != "metadata"},
            old,
            body.get("metadata"),
            existing.get("metadata") if existing is not None else None,
        )

    def _api_service_availability(self, svc: JSONDict, now: str) -> None:
        """kube-aggregator's availability check, for an APIService that states none.

        A local APIService (no ``spec.service``) is always available; an
        aggregated one is not here, since no extension server runs in memory:
        its Service is missing or has no endpoints. A status given with the
        object is kept (tests use it to stage an available extension).
        """
        status = svc.setdefault("status", {})
        conditions = status.setdefault("conditions", [])
        if any(c.get("type") == "Available" for c in conditions):
            return
        service = (svc.get("spec") or {}).get("service")
        if not service:
            state = ("True", "Local", "Local APIServices are always available")
        else:
            ns, name = service.get("namespace", ""), service.get("name", "")
            if self._storage.buckets[("", "services")].lookup(ns, name) is None:
                state = ("False", "ServiceNotFound", f'service/{name} in "{ns}" is not present')
            else:
                why = f'endpoints for service/{name} in "{ns}" have no addresses'
                state = ("False", "MissingEndpoints", why)
        status_, reason, message = state
        conditions.append(
            {
                "type": "Available",
                "status": status_,
                "lastTransitionTime": now,
                "reason": reason,
                "message": message,
            }
        )

    # -- the APF configuration controller's FlowSchema status (see ._flowschemas)

    def _flowcontrol_written_locked(
        self, bucket: _Storage, obj: JSONDict, wake: list[anyio.Event]
    ) -> None:
        """After a FlowSchema is stored, its ``Dangling`` condition; after a
        PriorityLevelConfiguration is created, that of the FlowSchemas naming it."""
        if bucket.spec.resource == "flowschemas":
            self._flow_schema_status_locked(bucket, obj, wake)
        elif bucket.spec.resource == "prioritylevelconfigurations":
            self._priority_level_changed_locked(bucket, _meta(obj)["name"], wake)

    def _flow_schema_status_locked(
        self, flow_schemas: _Storage, flow_schema: JSONDict, wake: list[anyio.Event]
    ) -> None:
        levels = self._storage.buckets.get((FLOWCONTROL, "prioritylevelconfigurations"))
        exists = levels is not None and levels.lookup("", level_named(flow_schema)) is not None
        updated = with_dangling(flow_schema, exists, format_time(self._clock()))
        if updated is not None:
            self._storage.store_locked(flow_schemas, "MODIFIED", updated, wake)

    def _priority_level_changed_locked(
        self, levels: _Storage, name: str, wake: list[anyio.Event]
    ) -> None:
        """A PriorityLevelConfiguration came or went: the FlowSchemas naming it."""
        if levels.spec.resource != "prioritylevelconfigurations":
            return
        flow_schemas = self._storage.buckets.get((FLOWCONTROL, "flowschemas"))
        if flow_schemas is None:
            return
        for flow_schema in builtins.list(flow_schemas.iter_sorted(None)):
            if level_named(flow_schema) == name:
                self._flow_schema_status_locked(flow_schemas, flow_schema, wake)

    # -- the CRD lifecycle: admission, serving, and the finalizer
    # (apiextensions-apiserver's finalizer controller, run inline)

    def _crd_admit(
        self, obj: JSONDict, old: JSONDict | None
    ) -> tuple[CRDServing, builtins.list[FieldError]]:
        """Validate a CRD about to be stored (created or updated) and fill its status."""
        serving, errors = crd_serving(obj)
        if serving is None:
            return CRDServing("", "", "", True, (), ""), errors
        name = _meta(obj)["name"]
        if old is not None:
            if name != required_name(obj):
                errors.insert(
                    0, FieldError("metadata.name", "FieldValueInvalid", NAME_MISMATCH, name)
                )
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
        errors += self._registry.crd_conflicts(name, serving)
        if not errors:
            obj["status"] = crd_status(obj, serving, format_time(self._clock()))
        return serving, errors

    def _crd_serve_locked(
        self, name: str, serving: CRDServing, wake: builtins.list[anyio.Event]
    ) -> None:
        if not serving.served:
            bucket = self._registry.crd_serves(name, serving)
            if bucket is not None:
                self.unregister_locked(bucket, wake)
            return
        self._registry.serve_crd_locked(name, serving, wake)

    def _crd_removed_locked(self, crd: JSONDict, wake: builtins.list[anyio.Event]) -> None:
        for bucket in self._registry.served_by_crd(_meta(crd)["name"]):
            self.unregister_locked(bucket, wake)

    def _crd_instance_removed_locked(self, crd: JSONDict, wake: list[anyio.Event]) -> None:
        meta = _meta(crd)
        if "deletionTimestamp" in meta and meta["name"] not in self._crd_cleaning:
            self._crd_cleanup_locked(crd, wake)

    def _crd_cleanup_locked(self, crd: JSONDict, wake: list[anyio.Event]) -> JSONDict | None:
        """Delete a terminating CRD's custom objects; once none is left, drop the finalizer.

        Objects held by finalizers of their own keep the CRD (and the kind) until
        they go, as with kube-apiserver; returns the CRD, or None once removed.
        """
        meta = _meta(crd)
        name = meta["name"]
        if CRD_CLEANUP_FINALIZER not in meta.get("finalizers", ()):
            return crd
        remaining = 0
        self._crd_cleaning.add(name)
        try:
            for bucket in self._registry.served_by_crd(name):
                version = bucket.spec.preferred_version
                for obj in list(bucket.iter_sorted(None)):
                    om = _meta(obj)
                    if "deletionTimestamp" not in om:
                        ns = om.get("namespace", "")
                        self.delete_locked(bucket, version, ns, om["name"], None, None, None, wake)
                remaining += bucket.count()
        finally:
            self._crd_cleaning.discard(name)
        crds = self._registry.bucket(*CRD_KEY)
        assert crds is not None
        current = crds.lookup("", name)
        if current is None:
            return None
        updated = _with_terminating_condition(current, remaining, format_time(self._clock()))
        if remaining:
            if json_equal(updated, current):
                return current
            return self._storage.store_locked(crds, "MODIFIED", updated, wake)
        umeta = dict(_meta(updated))
        finalizers = [f for f in umeta.get("finalizers", ()) if f != CRD_CLEANUP_FINALIZER]
        if finalizers:
            umeta["finalizers"] = finalizers
            updated["metadata"] = umeta
            return self._storage.store_locked(crds, "MODIFIED", updated, wake)
        umeta.pop("finalizers", None)
        updated["metadata"] = umeta
        self.remove_locked(crds, "", name, updated, wake)
        return None

    def _delete_namespace_locked(
        self,
        bucket: _Storage,
        existing: JSONDict,
        policy: PropagationPolicy | None,
        orphan_dependents: bool | None,
        wake: list[anyio.Event],
        *,
        dry_run: bool = False,
    ) -> JSONDict | None:
        """The namespace registry's DELETE (item 90); None means "go on with the
        generic DELETE" (the namespace is terminating and already finalized)."""
        meta = _meta(existing)
        if meta.get("deletionTimestamp") is None:
            current = set(meta.get("finalizers", []))
            if orphan_dependents is not None:
                orphan, foreground = orphan_dependents, not orphan_dependents
            elif policy is not None:
                orphan = policy is PropagationPolicy.ORPHAN
                foreground = policy is PropagationPolicy.FOREGROUND
            else:
                orphan = FINALIZER_ORPHAN in current
                foreground = FINALIZER_FOREGROUND in current
            wanted = set(current)
            for finalizer, on in ((FINALIZER_ORPHAN, orphan), (FINALIZER_FOREGROUND, foreground)):
                if on:
                    wanted.add(finalizer)
                else:
                    wanted.discard(finalizer)
            updated = mark_as_deleting(existing, self._clock())
            updated_meta = dict(_meta(updated))
            if wanted != current:
                updated_meta["finalizers"] = sorted(wanted)
            if not updated_meta.get("finalizers"):
                updated_meta.pop("finalizers", None)
            updated["metadata"] = _ordered(updated_meta)
            status = dict(updated.get("status") or {})
            status["phase"] = "Terminating"
            updated["status"] = status
            if dry_run:
                return updated
            return self._storage.store_locked(bucket, "MODIFIED", updated, wake)
        if self._namespace_held(bucket, existing):
            return existing
        return None


def _with_terminating_condition(crd: JSONDict, remaining: int, now: str) -> JSONDict:
    """The CRD with kube-apiserver's ``Terminating`` condition for a deletion in progress."""
    status = dict(crd.get("status") or {})
    before = status.get("conditions") or []
    old = next((c for c in before if c.get("type") == "Terminating"), None)
    condition = {
        "type": "Terminating",
        "status": "True",
        "lastTransitionTime": old.get("lastTransitionTime", now) if old else now,
        "reason": "InstanceDeletionInProgress" if remaining else "InstanceDeletionCompleted",
        "message": "CustomResource deletion is in progress"
        if remaining
        else "removed all instances",
    }
    status["conditions"] = [c for c in before if c.get("type") != "Terminating"] + [condition]
    out = dict(crd)
    out["status"] = status
    return out


def _precondition_conflict(bucket: _Storage, name: str, why: str) -> Conflict:
    """A DELETE's failed precondition, as the registry's BeforeDelete words it: the
    object named by its kind (``Pod``, ``Deployment.apps``), not its resource."""
    kind, group = bucket.spec.kind, bucket.spec.group
    return Conflict(
        f'Operation cannot be fulfilled on {kind}.{group} "{name}": {why}'
        if group
        else f'Operation cannot be fulfilled on {kind} "{name}": {why}',
        reason="Conflict",
        details={"name": name, "group": group, "kind": kind},
    )


def _split_status(
    existing: JSONDict, body: JSONDict, spec: ResourceSpec, subresource: str | None
) -> JSONDict:
    """What an update may change when the kind has a ``status`` subresource.

    A Namespace's own update still writes its status (and ``spec.finalizers``):
    serve's namespace controller writes them so, where kube-apiserver would keep
    both and its controller writes ``/status`` and ``/finalize``."""
    if subresource == "status":
        new = {k: v for k, v in existing.items() if k != "status"}
        # (the body's resourceVersion: the optimistic-concurrency check still applies)
        new["metadata"] = meta_for_status(existing, body)
        if "status" in body:
            new["status"] = body["status"]
        return new
    if "status" not in spec.subresources or _is_namespace_spec(spec):
        return body
    new = {k: v for k, v in body.items() if k != "status"}
    if "status" in existing:
        new["status"] = existing["status"]
    return new


def _is_namespace_spec(spec: ResourceSpec) -> bool:
    return spec.group == "" and spec.resource == "namespaces"
