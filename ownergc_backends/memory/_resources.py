"""The resource table of the in-memory apiserver: built-in kinds and how each one behaves.

A :class:`ResourceSpec` is one group/resource with all its served versions;
objects are stored once per group/resource and shown in whichever version
the request names (no field conversion: only ``apiVersion`` changes, which is
what a CRD with conversion strategy ``None`` does).

The group versions are the ones a default-configured kube-apiserver v1.30.0
serves for these kinds: a recorded v1.24 server's (tests/data/real-apiserver-1.24),
less the versions 1.25-1.29 stopped serving (:data:`REMOVED_VERSIONS`, the core's
offline table of them), plus
``flowcontrol.apiserver.k8s.io/v1`` (1.29, preferred) and ``v1beta3`` (1.26) and
``storage.k8s.io/v1`` CSIStorageCapacity (GA in 1.24, after the recorded build).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from ownergc._core.builtin_kinds import REMOVED_VERSIONS
from ownergc.protocols import APIResource

__all__ = [
    "BUILTIN_RESOURCES",
    "REMOVED_VERSIONS",
    "STANDARD_VERBS",
    "GCPolicy",
    "NameRule",
    "ResourceSpec",
]

#: What kube-apiserver reports for an ordinary resource.
STANDARD_VERBS: frozenset[str] = frozenset(
    {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)
_NAMESPACE_VERBS = STANDARD_VERBS - {"deletecollection"}


class GCPolicy(str, enum.Enum):
    """A resource's ``DefaultGarbageCollectionPolicy`` (item 84 of gc-semantics.md)."""

    #: No finalizer by default (Kubernetes' DeleteDependents also means this).
    BACKGROUND = "Background"
    #: DELETE without a policy adds the ``orphan`` finalizer.
    ORPHAN = "Orphan"
    #: The GC finalizers are never added (core Events).
    UNSUPPORTED = "Unsupported"


class NameRule(str, enum.Enum):
    """How ``metadata.name`` is validated for a resource."""

    DNS_SUBDOMAIN = "dns1123-subdomain"
    DNS_LABEL = "dns1123-label"
    #: Services: a DNS-1035 label (a letter first).
    DNS1035_LABEL = "dns1035-label"
    #: RBAC objects and PodDisruptionBudgets: anything usable as a URL path segment.
    PATH_SEGMENT = "path-segment"
    #: Core Events and CertificateSigningRequests: the kind checks no name of its own
    #: (the path-segment rule every object meets still applies).
    NONE = "none"


@dataclass(frozen=True)
class ResourceSpec:
    """One group/resource with every served version and its apiserver behaviour."""

    group: str
    resource: str
    kind: str
    namespaced: bool
    versions: tuple[str, ...]
    preferred_version: str
    verbs: frozenset[str] = STANDARD_VERBS
    #: Default GC policy per served version (the default may depend on the version).
    gc_policies: Mapping[str, GCPolicy] = field(default_factory=dict)
    #: Built-in types accept strategic merge patch; custom resources answer 415.
    strategic_merge_patch: bool = True
    #: PUT without ``metadata.resourceVersion`` is allowed (False for custom resources).
    allow_unconditional_update: bool = True
    name_rule: NameRule = NameRule.DNS_SUBDOMAIN
    #: Objects computed by the apiserver on read (ComponentStatus): no uid, no timestamps.
    computed: bool = False
    #: Subresources served (a CRD's ``subresources``: ``status``, ``scale``).
    subresources: frozenset[str] = frozenset()
    #: The scale subresource's (specReplicasPath, statusReplicasPath, labelSelectorPath).
    scale_paths: tuple[str, str, str | None] | None = None

    def gc_policy(self, version: str) -> GCPolicy:
        return self.gc_policies.get(version, GCPolicy.BACKGROUND)

    def api_resource(self, version: str) -> APIResource:
        return APIResource(
            group=self.group,
            version=version,
            resource=self.resource,
            kind=self.kind,
            namespaced=self.namespaced,
            verbs=self.verbs,
            preferred=version == self.preferred_version,
        )

    def api_resources(self) -> tuple[APIResource, ...]:
        return tuple(self.api_resource(v) for v in self.versions)


def _builtin(
    group: str,
    version: str,
    resource: str,
    kind: str,
    *,
    namespaced: bool = True,
    policy: GCPolicy = GCPolicy.BACKGROUND,
    verbs: frozenset[str] = STANDARD_VERBS,
    name_rule: NameRule = NameRule.DNS_SUBDOMAIN,
    older: tuple[str, ...] = (),
    computed: bool = False,
    subresources: frozenset[str] = frozenset(),
) -> ResourceSpec:
    """A built-in resource served at ``version`` (preferred) and the ``older`` versions."""
    versions = (version, *older)
    return ResourceSpec(
        group=group,
        resource=resource,
        kind=kind,
        namespaced=namespaced,
        versions=versions,
        preferred_version=version,
        verbs=verbs,
        gc_policies={v: policy for v in versions},
        name_rule=name_rule,
        computed=computed,
        subresources=subresources,
        scale_paths=_WORKLOAD_SCALE if "scale" in subresources else None,
    )


#: The built-in workloads' ``/scale`` (autoscaling/v1 Scale): replicas in ``spec`` and
#: ``status``; the selector is rendered from ``spec.selector`` (see ``_scale``).
_WORKLOAD_SCALE: tuple[str, str, str | None] = (".spec.replicas", ".status.replicas", None)
_SCALE = frozenset({"scale"})
#: Kinds a client creates to ask a question (reviews): answered, never stored.
_CREATE_ONLY = frozenset({"create"})


_RBAC = "rbac.authorization.k8s.io"
_FLOWCONTROL = "flowcontrol.apiserver.k8s.io"
_ADMISSION = "admissionregistration.k8s.io"

#: The built-in resources with a ``status`` subresource, as a real v1.24 server's
#: discovery lists them (tests/data: the recorded discovery; 1.30 has the same, in
#: every version it serves of them): a create resets the
#: status and an update of the object keeps the stored one; ``/status`` writes it.
#: Not here, though kube-apiserver has them: namespaces, CRDs and APIServices,
#: whose status serve's own controllers keep.
_WITH_STATUS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "pods"),
        ("", "services"),
        ("", "nodes"),
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("", "replicationcontrollers"),
        ("", "resourcequotas"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("policy", "poddisruptionbudgets"),
        ("networking.k8s.io", "ingresses"),
        ("certificates.k8s.io", "certificatesigningrequests"),
        ("storage.k8s.io", "volumeattachments"),
        ("flowcontrol.apiserver.k8s.io", "flowschemas"),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
        (_ADMISSION, "validatingadmissionpolicies"),
    }
)


def _with_status(spec: ResourceSpec) -> ResourceSpec:
    if (spec.group, spec.resource) not in _WITH_STATUS:
        return spec
    return dataclasses.replace(spec, subresources=spec.subresources | {"status"})


#: Served from the start, in discovery order.
BUILTIN_RESOURCES: tuple[ResourceSpec, ...] = (
    # A Binding is created to bind a Pod (``pods/binding`` or, the older way, here);
    # never stored (``_apiserver/binding.py``).
    _builtin("", "v1", "bindings", "Binding", verbs=_CREATE_ONLY),
    _builtin(
        "",
        "v1",
        "namespaces",
        "Namespace",
        namespaced=False,
        verbs=_NAMESPACE_VERBS,
        name_rule=NameRule.DNS_LABEL,
        subresources=frozenset({"finalize", "status"}),
    ),
    _builtin("", "v1", "nodes", "Node", namespaced=False),
    _builtin(
        "",
        "v1",
        "pods",
        "Pod",
        subresources=frozenset({"binding", "ephemeralcontainers", "eviction"}),
    ),
    _builtin("", "v1", "configmaps", "ConfigMap"),
    _builtin("", "v1", "secrets", "Secret"),
    _builtin("", "v1", "services", "Service", name_rule=NameRule.DNS1035_LABEL),
    _builtin("", "v1", "serviceaccounts", "ServiceAccount", subresources=frozenset({"token"})),
    _builtin(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        policy=GCPolicy.ORPHAN,
        subresources=_SCALE,
    ),
    _builtin("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
    _builtin("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False),
    _builtin("", "v1", "events", "Event", policy=GCPolicy.UNSUPPORTED, name_rule=NameRule.NONE),
    _builtin("", "v1", "endpoints", "Endpoints"),
    _builtin("", "v1", "limitranges", "LimitRange"),
    _builtin("", "v1", "podtemplates", "PodTemplate"),
    _builtin("", "v1", "resourcequotas", "ResourceQuota"),
    # Computed by the apiserver on each read: listable, not deletable, no uid.
    _builtin(
        "",
        "v1",
        "componentstatuses",
        "ComponentStatus",
        namespaced=False,
        verbs=frozenset({"get", "list"}),
        computed=True,
    ),
    _builtin(
        _ADMISSION,
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        namespaced=False,
    ),
    _builtin(
        _ADMISSION,
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        namespaced=False,
    ),
    # GA in 1.30 (admissionregistration.k8s.io/v1); v1beta1 is off by default there.
    _builtin(
        _ADMISSION,
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        namespaced=False,
    ),
    _builtin(
        _ADMISSION,
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        namespaced=False,
    ),
    # The core group's APIService is named "v1." (version.group, empty group).
    _builtin(
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "APIService",
        namespaced=False,
        name_rule=NameRule.PATH_SEGMENT,
    ),
    _builtin("apps", "v1", "controllerrevisions", "ControllerRevision"),
    _builtin("apps", "v1", "deployments", "Deployment", subresources=_SCALE),
    _builtin("apps", "v1", "replicasets", "ReplicaSet", subresources=_SCALE),
    _builtin("apps", "v1", "daemonsets", "DaemonSet"),
    _builtin("apps", "v1", "statefulsets", "StatefulSet", subresources=_SCALE),
    _builtin("batch", "v1", "jobs", "Job", policy=GCPolicy.ORPHAN),
    _builtin("batch", "v1", "cronjobs", "CronJob"),
    _builtin(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        older=("v1",),
    ),
    _builtin(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "CertificateSigningRequest",
        namespaced=False,
        name_rule=NameRule.NONE,
    ),
    _builtin("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice"),
    # v1 (1.29) preferred; v1beta3 (1.26) still served, deprecated, until 1.32.
    _builtin(_FLOWCONTROL, "v1", "flowschemas", "FlowSchema", namespaced=False, older=("v1beta3",)),
    _builtin(
        _FLOWCONTROL,
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        namespaced=False,
        older=("v1beta3",),
    ),
    _builtin("networking.k8s.io", "v1", "ingresses", "Ingress"),
    _builtin("networking.k8s.io", "v1", "ingressclasses", "IngressClass", namespaced=False),
    _builtin("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"),
    _builtin("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", namespaced=False),
    _builtin(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        name_rule=NameRule.PATH_SEGMENT,
    ),
    _builtin("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False),
    _builtin("storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False),
    _builtin("storage.k8s.io", "v1", "csidrivers", "CSIDriver", namespaced=False),
    _builtin("storage.k8s.io", "v1", "csinodes", "CSINode", namespaced=False),
    _builtin("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", namespaced=False),
    _builtin("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity"),
    _builtin(_RBAC, "v1", "roles", "Role", name_rule=NameRule.PATH_SEGMENT),
    _builtin(_RBAC, "v1", "rolebindings", "RoleBinding", name_rule=NameRule.PATH_SEGMENT),
    _builtin(
        _RBAC,
        "v1",
        "clusterroles",
        "ClusterRole",
        namespaced=False,
        name_rule=NameRule.PATH_SEGMENT,
    ),
    _builtin(
        _RBAC,
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        namespaced=False,
        name_rule=NameRule.PATH_SEGMENT,
    ),
    # Reviews: created to ask a question, answered and never stored (``_reviews``).
    _builtin(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        namespaced=False,
        verbs=_CREATE_ONLY,
    ),
    _builtin(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        namespaced=False,
        verbs=_CREATE_ONLY,
    ),
    _builtin(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        verbs=_CREATE_ONLY,
    ),
    _builtin(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        namespaced=False,
        verbs=_CREATE_ONLY,
    ),
    _builtin(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        namespaced=False,
        verbs=_CREATE_ONLY,
    ),
    _builtin(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
        namespaced=False,
        verbs=_CREATE_ONLY,
    ),
    _builtin("coordination.k8s.io", "v1", "leases", "Lease"),
    _builtin("events.k8s.io", "v1", "events", "Event", policy=GCPolicy.UNSUPPORTED),
    _builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
    ),
)
BUILTIN_RESOURCES = tuple(_with_status(spec) for spec in BUILTIN_RESOURCES)

#: The connect subresources of the core group (served by _apiserver/connect.py: serve
#: runs no kubelet, and answers them as kube-apiserver does when it cannot reach one).
_CONNECT: Mapping[str, frozenset[str]] = {
    "pods": frozenset({"log", "exec", "attach", "portforward", "proxy"}),
    "nodes": frozenset({"proxy"}),
    "services": frozenset({"proxy"}),
}


def _with_connect(spec: ResourceSpec) -> ResourceSpec:
    extra = _CONNECT.get(spec.resource) if not spec.group else None
    return dataclasses.replace(spec, subresources=spec.subresources | extra) if extra else spec


BUILTIN_RESOURCES = tuple(_with_connect(spec) for spec in BUILTIN_RESOURCES)
