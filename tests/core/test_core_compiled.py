"""The compiled build of the graph core (setup.py, docs/performance.md).

``pip install .`` compiles the core when it can; .ci/run runs the same suite on
that build and on the pure modules (``OWNERGC_PURE=1``). These tests say which build is under
test, and pin what the compiled build changes underneath: nodes the cyclic
garbage collector does not track, which are freed by reference counting
alone, so the builder must leave no reference cycle behind when it removes a
node.
"""

from __future__ import annotations

import gc
import importlib.machinery
import os
import sys

import pytest

from ownergc import GraphBuilder
from ownergc._core import graph, graph_builder
from tests.core.core_factories import delete, ref, upsert


def _is_extension(module: object) -> bool:
    path = str(getattr(module, "__file__", ""))
    return path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def test_the_build_under_test_is_the_one_asked_for() -> None:
    """``OWNERGC_EXPECT_COMPILED`` (set by .ci/run) names the build; either way the
    graph and its builder come from the same build, and ``COMPILED`` says which."""
    compiled = _is_extension(graph)
    assert _is_extension(graph_builder) is compiled
    assert graph.COMPILED is compiled
    # The protobuf list reader is built with them (setup.py's COMPILED_MODULES).
    from ownergc_backends.kube import _pbscan

    assert _is_extension(_pbscan) is compiled
    assert _pbscan.COMPILED is compiled
    expected = os.environ.get("OWNERGC_EXPECT_COMPILED")
    if expected is not None:
        assert compiled is (expected == "1"), f"OWNERGC_EXPECT_COMPILED={expected}"


def test_a_node_is_tracked_by_the_cyclic_gc_only_when_pure() -> None:
    node = upsert(GraphBuilder(), "a")
    assert gc.is_tracked(node) is not graph.COMPILED


def test_what_holds_only_nodes_or_strings_is_untracked_when_compiled() -> None:
    """Compiled (issue 19), the graph, every set of dependents (first dependent by any
    path: observed owner, virtual owner, sibling) and the parsed owner references hold
    only untracked nodes, strings and flags, and are kept out of the cyclic GC's lists;
    pure, they are what Python makes them."""
    b = GraphBuilder()
    upsert(b, "o")
    first = upsert(b, "d1", [ref("o")])  # the owner's first dependent (full path)
    upsert(b, "v1", [ref("virtual")])  # a virtual owner's set
    upsert(b, "p")
    upsert(b, "p1", [ref("p")])
    upsert(b, "p2", [ref("p")])  # a sibling: the short path
    upsert(b, "q")
    upsert(b, "q1", [ref("q")])
    delete(b, "q1")
    delete(b, "q")
    upsert(b, "q")  # observed again, without dependents: the short path makes its set
    upsert(b, "q2", [ref("q")])
    graph_, owners = b.uid_to_node, first.owners
    sets = [graph_[uid].dependents for uid in ("o", "virtual", "p", "q")]
    assert [len(deps) for deps in sets] == [1, 1, 2, 1]
    held = [graph_, owners, owners[0], *sets]
    assert all(gc.is_tracked(obj) is not graph.COMPILED for obj in held)


def _held_alike(node: object, held: object) -> bool:
    """``node`` has as many references as ``held``, an object the caller holds by one name
    (the counts include this call's own references)."""
    return sys.getrefcount(node) == sys.getrefcount(held)


@pytest.mark.parametrize("drain_first", [True, False])
def test_removing_an_object_that_owns_itself_leaves_no_cycle(drain_first: bool) -> None:
    b = GraphBuilder()
    node = upsert(b, "a", [ref("a")])
    assert node in node.dependents
    b.drain()
    delete(b, "a")
    if drain_first:
        # upstream enqueues the removed node's dependents, itself included
        assert [n.uid for n in b.drain()[0]] == ["a"]
    del b
    assert node not in node.dependents
    held = object()
    assert _held_alike(node, held)


def test_removing_two_objects_that_own_each_other_leaves_no_cycle() -> None:
    b = GraphBuilder()
    first = upsert(b, "a", [ref("b")])
    second = upsert(b, "b", [ref("a")])
    assert first in second.dependents and second in first.dependents
    delete(b, "a")
    delete(b, "b")
    assert b.uid_to_node == {}
    del b
    held = object()
    assert _held_alike(first, held)
    del first  # and with it the removed node's stale dependents, ``second`` among them
    assert _held_alike(second, held)
