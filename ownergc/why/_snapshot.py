"""The snapshot, indexed as the controllers look objects up, and owner references
classified as kube-controller-manager's garbage collector does (attemptToDeleteItem)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ownergc import OwnerReference, classify_references
from ownergc.errors import InvalidOwnerReference
from ownergc.protocols import APIResource, JSONDict
from ownergc.why._tree import NextStep, ObjectRef, Reason

__all__ = [
    "KindInfo",
    "OwnerVerdict",
    "Snapshot",
    "TargetNotResolved",
    "classify_owners",
    "conditions_of",
    "group_of",
    "meta_of",
    "owner_reason",
    "ref_label",
]

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


class TargetNotResolved(LookupError):
    """The KIND in ``KIND/NAME`` names no served resource."""


def group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def conditions_of(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = obj.get("status")
    conds = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in conds or () if isinstance(c, Mapping)]


@dataclass
class KindInfo:
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
        self.kinds: dict[tuple[str, str], KindInfo] = {}
        for res in self.resources or ():
            if "/" in res.resource:
                continue
            key = (res.group, res.kind)
            if key not in self.kinds or res.preferred:
                self.kinds[key] = KindInfo(res.namespaced, res.resource, res.group)
        seen_ns: dict[tuple[str, str], bool] = {}
        for obj in self.objects:
            meta = meta_of(obj)
            uid = meta.get("uid")
            if isinstance(uid, str) and uid:
                self.by_uid.setdefault(uid, obj)
            group = group_of(str(obj.get("apiVersion") or ""))
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
                self.kinds[(group, kind)] = KindInfo(namespaced, kind.lower(), group)

    def kind_info(self, group: str, kind: str) -> KindInfo | None:
        return self.kinds.get((group, kind))

    def kubectl_resource(self, obj_or_ref: Mapping[str, Any] | ObjectRef) -> str:
        """``resource[.group]`` as kubectl takes it."""
        if isinstance(obj_or_ref, ObjectRef):
            api_version, kind = obj_or_ref.api_version, obj_or_ref.kind
        else:
            api_version, kind = str(obj_or_ref.get("apiVersion")), str(obj_or_ref.get("kind"))
        group = group_of(api_version)
        info = self.kind_info(group, kind)
        resource = info.resource if info is not None else kind.lower()
        return f"{resource}.{group}" if group else resource

    def kubectl_target(self, obj: Mapping[str, Any]) -> str:
        meta = meta_of(obj)
        ns = meta.get("namespace")
        return f"{self.kubectl_resource(obj)} {meta.get('name')}" + (f" -n {ns}" if ns else "")

    def namespaced(self, group: str, kind: str, default: bool) -> bool:
        info = self.kind_info(group, kind)
        return info.namespaced if info is not None else default

    def content_of(self, namespace: str) -> list[JSONDict]:
        return [o for o in self.objects if meta_of(o).get("namespace") == namespace]

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
class OwnerVerdict:
    ref: OwnerReference
    index: int
    #: solid, dangling, waitingForDependentsDeletion, invalidNamespace,
    #: namespacedOwnerOfClusterScoped, unknownKind, malformed.
    state: str
    owner: JSONDict | None
    note: str = ""


def classify_owners(snap: Snapshot, obj: Mapping[str, Any]) -> list[OwnerVerdict]:
    meta = meta_of(obj)
    dep_ns = str(meta.get("namespace") or "")
    out: list[OwnerVerdict] = []
    for index, raw in enumerate(meta.get("ownerReferences") or ()):
        try:
            ref = OwnerReference.from_dict(raw)
        except InvalidOwnerReference as exc:
            bad = OwnerReference("?", "?", "?", "?")
            out.append(OwnerVerdict(bad, index, "malformed", None, str(exc)))
            continue
        group = group_of(ref.api_version)
        info = snap.kind_info(group, ref.kind)
        if info is None and snap.resources is not None:
            out.append(OwnerVerdict(ref, index, "unknownKind", None))
            continue
        owner_namespaced = info.namespaced if info is not None else bool(dep_ns)
        if owner_namespaced and not dep_ns:
            out.append(OwnerVerdict(ref, index, "namespacedOwnerOfClusterScoped", None))
            continue
        found = snap.by_name.get((group, ref.kind, dep_ns if owner_namespaced else "", ref.name))
        if found is not None and meta_of(found).get("uid") == ref.uid:
            cls = classify_references([ref], {ref: found})
            state = "solid" if cls.solid else "waitingForDependentsDeletion"
            out.append(OwnerVerdict(ref, index, state, found))
            continue
        elsewhere = snap.by_uid.get(ref.uid)
        if elsewhere is not None and owner_namespaced:
            other_ns = meta_of(elsewhere).get("namespace")
            if other_ns and other_ns != dep_ns:
                out.append(OwnerVerdict(ref, index, "invalidNamespace", elsewhere, str(other_ns)))
                continue
        note = ""
        if found is not None:
            other = meta_of(found).get("uid")
            note = f"an object named {ref.name} exists with another uid ({other})"
        elif elsewhere is not None:
            note = f"uid {ref.uid} belongs to {ObjectRef.of(elsewhere)} (kind or name differ)"
        out.append(OwnerVerdict(ref, index, "dangling", None, note))
    return out


def ref_label(ref: OwnerReference) -> str:
    return f"{ref.kind} {ref.name}"


def owner_reason(snap: Snapshot, obj: Mapping[str, Any], v: OwnerVerdict) -> Reason:
    ref = v.ref
    meta = meta_of(obj)
    dep_ns = meta.get("namespace") or ""
    path = f"/metadata/ownerReferences/{v.index}"
    remove_ref = NextStep(
        f"kubectl patch {snap.kubectl_target(obj)} --type=json "
        f'-p \'[{{"op":"test","path":"{path}/uid","value":"{ref.uid}"}},'
        f'{{"op":"remove","path":"{path}"}}]\'',
        f"{ObjectRef.of(obj)} is no longer deleted together with {ref_label(ref)}",
    )
    subject = ObjectRef.of(v.owner) if v.owner is not None else None
    if v.state == "solid":
        owner_meta = meta_of(v.owner or {})
        extra = ""
        if owner_meta.get("deletionTimestamp"):
            extra = " (being deleted, but not in the foreground: it still counts as an owner)"
        return Reason(
            "owner.solid",
            f"owner {ref_label(ref)}: solid — it exists with uid {ref.uid}{extra}",
            subject,
            ("while it exists the garbage collector keeps this object",),
        )
    if v.state == "waitingForDependentsDeletion":
        return Reason(
            "owner.waitingForDependentsDeletion",
            f"owner {ref_label(ref)}: waiting for dependents' deletion — it is being "
            "deleted in the foreground",
            subject,
            ("the garbage collector deletes this object so that its owner can go",),
        )
    if v.state == "invalidNamespace":
        return Reason(
            "owner.invalidNamespace",
            f"owner {ref_label(ref)}: invalid — it lives in namespace {v.note}, "
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
            f"owner {ref_label(ref)}: invalid — a cluster-scoped object cannot have a "
            "namespaced owner",
            None,
            (
                "the garbage collector records a Warning event OwnerRefInvalidNamespace on it "
                "(once it has seen the owner) and stops examining it: it is never collected "
                "through its owners and this reference is never removed (Kubernetes 1.20+)",
            ),
            (remove_ref,),
        )
    if v.state == "unknownKind":
        return Reason(
            "owner.unknownKind",
            f"owner {ref_label(ref)}: kind {ref.kind} of {ref.api_version} is not served",
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
            if dep_ns and snap.namespaced(group_of(ref.api_version), ref.kind, True)
            else ""
        )
    ]
    if v.note:
        details.append(v.note)
    return Reason(
        "owner.dangling",
        f"owner {ref_label(ref)}: dangling — the owner is gone",
        None,
        tuple(details),
    )
