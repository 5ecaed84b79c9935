"""`ownergc graph` through its CLI: DOT as kube-controller-manager writes it, JSON, SVG."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.cli_helpers import ownergc

DATA = Path(__file__).parent / "data"
DUMP = str(DATA / "shop-dump.yaml")
SVG = "{http://www.w3.org/2000/svg}"


def graph(*args: str) -> str:
    result = ownergc("graph", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_dot_has_kube_controller_manager_attributes() -> None:
    dot = graph("-f", DUMP)
    assert dot.startswith("strict digraph full {\n  // Node definitions.\n")
    block = dot.split('  "d-1" [\n')[1].split("  ];\n")[0]
    keys = [line.strip().split("=")[0] for line in block.splitlines()]
    assert keys == [
        "label",
        "group",
        "version",
        "kind",
        "namespace",
        "name",
        "uid",
        "missing",
        "beingDeleted",
        "deletingDependents",
        "virtual",
    ]
    assert '    label="uid=d-1\\nnamespace=shop\\nDeployment.v1.apps/web\\n"\n' in dot
    assert '  "rs-1" -> "d-1";\n' in dot and '  "p-1" -> "rs-1";\n' in dot
    assert '"ns-1"' not in dot  # no owners, no dependents: not drawn


def test_uid_restricts_to_the_component() -> None:
    dot = graph("-f", DUMP, "--uid", "p-1")
    assert '"d-1"' in dot and '"cm-2"' in dot  # via rs-1 -> d-1 <- cm-1 -> cm-2
    alone = graph("-f", DUMP, "--uid", "nope")
    assert alone == "strict digraph full {\n}\n"


def test_json() -> None:
    doc = json.loads(graph("-f", DUMP, "-o", "json"))
    ids = {n["id"] for n in doc["nodes"]}
    assert ids == {"d-1", "rs-1", "p-1", "p-2", "cm-1", "cm-2"}
    rs = next(n for n in doc["nodes"] if n["id"] == "rs-1")
    assert rs["kind"] == "ReplicaSet" and rs["virtual"] is False
    assert {"from": "cm-1", "to": "cm-2"} in doc["edges"]


def test_json_is_the_dot_graph_read_back(tmp_path: Path) -> None:
    """-o json is built from the graph directly: the same document as parsing the DOT,
    for names that need escapes (quotes, backslashes, newlines, DEL, non-ASCII)."""
    from ownergc.cli.graph import dot_to_json

    odd = ['we"ird', "back\\slash", "new\nline", "del\x7f", "caf\u00e9", "tab\there"]
    objects = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"n{i}-{name}",
                "namespace": "ns",
                "uid": f"u{i}-{name}",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": f"o-{name}", "uid": f"o{i}"}
                ],
            },
        }
        for i, name in enumerate(odd)
    ]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    expected = json.dumps(dot_to_json(graph("-f", str(path))), indent=2) + "\n"
    assert graph("-f", str(path), "-o", "json") == expected
    assert graph("-f", str(path), "-o", "json", "--uid", 'u0-we"ird').count('"from"') == 1


@pytest.mark.parametrize("batch", [1, 2, 1000])
def test_json_document_chunks_are_json_dumps(monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    from ownergc.cli import graph as graph_cli

    monkeypatch.setattr(graph_cli, "JSON_BATCH", batch)
    items = [{"a": "x\x7f", "b": [], "c": {}, "d": True}, {"é": "\u2028\n"}, {"k": [1, "2"]}]
    for sections in ([], [("nodes", [])], [("nodes", items), ("edges", [])], [("x", items[:1])]):
        text = b"".join(graph_cli.json_document_chunks(sections)).decode("ascii")
        assert text == json.dumps(dict(sections), indent=2) + "\n"


def test_svg_renders(tmp_path: Path) -> None:
    if shutil.which("dot") is None:
        import os

        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("Graphviz dot is required in CI (Debian package graphviz)")
        pytest.skip("Graphviz dot not installed")
    svg = graph("-f", DUMP, "-o", "svg")
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg"
    titles = {t.text for t in root.iter(SVG + "title")}
    assert {"d-1", "rs-1", "p-1", "cm-2"} <= titles
    assert "rs-1&#45;&gt;d-1" in svg or "rs-1->d-1" in titles


@pytest.fixture
def controller_url() -> Iterator[str]:
    """A stand-in debug endpoint answering kube-controller-manager's graph."""
    dot = graph("-f", DUMP)
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            if not self.path.startswith("/debug/controllers/garbagecollector/graph"):
                self.send_error(404)
                return
            body = dot.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/vnd.graphviz")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_from_a_controller(controller_url: str) -> None:
    doc = json.loads(graph("--controller", controller_url, "--uid", "p-1", "-o", "json"))
    assert len(doc["nodes"]) == 6
    assert graph("--controller", controller_url).startswith("strict digraph full {")


def test_errors() -> None:
    result = ownergc("graph", "--controller", "http://127.0.0.1:9/")
    assert result.returncode == 2 and "cannot fetch" in result.stderr
    result = ownergc("graph")
    assert result.returncode == 2 and "nothing to read" in result.stderr
    assert "Traceback" not in result.stderr


# -- --style kcm stays what `ownergc graph` wrote before the people's picture -----------

#: kcm-*.dot were written by `ownergc graph -f <fixture>` at commit ea959f5, before
#: --style existed (the fixture foreground-dump.json is a real scenario's objects:
#: tests/cli/picture_scenarios.py, a foreground deletion held by a finalizer).
KCM_FIXTURES = [
    ("shop-dump.yaml", "kcm-shop-dump.dot"),
    ("foreground-dump.json", "kcm-foreground-dump.dot"),
]


def _kcm_in_process(path: Path) -> str:
    """The dump module run directly over the fixture, as the command builds its graph."""
    from ownergc._core.dump import graph_to_dot
    from ownergc._core.graph_builder import GraphBuilder
    from ownergc.cli._sources import inventory_from_manifests

    builder = GraphBuilder()
    for obj in inventory_from_manifests([path]).objects:
        builder.process_upsert(obj, str(obj["apiVersion"]), str(obj["kind"]), None)
    return graph_to_dot(builder.uid_to_node)


@pytest.mark.parametrize(("fixture", "golden"), KCM_FIXTURES)
def test_style_kcm_is_byte_identical_to_the_previous_default(fixture: str, golden: str) -> None:
    expected = (DATA / golden).read_text()
    kcm = graph("-f", str(DATA / fixture), "--style", "kcm")
    assert kcm == expected
    assert graph("-f", str(DATA / fixture)) == kcm  # -o dot still defaults to it
    assert _kcm_in_process(DATA / fixture) == kcm
    uid = kcm.split('"', 2)[1]
    narrowed = graph("-f", str(DATA / fixture), "--style", "kcm", "--uid", uid)
    assert narrowed == graph("-f", str(DATA / fixture), "--uid", uid)


def test_foreground_fixture_pins_the_state_attributes() -> None:
    dot = (DATA / "kcm-foreground-dump.dot").read_text()
    assert 'beingDeleted="true"' in dot and 'deletingDependents="true"' in dot
    assert "Deployment.v1.apps/web\\nbeingDeleted,deletingDependents\\n" in dot


def test_json_ignores_the_style() -> None:
    default = graph("-f", DUMP, "-o", "json")
    assert graph("-f", DUMP, "-o", "json", "--style", "people") == default
    assert json.loads(default)["nodes"][0]["label"].startswith("uid=")


def test_svg_from_a_controller_is_the_people_picture(controller_url: str) -> None:
    if shutil.which("dot") is None:
        import os

        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("Graphviz dot is required in CI (Debian package graphviz)")
        pytest.skip("Graphviz dot not installed")
    root = ET.fromstring(graph("--controller", controller_url, "-o", "svg"))
    texts = {t.text for t in root.iter(SVG + "text")}
    assert {"Deployment web", "ReplicaSet web-5d8f7", "ConfigMap shared"} <= texts
    assert not any(t and t.startswith("uid=") for t in texts)
    classes = {g.get("class") for g in root.iter(SVG + "g")}
    assert "node object present" in classes
