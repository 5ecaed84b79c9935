"""ownergc.ownerrefs on plain dicts: controllerutil's references, and one typed error per rule.

Owners are real objects a kube-apiserver 1.24 returned (fixtures/real-apiserver-1.24/cluster.json).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from ownergc import errors
from ownergc._core.builtin_kinds import ADDED_KINDS, BUILTIN_KINDS, REMOVED_VERSIONS
from ownergc._core.ownerref_rules import builtin_kinds
from ownergc.lint import KindInfo, lint_objects
from ownergc.ownerrefs import (
    discover_kinds,
    get_controller_of,
    has_controller_reference,
    has_owner_reference,
    remove_controller_reference,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
    validate_owner_references,
)
from tests import served_v130

FIXTURES = Path("/work/shared/fixtures/real-apiserver-1.24")
CLUSTER = json.loads((FIXTURES / "cluster.json").read_text())["items"]


def real(kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in CLUSTER if o["kind"] == kind and o["metadata"]["name"] == name]
    obj = copy.deepcopy(obj)
    obj.setdefault("apiVersion", "v1")
    return obj


def service() -> dict[str, Any]:
    return real("Service", "kubernetes")  # default/kubernetes, namespaced


def namespace() -> dict[str, Any]:
    return real("Namespace", "kube-system")  # cluster-scoped


def child(ns: str | None = "default", **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    if ns is not None:
        body["metadata"]["namespace"] = ns
    body["metadata"].update(meta)
    return body


def test_controller_reference_is_what_controllerutil_writes() -> None:
    owner = service()
    obj = child(data={"k": "v"})
    out = set_controller_reference(owner, obj)
    assert out is obj  # mutable objects change in place, as in Go
    assert obj["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "name": "kubernetes",
            "uid": owner["metadata"]["uid"],
            "blockOwnerDeletion": True,
            "controller": True,
        }
    ]
    assert has_controller_reference(obj)
    assert get_controller_of(obj) == obj["metadata"]["ownerReferences"][0]
    assert has_owner_reference(owner, obj)
    # Setting it again is idempotent.
    set_controller_reference(owner, obj)
    assert len(obj["metadata"]["ownerReferences"]) == 1


def test_owner_reference_has_no_controller_field_and_upserts_by_group_kind_name() -> None:
    a, b = namespace(), real("Namespace", "default")
    obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
    set_owner_reference(a, obj)
    set_owner_reference(b, obj, block_owner_deletion=False)
    refs = obj["metadata"]["ownerReferences"]
    assert [r["name"] for r in refs] == ["kube-system", "default"]
    assert "controller" not in refs[0] and "blockOwnerDeletion" not in refs[0]
    assert refs[1]["blockOwnerDeletion"] is False
    # Another version of the same group/kind/name replaces the reference in place.
    newer = copy.deepcopy(a)
    newer["apiVersion"] = "v2"
    newer["metadata"]["uid"] = "new-uid"
    set_owner_reference(newer, obj)
    assert [(r["apiVersion"], r["uid"]) for r in obj["metadata"]["ownerReferences"]] == [
        ("v2", "new-uid"),
        ("v1", b["metadata"]["uid"]),
    ]


def test_already_owned_carries_the_existing_controller() -> None:
    obj = child()
    set_controller_reference(service(), obj)
    other = service()
    other["metadata"]["name"] = "other"
    with pytest.raises(errors.AlreadyOwned) as info:
        set_controller_reference(other, obj)
    assert info.value.owner["name"] == "kubernetes"
    assert info.value.rule == "already-owned"
    with pytest.raises(errors.AlreadyOwned):
        remove_controller_reference(other, obj)
    # A non-controller reference from the second owner is fine.
    set_owner_reference(other, obj)
    assert [r["name"] for r in obj["metadata"]["ownerReferences"]] == ["kubernetes", "other"]


def test_remove() -> None:
    obj = child()
    set_controller_reference(service(), obj)
    set_owner_reference(namespace(), obj)
    remove_controller_reference(service(), obj)
    assert not has_controller_reference(obj)
    remove_owner_reference(namespace(), obj)
    assert obj["metadata"]["ownerReferences"] == []
    before = copy.deepcopy(obj)
    assert remove_owner_reference(namespace(), obj) == before  # absent: no error, no change


def test_cross_namespace_owner_is_refused_with_lint_rule_and_fix() -> None:
    obj = child(ns="shop")
    with pytest.raises(errors.CrossNamespaceOwner) as info:
        set_controller_reference(service(), obj)
    assert info.value.rule == "cross-namespace-owner"
    assert '"default"' in str(info.value) and '"shop"' in str(info.value)
    assert "Fix:" in str(info.value)
    assert "ownerReferences" not in obj["metadata"]  # nothing written


def test_dependent_without_namespace_cannot_be_checked() -> None:
    with pytest.raises(errors.CrossNamespaceOwner, match=r"no metadata\.namespace"):
        set_controller_reference(service(), child(ns=None))


def test_namespaced_owner_of_cluster_scoped_object() -> None:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"}}
    with pytest.raises(errors.NamespacedOwnerOfClusterScoped) as info:
        set_owner_reference(service(), pv)
    assert info.value.rule == "namespaced-owner-of-cluster-scoped"
    # The scope comes from the kinds table even with a namespace wrongly set.
    pv["metadata"]["namespace"] = "default"
    with pytest.raises(errors.NamespacedOwnerOfClusterScoped):
        set_owner_reference(service(), pv)


def test_cluster_scoped_owner_of_namespaced_object_is_fine() -> None:
    obj = child(ns="kube-system")
    set_owner_reference(namespace(), obj)
    assert obj["metadata"]["ownerReferences"][0]["kind"] == "Namespace"


def test_owner_not_created() -> None:
    owner = service()
    del owner["metadata"]["uid"]
    with pytest.raises(errors.OwnerNotCreated) as info:
        set_controller_reference(owner, child())
    assert info.value.rule == "invalid-owner-reference"


def test_event_owner() -> None:
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "default", "uid": "1"},
    }
    with pytest.raises(errors.EventOwner):
        set_owner_reference(event, child())


def test_multiple_controllers_already_there() -> None:
    obj = child(
        ownerReferences=[
            {"apiVersion": "v1", "kind": "Service", "name": n, "uid": n, "controller": True}
            for n in ("a", "b")
        ]
    )
    with pytest.raises(errors.MultipleControllers):
        set_owner_reference(namespace(), obj)
    with pytest.raises(errors.MultipleControllers):
        validate_owner_references(obj)


def test_unknown_owner_kind_with_discovered_kinds() -> None:
    from ownergc_backends.memory import InMemoryStore

    kinds = anyio.run(discover_kinds, InMemoryStore())
    owner = {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "default", "uid": "u"},
    }
    with pytest.raises(errors.UnknownOwnerKind):
        set_owner_reference(owner, child(), kinds=kinds)
    # Without discovery an unknown kind is trusted (a CRD the table cannot know).
    set_owner_reference(owner, child())
    # With the CRD served, scope is known: a cluster-scoped dependent is refused.
    kinds[("example.com/v1", "Gadget")] = KindInfo(True, "gadgets")
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
    with pytest.raises(errors.NamespacedOwnerOfClusterScoped):
        set_owner_reference(owner, node, kinds=kinds)


def test_every_typed_error_is_an_invalid_owner_reference() -> None:
    for cls in (
        errors.AlreadyOwned,
        errors.CrossNamespaceOwner,
        errors.NamespacedOwnerOfClusterScoped,
        errors.OwnerNotCreated,
        errors.EventOwner,
        errors.MultipleControllers,
        errors.UnknownOwnerKind,
    ):
        assert issubclass(cls, errors.InvalidOwnerReference)
        assert issubclass(cls, ValueError)


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(errors.InvalidObject, match="cannot read a int"):
        set_owner_reference(service(), 3)
    with pytest.raises(errors.InvalidOwnerReference, match="lacks apiVersion, kind"):
        set_owner_reference({"metadata": {"name": "x", "uid": "u"}}, child())


def test_lint_and_the_api_agree_on_each_rule() -> None:
    """One implementation: the rule lint reports is the rule the API raises."""
    kinds = {
        (av, k): KindInfo(ns, res)
        for g, v, k, res, ns in BUILTIN_KINDS
        for av in [f"{g}/{v}" if g else v]
    }
    owner = service()
    cases = [
        (child(ns="shop"), errors.CrossNamespaceOwner),
        (
            {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"}},
            errors.NamespacedOwnerOfClusterScoped,
        ),
    ]
    for dependent, error in cases:
        with pytest.raises(error) as info:
            set_owner_reference(owner, copy.deepcopy(dependent))
        ref = {
            "apiVersion": "v1",
            "kind": "Service",
            "name": "kubernetes",
            "uid": owner["metadata"]["uid"],
        }
        dependent["metadata"]["ownerReferences"] = [ref]
        dependent["metadata"]["uid"] = "dep"
        findings = lint_objects([owner, dependent], kinds=kinds)
        assert [f.rule for f in findings if f.severity == "error"] == [info.value.rule]
        assert findings[0].fix == info.value.fix


def test_builtin_table_is_the_real_discovery_less_what_1_30_removed_plus_what_it_added() -> None:
    discovery = json.loads((FIXTURES / "discovery.json").read_text())
    served = {
        (body["groupVersion"], r["kind"], r["namespaced"])
        for body in discovery.values()
        if body.get("kind") == "APIResourceList"
        for r in body["resources"]
        if "/" not in r["name"]
    }
    # every removal names a kind the real server served (a typo would remove nothing)
    assert set(REMOVED_VERSIONS) <= {(av, k) for av, k, _ in served}
    added = {(f"{g}/{v}" if g else v, k, ns) for g, v, k, _, ns in ADDED_KINDS}
    assert not added & served
    table = {(f"{g}/{v}" if g else v, k, ns) for g, v, k, _, ns in BUILTIN_KINDS}
    assert table == {row for row in served if row[:2] not in REMOVED_VERSIONS} | added


def test_the_removed_versions_are_those_serve_stopped_serving() -> None:
    """The core's table and serve's 1.30 tables (tests/served_v130.py) say the same."""
    discovery = json.loads((FIXTURES / "discovery.json").read_text())
    kind_of = {
        (body["groupVersion"], r["name"]): r["kind"]
        for body in discovery.values()
        if body.get("kind") == "APIResourceList"
        for r in body["resources"]
    }
    from_serve = {
        (f"{g}/{v}", kind_of[(f"{g}/{v}", resource)]): release
        for (g, v, resource), release in served_v130.REMOVED.items()
    }
    assert from_serve == {key: release for key, (release, _) in REMOVED_VERSIONS.items()}


def test_lint_says_which_release_removed_an_owner_version() -> None:
    owner = {
        "apiVersion": "batch/v1beta1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "shop", "uid": "cj"},
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "nightly-1",
            "namespace": "shop",
            "uid": "j",
            "ownerReferences": [
                {"apiVersion": "batch/v1beta1", "kind": "CronJob", "name": "nightly", "uid": "cj"}
            ],
        },
    }
    (finding,) = [
        f for f in lint_objects([owner, job], kinds=builtin_kinds()) if f.severity == "error"
    ]
    assert finding.rule == "unknown-owner-kind"
    assert "not served since Kubernetes v1.25" in finding.message
    assert finding.fix == "use apiVersion batch/v1 (the owner's uid is the same in every version)"


def test_validate_existing_references() -> None:
    """The rules that need no owner object, on references an object already carries."""
    ok = child(ownerReferences=[{"apiVersion": "v1", "kind": "Namespace", "name": "a", "uid": "u"}])
    validate_owner_references(ok)
    event = child(ownerReferences=[{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}])
    with pytest.raises(errors.EventOwner):
        validate_owner_references(event)
    no_uid = child(ownerReferences=[{"apiVersion": "v1", "kind": "Service", "name": "s"}])
    with pytest.raises(errors.OwnerNotCreated):
        validate_owner_references(no_uid)
    no_kind = child(ownerReferences=[{"apiVersion": "v1", "name": "s"}])
    with pytest.raises(errors.InvalidOwnerReference, match="lacks kind, uid"):
        validate_owner_references(no_kind)
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": "pv",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "s", "uid": "u"}],
        },
    }
    with pytest.raises(errors.NamespacedOwnerOfClusterScoped):
        validate_owner_references(pv)
    gadget_ref = {"apiVersion": "example.com/v1", "kind": "Gadget", "name": "g", "uid": "u"}
    gadget = child(ownerReferences=[gadget_ref])
    validate_owner_references(gadget)  # unknown to the built-in table: trusted
    with pytest.raises(errors.UnknownOwnerKind):
        validate_owner_references(gadget, kinds={})
