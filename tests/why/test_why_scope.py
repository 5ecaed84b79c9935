"""What `ownergc why` reads from a cluster: one namespace, widened where owner chains lead."""

from __future__ import annotations

from ownergc.cli.why import _dangling_kinds, _foreground_cluster_owner, _scope
from ownergc.protocols import APIResource

VERBS = frozenset({"get", "list", "watch", "delete"})
CM = APIResource("", "v1", "configmaps", "ConfigMap", True, VERBS)
NS = APIResource("", "v1", "namespaces", "Namespace", False, VERBS)
PV = APIResource("", "v1", "persistentvolumes", "PersistentVolume", False, VERBS)
RESOURCES = [CM, NS, PV]


def test_a_namespace_is_read_alone_a_cluster_scoped_target_everywhere() -> None:
    assert _scope(RESOURCES, ("namespace", "shop", None)) == "shop"
    assert _scope(RESOURCES, ("cm", "x", None)) == "default"
    assert _scope(RESOURCES, ("configmaps", "x", "shop")) == "shop"
    assert _scope(RESOURCES, ("pv", "data", None)) is None


def test_an_owner_reference_leaving_the_namespace_names_its_kind() -> None:
    objects = [
        {"metadata": {"uid": "a", "namespace": "here"}},
        {
            "metadata": {
                "uid": "b",
                "namespace": "here",
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "uid": "a"}],
            }
        },
    ]
    assert _dangling_kinds(objects, RESOURCES) == []
    objects[1]["metadata"]["ownerReferences"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "uid": "elsewhere"}
    )
    assert _dangling_kinds(objects, RESOURCES) == [CM]


def test_a_cluster_scoped_owner_in_foreground_deletion_widens_the_read() -> None:
    pv = {"metadata": {"uid": "p", "finalizers": ["kubernetes.io/pv-protection"]}}
    assert not _foreground_cluster_owner([pv])
    pv["metadata"]["finalizers"].append("foregroundDeletion")
    assert _foreground_cluster_owner([pv])
    assert not _foreground_cluster_owner(
        [{"metadata": {"namespace": "n", "finalizers": ["foregroundDeletion"]}}]
    )
