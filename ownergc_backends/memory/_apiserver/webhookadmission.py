"""Admission webhooks as plugins of the facade's admission chain.

kube-apiserver runs ``MutatingAdmissionWebhook`` and
``ValidatingAdmissionWebhook`` on every server; so does the facade
(:class:`~ownergc_backends.memory.http.KubeAPIServer` and ``ownergc serve``).
The plugins read the stored ``MutatingWebhookConfiguration`` /
``ValidatingWebhookConfiguration`` objects (admissionregistration.k8s.io/v1)
and hand each write to the dispatcher in :mod:`.._webhooks`, which matches,
calls and interprets the webhooks.

The real server reads the configurations from an informer cache, not from
storage per request; here they are read in-process (unrecorded) and only when
some exist: a server with no configuration costs one count per write, and the
handlers do not read the old object for it (``wants_old_object``).

Warnings from webhooks are appended to the request's warnings, which the
response writer sends as ``Warning: 299 - "..."`` headers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ownergc.errors import NotFound, RESTMappingError
from ownergc.protocols import APIResource, JSONDict

from .. import _webhooks
from .._objects import NAMESPACE_NAME_LABEL
from .._resources import BUILTIN_RESOURCES
from ..store import InMemoryStore
from .admission import AdmissionAttributes, AdmissionChain
from .podadmission import PodAdmission

__all__ = [
    "MutatingWebhooks",
    "StoreWebhookSource",
    "ValidatingWebhooks",
    "webhook_admission",
]

_REG: Final = _webhooks.REGISTRATION
MUTATING: Final = APIResource(
    _REG, "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False
)
VALIDATING: Final = APIResource(
    _REG, "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False
)
#: The options kind each operation's AdmissionReview carries.
_OPTIONS_KIND: Final = {
    "CREATE": "CreateOptions",
    "UPDATE": "UpdateOptions",
    "DELETE": "DeleteOptions",
}


def _count(store: InMemoryStore, resource: APIResource) -> int:
    try:
        return store.object_count(resource)
    except NotFound:  # the kind was unregistered: nothing to honour
        return 0


class StoreWebhookSource:
    """What the dispatcher reads, from the store behind the facade."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store

    def webhook_configurations(self, kind: str) -> Sequence[JSONDict]:
        resource = MUTATING if kind == "Mutating" else VALIDATING
        if not _count(self.store, resource):
            return ()
        return self.store.objects_of(resource)

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        found = self.store.get_object("v1", "Namespace", name)
        if found is None:
            return None
        labels = (found.get("metadata") or {}).get("labels") or {}
        plain = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
        # kube-apiserver labels every namespace with its name (the recorded 1.24 cluster's
        # namespaces carry it); selectors such as deploy/webhook's rely on it.
        plain[NAMESPACE_NAME_LABEL] = name
        return plain

    def equivalents(self, group: str, resource: str) -> Sequence[tuple[str, str, str, str]]:
        """Every served version of ``group``/``resource`` (a CRD's, or a built-in's)."""
        versions: list[str] = []
        for spec in BUILTIN_RESOURCES:
            if (spec.group, spec.resource) == (group, resource):
                versions = list(spec.versions)
        try:
            served = self.store.resource_by_name(f"{resource}.{group}" if group else resource)
        except (RESTMappingError, NotFound):  # not served (any more): no equivalents
            return ()
        kind = served.kind
        crd = self.store.crd_for(served)
        if crd is not None:
            versions = [
                str(v.get("name"))
                for v in (crd.get("spec") or {}).get("versions") or ()
                if isinstance(v, dict) and v.get("served", True)
            ]
        return [(group, v, resource, kind) for v in versions or [served.version]]

    def service_address(self, namespace: str, name: str, port: int) -> tuple[str, int] | None:
        """The Service's Endpoints' first address, at the port its ``port`` targets."""
        service = self.store.get_object("v1", "Service", name, namespace)
        endpoints = self.store.get_object("v1", "Endpoints", name, namespace)
        if service is None or endpoints is None:
            return None
        port_name, target = "", port
        for entry in (service.get("spec") or {}).get("ports") or ():
            if isinstance(entry, dict) and entry.get("port") == port:
                port_name = str(entry.get("name") or "")
                if isinstance(entry.get("targetPort"), int):
                    target = int(entry["targetPort"])
        for subset in endpoints.get("subsets") or ():
            addresses = [a for a in subset.get("addresses") or () if a.get("ip")]
            if not addresses:
                continue
            for entry in subset.get("ports") or ():
                if str(entry.get("name") or "") == port_name and isinstance(entry.get("port"), int):
                    target = int(entry["port"])
            return str(addresses[0]["ip"]), target
        return None


def _dispatch_attributes(attrs: AdmissionAttributes) -> _webhooks.AdmissionAttributes:
    """The facade's attributes as the dispatcher takes them."""
    resource = attrs.resource
    obj = attrs.obj if isinstance(attrs.obj, dict) else None
    meta = (obj or {}).get("metadata")
    if obj is not None and attrs.namespace and isinstance(meta, dict) and not meta.get("namespace"):
        # The object as the server holds it: in the namespace of the URL (kubectl's
        # create bodies often leave it out).
        obj = {**obj, "metadata": {**meta, "namespace": attrs.namespace}}
    name = attrs.name or str(((obj or {}).get("metadata") or {}).get("name") or "")
    options: JSONDict = {
        "kind": _OPTIONS_KIND[attrs.operation],
        "apiVersion": "meta.k8s.io/v1",
        **attrs.options,
    }
    user: JSONDict = {"username": attrs.user.name, "groups": list(attrs.user.groups)}
    if attrs.user.uid:
        user["uid"] = attrs.user.uid
    kind_group_version = None
    kind = resource.kind
    if attrs.kind is not None:  # a subresource's own kind (pods/eviction: an Eviction)
        kind_group, kind_version, kind = attrs.kind
        kind_group_version = (kind_group, kind_version)
    return _webhooks.AdmissionAttributes(
        operation=attrs.operation,
        group=resource.group,
        version=resource.version,
        resource=resource.resource,
        kind=kind,
        kind_group_version=kind_group_version,
        namespace=attrs.namespace or "",
        name=name,
        object=obj,
        old_object=attrs.old_obj,
        subresource=attrs.subresource or "",
        dry_run=attrs.dry_run,
        options=options,
        user_info=user,
    )


class MutatingWebhooks:
    """``MutatingAdmissionWebhook``: JSONPatches from the matching hooks, in order."""

    def __init__(self, store: InMemoryStore, dispatcher: _webhooks.WebhookAdmission) -> None:
        self.store = store
        self.dispatcher = dispatcher

    @property
    def wants_old_object(self) -> bool:
        """Only while a configuration exists: otherwise a write reads nothing more."""
        return _count(self.store, MUTATING) > 0

    async def admit(self, attrs: AdmissionAttributes) -> JSONDict | None:
        if not isinstance(attrs.obj, dict) and attrs.operation != "DELETE":
            return attrs.obj  # not an object: the store answers it with its own error
        if not _count(self.store, MUTATING):
            return attrs.obj
        outcome = await self.dispatcher.mutate(_dispatch_attributes(attrs), attrs.warnings)
        return outcome.object if attrs.obj is not None else None


class ValidatingWebhooks:
    """``ValidatingAdmissionWebhook``: the matching hooks at once; any may refuse."""

    def __init__(self, store: InMemoryStore, dispatcher: _webhooks.WebhookAdmission) -> None:
        self.store = store
        self.dispatcher = dispatcher

    @property
    def wants_old_object(self) -> bool:
        """Only while a configuration exists: otherwise a write reads nothing more."""
        return _count(self.store, VALIDATING) > 0

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if not isinstance(attrs.obj, dict) and attrs.operation != "DELETE":
            return
        if not _count(self.store, VALIDATING):
            return
        await self.dispatcher.validate(_dispatch_attributes(attrs), attrs.warnings)


def webhook_admission(
    store: InMemoryStore,
    *,
    caller: _webhooks.WebhookCaller | None = None,
    service_accounts: bool = False,
) -> AdmissionChain:
    """The admission chain kube-apiserver runs by default, as far as the facade has it:
    the Pod plugins (:mod:`.podadmission`; ``service_accounts`` turns on the whole
    ServiceAccount plugin), the mutating webhooks, then ValidatingAdmissionPolicy
    (:mod:`.policyadmission`) and the validating webhooks (``caller`` replaces the
    HTTPS POST, for tests)."""
    from .policyadmission import ValidatingAdmissionPolicies  # (it imports this module)

    dispatcher = _webhooks.WebhookAdmission(StoreWebhookSource(store), caller=caller)
    return AdmissionChain(
        [
            PodAdmission(store, service_accounts=service_accounts),
            MutatingWebhooks(store, dispatcher),
        ],
        [ValidatingAdmissionPolicies(store), ValidatingWebhooks(store, dispatcher)],
    )
