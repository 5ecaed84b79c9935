"""Merge facts read from the recorded OpenAPI document and from a CRD schema."""

from __future__ import annotations

import pytest

from ownergc_backends.memory._fieldmanager import (
    Node,
    SchemaError,
    builtin_schema,
    crd_schema,
    crd_version_schema,
    strategic_list_facts,
    strategic_merge_keys,
)
from tests.ssa.replay import gadget_schema, load_sequences


def _node(group: str, version: str, kind: str) -> Node:
    node = builtin_schema(group, version, kind)
    assert node is not None
    return node


def test_deployment_facts() -> None:
    spec = _node("apps", "v1", "Deployment").child("spec")
    containers = spec.child("template").child("spec").child("containers")
    assert (containers.kind, containers.list_type, containers.keys) == ("list", "map", ("name",))
    ports = containers.items().child("ports")
    assert ports.keys == ("containerPort", "protocol")
    assert ports.key_defaults == {"protocol": "TCP"}
    assert spec.child("selector").atomic


def test_object_meta_lists() -> None:
    meta = _node("", "v1", "ConfigMap").child("metadata")
    owners = meta.child("ownerReferences")
    assert (owners.list_type, owners.keys) == ("map", ("uid",))
    assert meta.child("finalizers").list_type == "set"
    labels = meta.child("labels")
    assert (labels.kind, labels.atomic) == ("map", False)


def test_unknown_kind_is_none() -> None:
    assert builtin_schema("example.com", "v1", "Nope") is None


def test_crd_facts() -> None:
    spec = gadget_schema(load_sequences()["crd"]).child("spec")
    assert (spec.child("ports").list_type, spec.child("ports").keys) == ("map", ("name",))
    assert spec.child("tags").list_type == "set"
    assert spec.child("args").list_type == "atomic"
    assert (spec.child("labels").kind, spec.child("labels").atomic) == ("map", False)
    assert spec.child("limits").atomic


def test_crd_metadata_is_object_meta() -> None:
    root = crd_schema({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    assert root.child("metadata").child("ownerReferences").keys == ("uid",)
    assert root.child("spec").kind == "untyped"


def test_bad_crd_schema_is_refused_clearly() -> None:
    with pytest.raises(SchemaError):
        crd_schema({"type": "object", "properties": {"spec": "nope"}}).child("spec")


def test_strategic_merge_patch_facts() -> None:
    facts = {
        path: (strategy, key)
        for path, strategy, key in strategic_list_facts(_node("apps", "v1", "Deployment"))
    }
    assert facts[("spec", "template", "spec", "containers")] == ("merge", "name")
    assert facts[("metadata", "ownerReferences")] == ("merge", "uid")
    assert facts[("metadata", "finalizers")] == ("merge", "")
    assert facts[("spec", "template", "spec", "volumes")] == ("merge,retainKeys", "name")


def test_strategic_merge_keys_cover_the_hand_table() -> None:
    from ownergc_backends.memory._patch import METADATA_LIST_STRATEGIES

    keys = strategic_merge_keys(_node("", "v1", "ConfigMap"))
    for path, key in METADATA_LIST_STRATEGIES.items():
        assert keys[path] == key
    pod = strategic_merge_keys(_node("", "v1", "Pod"))
    assert pod[("spec", "containers")] == "name"
    assert pod[("spec", "containers", "ports")] == "containerPort"


def test_crd_version_schema_picks_the_version() -> None:
    crd = load_sequences()["crd"]
    assert crd_version_schema(crd, "v1").child("spec").child("tags").list_type == "set"
    assert crd_version_schema(crd, "v2").child("spec").kind == "untyped"
    with pytest.raises(SchemaError):
        crd_version_schema({"kind": "CustomResourceDefinition"}, "v1")
