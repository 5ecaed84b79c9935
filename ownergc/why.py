"""Why is this object stuck deleting, or why was it not garbage-collected?

A pure analysis: a snapshot of objects (Kubernetes JSON dicts, spec and status
included where they matter: Pods, PersistentVolumeClaims, PersistentVolumes,
Services, Namespaces, CustomResourceDefinitions, APIServices) plus discovery
in, an explanation tree out. No I/O, no clock, nothing is ever changed: the
next steps it proposes are commands for a person to run.

The tree reads like the question: the object, then what holds it, then what
holds that, recursively::

    explanation = explain(objects, resources, kind="namespace", name="shop")
    print(explanation.render())
    json.dumps(explanation.to_json())

Every node carries a stable ``code`` (``finalizer.custom``,
``owner.invalidNamespace``, ``namespace.apiServiceUnavailable``, ...) so
tools can test for a cause without parsing prose.

The rules are those of kube-controller-manager's garbage collector
(``attemptToDeleteItem``: owners are looked up by name in the dependent's
namespace and compared by uid), its namespace controller, and the
controllers that own Kubernetes' well-known finalizers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ownergc import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    OwnerReference,
    classify_references,
)
from ownergc.errors import InvalidOwnerReference
from ownergc.protocols import APIResource

__all__ = [
    "Explanation",
    "NextStep",
    "ObjectRef",
    "Reason",
    "Snapshot",
    "TargetNotResolved",
    "explain",
]

JSONDict = dict[str, Any]

#: The namespace controller's entry in a Namespace's ``spec.finalizers``.
FINALIZER_KUBERNETES = "kubernetes"
FINALIZER_PVC_PROTECTION = "kubernetes.io/pvc-protection"
FINALIZER_PV_PROTECTION = "kubernetes.io/pv-protection"
FINALIZER_CRD_CLEANUP = "customresourcecleanup.apiextensions.k8s.io"
FINALIZER_LB_CLEANUP = "service.kubernetes.io/load-balancer-cleanup"
FINALIZER_JOB_TRACKING = "batch.kubernetes.io/job-tracking"
FINALIZER_PV_CONTROLLER = "kubernetes.io/pv-controller"
FINALIZER_EXTERNAL_PROVISIONER = "external-provisioner.volume.kubernetes.io/finalizer"
PREFIX_EXTERNAL_ATTACHER = "external-attacher/"

#: kubectl's short names of built-in resources (what users type).
_SHORT_NAMES = {
    "cm": "configmaps",
    "cj": "cronjobs",
    "crd": "customresourcedefinitions",
    "crds": "customresourcedefinitions",
    "csr": "certificatesigningrequests",
    "deploy": "deployments",
    "ds": "daemonsets",
    "ep": "endpoints",
    "ev": "events",
    "hpa": "horizontalpodautoscalers",
    "ing": "ingresses",
    "limits": "limitranges",
    "netpol": "networkpolicies",
    "no": "nodes",
    "ns": "namespaces",
    "pc": "priorityclasses",
    "pdb": "poddisruptionbudgets",
    "po": "pods",
    "pv": "persistentvolumes",
    "pvc": "persistentvolumeclaims",
    "quota": "resourcequotas",
    "rc": "replicationcontrollers",
    "rs": "replicasets",
    "sa": "serviceaccounts",
    "sc": "storageclasses",
    "sts": "statefulsets",
    "svc": "services",
}

#: Labels controllers put on what they create: evidence that an owner-less
#: object once had a controller (and so was orphaned).
_CONTROLLER_LABELS = (
    "pod-template-hash",
    "controller-revision-hash",
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "statefulset.kubernetes.io/pod-name",
)

_MAX_ITEMS_SHOWN = 10


class TargetNotResolved(LookupError):
    """The KIND in ``KIND/NAME`` names no served resource."""


# -- the explanation tree ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """Which object a node is about."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None
    uid: str | None = None

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        meta = obj.get("metadata") or {}
        return cls(
            str(obj.get("apiVersion") or ""),
            str(obj.get("kind") or ""),
            str(meta.get("name") or ""),
            meta.get("namespace") or None,
            meta.get("uid") or None,
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    def to_json(self) -> JSONDict:
        out: JSONDict = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        return out


@dataclass(frozen=True, slots=True)
class NextStep:
    """A command for a person to run (ownergc never runs it) and what it costs."""

    command: str
    consequence: str

    def to_json(self) -> JSONDict:
        return {"command": self.command, "consequence": self.consequence}


@dataclass(frozen=True, slots=True)
class Reason:
    """One node of the tree: a state or a cause, and what holds it (``children``)."""

    code: str
    summary: str
    subject: ObjectRef | None = None
    details: tuple[str, ...] = ()
    steps: tuple[NextStep, ...] = ()
    children: tuple[Reason, ...] = ()

    def walk(self) -> Iterator[Reason]:
        """This node and every descendant, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()

    def codes(self) -> set[str]:
        return {r.code for r in self.walk()}

    def find(self, code: str) -> list[Reason]:
        return [r for r in self.walk() if r.code == code]

    def to_json(self) -> JSONDict:
        out: JSONDict = {"code": self.code, "summary": self.summary}
        if self.subject is not None:
            out["object"] = self.subject.to_json()
        if self.details:
            out["details"] = list(self.details)
        if self.steps:
            out["nextSteps"] = [s.to_json() for s in self.steps]
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out


@dataclass(frozen=True, slots=True)
class Explanation:
    """The answer for one object: its verdict and the tree of reasons."""

    target: ObjectRef
    #: ``deleting`` (stuck or on its way), ``kept`` (the collector will not
    #: delete it), ``collectable`` (the collector will delete it), ``absent``.
    verdict: str
    root: Reason

    def to_json(self) -> JSONDict:
        return {
            "target": self.target.to_json(),
            "verdict": self.verdict,
            "explanation": self.root.to_json(),
        }

    def render(self) -> str:
        """The tree as text: the object, then what holds it, indented."""
        lines: list[str] = []
        _render(self.root, "", "", lines)
        return "\n".join(lines) + "\n"


def _render(node: Reason, first: str, rest: str, lines: list[str]) -> None:
    lines.append(first + node.summary)
    bar = "│  " if node.children else "   "
    for detail in node.details:
        lines.append(rest + bar + detail)
    for step in node.steps:
        lines.append(rest + bar + "next: " + step.command)
        lines.append(rest + bar + "      " + step.consequence)
    for i, child in enumerate(node.children):
        last = i == len(node.children) - 1
        _render(child, rest + ("└─ " if last else "├─ "), rest + ("   " if last else "│  "), lines)


# -- the snapshot --------------------------------------------------------------


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = obj.get("status")
    conds = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in conds or () if isinstance(c, Mapping)]


@dataclass
class _KindInfo:
    namespaced: bool
    resource: str
    group: str


@dataclass
class Snapshot:
    """Objects indexed the ways the controllers look them up.

    ``resources`` is discovery (every served resource); ``None`` means
    unknown, and then namespaced-ness is inferred from the objects.
    ``discovery_failures`` maps ``group/version`` to the error that made its
    discovery fail (the namespace controller's classic blocker).
    """

    objects: list[JSONDict]
    resources: Sequence[APIResource] | None = None
    discovery_failures: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_uid: dict[str, JSONDict] = {}
        self.by_name: dict[tuple[str, str, str, str], JSONDict] = {}
        self.dependents: dict[str, list[JSONDict]] = {}
        self.kinds: dict[tuple[str, str], _KindInfo] = {}
        for res in self.resources or ():
            if "/" in res.resource:
                continue
            key = (res.group, res.kind)
            if key not in self.kinds or res.preferred:
                self.kinds[key] = _KindInfo(res.namespaced, res.resource, res.group)
        seen_ns: dict[tuple[str, str], bool] = {}
        for obj in self.objects:
            meta = _meta(obj)
            uid = meta.get("uid")
            if isinstance(uid, str) and uid:
                self.by_uid.setdefault(uid, obj)
            group = _group(str(obj.get("apiVersion") or ""))
            kind = str(obj.get("kind") or "")
            ns = str(meta.get("namespace") or "")
            self.by_name.setdefault((group, kind, ns, str(meta.get("name") or "")), obj)
            seen_ns[(group, kind)] = seen_ns.get((group, kind), False) or bool(ns)
            for ref in meta.get("ownerReferences") or ():
                if isinstance(ref, Mapping) and isinstance(ref.get("uid"), str):
                    self.dependents.setdefault(ref["uid"], []).append(obj)
        # Kinds that discovery does not name but objects show are served too
        # (manifests read with the built-in kinds only); scope is inferred.
        for (group, kind), namespaced in seen_ns.items():
            if (group, kind) not in self.kinds:
                self.kinds[(group, kind)] = _KindInfo(namespaced, kind.lower(), group)

    def kind_info(self, group: str, kind: str) -> _KindInfo | None:
        return self.kinds.get((group, kind))

    def kubectl_resource(self, obj_or_ref: Mapping[str, Any] | ObjectRef) -> str:
        """``resource[.group]`` as kubectl takes it."""
        if isinstance(obj_or_ref, ObjectRef):
            api_version, kind = obj_or_ref.api_version, obj_or_ref.kind
        else:
            api_version, kind = str(obj_or_ref.get("apiVersion")), str(obj_or_ref.get("kind"))
        group = _group(api_version)
        info = self.kind_info(group, kind)
        resource = info.resource if info is not None else kind.lower()
        return f"{resource}.{group}" if group else resource

    def kubectl_target(self, obj: Mapping[str, Any]) -> str:
        meta = _meta(obj)
        ns = meta.get("namespace")
        return f"{self.kubectl_resource(obj)} {meta.get('name')}" + (f" -n {ns}" if ns else "")

    def namespaced(self, group: str, kind: str, default: bool) -> bool:
        info = self.kind_info(group, kind)
        return info.namespaced if info is not None else default

    def content_of(self, namespace: str) -> list[JSONDict]:
        return [o for o in self.objects if _meta(o).get("namespace") == namespace]

    def resolve(self, kind: str, name: str, namespace: str | None) -> JSONDict | None:
        """The object ``kind``/``name`` (kind as a user types it); None when absent."""
        _, kinds = self._resolve_kind(kind)
        for g, k in kinds:
            ns = (namespace or "default") if self.namespaced(g, k, True) else ""
            obj = self.by_name.get((g, k, ns, name))
            if obj is not None:
                return obj
        return None

    def resolve_ref(self, kind: str, name: str, namespace: str | None) -> ObjectRef:
        """An ObjectRef for ``kind``/``name`` even when the object is absent."""
        _, kinds = self._resolve_kind(kind)
        g, k = kinds[0]
        info = self.kind_info(g, k)
        version = ""
        for res in self.resources or ():
            if res.group == g and res.kind == k and res.preferred:
                version = res.version
        api_version = (f"{g}/{version}" if g else version) if version else g
        ns = (namespace or "default") if (info is None or info.namespaced) else None
        return ObjectRef(api_version, k, name, ns)

    def _resolve_kind(self, text: str) -> tuple[str | None, list[tuple[str, str]]]:
        word, _, group = text.partition(".")
        word = word.lower()
        word = _SHORT_NAMES.get(word, word)
        found: list[tuple[str, str]] = []
        for (g, k), info in self.kinds.items():
            if group and g != group:
                continue
            names = {info.resource.lower(), k.lower(), k.lower() + "s"}
            if word in names and (g, k) not in found:
                found.append((g, k))
        if not found:
            raise TargetNotResolved(f"the server doesn't have a resource type {text!r}")
        found.sort(key=lambda gk: (gk[0] != "", gk[0]))  # the core group first, as kubectl
        return (group or None), found


# -- owner references, classified as the garbage collector does ---------------


@dataclass(frozen=True, slots=True)
class _OwnerVerdict:
    ref: OwnerReference
    index: int
    #: solid, dangling, waitingForDependentsDeletion, invalidNamespace,
    #: namespacedOwnerOfClusterScoped, unknownKind, malformed.
    state: str
    owner: JSONDict | None
    note: str = ""


def _classify_owners(snap: Snapshot, obj: Mapping[str, Any]) -> list[_OwnerVerdict]:
    meta = _meta(obj)
    dep_ns = str(meta.get("namespace") or "")
    out: list[_OwnerVerdict] = []
    for index, raw in enumerate(meta.get("ownerReferences") or ()):
        try:
            ref = OwnerReference.from_dict(raw)
        except InvalidOwnerReference as exc:
            bad = OwnerReference("?", "?", "?", "?")
            out.append(_OwnerVerdict(bad, index, "malformed", None, str(exc)))
            continue
        group = _group(ref.api_version)
        info = snap.kind_info(group, ref.kind)
        if info is None and snap.resources is not None:
            out.append(_OwnerVerdict(ref, index, "unknownKind", None))
            continue
        owner_namespaced = info.namespaced if info is not None else bool(dep_ns)
        if owner_namespaced and not dep_ns:
            out.append(_OwnerVerdict(ref, index, "namespacedOwnerOfClusterScoped", None))
            continue
        found = snap.by_name.get((group, ref.kind, dep_ns if owner_namespaced else "", ref.name))
        if found is not None and _meta(found).get("uid") == ref.uid:
            cls = classify_references([ref], {ref: found})
            state = "solid" if cls.solid else "waitingForDependentsDeletion"
            out.append(_OwnerVerdict(ref, index, state, found))
            continue
        elsewhere = snap.by_uid.get(ref.uid)
        if elsewhere is not None and owner_namespaced:
            other_ns = _meta(elsewhere).get("namespace")
            if other_ns and other_ns != dep_ns:
                out.append(_OwnerVerdict(ref, index, "invalidNamespace", elsewhere, str(other_ns)))
                continue
        note = ""
        if found is not None:
            note = f"an object named {ref.name} exists with another uid ({_meta(found).get('uid')})"
        elif elsewhere is not None:
            note = f"uid {ref.uid} belongs to {ObjectRef.of(elsewhere)} (kind or name differ)"
        out.append(_OwnerVerdict(ref, index, "dangling", None, note))
    return out


def _ref_label(ref: OwnerReference) -> str:
    return f"{ref.kind} {ref.name}"


def _owner_reason(snap: Snapshot, obj: Mapping[str, Any], v: _OwnerVerdict) -> Reason:
    ref = v.ref
    meta = _meta(obj)
    dep_ns = meta.get("namespace") or ""
    path = f"/metadata/ownerReferences/{v.index}"
    remove_ref = NextStep(
        f"kubectl patch {snap.kubectl_target(obj)} --type=json "
        f'-p \'[{{"op":"test","path":"{path}/uid","value":"{ref.uid}"}},'
        f'{{"op":"remove","path":"{path}"}}]\'',
        f"{ObjectRef.of(obj)} is no longer deleted together with {_ref_label(ref)}",
    )
    subject = ObjectRef.of(v.owner) if v.owner is not None else None
    if v.state == "solid":
        owner_meta = _meta(v.owner or {})
        extra = ""
        if owner_meta.get("deletionTimestamp"):
            extra = " (being deleted, but not in the foreground: it still counts as an owner)"
        return Reason(
            "owner.solid",
            f"owner {_ref_label(ref)}: solid — it exists with uid {ref.uid}{extra}",
            subject,
            ("while it exists the garbage collector keeps this object",),
        )
    if v.state == "waitingForDependentsDeletion":
        return Reason(
            "owner.waitingForDependentsDeletion",
            f"owner {_ref_label(ref)}: waiting for dependents' deletion — it is being "
            "deleted in the foreground",
            subject,
            ("the garbage collector deletes this object so that its owner can go",),
        )
    if v.state == "invalidNamespace":
        return Reason(
            "owner.invalidNamespace",
            f"owner {_ref_label(ref)}: invalid — it lives in namespace {v.note}, "
            f"not {dep_ns or 'the cluster scope'}",
            subject,
            (
                "owner references cannot cross namespaces: the garbage collector looks a "
                f"namespaced owner up in the dependent's namespace ({dep_ns}) only",
                "since Kubernetes 1.20 it records a Warning event OwnerRefInvalidNamespace on "
                "this object and treats the reference as absent (dangling): without another "
                "solid owner the object is deleted; with one, only this reference is removed",
            ),
            (remove_ref,),
        )
    if v.state == "namespacedOwnerOfClusterScoped":
        return Reason(
            "owner.namespacedOwnerOfClusterScoped",
            f"owner {_ref_label(ref)}: invalid — a cluster-scoped object cannot have a "
            "namespaced owner",
            None,
            (
                "the garbage collector records a Warning event OwnerRefInvalidNamespace and "
                "stops examining this object: it is never collected through its owners and "
                "this reference is never removed (Kubernetes 1.20+)",
            ),
            (remove_ref,),
        )
    if v.state == "unknownKind":
        return Reason(
            "owner.unknownKind",
            f"owner {_ref_label(ref)}: kind {ref.kind} of {ref.api_version} is not served",
            None,
            (
                "the garbage collector cannot map the reference to a resource, retries with "
                "backoff forever and never collects this object (nor removes its other "
                "dangling references)",
            ),
            (remove_ref,),
        )
    if v.state == "malformed":
        return Reason("owner.malformed", f"malformed owner reference: {v.note}")
    details = [
        f"no {ref.kind} named {ref.name} with uid {ref.uid}"
        + (
            f" in namespace {dep_ns}"
            if dep_ns and snap.namespaced(_group(ref.api_version), ref.kind, True)
            else ""
        )
    ]
    if v.note:
        details.append(v.note)
    return Reason(
        "owner.dangling",
        f"owner {_ref_label(ref)}: dangling — the owner is gone",
        None,
        tuple(details),
    )


# -- finalizers ----------------------------------------------------------------


def _managers_of_finalizer(obj: Mapping[str, Any], finalizer: str) -> list[str]:
    """Field managers whose managedFields own ``finalizer`` in metadata.finalizers."""
    key = "v:" + json.dumps(finalizer)
    owners: list[str] = []
    for entry in _meta(obj).get("managedFields") or ():
        if not isinstance(entry, Mapping):
            continue
        fields = entry.get("fieldsV1") or {}
        fins = (fields.get("f:metadata") or {}).get("f:finalizers") or {}
        if key in fins:
            manager = str(entry.get("manager") or "?")
            op = entry.get("operation")
            owners.append(f"{manager} ({op})" if op else manager)
    return owners


def _remove_finalizer_step(
    snap: Snapshot, obj: Mapping[str, Any], finalizer: str, consequence: str
) -> NextStep:
    fins = list(_meta(obj).get("finalizers") or ())
    i = fins.index(finalizer) if finalizer in fins else 0
    path = f"/metadata/finalizers/{i}"
    return NextStep(
        f"kubectl patch {snap.kubectl_target(obj)} --type=json "
        f'-p \'[{{"op":"test","path":"{path}","value":"{finalizer}"}},'
        f'{{"op":"remove","path":"{path}"}}]\'',
        consequence,
    )


@dataclass
class _Walk:
    """Shared state of one explanation: what was explained, how deep we may go."""

    snap: Snapshot
    max_depth: int
    seen: set[str] = field(default_factory=set)


def _explain_finalizer(w: _Walk, obj: JSONDict, finalizer: str, depth: int) -> Reason:
    snap = w.snap
    kind = obj.get("kind")
    me = ObjectRef.of(obj)
    if finalizer == FINALIZER_DELETE_DEPENDENTS:
        return _foreground(w, obj, depth)
    if finalizer == FINALIZER_ORPHAN_DEPENDENTS:
        return _orphan(w, obj, depth)
    if finalizer == FINALIZER_PVC_PROTECTION and kind == "PersistentVolumeClaim":
        return _pvc_protection(w, obj, depth)
    if finalizer == FINALIZER_PV_PROTECTION and kind == "PersistentVolume":
        return _pv_protection(w, obj, depth)
    if finalizer == FINALIZER_CRD_CLEANUP and kind == "CustomResourceDefinition":
        return _crd_cleanup(w, obj, depth)
    if finalizer == FINALIZER_LB_CLEANUP:
        lb = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        addrs = ", ".join(str(i.get("ip") or i.get("hostname")) for i in lb if isinstance(i, dict))
        return Reason(
            "finalizer.loadBalancerCleanup",
            f"finalizer {finalizer}: the service controller deletes the cloud load balancer first",
            None,
            (
                "removed by the service controller of the cloud-controller-manager (or "
                "kube-controller-manager with an in-tree cloud provider) once the cloud "
                "provider has deleted this Service's load balancer"
                + (f" ({addrs})" if addrs else ""),
                "stays when no cloud controller runs (kind, bare metal without a load-balancer "
                "implementation) or when the cloud API refuses the deletion: look at this "
                "Service's events",
            ),
            (
                NextStep(
                    f"kubectl get events {'-n ' + me.namespace if me.namespace else ''} "
                    f"--field-selector involvedObject.name={me.name}".replace("  ", " "),
                    "read-only: shows the cloud controller's errors",
                ),
                _remove_finalizer_step(
                    snap,
                    obj,
                    finalizer,
                    "removing it skips the cleanup: the cloud load balancer (and its address "
                    "and cost) may be left behind",
                ),
            ),
        )
    if finalizer == FINALIZER_JOB_TRACKING and kind == "Pod":
        return _job_tracking(w, obj, finalizer)
    if finalizer == FINALIZER_PV_CONTROLLER:
        return Reason(
            "finalizer.pvController",
            f"finalizer {finalizer}: the persistent-volume controller deletes the storage "
            "asset first",
            None,
            (
                "removed by kube-controller-manager's persistentvolume-binder once the in-tree "
                "volume plugin has deleted the volume (reclaimPolicy Delete)",
            ),
            (
                _remove_finalizer_step(
                    snap,
                    obj,
                    finalizer,
                    "removing it skips the reclaim: the storage asset may be left behind",
                ),
            ),
        )
    if finalizer == FINALIZER_EXTERNAL_PROVISIONER:
        driver = ((obj.get("spec") or {}).get("csi") or {}).get("driver")
        return Reason(
            "finalizer.externalProvisioner",
            f"finalizer {finalizer}: the CSI external-provisioner deletes the volume first",
            None,
            (
                "removed by the external-provisioner sidecar of the CSI driver"
                + (f" {driver}" if driver else "")
                + " once the driver has deleted the volume (reclaimPolicy Delete); the driver's "
                "controller pods must be running",
            ),
            (
                _remove_finalizer_step(
                    snap,
                    obj,
                    finalizer,
                    "removing it skips the reclaim: the volume may be left in the storage system",
                ),
            ),
        )
    if finalizer.startswith(PREFIX_EXTERNAL_ATTACHER):
        return Reason(
            "finalizer.externalAttacher",
            f"finalizer {finalizer}: the CSI external-attacher detaches the volume first",
            None,
            (
                f"removed by the external-attacher sidecar of CSI driver "
                f"{finalizer[len(PREFIX_EXTERNAL_ATTACHER) :]} once the volume is detached; the "
                "driver's controller pods must be running",
            ),
            (
                _remove_finalizer_step(
                    snap,
                    obj,
                    finalizer,
                    "removing it skips the detach: the volume may stay attached to its node",
                ),
            ),
        )
    return _custom_finalizer(w, obj, finalizer)


def _custom_finalizer(w: _Walk, obj: JSONDict, finalizer: str) -> Reason:
    managers = _managers_of_finalizer(obj, finalizer)
    domain = finalizer.split("/", 1)[0] if "/" in finalizer else ""
    details = []
    if managers:
        details.append("put there by field manager " + ", ".join(managers) + " (managedFields)")
    else:
        details.append("managedFields do not say who put it there")
    details.append(
        "not a finalizer of Kubernetes' own controllers: the controller that added it"
        + (f" (domain {domain})" if domain else "")
        + " must be running to do its cleanup and remove it"
    )
    return Reason(
        "finalizer.custom",
        f"finalizer {finalizer}: waits for its controller",
        None,
        tuple(details),
        (
            _remove_finalizer_step(
                w.snap,
                obj,
                finalizer,
                "last resort, when that controller is gone for good: removing it skips its "
                "cleanup (whatever it manages outside this object may be left behind)",
            ),
        ),
    )


def _foreground(w: _Walk, obj: JSONDict, depth: int) -> Reason:
    uid = str(_meta(obj).get("uid") or "")
    blocking: list[JSONDict] = []
    others = 0
    for dep in w.snap.dependents.get(uid, ()):
        refs = [r for r in _meta(dep).get("ownerReferences") or () if isinstance(r, Mapping)]
        if any(r.get("uid") == uid and r.get("blockOwnerDeletion") is True for r in refs):
            blocking.append(dep)
        else:
            others += 1
    details = [
        "removed by the garbage collector (kube-controller-manager) once no dependent with "
        "blockOwnerDeletion: true remains"
    ]
    if others:
        details.append(
            f"{others} other dependent(s) without blockOwnerDeletion are deleted too but do "
            "not hold it"
        )
    children = tuple(_dependent(w, dep, obj, depth) for dep in blocking)
    if not blocking:
        details.append(
            "nothing blocks it any more: the collector removes the finalizer on its next pass; "
            "if it stays, the garbage collector is not running"
        )
    return Reason(
        "finalizer.foregroundDeletion",
        f"finalizer {FINALIZER_DELETE_DEPENDENTS}: waits for {len(blocking)} blocking dependent(s)",
        None,
        tuple(details),
        (
            _remove_finalizer_step(
                w.snap,
                obj,
                FINALIZER_DELETE_DEPENDENTS,
                "the owner goes before its dependents; the collector then deletes them in the "
                "background (they dangle)",
            ),
        )
        if blocking
        else (),
        children,
    )


def _dependent(w: _Walk, dep: JSONDict, owner: JSONDict, depth: int) -> Reason:
    """A blocking dependent of a foreground owner, with what holds it."""
    node = _explain_object(w, dep, depth + 1)
    if _meta(dep).get("deletionTimestamp"):
        return node
    solid = [
        v
        for v in _classify_owners(w.snap, dep)
        if v.state == "solid" and v.ref.uid != _meta(owner).get("uid")
    ]
    if solid:
        note = (
            f"it has another solid owner ({_ref_label(solid[0].ref)}): the collector removes "
            "its reference to the owner being deleted instead of deleting it"
        )
    else:
        note = "not deleted yet: the collector deletes it as part of the foreground cascade"
    return Reason(
        node.code, node.summary, node.subject, (note, *node.details), node.steps, node.children
    )


def _orphan(w: _Walk, obj: JSONDict, depth: int) -> Reason:
    uid = str(_meta(obj).get("uid") or "")
    pending = list(w.snap.dependents.get(uid, ()))
    children = tuple(
        Reason(
            "orphan.pendingDependent",
            f"{ObjectRef.of(d)}: still references it",
            ObjectRef.of(d),
            ("the collector removes this reference, then the object stays without it",),
        )
        for d in pending
    )
    details = [
        "removed by the garbage collector once every dependent's reference to this object is "
        "removed (the dependents are kept: orphaned)"
    ]
    if not pending:
        details.append(
            "no dependent references it any more: the collector removes the finalizer on its "
            "next pass; if it stays, the garbage collector is not running"
        )
    steps = (
        (
            _remove_finalizer_step(
                w.snap,
                obj,
                FINALIZER_ORPHAN_DEPENDENTS,
                "the dependents that still reference it then dangle and are DELETED by the "
                "collector instead of orphaned",
            ),
        )
        if pending
        else ()
    )
    return Reason(
        "finalizer.orphan",
        f"finalizer {FINALIZER_ORPHAN_DEPENDENTS}: {len(pending)} dependent(s) still to orphan",
        None,
        tuple(details),
        steps,
        children,
    )


def _pod_terminated(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _pods_using_claim(snap: Snapshot, pvc: Mapping[str, Any]) -> tuple[list[JSONDict], bool]:
    """Pods using the claim that are not terminated; and whether every pod's spec was known."""
    meta = _meta(pvc)
    ns, name = meta.get("namespace"), meta.get("name")
    users: list[JSONDict] = []
    complete = True
    for pod in snap.content_of(str(ns)):
        if pod.get("kind") != "Pod" or pod.get("apiVersion") != "v1":
            continue
        spec = pod.get("spec")
        if not isinstance(spec, Mapping):
            complete = False
            continue
        pod_name = _meta(pod).get("name")
        for vol in spec.get("volumes") or ():
            if not isinstance(vol, Mapping):
                continue
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if claim is None and vol.get("ephemeral") is not None:
                claim = f"{pod_name}-{vol.get('name')}"
            if claim == name and not _pod_terminated(pod):
                users.append(pod)
                break
    return users, complete


def _pvc_protection(w: _Walk, obj: JSONDict, depth: int) -> Reason:
    users, complete = _pods_using_claim(w.snap, obj)
    details = [
        "removed by kube-controller-manager's pvc-protection controller once no pod that is "
        "not yet terminated uses the claim (spec.volumes[].persistentVolumeClaim.claimName)"
    ]
    if not complete:
        details.append("some pods were read without their spec: their volumes are unknown")
    if not users:
        details.append(
            "no pod uses it any more: the controller removes the finalizer on its next pass; if "
            "it stays, kube-controller-manager (pvc-protection) is not running"
        )
    children = []
    for pod in users:
        node = _explain_object(w, pod, depth + 1)
        phase = (pod.get("status") or {}).get("phase") or "unknown phase"
        children.append(
            Reason(
                "pvc.usedByPod",
                f"used by {ObjectRef.of(pod)} ({phase})",
                ObjectRef.of(pod),
                ("the claim goes once this pod is deleted or has terminated",),
                (
                    NextStep(
                        f"kubectl delete {w.snap.kubectl_target(pod)}",
                        "stops the pod; the claim is then released and deleted",
                    ),
                )
                if not _meta(pod).get("deletionTimestamp")
                else (),
                (node,) if _meta(pod).get("deletionTimestamp") else (),
            )
        )
    return Reason(
        "finalizer.pvcProtection",
        f"finalizer {FINALIZER_PVC_PROTECTION}: in use by {len(users)} pod(s)",
        None,
        tuple(details),
        (
            _remove_finalizer_step(
                w.snap,
                obj,
                FINALIZER_PVC_PROTECTION,
                "removing it deletes the claim under running pods: with reclaimPolicy Delete "
                "their volume is destroyed (data loss)",
            ),
        )
        if users
        else (),
        tuple(children),
    )


def _pv_protection(w: _Walk, obj: JSONDict, depth: int) -> Reason:
    phase = (obj.get("status") or {}).get("phase")
    claim_ref = (obj.get("spec") or {}).get("claimRef") or {}
    details = [
        "removed by kube-controller-manager's pv-protection controller once the volume is no "
        "longer bound to a claim (status.phase is not Bound)"
    ]
    children: list[Reason] = []
    steps: list[NextStep] = []
    if phase == "Bound":
        claim = w.snap.by_name.get(
            (
                "",
                "PersistentVolumeClaim",
                str(claim_ref.get("namespace") or ""),
                str(claim_ref.get("name") or ""),
            )
        )
        label = f"{claim_ref.get('namespace')}/{claim_ref.get('name')}"
        if claim is not None:
            children.append(_explain_object(w, claim, depth + 1))
            if not _meta(claim).get("deletionTimestamp"):
                steps.append(
                    NextStep(
                        f"kubectl delete {w.snap.kubectl_target(claim)}",
                        "deletes the claim; the volume is then reclaimed per its "
                        "persistentVolumeReclaimPolicy",
                    )
                )
        else:
            details.append(f"bound to claim {label}, which is not in the snapshot")
        summary = f"finalizer {FINALIZER_PV_PROTECTION}: bound to claim {label}"
    else:
        details.append(
            f"phase is {phase or 'unknown'}: the controller removes the finalizer on its next "
            "pass; if it stays, kube-controller-manager (pv-protection) is not running"
        )
        summary = f"finalizer {FINALIZER_PV_PROTECTION}: not bound"
    steps.append(
        _remove_finalizer_step(
            w.snap,
            obj,
            FINALIZER_PV_PROTECTION,
            "removing it deletes a volume a claim still uses (its pods lose their storage)",
        )
    )
    return Reason(
        "finalizer.pvProtection", summary, None, tuple(details), tuple(steps), tuple(children)
    )


def _crd_cleanup(w: _Walk, obj: JSONDict, depth: int) -> Reason:
    spec = obj.get("spec") or {}
    group = str(spec.get("group") or "")
    kind = str((spec.get("names") or {}).get("kind") or "")
    plural = str((spec.get("names") or {}).get("plural") or kind.lower())
    items = [
        o
        for o in w.snap.objects
        if o.get("kind") == kind and _group(str(o.get("apiVersion") or "")) == group
    ]
    deleting = sum(1 for o in items if _meta(o).get("deletionTimestamp"))
    details = [
        "removed by kube-apiserver's CRD finalizer controller (apiextensions) once every "
        f"{kind} object is gone: it deletes them all, then waits for their own finalizers"
    ]
    if not items:
        details.append(
            "no custom object remains: the apiserver removes the finalizer on its next pass"
        )
    children = tuple(_explain_object(w, o, depth + 1) for o in items[:_MAX_ITEMS_SHOWN])
    if len(items) > _MAX_ITEMS_SHOWN:
        details.append(f"... and {len(items) - _MAX_ITEMS_SHOWN} more {plural}")
    return Reason(
        "finalizer.customResourceCleanup",
        f"finalizer {FINALIZER_CRD_CLEANUP}: {len(items)} {plural}.{group} remaining"
        + (f" ({deleting} being deleted)" if deleting else ""),
        None,
        tuple(details),
        (
            NextStep(
                f"kubectl get {plural}.{group} -A",
                "read-only: the remaining objects; resolve what holds each (see below)",
            ),
            _remove_finalizer_step(
                w.snap,
                obj,
                FINALIZER_CRD_CLEANUP,
                "removing it leaves the custom objects in etcd: they come back if the CRD is "
                "created again",
            ),
        )
        if items
        else (),
        children,
    )


def _job_tracking(w: _Walk, pod: JSONDict, finalizer: str) -> Reason:
    job = None
    for v in _classify_owners(w.snap, pod):
        if v.ref.kind == "Job" and v.owner is not None:
            job = v.owner
    terminated = _pod_terminated(pod)
    details = [
        "removed by kube-controller-manager's job controller once it has counted this pod's "
        "outcome in the Job's status (or the Job is gone)"
    ]
    if not terminated:
        details.append("the pod has not terminated yet: the kubelet must stop its containers first")
    details.append(f"owning Job: {ObjectRef.of(job)}" if job is not None else "its Job is gone")
    return Reason(
        "finalizer.jobTracking",
        f"finalizer {finalizer}: the job controller has not accounted for this pod yet",
        None,
        tuple(details),
        (
            _remove_finalizer_step(
                w.snap,
                pod,
                finalizer,
                "the Job may not count this pod (it may start a replacement or miscount "
                "completions)",
            ),
        ),
    )


# -- namespaces -------------------------------------------------------------------

_NAMESPACE_CONDITIONS = {
    "NamespaceDeletionDiscoveryFailure": (
        "discovery of some API groups failed, so the namespace controller cannot list "
        "everything in the namespace and will not finish (usually an unavailable aggregated "
        "API)"
    ),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "some API group versions could not be parsed, so their resources cannot be emptied"
    ),
    "NamespaceDeletionContentFailure": (
        "deleting some of the content failed (an error from the apiserver or a webhook)"
    ),
    "NamespaceContentRemaining": ("objects are still in the namespace: deleted, but not gone yet"),
    "NamespaceFinalizersRemaining": (
        "objects in the namespace are held by finalizers that their controllers must remove"
    ),
}


def _unavailable_apiservices(snap: Snapshot) -> list[JSONDict]:
    out = []
    for o in snap.objects:
        if o.get("kind") != "APIService" or _group(str(o.get("apiVersion"))) != (
            "apiregistration.k8s.io"
        ):
            continue
        if not (o.get("spec") or {}).get("service"):
            continue  # a local APIService is always available
        available = [c for c in _conditions(o) if c.get("type") == "Available"]
        if available and available[0].get("status") != "True":
            out.append(o)
    return out


def _namespace_finalizer(w: _Walk, ns_obj: JSONDict, depth: int) -> Reason:
    snap = w.snap
    name = str(_meta(ns_obj).get("name"))
    children: list[Reason] = []
    for api in _unavailable_apiservices(snap):
        spec = api.get("spec") or {}
        svc = spec.get("service") or {}
        cond = next(c for c in _conditions(api) if c.get("type") == "Available")
        gv = f"{spec.get('group')}/{spec.get('version')}"
        children.append(
            Reason(
                "namespace.apiServiceUnavailable",
                f"cause: aggregated API {gv} is unavailable (APIService "
                f"{_meta(api).get('name')}: {cond.get('reason')})",
                ObjectRef.of(api),
                (
                    f"served by Service {svc.get('namespace')}/{svc.get('name')}: "
                    f"{cond.get('message') or 'no message'}",
                    "discovery of that group fails, so the namespace controller cannot list "
                    "(and delete) its resources in this namespace and never removes its "
                    "finalizer",
                ),
                (
                    NextStep(
                        f"kubectl get {snap.kubectl_target(api)} -o yaml; kubectl get pods,"
                        f"endpoints -n {svc.get('namespace')}",
                        "read-only: why the extension API server is down; fixing it lets the "
                        "namespace finish",
                    ),
                    NextStep(
                        f"kubectl delete apiservice {_meta(api).get('name')}",
                        "only if that extension API is no longer wanted: its objects in this "
                        "namespace are then never deleted by the namespace controller",
                    ),
                ),
            )
        )
    for gv, err in sorted(snap.discovery_failures.items()):
        children.append(
            Reason(
                "namespace.discoveryFailed",
                f"cause: discovery of {gv} failed",
                None,
                (err, "the namespace controller cannot list that group's resources"),
            )
        )
    for cond in _conditions(ns_obj):
        ctype = str(cond.get("type"))
        if cond.get("status") != "True":
            continue
        meaning = _NAMESPACE_CONDITIONS.get(ctype, "a condition of the namespace")
        children.append(
            Reason(
                "namespace.condition",
                f"condition {ctype}: {cond.get('reason')}",
                None,
                (str(cond.get("message") or ""), meaning),
            )
        )
    content = [o for o in snap.content_of(name)]
    groups: dict[str, list[JSONDict]] = {}
    for o in content:
        groups.setdefault(snap.kubectl_resource(o), []).append(o)
    for resource, items in sorted(groups.items()):
        deleting = sum(1 for o in items if _meta(o).get("deletionTimestamp"))
        items_sorted = sorted(items, key=lambda o: not _meta(o).get("deletionTimestamp"))
        nodes = [_explain_object(w, o, depth + 1) for o in items_sorted[:_MAX_ITEMS_SHOWN]]
        more: tuple[str, ...] = ()
        if len(items) > _MAX_ITEMS_SHOWN:
            more = (f"... and {len(items) - _MAX_ITEMS_SHOWN} more",)
        children.append(
            Reason(
                "namespace.contentRemaining",
                f"{resource}: {len(items)} remaining"
                + (f" ({deleting} being deleted)" if deleting else ""),
                None,
                more,
                (),
                tuple(nodes),
            )
        )
    details = [
        "removed by kube-controller-manager's namespace controller once it has deleted "
        "everything in the namespace and every object is gone"
    ]
    if not children:
        details.append(
            "nothing remains: the namespace controller removes it on its next pass; if it "
            "stays, the namespace controller is not running"
        )
    return Reason(
        "finalizer.kubernetes",
        f"finalizer {FINALIZER_KUBERNETES} (spec.finalizers): {len(content)} object(s) remain "
        f"in {len(groups)} resource(s)",
        None,
        tuple(details),
        (
            NextStep(
                f"kubectl get namespace {name} -o json | jq '.spec.finalizers=[]' | "
                f"kubectl replace --raw /api/v1/namespaces/{name}/finalize -f -",
                "last resort: the remaining content is NOT deleted; it stays in etcd, hidden, "
                "and reappears if a namespace with this name is created again",
            ),
        )
        if children
        else (),
        tuple(children),
    )


# -- one object -----------------------------------------------------------------


def _explain_object(w: _Walk, obj: JSONDict, depth: int = 0) -> Reason:
    """The subtree of one object: its state, then what holds it."""
    me = ObjectRef.of(obj)
    meta = _meta(obj)
    uid = str(meta.get("uid") or str(me))
    if uid in w.seen:
        return Reason("object.cycle", f"{me}: already explained above", me)
    if depth > w.max_depth:
        return Reason(
            "object.depthLimit",
            f"{me}: not expanded (depth limit)",
            me,
            (f"run ownergc why on it: {w.snap.kubectl_resource(obj)}/{me.name}",),
        )
    w.seen.add(uid)
    try:
        if meta.get("deletionTimestamp"):
            return _explain_deleting(w, obj, depth)
        return _explain_present(w, obj)
    finally:
        w.seen.discard(uid)


def _explain_deleting(w: _Walk, obj: JSONDict, depth: int) -> Reason:
    me = ObjectRef.of(obj)
    meta = _meta(obj)
    finalizers = [f for f in meta.get("finalizers") or () if isinstance(f, str)]
    children = [_explain_finalizer(w, obj, f, depth) for f in finalizers]
    if obj.get("kind") == "Namespace" and obj.get("apiVersion") == "v1":
        spec_fins = (obj.get("spec") or {}).get("finalizers") or []
        if FINALIZER_KUBERNETES in spec_fins:
            children.append(_namespace_finalizer(w, obj, depth))
        for f in spec_fins:
            if f != FINALIZER_KUBERNETES:
                node = _custom_finalizer(w, obj, f)
                children.append(
                    Reason(node.code, node.summary + " (spec.finalizers)", None, node.details)
                )
    since = meta.get("deletionTimestamp")
    details: list[str] = []
    steps: tuple[NextStep, ...] = ()
    if not children:
        grace = meta.get("deletionGracePeriodSeconds")
        if obj.get("kind") == "Pod" and grace:
            node_name = (obj.get("spec") or {}).get("nodeName")
            details.append(
                f"graceful termination: the kubelet{' on ' + node_name if node_name else ''} "
                f"stops its containers (grace period {grace}s), then the pod goes"
            )
            steps = (
                NextStep(
                    f"kubectl delete {w.snap.kubectl_target(obj)} --grace-period=0 --force",
                    "the pod object goes at once; if the node is unreachable its containers may "
                    "still be running there",
                ),
            )
        else:
            details.append(
                "no finalizer holds it: the apiserver removes it as soon as the last one goes"
            )
    held = len(children)
    if depth == 0 and meta.get("ownerReferences"):
        # Why it is being deleted may be one of its owners (a collected dependent).
        children += [_owner_reason(w.snap, obj, v) for v in _classify_owners(w.snap, obj)]
    return Reason(
        "object.deleting",
        f"{me}: being deleted since {since}, held by {held} finalizer(s)",
        me,
        tuple(details),
        steps,
        tuple(children),
    )


def _explain_present(w: _Walk, obj: JSONDict) -> Reason:
    me = ObjectRef.of(obj)
    verdicts = _classify_owners(w.snap, obj)
    children = tuple(_owner_reason(w.snap, obj, v) for v in verdicts)
    code, summary, details = _collector_verdict(w.snap, obj, verdicts)
    return Reason(code, f"{me}: {summary}", me, tuple(details), (), children)


def _collector_verdict(
    snap: Snapshot, obj: JSONDict, verdicts: list[_OwnerVerdict]
) -> tuple[str, str, list[str]]:
    """What attemptToDeleteItem would do with this object, in its words."""
    states = [v.state for v in verdicts]
    stuck = {"unknownKind", "namespacedOwnerOfClusterScoped", "malformed"}
    if not verdicts:
        details = ["the garbage collector never deletes an object that has no ownerReferences"]
        evidence = _orphan_evidence(obj)
        if evidence:
            return (
                "object.orphaned",
                "kept — no owners; looks orphaned",
                [
                    *details,
                    f"evidence that a controller created it: {evidence}",
                    "its owner was deleted with propagationPolicy=Orphan (the collector removed "
                    "the reference), or the reference was removed by hand",
                ],
            )
        return ("object.noOwners", "kept — no owners", details)
    if any(s in stuck for s in states):
        return (
            "object.neverCollected",
            "kept — the garbage collector cannot classify its owners",
            ["one reference makes the whole classification fail, so it is never collected"],
        )
    solid = [v for v in verdicts if v.state == "solid"]
    gone = [v for v in verdicts if v.state in ("dangling", "invalidNamespace")]
    waiting = [v for v in verdicts if v.state == "waitingForDependentsDeletion"]
    if solid:
        details = []
        if gone or waiting:
            details.append(
                "held by another owner: the collector keeps it and only removes its "
                "references to " + ", ".join(_ref_label(v.ref) for v in gone + waiting)
            )
        return (
            "object.heldByOwner",
            f"kept — {len(solid)} solid owner(s): " + ", ".join(_ref_label(v.ref) for v in solid),
            details,
        )
    fins = _meta(obj).get("finalizers") or ()
    if waiting:
        return (
            "object.collectable",
            "to be deleted — its owner is deleted in the foreground",
            ["the collector deletes it (Foreground if it has dependents itself)"],
        )
    policy = (
        "Orphan"
        if FINALIZER_ORPHAN_DEPENDENTS in fins
        else "Foreground"
        if FINALIZER_DELETE_DEPENDENTS in fins
        else "Background"
    )
    return (
        "object.collectable",
        "to be deleted — every owner is gone",
        [
            f"the garbage collector deletes it ({policy}); if it stays, the collector is not "
            "running or has not seen it yet",
        ],
    )


def _orphan_evidence(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    found = []
    if meta.get("generateName"):
        found.append(f"metadata.generateName {meta['generateName']!r}")
    labels = meta.get("labels") or {}
    found += [f"label {k}" for k in _CONTROLLER_LABELS if k in labels]
    return ", ".join(found)


# -- the entry point ---------------------------------------------------------------


def explain(
    objects: Iterable[Mapping[str, Any]],
    resources: Sequence[APIResource] | None,
    *,
    kind: str,
    name: str,
    namespace: str | None = None,
    discovery_failures: Mapping[str, str] | None = None,
    max_depth: int = 8,
) -> Explanation:
    """Why ``kind``/``name`` is stuck deleting, or why the collector keeps it.

    ``kind`` is spelled as kubectl takes it (``pvc``, ``deployment``,
    ``widgets.example.com``); ``namespace`` defaults to ``default`` for
    namespaced kinds. Raises :class:`TargetNotResolved` for an unknown kind.
    """
    snap = Snapshot([dict(o) for o in objects], resources, dict(discovery_failures or {}))
    obj = snap.resolve(kind, name, namespace)
    if obj is None:
        ref = snap.resolve_ref(kind, name, namespace)
        return _explain_absent(snap, ref)
    w = _Walk(snap, max_depth)
    root = _explain_object(w, obj)
    verdict = {
        "object.deleting": "deleting",
        "object.collectable": "collectable",
    }.get(root.code, "kept")
    return Explanation(ObjectRef.of(obj), verdict, root)


def _explain_absent(snap: Snapshot, ref: ObjectRef) -> Explanation:
    group = _group(ref.api_version)
    referrers = [
        o
        for o in snap.objects
        for r in _meta(o).get("ownerReferences") or ()
        if isinstance(r, Mapping)
        and r.get("kind") == ref.kind
        and r.get("name") == ref.name
        and _group(str(r.get("apiVersion") or "")) == group
        and (ref.namespace is None or _meta(o).get("namespace") == ref.namespace)
    ]
    children = tuple(
        Reason(
            "absent.danglingDependent",
            f"{ObjectRef.of(o)} still references it",
            ObjectRef.of(o),
            ("its reference dangles: the collector deletes it unless another owner is solid",),
        )
        for o in referrers
    )
    root = Reason(
        "object.absent",
        f"{ref}: not found — already deleted, or never created",
        ref,
        (),
        (),
        children,
    )
    return Explanation(ref, "absent", root)
