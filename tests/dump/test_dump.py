"""The debug graph in kube-controller-manager's DOT format (gc-unit-cases §13, items 75-78)."""

from __future__ import annotations

import pytest

from ownergc import Node, ObjectReference, OwnerReference, UIDToNode
from ownergc._core.dump import graph_to_dot

UPSTREAM_SIMPLE_DOT_HEAD = (
    "strict digraph full {\n"
    "  // Node definitions.\n"
    '  "alpha" [\n'
    '    label="uid=alpha\\nnamespace=\\n./\\n"\n'
    '    group=""\n'
    '    version=""\n'
    '    kind=""\n'
    '    namespace=""\n'
    '    name=""\n'
    '    uid="alpha"\n'
    '    missing="false"\n'
    '    beingDeleted="false"\n'
    '    deletingDependents="false"\n'
    '    virtual="false"\n'
    "  ];\n"
)


def bare(uid: str) -> Node:
    """A node whose identity is empty but for the uid, as upstream's dump tests build them."""
    return Node(ObjectReference("", "", "", uid, None))


def build(*, include: set[str]) -> UIDToNode:
    """alpha owners [bravo, charlie]; delta owners [foxtrot]; foxtrot owners [golf]; echo alone."""
    nodes = {u: bare(u) for u in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf")}

    def own(child: str, *owners: str) -> None:
        nodes[child].owners = tuple(OwnerReference("", "", "", o) for o in owners)
        for o in owners:
            nodes[o].add_dependent(nodes[child])

    own("alpha", "bravo", "charlie")
    own("delta", "foxtrot")
    own("foxtrot", "golf")
    graph = UIDToNode()
    for uid in include:
        graph[uid] = nodes[uid]
    return graph


def vertex_ids(dot: str) -> list[str]:
    return [line.strip()[1:-3] for line in dot.splitlines() if line.endswith('" [')]


def edges(dot: str) -> list[str]:
    return [line.strip() for line in dot.splitlines() if "->" in line]


ALL = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"}


@pytest.mark.parametrize(
    ("name", "include", "uids", "want_vertices", "want_edges"),
    [
        (
            "simple",
            {"alpha", "bravo", "charlie"},
            None,
            ["alpha", "bravo", "charlie"],
            ['"alpha" -> "bravo";', '"alpha" -> "charlie";'],
        ),
        (
            "missing",
            {"alpha", "charlie"},
            None,
            ["alpha", "bravo", "charlie"],
            ['"alpha" -> "bravo";', '"alpha" -> "charlie";'],
        ),
        (
            "drop-no-ref",
            {"alpha", "bravo", "charlie", "echo"},
            None,
            ["alpha", "bravo", "charlie"],
            ['"alpha" -> "bravo";', '"alpha" -> "charlie";'],
        ),
        (
            "two-chains",
            ALL - {"echo"},
            None,
            ["alpha", "bravo", "charlie", "delta", "foxtrot", "golf"],
            [
                '"alpha" -> "bravo";',
                '"alpha" -> "charlie";',
                '"delta" -> "foxtrot";',
                '"foxtrot" -> "golf";',
            ],
        ),
        (
            "sub-simple",
            {"alpha", "bravo", "charlie"},
            ["bravo"],
            ["alpha", "bravo", "charlie"],
            ['"alpha" -> "bravo";', '"alpha" -> "charlie";'],
        ),
        ("sub-missing", {"alpha", "charlie"}, ["bravo"], [], []),
        ("sub-drop-no-ref", {"alpha", "bravo", "charlie", "echo"}, ["echo"], [], []),
        (
            "sub-two-chains-from-owner",
            ALL,
            ["golf"],
            ["delta", "foxtrot", "golf"],
            ['"delta" -> "foxtrot";', '"foxtrot" -> "golf";'],
        ),
        (
            "sub-two-chains-from-child",
            ALL,
            ["delta"],
            ["delta", "foxtrot", "golf"],
            ['"delta" -> "foxtrot";', '"foxtrot" -> "golf";'],
        ),
        (
            "sub-two-chains-choose-both",
            ALL,
            ["delta", "charlie"],
            ["alpha", "bravo", "charlie", "delta", "foxtrot", "golf"],
            [
                '"alpha" -> "bravo";',
                '"alpha" -> "charlie";',
                '"delta" -> "foxtrot";',
                '"foxtrot" -> "golf";',
            ],
        ),
    ],
)
def test_graph_construction(name, include, uids, want_vertices, want_edges) -> None:
    dot = graph_to_dot(build(include=include), uids)
    assert vertex_ids(dot) == want_vertices
    assert edges(dot) == want_edges


def test_empty_graph_exact_text() -> None:
    assert graph_to_dot(UIDToNode()) == "strict digraph full {\n}\n"


def test_simple_exact_text_matches_upstream_testdata() -> None:
    dot = graph_to_dot(build(include=ALL - {"echo"}))
    assert dot.startswith(UPSTREAM_SIMPLE_DOT_HEAD)
    assert dot.endswith(
        "  // Edge definitions.\n"
        '  "alpha" -> "bravo";\n'
        '  "alpha" -> "charlie";\n'
        '  "delta" -> "foxtrot";\n'
        '  "foxtrot" -> "golf";\n'
        "}\n"
    )
    assert dot.count("  ];\n") == 6


def test_labels_with_conditions_and_missing_owner() -> None:
    graph = UIDToNode()
    rs = Node(
        ObjectReference("apps/v1", "ReplicaSet", "rs", "alpha", "ns1"),
        (OwnerReference("apps/v1", "Deployment", "d", "bravo"),),
        being_deleted=True,
        virtual=True,
    )
    graph["alpha"] = rs
    dot = graph_to_dot(graph)
    assert (
        'label="uid=alpha\\nnamespace=ns1\\nReplicaSet.v1.apps/rs\\nbeingDeleted,virtual\\n"' in dot
    )
    assert 'label="uid=bravo\\nnamespace=\\nDeployment.v1.apps/d\\nmissingFromGraph\\n"' in dot
    assert '    missing="true"\n' in dot
    assert '    group="apps"\n' in dot


def test_go_quoting_of_odd_names() -> None:
    graph = UIDToNode()
    owner = Node(ObjectReference("v1", "ConfigMap", 'we"ird\\name', "o", "ns"))
    dep = Node(
        ObjectReference("v1", "ConfigMap", "d", "d", "ns"),
        (OwnerReference("v1", "ConfigMap", 'we"ird\\name', "o"),),
    )
    owner.add_dependent(dep)
    graph["o"] = owner
    graph["d"] = dep
    dot = graph_to_dot(graph)
    assert '    name="we\\"ird\\\\name"\n' in dot
