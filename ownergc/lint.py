"""ownerReference lint: pure checks of a set of objects, one :class:`Finding` per problem.

Every rule is a way owner references go wrong in practice, and each finding
says what the garbage collector will do about it and how to fix it:

=================================== ======== ==============================================
rule                                severity what goes wrong
=================================== ======== ==============================================
invalid-owner-reference             error    a field is missing or the owner is a core Event:
                                             the apiserver rejects the object (422)
multiple-controllers                error    more than one ``controller: true`` (422)
unknown-owner-kind                  error    the owner's apiVersion/kind is not served: the GC
                                             can never resolve it, the object is never
                                             collected (kubernetes#102641)
cross-namespace-owner               error    the owner lives in another namespace; the GC
                                             looks owners up in the dependent's namespace,
                                             finds nothing and *deletes the dependent*
                                             (OwnerRefInvalidNamespace, kubernetes#65200)
namespaced-owner-of-cluster-scoped  error    a cluster-scoped object names a namespaced
                                             owner: unresolvable, never collected
owner-reference-mismatch            error    the uid belongs to an object with another
                                             kind/name: the GC finds no owner with that uid
                                             under the ref's name and deletes the dependent
owner-uid-mismatch                  error    an owner with the ref's kind/name exists but with
                                             another uid (recreated?): the dependent is garbage
dangling-owner                      warning  no owner with that uid: in a cluster the GC
                                             collects the object (unless another owner is
                                             present); in manifests the owner may simply be
                                             elsewhere
ownership-cycle                     warning  objects own each other: none is collected until
                                             one is deleted; foreground deletion of a member
                                             relies on the GC's cycle guard
block-owner-deletion-rbac           warning  ``blockOwnerDeletion: true`` but no Role or
                                             ClusterRole among the manifests grants ``update``
                                             on ``<owner resource>/finalizers``
block-owner-deletion-permission     info     ``blockOwnerDeletion: true`` with no RBAC in the
                                             input to check
=================================== ======== ==============================================

The blockOwnerDeletion heuristic: with the OwnerReferencesPermissionEnforcement
admission plugin (on in OpenShift and many hardened clusters) whoever sets
``blockOwnerDeletion: true`` needs ``update`` on the owner's ``finalizers``
subresource. Which identity creates a dependent is not in the manifests, so
when Roles/ClusterRoles are present the check asks whether *any* of them —
only those bound to a ServiceAccount when bindings are present too — grants
``update`` on ``<owner plural>/finalizers`` in the owner's API group (wildcards
and resourceNames honoured; a Role only for owners in its namespace). Without
RBAC in the input it can only inform.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ownergc._core.ownerref_rules import (
    KindInfo,
    Violation,
    check_controllers,
    check_owner_kind,
    check_owner_namespace,
    check_owner_scope,
    check_owner_uid,
    check_reference_fields,
    dangling_owner,
)
from ownergc._core.ownerref_rules import group_of as _group
from ownergc._core.ownerref_rules import ref_label as _ref_label

__all__ = ["SEVERITIES", "Finding", "KindInfo", "lint_objects"]

SEVERITIES = ("error", "warning", "info")
_RBAC = "rbac.authorization.k8s.io"


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: which object, which rule, what happens, and how to fix it."""

    severity: str
    rule: str
    object: str
    message: str
    fix: str
    uid: str | None = None
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "rule": self.rule,
            "object": self.object,
            "uid": self.uid,
            "source": self.source,
            "message": self.message,
            "fix": self.fix,
        }

    def line(self) -> str:
        where = f" ({self.source})" if self.source else ""
        head = f"{self.severity.upper():<7} {self.object}{where}: [{self.rule}]"
        return f"{head} {self.message}. Fix: {self.fix}."


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    if type(meta) is dict:  # the usual case, without the ABC check
        return meta
    return meta if isinstance(meta, Mapping) else {}


def _label(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    ns = meta.get("namespace")
    return f"{obj.get('kind')} {ns + '/' if ns else ''}{meta.get('name')}"


class _Index:
    def __init__(self, objects: Sequence[Mapping[str, Any]]) -> None:
        self._objects = objects
        self.by_uid: dict[str, Mapping[str, Any]] = {}
        by_uid = self.by_uid
        for obj in objects:
            uid = _meta(obj).get("uid")
            if isinstance(uid, str) and uid:
                by_uid[uid] = obj
        self._by_name: dict[tuple[str, str, str], list[Mapping[str, Any]]] | None = None

    @property
    def by_name(self) -> dict[tuple[str, str, str], list[Mapping[str, Any]]]:
        """(group, kind, name) -> objects, in input order; built when first asked
        (only references whose uid matches nothing look owners up by name)."""
        if self._by_name is None:
            by_name: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
            for obj in self._objects:
                group = _group(str(obj.get("apiVersion", "")))
                key = (group, str(obj.get("kind")), str(_meta(obj).get("name")))
                by_name.setdefault(key, []).append(obj)
            self._by_name = by_name
        return self._by_name


def lint_objects(
    objects: Sequence[Mapping[str, Any]],
    *,
    kinds: Mapping[tuple[str, str], KindInfo],
    complete: bool = False,
    sources: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Check every ownerReference of ``objects``.

    ``kinds`` maps (apiVersion, kind) to how it is served (discovery of a
    cluster, or built-in kinds plus the CRDs in the input). ``complete``
    says the objects are a whole cluster, so an absent owner really is
    absent. ``sources`` maps uid (or label) to where the object was read.
    """
    index = _Index(objects)
    sources = sources or {}
    findings: list[Finding] = []
    rbac = _RBACIndex(objects)
    for obj in objects:
        findings.extend(_check_object(obj, index, kinds, complete, rbac, sources))
    findings.extend(_cycles(objects, index, sources))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: (order[f.severity], f.object, f.rule))


def _source(obj: Mapping[str, Any], sources: Mapping[str, str]) -> str | None:
    if not sources:  # a cluster's objects: no files to name
        return None
    uid = _meta(obj).get("uid")
    return sources.get(str(uid)) or sources.get(_label(obj))


def _check_object(
    obj: Mapping[str, Any],
    index: _Index,
    kinds: Mapping[tuple[str, str], KindInfo],
    complete: bool,
    rbac: _RBACIndex,
    sources: Mapping[str, str],
) -> Iterable[Finding]:
    meta = _meta(obj)
    refs = meta.get("ownerReferences") or []
    if not isinstance(refs, list) or not refs:
        return []
    label = _label(obj)
    uid = meta.get("uid") if isinstance(meta.get("uid"), str) else None
    src = _source(obj, sources)
    out: list[Finding] = []

    def add(severity: str, rule: str, message: str, fix: str) -> None:
        out.append(Finding(severity, rule, label, message, fix, uid, src))

    namespace = meta.get("namespace") or None
    self_kind = kinds.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
    dependent_namespaced = self_kind.namespaced if self_kind is not None else namespace is not None

    def report(violation: Violation | None) -> bool:
        if violation is not None:
            add("error", violation.rule, violation.message, violation.fix)
        return violation is not None

    report(check_controllers(refs))
    for ref in refs:
        if report(check_reference_fields(ref)):
            continue
        api_version, kind, name, ref_uid = (
            str(ref["apiVersion"]),
            str(ref["kind"]),
            str(ref["name"]),
            str(ref["uid"]),
        )
        owner_kind = kinds.get((api_version, kind))
        if owner_kind is None:
            report(check_owner_kind(ref, owner_kind))
            continue
        if report(check_owner_scope(ref, owner_kind.namespaced, dependent_namespaced)):
            continue
        owner = index.by_uid.get(ref_uid)
        if owner is not None:
            ometa = _meta(owner)
            owner_api_version = owner.get("apiVersion", "")
            if (
                owner.get("kind") != kind
                or ometa.get("name") != name
                or (
                    owner_api_version != api_version
                    and _group(str(owner_api_version)) != _group(api_version)
                )
            ):
                add(
                    "error",
                    "owner-reference-mismatch",
                    f"uid {ref_uid} belongs to {_label(owner)}, but the reference says {kind} "
                    f"{name} ({api_version}); the GC looks the owner up by the reference's "
                    "kind/name, finds another uid and deletes this object",
                    f"make the reference name {_label(owner)} exactly (apiVersion "
                    f"{owner.get('apiVersion')}, kind {owner.get('kind')}, "
                    f"name {ometa.get('name')})",
                )
                continue
            owner_ns = ometa.get("namespace") or None
            if owner_ns is not None and owner_ns != namespace:
                # namespace None: namespaced-owner-of-cluster-scoped, when kinds know
                report(check_owner_namespace(_label(owner), owner_ns, namespace))
                continue
            if ref.get("blockOwnerDeletion") is True and owner_kind is not None:
                out.extend(rbac.check(label, uid, src, ref, owner_kind, namespace))
            continue
        # No object with that uid: look for one with the reference's coordinates.
        same_name = index.by_name.get((_group(api_version), kind, name), [])
        here = [
            o
            for o in same_name
            if (_meta(o).get("namespace") or None)
            == (namespace if owner_kind is None or owner_kind.namespaced else None)
        ]
        if here:
            actual = _meta(here[0]).get("uid")
            report(check_owner_uid(_label(here[0]), str(actual), ref))
            continue
        elsewhere = [o for o in same_name if _meta(o).get("namespace") not in (None, namespace)]
        if elsewhere and namespace is not None:
            add(
                "error",
                "cross-namespace-owner",
                f"the only {kind} named {name} is in namespace "
                f'"{_meta(elsewhere[0]).get("namespace")}"; owners must be in "{namespace}" '
                "and the GC will delete this object",
                "owners must be in the same namespace or cluster-scoped",
            )
            continue
        dangling = dangling_owner(ref, complete=complete)
        add("warning", dangling.rule, dangling.message, dangling.fix)
        if ref.get("blockOwnerDeletion") is True and owner_kind is not None:
            out.extend(rbac.check(label, uid, src, ref, owner_kind, namespace))
    return out


class _RBACIndex:
    """Roles/ClusterRoles (and bindings) among the inputs, for the blockOwnerDeletion check."""

    def __init__(self, objects: Sequence[Mapping[str, Any]]) -> None:
        roles: dict[tuple[str, str | None, str], Mapping[str, Any]] = {}
        bound: set[tuple[str, str | None, str]] = set()
        has_bindings = False
        for obj in objects:
            if _group(str(obj.get("apiVersion", ""))) != _RBAC:
                continue
            meta = _meta(obj)
            kind = obj.get("kind")
            if kind in ("Role", "ClusterRole"):
                ns = meta.get("namespace") if kind == "Role" else None
                roles[(str(kind), ns, str(meta.get("name")))] = obj
            elif kind in ("RoleBinding", "ClusterRoleBinding"):
                has_bindings = True
                subjects = obj.get("subjects") or []
                if not any(
                    isinstance(s, Mapping) and s.get("kind") == "ServiceAccount" for s in subjects
                ):
                    continue
                ref = obj.get("roleRef") or {}
                role_kind = str(ref.get("kind"))
                ns = meta.get("namespace") if role_kind == "Role" else None
                bound.add((role_kind, ns, str(ref.get("name"))))
        self.present = bool(roles)
        self.roles = [
            (key, role) for key, role in roles.items() if not has_bindings or key in bound
        ]

    def grants_finalizers(
        self, group: str, resource: str, name: str, namespace: str | None
    ) -> bool:
        for (kind, ns, _), role in self.roles:
            if kind == "Role" and ns != namespace:
                continue
            for rule in role.get("rules") or []:
                if not isinstance(rule, Mapping):
                    continue
                groups = rule.get("apiGroups") or []
                resources = rule.get("resources") or []
                verbs = rule.get("verbs") or []
                names = rule.get("resourceNames") or []
                if not ("*" in groups or group in groups):
                    continue
                wanted = ("*", f"{resource}/finalizers", "*/finalizers")
                if not any(r in resources for r in wanted):
                    continue
                if not ("*" in verbs or "update" in verbs):
                    continue
                if names and name not in names:
                    continue
                return True
        return False

    def check(
        self,
        label: str,
        uid: str | None,
        source: str | None,
        ref: Mapping[str, Any],
        owner: KindInfo,
        namespace: str | None,
    ) -> list[Finding]:
        group = _group(str(ref.get("apiVersion")))
        rule = (
            f'{{apiGroups: ["{group}"], resources: ["{owner.resource}/finalizers"], '
            'verbs: ["update"]}'
        )
        if not self.present:
            return [
                Finding(
                    "info",
                    "block-owner-deletion-permission",
                    label,
                    f"blockOwnerDeletion: true on {_ref_label(ref)}: with the "
                    "OwnerReferencesPermissionEnforcement admission plugin, whoever creates this "
                    f"object needs update on {owner.resource}/finalizers",
                    f"give the operator's role {rule}, or set blockOwnerDeletion: false",
                    uid,
                    source,
                )
            ]
        owner_ns = namespace if owner.namespaced else None
        if self.grants_finalizers(group, owner.resource, str(ref.get("name")), owner_ns):
            return []
        return [
            Finding(
                "warning",
                "block-owner-deletion-rbac",
                label,
                f"blockOwnerDeletion: true on {_ref_label(ref)}, but no Role/ClusterRole here "
                f"grants update on {owner.resource}/finalizers; with "
                'OwnerReferencesPermissionEnforcement the create fails: "cannot set '
                "blockOwnerDeletion if an ownerReference refers to a resource you can't set "
                'finalizers on"',
                f"add the rule {rule} to the operator's role, or set blockOwnerDeletion: false",
                uid,
                source,
            )
        ]


def _cycles(
    objects: Sequence[Mapping[str, Any]], index: _Index, sources: Mapping[str, str]
) -> list[Finding]:
    """Strongly connected components of the owner graph (Tarjan, iterative).

    Objects that reach no cycle by following owners are peeled off first (each
    in turn has no owner left; linear): Tarjan's search would find each of them
    alone, and visiting them changes neither the components nor their order.
    On a cluster without cycles nothing is left to search.
    """
    by_uid = index.by_uid
    all_edges: dict[str, list[str]] = {}
    owed: dict[str, int] = {}  # owner references not yet known to lead nowhere
    dependents: dict[str, list[str]] = {}
    sinks: list[str] = []
    for uid, obj in by_uid.items():
        refs = _meta(obj).get("ownerReferences")
        if not refs:
            sinks.append(uid)
            continue
        targets = []
        for ref in refs:
            if type(ref) is dict or isinstance(ref, Mapping):
                owner = str(ref.get("uid"))
                if owner in by_uid:
                    targets.append(owner)
        if not targets:
            sinks.append(uid)
            continue
        all_edges[uid] = targets
        owed[uid] = len(targets)
        for owner in targets:
            dependents.setdefault(owner, []).append(uid)
    while sinks:
        done = sinks.pop()
        for dependent in dependents.get(done, ()):
            owed[dependent] -= 1
            if owed[dependent] == 0:
                sinks.append(dependent)
    edges = {
        uid: [u for u in targets if owed.get(u)] for uid, targets in all_edges.items() if owed[uid]
    }
    counter = 0
    low: dict[str, int] = {}
    num: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(edges):
        if root in num:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                num[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = edges.get(node, [])
            if i < len(targets):
                work.append((node, i + 1))
                nxt = targets[i]
                if nxt not in num:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], num[nxt])
                continue
            if low[node] == num[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1 or node in edges.get(node, []):
                    components.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    out = []
    for comp in components:
        labels = sorted(_label(index.by_uid[u]) for u in comp)
        for u in comp:
            obj = index.by_uid[u]
            out.append(
                Finding(
                    "warning",
                    "ownership-cycle",
                    _label(obj),
                    "part of an ownership cycle (" + " -> ".join(labels) + "); none of them is "
                    "collected until one is deleted explicitly",
                    "break the cycle: ownership should form a tree (or a DAG)",
                    u,
                    _source(obj, sources),
                )
            )
    return out
