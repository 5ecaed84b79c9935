"""preview, graph, lint and serve over what a real kube-apiserver 1.24 holds.

tests/data/real-apiserver-1.24/ is a real cluster's every object: APIService
`v1.` (a name with a trailing dot), ComponentStatuses (listable, not
deletable, no uid), FlowSchemas, PriorityLevelConfigurations, the
`kubernetes` Service / Endpoints / EndpointSlice. Served through the REST
facade, the commands must read it the way the GC does and never reject what
the real apiserver accepted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import run_in_thread
from tests.cli.cli_helpers import ownergc, start_serve, stop_serve
from tests.served_v130 import as_v130

REAL = Path(__file__).resolve().parents[1] / "data" / "real-apiserver-1.24"


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # (as a 1.30 server shows them: its FlowSchemas in v1, not the removed v1beta2)
    objects = [as_v130(o) for o in json.loads((REAL / "cluster.json").read_text())["items"]]
    store = InMemoryStore(terminating_namespaces=True)
    fresh = [
        o
        for o in objects
        if not (o["kind"] == "Namespace" and store.exists("v1", "Namespace", o["metadata"]["name"]))
    ]
    store.load_objects(fresh)
    assert store.exists("apiregistration.k8s.io/v1", "APIService", "v1.")
    # One owner relation on top of the real objects, so the graph has an edge.
    service = store.get_object("v1", "Service", "kubernetes", "default")
    assert service is not None
    ref = {
        "apiVersion": "v1",
        "kind": "Service",
        "name": "kubernetes",
        "uid": service["metadata"]["uid"],
    }
    store.load_objects(
        [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "owned", "namespace": "default", "ownerReferences": [ref]},
            }
        ]
    )
    with run_in_thread(store) as srv:
        config = tmp_path_factory.mktemp("real") / "kubeconfig"
        srv.write_kubeconfig(config)
        yield config


def test_lint_reads_a_real_cluster(real_cluster: Path) -> None:
    done = ownergc("lint", "--kubeconfig", str(real_cluster), "-o", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["findings"] == []


def test_graph_reads_a_real_cluster_the_way_the_gc_does(real_cluster: Path) -> None:
    done = ownergc("graph", "--kubeconfig", str(real_cluster), "-o", "json")
    assert done.returncode == 0, done.stderr
    graph = json.loads(done.stdout)
    drawn = json.dumps(graph["nodes"])
    assert "kubernetes" in drawn and "owned" in drawn
    assert len(graph["edges"]) == 1
    # ComponentStatuses are listable but not deletable: the GC never sees them.
    assert "ComponentStatus" not in drawn


def test_preview_reads_a_real_cluster(real_cluster: Path) -> None:
    done = ownergc(
        "preview",
        "--kubeconfig",
        str(real_cluster),
        "--delete",
        "service/kubernetes",
        "-n",
        "default",
        "-o",
        "json",
    )
    assert done.returncode == 0, done.stderr
    report = json.dumps(json.loads(done.stdout))
    assert "owned" in report  # the dependent the delete would collect


def test_serve_loads_a_real_cluster_dump(tmp_path: Path) -> None:
    # The 1.24 dump's FlowSchemas and PriorityLevelConfigurations are in
    # flowcontrol.apiserver.k8s.io/v1beta2, which 1.29 stopped serving: moved to v1.
    dump = json.loads((REAL / "cluster.json").read_text())
    dump["items"] = [as_v130(o) for o in dump["items"]]
    moved = tmp_path / "cluster-v130.json"
    moved.write_text(json.dumps(dump))
    served = start_serve(tmp_path, "--load", str(moved))
    try:
        listed = ownergc("lint", "--kubeconfig", str(served.kubeconfig), "-o", "json")
        assert listed.returncode == 0, listed.stderr
    finally:
        code, err = stop_serve(served)
    assert code == 0, err


def test_serve_refuses_a_dump_in_versions_1_30_no_longer_serves(tmp_path: Path) -> None:
    """The 1.24 dump as it is: its flowcontrol v1beta2 objects are refused, saying so."""
    done = ownergc("serve", "--port", "0", "--load", str(REAL / "cluster.json"))
    assert done.returncode == 2
    assert (
        "FlowSchema in flowcontrol.apiserver.k8s.io/v1beta2 is not served: Kubernetes stopped "
        "serving flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema in v1.29 (ownergc serve is "
        "v1.30); use flowcontrol.apiserver.k8s.io/v1"
    ) in done.stderr
