"""attemptToDelete / attemptToOrphan as pure decisions: data in, plan out.

Rule 1 — classification. Each ownerReference of an item is
  * *dangling*: the owner does not exist, or something else (another uid)
    now has its name;
  * *waitingForDependentsDeletion*: the owner exists, is being deleted and
    carries the ``foregroundDeletion`` finalizer;
  * *solid*: anything else that exists (including owners being deleted with
    only ``orphan`` or custom finalizers).

Rule 2 — what to do with an item that is not being deleted:
  * ≥1 solid owner: keep it; drop refs to dangling and waiting owners (one
    patch), or do nothing if there are none;
  * no solid owner, ≥1 waiting owner, and the item has dependents of its own:
    delete it with Foreground (so the cascade keeps blocking upward), first
    unblocking its refs if one of its dependents is itself deleting
    dependents (the cycle breaker);
  * otherwise (all owners dangling, or waiting but no dependents): delete it
    with the policy its own finalizers ask for (``orphan`` -> Orphan,
    ``foregroundDeletion`` -> Foreground, else Background).

Rule 3 — an item in Foreground deletion (``deletingDependents``) loses its
``foregroundDeletion`` finalizer once no dependent blocks it; until then its
blocking dependents are queued for deletion.

Rule 4 — an item being deleted without ``deletingDependents`` is left alone:
its dependents are handled once it is gone.

The controller runs the lookups (GET item, GET owners or the absent-owner
cache) and executes the plan; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ownergc._core.graph import Node
from ownergc._core.graph_builder import AbsentOwnerCache
from ownergc._core.patches import (
    delete_owner_refs_json_merge_patch,
    delete_owner_refs_strategic_merge_patch,
    owner_refs_merge_patch,
    remove_finalizer_json_merge_patch,
    unblock_owner_refs_json_merge_patch,
    unblock_owner_refs_strategic_merge_patch,
)
from ownergc._core.refs import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    ObjectReference,
    OwnerReference,
    metadata_of,
    owner_references_of,
)
from ownergc._core.types import Preconditions, PropagationPolicy

__all__ = [
    "Classification",
    "Delete",
    "Done",
    "EnqueueDelete",
    "EnqueueVirtualDelete",
    "NamespacedOwnerOfClusterScopedObject",
    "NeedOwners",
    "OwnerLookup",
    "Patch",
    "Plan",
    "RemoveFinalizer",
    "classify_references",
    "decide_attempt_to_delete",
    "plan_attempt_to_orphan",
    "plan_deleting_dependents",
    "plan_owner_lookup",
    "policy_for_finalizers",
]


# -- plan steps -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Done:
    """Nothing (more) to do for this item."""

    reason: str


@dataclass(frozen=True, slots=True)
class EnqueueVirtualDelete:
    """The item is gone (404) or replaced (uid differs): tell the graph builder."""

    identity: ObjectReference


@dataclass(frozen=True, slots=True)
class EnqueueDelete:
    """Add these nodes to attemptToDelete."""

    nodes: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Patch:
    """Patch ``target``: strategic merge first, the JSON merge patch on 415.

    ``smp`` is ``None`` when only a JSON merge patch applies.
    """

    target: ObjectReference
    smp: dict[str, Any] | None
    jmp: dict[str, Any]
    why: str = ""


@dataclass(frozen=True, slots=True)
class Delete:
    """DELETE ``target`` with a propagation policy and preconditions."""

    target: ObjectReference
    policy: PropagationPolicy
    preconditions: Preconditions
    why: str = ""


@dataclass(frozen=True, slots=True)
class RemoveFinalizer:
    """Remove ``finalizer`` from ``target`` (GET, then JSON merge patch, retried on 409)."""

    target: ObjectReference
    finalizer: str


@dataclass(frozen=True, slots=True)
class NeedOwners:
    """The decision needs the owners of ``refs`` looked up (isDangling for each)."""

    refs: tuple[OwnerReference, ...]


@dataclass(frozen=True, slots=True)
class NamespacedOwnerOfClusterScopedObject:
    """A cluster-scoped item names a namespaced owner kind: never collected, not retried."""

    ref: OwnerReference


Step = Done | EnqueueVirtualDelete | EnqueueDelete | Patch | Delete | RemoveFinalizer


@dataclass(frozen=True, slots=True)
class Plan:
    """Steps to run in order; the first failing step stops the plan."""

    steps: tuple[Step, ...]
    #: Whether a successful run should be followed by a re-check (virtual nodes poll).
    requeue: bool = False

    def __iter__(self) -> Any:
        return iter(self.steps)


def _plan(*steps: Step) -> Plan:
    return Plan(steps)


# -- classification ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Classification:
    solid: list[OwnerReference] = field(default_factory=list)
    dangling: list[OwnerReference] = field(default_factory=list)
    waiting_for_dependents_deletion: list[OwnerReference] = field(default_factory=list)


OwnerLookupResults = (
    Mapping[str, Mapping[str, Any] | None] | Mapping[OwnerReference, Mapping[str, Any] | None]
)


def classify_references(
    refs: Sequence[OwnerReference], owners: OwnerLookupResults
) -> Classification:
    """Sort ``refs`` into solid, dangling and waiting, given each owner's latest state.

    ``owners`` maps a ref's uid to the owner's latest object, or ``None`` when
    it is absent. An object found under the owner's name with another uid is
    a different object, so the ref is dangling.

    ``owners`` may also be keyed by the :class:`OwnerReference` itself, which
    is what Kubernetes does (one lookup per ref): two refs with the same uid
    but other coordinates (kind, name, apiVersion) name different lookups, and
    one can dangle while the other is solid. A ref key wins over a uid key.
    """
    result = Classification()
    lookups: Mapping[Any, Mapping[str, Any] | None] = owners
    for ref in refs:
        if ref in lookups:
            owner = lookups[ref]
        elif ref.uid in lookups:
            owner = lookups[ref.uid]
        else:
            raise ValueError(f"no owner lookup result for owner reference {ref}")
        if owner is None:
            result.dangling.append(ref)
            continue
        meta = metadata_of(owner)
        if meta.get("uid") != ref.uid:
            result.dangling.append(ref)
        elif meta.get("deletionTimestamp") is not None and FINALIZER_DELETE_DEPENDENTS in (
            meta.get("finalizers") or ()
        ):
            result.waiting_for_dependents_deletion.append(ref)
        else:
            result.solid.append(ref)
    return result


# -- isDangling, split into a plan and its result ----------------------------


@dataclass(frozen=True, slots=True)
class OwnerLookup:
    """How to decide whether one owner ref dangles.

    ``dangling`` is known without a request (absent-owner cache hit);
    otherwise GET ``(api_version, kind, name)`` in ``namespace`` and, on 404
    or a uid mismatch, add ``cache_key`` to the absent-owner cache.
    """

    ref: OwnerReference
    dangling: bool
    namespace: str | None
    cache_key: ObjectReference


def plan_owner_lookup(
    ref: OwnerReference,
    item: ObjectReference,
    owner_namespaced: bool | Callable[[], bool],
    cache: AbsentOwnerCache,
) -> OwnerLookup | NamespacedOwnerOfClusterScopedObject:
    """Where to look for the owner named by ``ref`` of ``item``.

    A namespaced owner is only ever looked up in the item's own namespace: a
    reference across namespaces cannot be satisfied (it is dangling). A
    cluster-scoped item that names a namespaced kind is an error that is
    never retried, and the item is never collected because of it.
    ``owner_namespaced`` comes from REST mapping the ref's apiVersion/kind;
    the caller handles mapping failures (the item is kept and retried).

    Kubernetes consults the absent-owner cache *before* REST mapping, so a
    cached owner is dangling even when its kind no longer maps. Pass a
    callable to get that order: it is only called on a cache miss, and what
    it raises (a RESTMappingError) propagates.
    """
    cluster_key = ObjectReference.from_owner_reference(ref, None)
    item_key = ObjectReference.from_owner_reference(ref, item.namespace)
    if cache.has(cluster_key) or cache.has(item_key):
        return OwnerLookup(ref, True, None, cluster_key)
    if callable(owner_namespaced):
        owner_namespaced = owner_namespaced()
    if owner_namespaced and item.namespace is None:
        return NamespacedOwnerOfClusterScopedObject(ref)
    if owner_namespaced:
        return OwnerLookup(ref, False, item.namespace, item_key)
    return OwnerLookup(ref, False, None, cluster_key)


# -- attemptToDeleteItem ----------------------------------------------------


def policy_for_finalizers(finalizers: Sequence[str] | None) -> PropagationPolicy:
    """The policy an object's own finalizers ask for when the GC deletes it."""
    finalizers = finalizers or ()
    if FINALIZER_ORPHAN_DEPENDENTS in finalizers:
        return PropagationPolicy.ORPHAN
    if FINALIZER_DELETE_DEPENDENTS in finalizers:
        return PropagationPolicy.FOREGROUND
    return PropagationPolicy.BACKGROUND


def decide_attempt_to_delete(
    node: Node,
    latest: Mapping[str, Any] | None,
    owners: OwnerLookupResults | None = None,
) -> Plan | NeedOwners:
    """attemptToDeleteItem for ``node`` given its latest state.

    Call once with ``latest`` (the live object, ``None`` for 404) and no
    ``owners``: the answer is a plan, or :class:`NeedOwners` naming the refs
    to look up; then call again with ``owners`` filled in.
    """
    if node.being_deleted and not node.deleting_dependents:
        return _plan(Done("item is being deleted; its dependents are handled once it is gone"))
    if latest is None:
        return _plan(EnqueueVirtualDelete(node.identity))
    meta = metadata_of(latest)
    if meta.get("uid") != node.uid:
        return _plan(EnqueueVirtualDelete(node.identity))
    if node.deleting_dependents:
        return plan_deleting_dependents(node)
    refs = owner_references_of(latest)
    if not refs:
        return Plan((Done("item has no owner references"),), requeue=node.virtual)
    if owners is None:
        return NeedOwners(refs)
    classification = classify_references(refs, owners)
    return _decide_with_classification(node, latest, classification)


def _decide_with_classification(node: Node, latest: Mapping[str, Any], c: Classification) -> Plan:
    ident = node.identity
    requeue = node.virtual
    meta = metadata_of(latest)
    rv = meta.get("resourceVersion")
    if c.solid:
        if not c.dangling and not c.waiting_for_dependents_deletion:
            return Plan((Done("item has at least one solid owner"),), requeue=requeue)
        uids = [r.uid for r in c.dangling] + [r.uid for r in c.waiting_for_dependents_deletion]
        return Plan(
            (
                Patch(
                    ident,
                    delete_owner_refs_strategic_merge_patch(ident.uid, *uids),
                    delete_owner_refs_json_merge_patch(latest, *uids),
                    why="remove dangling and waiting owner references; a solid owner remains",
                ),
            ),
            requeue=requeue,
        )
    if c.waiting_for_dependents_deletion and node.dependents:
        steps: list[Step] = []
        for dep in node.dependents:
            if dep.deleting_dependents:
                steps.append(
                    Patch(
                        ident,
                        unblock_owner_refs_strategic_merge_patch(latest, node.owners),
                        unblock_owner_refs_json_merge_patch(latest, node.owners),
                        why=f"unblock owner references: dependent {dep.identity} "
                        "is deleting its own dependents (dependency cycle)",
                    )
                )
                break
        steps.append(
            Delete(
                ident,
                PropagationPolicy.FOREGROUND,
                # The unblock patch changes resourceVersion, so only uid guards then.
                Preconditions(uid=ident.uid, resource_version=None if steps else rv),
                why="an owner is waiting for dependents to be deleted and this item "
                "has dependents of its own",
            )
        )
        return Plan(tuple(steps), requeue=requeue)
    policy = policy_for_finalizers(meta.get("finalizers"))
    why = (
        "all owners are absent"
        if not c.waiting_for_dependents_deletion
        else "every owner is absent or waiting for dependents to be deleted"
    )
    return Plan(
        (Delete(ident, policy, Preconditions(uid=ident.uid, resource_version=rv), why=why),),
        requeue=requeue,
    )


def plan_deleting_dependents(node: Node) -> Plan:
    """processDeletingDependentsItem: release the owner, or push its blockers along."""
    blocking = node.blocking_dependents()
    if not blocking:
        return _plan(RemoveFinalizer(node.identity, FINALIZER_DELETE_DEPENDENTS))
    waiting = tuple(dict.fromkeys(dep for dep in blocking if not dep.deleting_dependents))
    if waiting:
        return _plan(EnqueueDelete(waiting))
    return _plan(Done("every blocking dependent is itself deleting its dependents"))


# -- attemptToOrphan --------------------------------------------------------


def plan_attempt_to_orphan(owner: Node) -> tuple[list[Patch], RemoveFinalizer]:
    """Patches removing ``owner``'s refs from each dependent, then the finalizer removal.

    The JSON merge fallback is built from what the graph last observed of
    each dependent (refs and resourceVersion), so a stale view fails with 409
    and is retried rather than overwriting a newer list.
    """
    uid = owner.uid
    patches = []
    for dep in owner.dependents:
        patches.append(
            Patch(
                dep.identity,
                delete_owner_refs_strategic_merge_patch(dep.uid, uid),
                owner_refs_merge_patch(dep.resource_version, dep.owners, uid),
                why=f"orphan: owner {owner.identity} is deleted with the orphan policy",
            )
        )
    return patches, RemoveFinalizer(owner.identity, FINALIZER_ORPHAN_DEPENDENTS)


def remove_finalizer_patch(latest: Mapping[str, Any], finalizer: str) -> dict[str, Any] | None:
    """The JSON merge patch removing ``finalizer``, or None when there is nothing to do."""
    if finalizer not in (metadata_of(latest).get("finalizers") or ()):
        return None
    return remove_finalizer_json_merge_patch(latest, finalizer)
