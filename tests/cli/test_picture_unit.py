"""ownergc._core.picture without Graphviz: what a picture holds and the DOT it writes."""

from __future__ import annotations

from typing import Any

from ownergc._core.picture import build_picture, picture_from_debug_graph, picture_to_dot


def cm(name: str, ns: str | None = "shop", **meta: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, "uid": f"u-{name}", **meta}
    if ns:
        m["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m}


def ref(name: str, kind: str = "ConfigMap", api: str = "v1", **flags: bool) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": f"u-{name}", **flags}


def test_states_edges_and_absent_owners() -> None:
    objs = [
        cm("owner", deletionTimestamp="t", finalizers=["foregroundDeletion"]),
        cm("dep", ownerReferences=[ref("owner", controller=True, blockOwnerDeletion=True)]),
        cm("orph", deletionTimestamp="t", finalizers=["orphan"]),
        cm("kid", ownerReferences=[ref("orph"), ref("gone"), ref("n1", kind="Node")]),
        cm("alone"),
    ]
    pic = build_picture(objs)
    assert pic.nodes["u-owner"].state == "foreground"
    assert pic.nodes["u-orph"].state == "orphaning"
    assert pic.nodes["u-dep"].state == "present"
    gone, node = pic.nodes["u-gone"], pic.nodes["u-n1"]
    assert gone.absent and gone.namespace == "shop"  # looked up in the dependent's namespace
    assert node.absent and node.namespace is None  # a Node is cluster-scoped
    [dep_edge] = [e for e in pic.edges if e.dependent == "u-dep"]
    assert dep_edge.controller and dep_edge.block_owner_deletion and dep_edge.problem is None
    [gone_edge] = [e for e in pic.edges if e.owner == "u-gone"]
    assert gone_edge.problem == "owner not found"
    assert "u-alone" in pic.nodes and "u-alone" not in pic.related_only().nodes


def test_lint_problems_mark_the_reference_they_name() -> None:
    objs = [
        cm("a"),
        cm("b"),
        cm("b2"),
        cm("dep", ownerReferences=[ref("a"), ref("b"), ref("b2")]),
    ]
    problems = {"u-dep": ["owner-uid-mismatch: ConfigMap shop/b exists with uid u-b9"]}
    pic = build_picture(objs, problems=problems)
    flagged = {e.owner: e.problem for e in pic.edges}
    assert flagged == {"u-a": None, "u-b": problems["u-dep"][0], "u-b2": None}
    assert pic.nodes["u-dep"].problems == tuple(problems["u-dep"])


def test_subsets() -> None:
    objs = [
        cm("top", ns=None),
        cm("a", ownerReferences=[ref("top")]),
        cm("b", ns="other", ownerReferences=[ref("top")]),
        cm("x", ns="other"),
        cm("y", ns="other", ownerReferences=[ref("x")]),
    ]
    pic = build_picture(objs).related_only()
    assert set(pic.in_namespace("shop").nodes) == {"u-a", "u-top"}
    assert set(pic.component(["u-a"]).nodes) == {"u-a", "u-top", "u-b"}
    assert set(pic.component(["u-y"]).nodes) == {"u-x", "u-y"}
    assert pic.component(["nope"]).nodes == {}


def test_dot_labels_tooltips_and_boxes() -> None:
    objs = [
        cm("owner", deletionTimestamp="t", finalizers=["foregroundDeletion"]),
        cm("dep", ownerReferences=[ref("owner", blockOwnerDeletion=True)], finalizers=["x/y"]),
    ]
    dot = picture_to_dot(build_picture(objs).with_root_cause("u-dep", 'held "here"'))
    assert dot.startswith("digraph ownergc {\n")
    line = next(x for x in dot.splitlines() if x.strip().startswith('"u-dep" ['))
    assert 'label="ConfigMap dep\\nROOT CAUSE"' in line
    assert "uid u-dep" in line and 'root cause: held \\"here\\"' in line
    assert 'class="object present rootcause"' in line
    assert 'subgraph "cluster_ns_shop"' in dot
    assert '"u-dep" -> "u-owner" [class="ownerref block"' in dot
    assert "waits for its dependents (foreground)" in dot and "orphaning" not in dot


def test_debug_graph_states() -> None:
    doc = {
        "nodes": [
            {
                "id": "a",
                "uid": "a",
                "kind": "Pod",
                "name": "p",
                "namespace": "ns",
                "group": "",
                "version": "v1",
                "beingDeleted": True,
                "deletingDependents": True,
            },
            {
                "id": "b",
                "uid": "b",
                "kind": "ReplicaSet",
                "name": "r",
                "namespace": "ns",
                "group": "apps",
                "version": "v1",
                "virtual": True,
            },
        ],
        "edges": [{"from": "a", "to": "b"}],
    }
    pic = picture_from_debug_graph(doc)
    assert pic.nodes["a"].state == "foreground"
    assert pic.nodes["b"].absent and pic.nodes["b"].api_version == "apps/v1"
    assert len(pic.edges) == 1
