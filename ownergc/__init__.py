"""ownergc: Kubernetes garbage-collection semantics, exactly, with pluggable backends.

The names here are the pure core: no I/O, no clock, no tasks (their homes are
in ``ownergc/_core/``). The runtime lives in :mod:`ownergc.controller`, the
backend seams in :mod:`ownergc.protocols`, errors in :mod:`ownergc.errors`,
node (kubelet) GC policies in :mod:`ownergc.nodegc`, the analyses in
:mod:`ownergc.lint` and :mod:`ownergc.why`.
"""

from __future__ import annotations

from ownergc._core.decisions import (
    Classification,
    Delete,
    Done,
    EnqueueDelete,
    EnqueueVirtualDelete,
    NamespacedOwnerOfClusterScopedObject,
    NeedOwners,
    OwnerLookup,
    Patch,
    Plan,
    RemoveFinalizer,
    Step,
    classify_references,
    decide_attempt_to_delete,
    plan_attempt_to_orphan,
    plan_deleting_dependents,
    plan_owner_lookup,
    policy_for_finalizers,
    remove_finalizer_patch,
)
from ownergc._core.graph import Node, UIDToNode
from ownergc._core.graph_builder import (
    AbsentOwnerCache,
    GraphBuilder,
    InvalidNamespaceEvent,
    ReferencesDiff,
    get_alternate_owner_identity,
    partition_dependents,
    references_diffs,
    starts_waiting_for_dependents_deleted,
    starts_waiting_for_dependents_orphaned,
)
from ownergc._core.patches import (
    delete_owner_refs_json_merge_patch,
    delete_owner_refs_strategic_merge_patch,
    finalizers_merge_patch,
    remove_finalizer_json_merge_patch,
    unblock_owner_refs_json_merge_patch,
    unblock_owner_refs_strategic_merge_patch,
)
from ownergc._core.refs import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_KUBERNETES,
    FINALIZER_ORPHAN_DEPENDENTS,
    ObjectReference,
    OwnerReference,
    metadata_of,
    owner_references_of,
)
from ownergc._core.types import JSONDict, PatchType, Preconditions, PropagationPolicy

__version__ = "0.1.0.dev0"

__all__ = [
    "FINALIZER_DELETE_DEPENDENTS",
    "FINALIZER_KUBERNETES",
    "FINALIZER_ORPHAN_DEPENDENTS",
    "AbsentOwnerCache",
    "Classification",
    "Delete",
    "Done",
    "EnqueueDelete",
    "EnqueueVirtualDelete",
    "GraphBuilder",
    "InvalidNamespaceEvent",
    "JSONDict",
    "NamespacedOwnerOfClusterScopedObject",
    "NeedOwners",
    "Node",
    "ObjectReference",
    "OwnerLookup",
    "OwnerReference",
    "Patch",
    "PatchType",
    "Plan",
    "Preconditions",
    "PropagationPolicy",
    "ReferencesDiff",
    "RemoveFinalizer",
    "Step",
    "UIDToNode",
    "__version__",
    "classify_references",
    "decide_attempt_to_delete",
    "delete_owner_refs_json_merge_patch",
    "delete_owner_refs_strategic_merge_patch",
    "finalizers_merge_patch",
    "get_alternate_owner_identity",
    "metadata_of",
    "owner_references_of",
    "partition_dependents",
    "plan_attempt_to_orphan",
    "plan_deleting_dependents",
    "plan_owner_lookup",
    "policy_for_finalizers",
    "references_diffs",
    "remove_finalizer_json_merge_patch",
    "remove_finalizer_patch",
    "starts_waiting_for_dependents_deleted",
    "starts_waiting_for_dependents_orphaned",
    "unblock_owner_refs_json_merge_patch",
    "unblock_owner_refs_strategic_merge_patch",
]
