"""The public surface is deliberate: what each public namespace exports, pinned.

A name added to or dropped from ``ownergc`` must be added or dropped here too
(httpcore's tests/test_exported_members.py does the same for its API).
"""

from __future__ import annotations

import importlib
import types

import pytest

import ownergc

#: ARCHITECTURE.md's public core names, plus the types their functions return
#: and the helpers the controller (and any other controller) builds on.
OWNERGC = [
    "FINALIZER_DELETE_DEPENDENTS",
    "FINALIZER_KUBERNETES",
    "FINALIZER_ORPHAN_DEPENDENTS",
    "JSONDict",
    "AbsentOwnerCache",
    "Classification",
    "Delete",
    "Done",
    "EnqueueDelete",
    "EnqueueVirtualDelete",
    "GraphBuilder",
    "InvalidNamespaceEvent",
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

#: Namespaces whose every public attribute is an export (re-export modules).
CURATED = [
    "ownergc",
    "ownergc.controller",
    "ownergc.nodegc",
    "ownergc_backends.memory",
    "ownergc_backends.kube",
    "ownergc_backends.cri",
]


def test_ownergc_exports_exactly_the_public_core() -> None:
    assert sorted(ownergc.__all__) == sorted(OWNERGC)


@pytest.mark.parametrize("name", CURATED)
def test_curated_namespace_exports_what_it_defines(name: str) -> None:
    module = importlib.import_module(name)
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and not isinstance(value, types.ModuleType)
        and attr not in ("annotations", "TYPE_CHECKING")
    }
    assert public == set(module.__all__) - {"__version__"}


@pytest.mark.parametrize(
    "name",
    [
        *CURATED,
        "ownergc.protocols",
        "ownergc.errors",
        "ownergc.lint",
        "ownergc.why",
        "ownergc.ownerrefs",
    ],
)
def test_all_names_exist_once(name: str) -> None:
    module = importlib.import_module(name)
    assert len(module.__all__) == len(set(module.__all__))
    for attr in module.__all__:
        assert hasattr(module, attr), f"{name}.{attr}"


def test_public_functions_return_public_types() -> None:
    """Every class a public core function hands back is importable from ownergc."""
    import typing

    exported = {getattr(ownergc, n) for n in ownergc.__all__}
    for attr in ownergc.__all__:
        value = getattr(ownergc, attr)
        if not isinstance(value, types.FunctionType):
            continue
        returned = typing.get_type_hints(value).get("return")
        for cls in _classes_in(returned):
            if cls.__module__.startswith("ownergc"):
                assert cls in exported, f"{attr} returns {cls.__name__}, not exported"


def _classes_in(hint: object) -> list[type]:
    import typing

    if isinstance(hint, type):
        return [hint]
    return [c for arg in typing.get_args(hint) for c in _classes_in(arg)]


#: The operator API for owner references (docs/ownerrefs.md).
OWNERREFS = [
    "KindInfo",
    "Kinds",
    "discover_kinds",
    "get_controller_of",
    "has_controller_reference",
    "has_owner_reference",
    "owner_reference",
    "owner_references",
    "remove_controller_reference",
    "remove_owner_reference",
    "set_controller_reference",
    "set_owner_reference",
    "validate_owner_references",
]


def test_ownerrefs_exports_exactly_the_operator_api() -> None:
    import ownergc.ownerrefs

    assert sorted(ownergc.ownerrefs.__all__) == sorted(OWNERREFS)


def test_errors_come_from_ownergc_errors_alone() -> None:
    import ownergc.errors
    import ownergc.protocols

    errors = {n for n in ownergc.errors.__all__ if isinstance(getattr(ownergc.errors, n), type)}
    assert not errors & set(ownergc.protocols.__all__)
    assert not errors & set(ownergc.__all__)
