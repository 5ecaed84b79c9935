"""Pictures for people: `ownergc graph -o svg` and `ownergc why -o svg` of real scenarios.

The states are left by the garbage collector and the namespace controller of
an embedded cluster (tests/cli/picture_scenarios.py); the SVG is rendered by
Graphviz and read back: node titles, classes, fill colours, labels, tooltips,
the legend.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc.testing import start_in_thread
from tests.cli.cli_helpers import ROOT, ownergc
from tests.cli.picture_scenarios import (
    DRAIN,
    foreground_blocked_by_finalizer,
    stuck_namespace,
)

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(autouse=True)
def _graphviz() -> None:
    if shutil.which("dot") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("Graphviz dot is required in CI (Debian package graphviz)")
        pytest.skip("Graphviz dot not installed")


@pytest.fixture(scope="module")
def foreground() -> Iterator[Path]:
    """A cluster where Deployment shop/web waits, in the foreground, on a finalizer."""
    with start_in_thread() as cluster:
        foreground_blocked_by_finalizer(cluster)
        yield cluster.kubeconfig_path


def run(*args: str) -> str:
    result = ownergc(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


class Drawing:
    """An SVG from Graphviz, read back by what a person sees: boxes, labels, classes."""

    def __init__(self, svg: str) -> None:
        self.root = ET.fromstring(svg)
        assert self.root.tag == SVG + "svg"
        self.groups = [g for g in self.root.iter(SVG + "g") if g.get("class")]

    def _title(self, g: ET.Element) -> str:
        t = g.find(SVG + "title")
        return t.text or "" if t is not None else ""

    def nodes(self) -> dict[str, ET.Element]:
        """Object boxes by their visible first label line (``Kind name``)."""
        out = {}
        for g in self.groups:
            if "object" in (g.get("class") or "").split():
                out[self.texts(g)[0]] = g
        return out

    def classes(self, g: ET.Element) -> set[str]:
        return set((g.get("class") or "").split())

    def texts(self, g: ET.Element) -> list[str]:
        return [t.text or "" for t in g.iter(SVG + "text")]

    def tooltip(self, g: ET.Element) -> str:
        for a in g.iter(SVG + "a"):
            return a.get(XLINK + "title") or a.get("title") or ""
        return ""

    def fill(self, g: ET.Element) -> str:
        for shape in g.iter():
            if shape.tag in (SVG + "path", SVG + "polygon") and shape.get("fill") not in (
                None,
                "none",
            ):
                return str(shape.get("fill"))
        return ""

    def edges(self) -> dict[tuple[str, str], ET.Element]:
        out = {}
        for g in self.groups:
            if (g.get("class") or "").startswith("edge"):
                a, _, b = self._title(g).partition("->")
                out[(a, b)] = g
        return out

    def group(self, gid: str) -> ET.Element | None:
        return next((g for g in self.groups if g.get("id") == gid), None)

    def all_text(self) -> list[str]:
        return [t.text or "" for t in self.root.iter(SVG + "text")]


def _uids(kubeconfig: Path) -> dict[str, str]:
    graph = json.loads(run("graph", "--kubeconfig", str(kubeconfig), "-o", "json"))
    return {f"{n['kind']} {n['name']}": n["uid"] for n in graph["nodes"]}


def test_graph_svg_of_a_foreground_deletion_blocked_by_a_finalizer(foreground: Path) -> None:
    pic = Drawing(run("graph", "--kubeconfig", str(foreground), "-o", "svg"))
    uids = _uids(foreground)
    boxes = pic.nodes()

    # Human labels: Kind name; the uid only in the tooltip.
    assert set(boxes) == {
        "Deployment web",
        "ReplicaSet web-5d8f7",
        "Pod web-5d8f7-a",
        "ClusterRole web-reader",
    }
    assert not any(UUID.search(t) for t in pic.all_text())
    for label, g in boxes.items():
        assert pic._title(g) == uids[label]  # the node's title is its uid
        assert f"uid {uids[label]}" in pic.tooltip(g)

    # State colours and classes.
    deploy, rs, pod = (
        boxes["Deployment web"],
        boxes["ReplicaSet web-5d8f7"],
        boxes["Pod web-5d8f7-a"],
    )
    assert {"foreground", "deleting"} <= pic.classes(deploy)
    assert {"foreground", "deleting"} <= pic.classes(rs)
    assert "deleting" in pic.classes(pod) and "foreground" not in pic.classes(pod)
    assert pic.fill(deploy) == pic.fill(rs) == "#ffb74d"
    assert pic.fill(pod) == "#ffd8a8"
    assert pic.texts(pod)[1:] == ["deleting", f"held by {DRAIN}"]
    assert pic.texts(deploy)[1] == "deleting: waits for dependents"
    assert "invalid" not in pic.classes(deploy) | pic.classes(rs) | pic.classes(pod)

    # The cluster-scoped ClusterRole names a namespaced owner: red, the lint rule in the tooltip.
    role = boxes["ClusterRole web-reader"]
    assert "invalid" in pic.classes(role) and "present" in pic.classes(role)
    assert "namespaced-owner-of-cluster-scoped" in pic.tooltip(role)

    # Edges from dependent to owner, styled by controller and blockOwnerDeletion.
    edges = pic.edges()
    rs_edge = edges[(uids["ReplicaSet web-5d8f7"], uids["Deployment web"])]
    assert {"controller", "block"} <= pic.classes(rs_edge)
    role_edge = edges[(uids["ClusterRole web-reader"], uids["Deployment web"])]
    assert "invalid" in pic.classes(role_edge) and "controller" not in pic.classes(role_edge)

    # The namespace is a box; the legend names the states drawn.
    ns = pic.group("ns_shop")
    assert ns is not None and "namespace shop" in pic.texts(ns)
    legend = pic.group("legend")
    assert legend is not None
    legend_text = " ".join(pic.texts(legend))
    for entry in (
        "legend",
        "waits for its dependents (foreground)",
        "being deleted (finalizers listed)",
        "invalid or dangling reference",
        "blockOwnerDeletion: true",
    ):
        assert entry in legend_text
    assert "orphaning" not in legend_text and "root cause" not in legend_text


def test_cluster_scoped_objects_are_drawn_outside_the_namespace_box(foreground: Path) -> None:
    dot = run("graph", "--kubeconfig", str(foreground), "-o", "dot", "--style", "people")
    outside, _, inside = dot.partition('subgraph "cluster_ns_shop"')
    inside = inside.split("\n  }\n")[0]
    assert "ClusterRole web-reader" in outside and "ClusterRole web-reader" not in inside
    assert "Deployment web" in inside and "Pod web-5d8f7-a" in inside


def test_namespace_and_uid_subsets(foreground: Path) -> None:
    kc = str(foreground)
    uids = _uids(foreground)
    only_ns = run("graph", "--kubeconfig", kc, "-n", "shop", "-o", "dot")
    assert "digraph ownergc" in only_ns  # -n implies the people style
    assert "Deployment web" in only_ns and "ClusterRole web-reader" not in only_ns
    other = run("graph", "--kubeconfig", kc, "-n", "default", "-o", "dot", "--style", "people")
    assert "Deployment web" not in other
    around = run("graph", "--kubeconfig", kc, "--uid", uids["Pod web-5d8f7-a"], "-o", "svg")
    assert set(Drawing(around).nodes()) == set(uids)  # all connected through the Deployment
    result = ownergc("graph", "--kubeconfig", kc, "-n", "shop", "--style", "kcm")
    assert result.returncode == 2 and "-n works with the people style" in result.stderr


def test_png(foreground: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ownergc", "graph", "--kubeconfig", str(foreground), "-o", "png"],
        capture_output=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(b"\x89PNG\r\n\x1a\n") and len(result.stdout) > 1000


def test_why_svg_is_the_chain_with_the_root_cause(foreground: Path) -> None:
    svg = run("why", "deploy/web", "-n", "shop", "--kubeconfig", str(foreground), "-o", "svg")
    pic = Drawing(svg)
    boxes = pic.nodes()
    # Only the chain of blockers: not the ClusterRole the GC never collects.
    assert set(boxes) == {"Deployment web", "ReplicaSet web-5d8f7", "Pod web-5d8f7-a"}
    pod = boxes["Pod web-5d8f7-a"]
    assert "rootcause" in pic.classes(pod)
    assert not any(
        "rootcause" in pic.classes(g) for k, g in boxes.items() if k != "Pod web-5d8f7-a"
    )
    assert "ROOT CAUSE" in pic.texts(pod)
    cause = f"held by finalizer {DRAIN} on Pod shop/web-5d8f7-a; its controller is not running"
    assert "root cause: " + cause in pic.tooltip(pod)
    title = " ".join(t for t in pic.all_text() if t.startswith("why "))
    assert cause in title
    legend = pic.group("legend")
    assert legend is not None and "root cause" in " ".join(pic.texts(legend))


def test_why_text_starts_with_the_root_cause(foreground: Path) -> None:
    text = run("why", "deploy/web", "-n", "shop", "--kubeconfig", str(foreground))
    lines = text.splitlines()
    assert lines[0] == (
        f"root cause: held by finalizer {DRAIN} on Pod shop/web-5d8f7-a; its controller is not "
        "running"
    )
    assert lines[1].startswith("Deployment shop/web: being deleted since ")


def test_stuck_namespace_text_and_picture() -> None:
    with start_in_thread() as cluster:
        foreground_blocked_by_finalizer(cluster)
        stuck_namespace(cluster)
        kc = str(cluster.kubeconfig_path)
        text = run("why", "namespace/shop", "--kubeconfig", kc)
        svg = run("why", "namespace/shop", "--kubeconfig", kc, "-o", "svg")
    lines = text.splitlines()
    assert lines[0].startswith(f"root cause: held by finalizer {DRAIN} on Pod shop/web-5d8f7-a")
    assert lines[1].startswith("Namespace shop: being deleted")
    # The pod holds two branches (the Deployment's cascade, the namespace's pods):
    # shown in full once, referred to afterwards.
    pod_lines = [x for x in lines if "Pod shop/web-5d8f7-a: being deleted" in x]
    assert len(pod_lines) == 2
    assert not pod_lines[0].endswith("(see above)") and pod_lines[1].endswith("(see above)")
    assert sum(f"finalizer {DRAIN}: waits for its controller" in x for x in lines) == 1

    pic = Drawing(svg)
    boxes = pic.nodes()
    assert set(boxes) == {
        "Namespace shop",
        "Deployment web",
        "ReplicaSet web-5d8f7",
        "Pod web-5d8f7-a",
    }
    assert "rootcause" in pic.classes(boxes["Pod web-5d8f7-a"])
    ns_box = pic.group("ns_shop")
    assert ns_box is not None and {"namespace", "terminating"} <= pic.classes(ns_box)
    waits = [g for g in pic.edges().values() if "waits" in pic.classes(g)]
    assert waits and all("waits for" in pic.texts(g) for g in waits)


def test_a_large_graph_says_how_to_narrow_it(tmp_path: Path) -> None:
    items: list[dict[str, Any]] = []
    for i in range(40):
        owner = {"apiVersion": "v1", "kind": "ConfigMap"}
        owner["metadata"] = {"name": f"o{i}", "namespace": "big", "uid": f"o-{i}"}
        dep = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"d{i}",
                "namespace": "big" if i % 4 else "small",
                "uid": f"d-{i}",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": f"o{i}", "uid": f"o-{i}"}
                ],
            },
        }
        items += [owner, dep]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    result = ownergc("graph", "-f", str(path), "-o", "dot", "--style", "people")
    assert result.returncode == 0, result.stderr
    assert "80 objects drawn" in result.stderr and "more than a person can read" in result.stderr
    assert f"ownergc graph -f {path} -o dot --style people -n big" in result.stderr
    narrowed = ownergc("graph", "-f", str(path), "-n", "small", "-o", "dot")
    assert narrowed.returncode == 0 and narrowed.stderr == ""
