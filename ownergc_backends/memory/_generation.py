"""``metadata.generation`` as kube-apiserver v1.30 keeps it: which kinds have one and what bumps it.

Generation is not generic in kube-apiserver: each kind's registry strategy
decides. ``PrepareForCreate`` of the kinds below sets it to 1 and their
``PrepareForUpdate`` adds 1 when the fields they watch change (compared with
the stored object); every other built-in kind (ConfigMap, Secret, Service,
Namespace, Pod in v1.30, ...) never sets it. Around the strategies, the
generic registry:

* on create keeps whatever the client sent: the create handler wipes uid,
  creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds and
  selfLink, not generation, so a ConfigMap POSTed with ``generation: 5`` is
  stored with it (a negative one fails ObjectMeta validation);
* on update first resets generation to the stored value (``BeforeUpdate``:
  "requests cannot update generation"), then runs the strategy;
* on the DELETE that first sets deletionTimestamp bumps it only when it is
  above 0 (``markAsDeleting``; see ``_deletion.mark_as_deleting``);
* on an update of the ``status`` subresource never bumps it.

Custom resources always have one: 1 at create, +1 when anything but
``metadata`` changes (so a status change bumps it when the kind has no status
subresource; with one, an update of the object keeps the stored status and
``/status`` never bumps).

The rules, per registry strategy of kubernetes v1.30 (``pkg/registry/<group>/
<kind>/strategy.go``; custom resources and CRDs in apiextensions-apiserver's
``pkg/registry``) -- at create / bumped on update when this changes:

* ReplicationController, ReplicaSet, DaemonSet, StatefulSet, Job, CronJob,
  FlowSchema, PriorityLevelConfiguration, Ingress, IngressClass,
  NetworkPolicy, PodDisruptionBudget, CustomResourceDefinition: 1 / ``spec``;
* Deployment: 1 / ``spec`` or ``metadata.annotations`` (they are copied to
  its ReplicaSets);
* PodTemplate: 1 / ``template``;
* MutatingWebhookConfiguration, ValidatingWebhookConfiguration: 1 /
  ``webhooks``;
* ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding: 1 / ``spec``;
* EndpointSlice: 1 / anything but metadata, or ``metadata.labels``;
* PriorityClass: 1 / never (its update strategy is empty);
* CSIDriver: not set / ``spec`` (so its first spec change makes it 1);
* custom resources: 1 / anything but metadata;
* every other built-in kind (ConfigMap, Secret, Service, Endpoints,
  Namespace, Node, Pod -- pods got one in v1.33 --, ServiceAccount, PVC, PV,
  Event, LimitRange, ResourceQuota, ControllerRevision, HPA -- it got one
  after v1.30 --, CSR, StorageClass, CSINode, VolumeAttachment,
  CSIStorageCapacity, RuntimeClass, Lease, RBAC, APIService): not set /
  never.

"Changes" is the strategies' semantic deep-equal of typed objects; here, with
schemaless objects, two values are the same when they are equal once nulls,
empty objects and empty lists are left out (what the typed decoding drops for
``omitempty`` fields). Custom resources compare their content exactly, as the
unstructured comparison does.

Where that falls short of the typed comparison (a deliberate difference: the
store keeps no types): a plain field written with its zero value
(``paused: false``, ``minReadySeconds: 0``) where it was unset counts as a
change here and bumps the generation; a real server, comparing decoded
objects, sees none. Defaults are not such a change: both objects compared
have them (``_defaults.py``), so ``revisionHistoryLimit: 10`` written where
it was unset changes nothing. A pointer field (``replicas``) does
tell 0 from unset on both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._patch import json_equal
from ._resources import BUILTIN_RESOURCES

__all__ = [
    "CUSTOM_RESOURCE",
    "GENERATION_RULES",
    "NO_GENERATION",
    "GenerationRule",
    "generation_rule",
]

#: Top-level keys never compared: identity and the object's own bookkeeping.
_NOT_CONTENT: Final = frozenset({"apiVersion", "kind", "metadata"})


@dataclass(frozen=True)
class GenerationRule:
    """What a kind's registry strategy does with ``metadata.generation``."""

    #: ``PrepareForCreate`` sets generation to 1 (else the client's value is kept).
    set_on_create: bool
    #: Top-level fields whose change bumps it; None: every field but metadata.
    bump_on: frozenset[str] | None
    #: ``metadata`` fields whose change also bumps it (Deployment's annotations).
    bump_on_metadata: frozenset[str] = frozenset()
    #: Compare as typed objects do (nulls and empty containers are absent).
    typed: bool = True

    def create(self, meta: JSONDict) -> None:
        """Set generation on the metadata of an object being created."""
        if self.set_on_create:
            meta["generation"] = 1

    def bumps(self, old: JSONDict, new: JSONDict) -> bool:
        """Whether the update from ``old`` to ``new`` adds 1 to generation."""
        every = self.bump_on is None
        keys = (set(old) | set(new)) - _NOT_CONTENT if every else set(self.bump_on or ())
        for key in keys:
            if not self._same(old.get(key), new.get(key)):
                return True
        if self.bump_on_metadata:
            old_meta = old.get("metadata") or {}
            new_meta = new.get("metadata") or {}
            for key in self.bump_on_metadata:
                if not self._same(old_meta.get(key), new_meta.get(key)):
                    return True
        return False

    def _same(self, a: Any, b: Any) -> bool:
        if self.typed:
            return json_equal(_pruned(a), _pruned(b))
        return json_equal(a, b)


def _pruned(value: Any) -> Any:
    """``value`` without nulls, empty objects and empty lists, at every depth."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            p = _pruned(v)
            if p is not None:
                out[k] = p
        return out or None
    if isinstance(value, list):
        items = [_pruned(v) for v in value]
        return items or None
    return value


NO_GENERATION: Final = GenerationRule(set_on_create=False, bump_on=frozenset())
CUSTOM_RESOURCE: Final = GenerationRule(set_on_create=True, bump_on=None, typed=False)
_SPEC: Final = GenerationRule(set_on_create=True, bump_on=frozenset({"spec"}))
_WEBHOOKS: Final = GenerationRule(set_on_create=True, bump_on=frozenset({"webhooks"}))

#: The built-in kinds whose strategies keep a generation, by (group, resource).
GENERATION_RULES: Final[Mapping[tuple[str, str], GenerationRule]] = {
    ("", "replicationcontrollers"): _SPEC,
    ("", "podtemplates"): GenerationRule(set_on_create=True, bump_on=frozenset({"template"})),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _WEBHOOKS,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _WEBHOOKS,
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): _SPEC,
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): _SPEC,
    ("apps", "deployments"): GenerationRule(
        set_on_create=True,
        bump_on=frozenset({"spec"}),
        bump_on_metadata=frozenset({"annotations"}),
    ),
    ("apps", "replicasets"): _SPEC,
    ("apps", "daemonsets"): _SPEC,
    ("apps", "statefulsets"): _SPEC,
    ("batch", "jobs"): _SPEC,
    ("batch", "cronjobs"): _SPEC,
    ("discovery.k8s.io", "endpointslices"): GenerationRule(
        set_on_create=True, bump_on=None, bump_on_metadata=frozenset({"labels"})
    ),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"): _SPEC,
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): _SPEC,
    ("networking.k8s.io", "ingresses"): _SPEC,
    ("networking.k8s.io", "ingressclasses"): _SPEC,
    ("networking.k8s.io", "networkpolicies"): _SPEC,
    ("policy", "poddisruptionbudgets"): _SPEC,
    ("scheduling.k8s.io", "priorityclasses"): GenerationRule(
        set_on_create=True, bump_on=frozenset()
    ),
    ("storage.k8s.io", "csidrivers"): GenerationRule(
        set_on_create=False, bump_on=frozenset({"spec"})
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): _SPEC,
}

_BUILTIN_KEYS: Final = frozenset((s.group, s.resource) for s in BUILTIN_RESOURCES)


def generation_rule(group: str, resource: str) -> GenerationRule:
    """The rule of a group/resource: its built-in strategy's, or a custom resource's."""
    rule = GENERATION_RULES.get((group, resource))
    if rule is not None:
        return rule
    if (group, resource) in _BUILTIN_KEYS:
        return NO_GENERATION
    return CUSTOM_RESOURCE
