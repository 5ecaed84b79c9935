"""Server-side printing: each kind's columns, as a real kube-apiserver prints them.

tests/data/real-apiserver-1.24/tables.json holds what a real 1.24 server sent
for namespaces, services, apiservices and componentstatuses; the same
objects loaded into the facade must print the same columns and cells (Age
aside: it depends on the clock).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.facade_helpers import configmap, request
from tests.served_v130 import as_v130

REAL = Path(__file__).resolve().parents[1] / "data" / "real-apiserver-1.24"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}


@pytest.fixture(scope="module")
def real_server() -> Any:
    store = InMemoryStore()
    # (as a 1.30 server shows them: its FlowSchemas in v1, not the removed v1beta2)
    objects = [as_v130(o) for o in json.loads((REAL / "cluster.json").read_text())["items"]]
    store.load_objects(
        [
            o
            for o in objects
            if not (
                o["kind"] == "Namespace" and store.exists("v1", "Namespace", o["metadata"]["name"])
            )
        ]
    )
    with run_in_thread(store) as srv:
        yield srv


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/namespaces/default/services",
        "/apis/apiregistration.k8s.io/v1/apiservices?limit=3",
        "/api/v1/componentstatuses",
    ],
)
def test_columns_and_cells_match_the_real_apiserver(real_server: KubeAPIServer, path: str) -> None:
    real = json.loads((REAL / "tables.json").read_text())[path]
    ours = request(real_server, "GET", path, headers=TABLE).json()
    assert ours["kind"] == "Table"
    strip = lambda cols: [(c["name"], c["type"], c["format"], c["priority"]) for c in cols]  # noqa: E731
    assert strip(ours["columnDefinitions"]) == strip(real["columnDefinitions"])
    age = (
        [c["name"] for c in real["columnDefinitions"]].index("Age")
        if any(c["name"] == "Age" for c in real["columnDefinitions"])
        else None
    )
    cells = lambda rows: [[v for i, v in enumerate(r["cells"]) if i != age] for r in rows]  # noqa: E731
    # (ComponentStatuses come in no particular order from a real server.)
    assert sorted(cells(ours["rows"])) == sorted(cells(real["rows"]))


def test_namespace_columns(real_server: KubeAPIServer) -> None:
    real = json.loads((REAL / "tables.json").read_text())["/api/v1/namespaces"]
    ours = request(real_server, "GET", "/api/v1/namespaces", headers=TABLE).json()
    assert [c["name"] for c in ours["columnDefinitions"]] == [
        c["name"] for c in real["columnDefinitions"]
    ]
    assert ["default", "Active"] in [r["cells"][:2] for r in ours["rows"]]


def test_configmap_data_count_and_row_objects(server: KubeAPIServer) -> None:
    request(server, "POST", "/api/v1/namespaces/default/configmaps", configmap("two"))
    table = request(server, "GET", "/api/v1/namespaces/default/configmaps", headers=TABLE).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    [row] = table["rows"]
    assert row["cells"][:2] == ["two", 1]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    full = request(
        server, "GET", "/api/v1/namespaces/default/configmaps?includeObject=Object", headers=TABLE
    ).json()
    assert full["rows"][0]["object"]["data"] == {"k": "v"}


def test_a_crd_prints_its_additional_printer_columns(server: KubeAPIServer) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {"name": "First", "type": "string", "jsonPath": ".spec.items[0].name"},
                    ],
                }
            ],
        },
    }
    request(server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 3, "items": [{"name": "a"}]},
    }
    path = "/apis/example.com/v1/namespaces/default/widgets"
    request(server, "POST", path, widget)
    table = request(server, "GET", path, headers=TABLE).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "First"]
    assert table["rows"][0]["cells"] == ["w", 3, "a"]
