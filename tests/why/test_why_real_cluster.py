"""`ownergc why --kubeconfig` over the facade serving a real kube-apiserver 1.24's objects.

Every recorded object is loaded into the in-memory store as it was.
The command must read them all (discovery, full and metadata-only lists)
and explain one object of every kind without error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import run_in_thread
from tests.cli.cli_helpers import ownergc
from tests.served_v130 import as_v130

REAL = Path(__file__).resolve().parent.parent / "data" / "real-apiserver-1.24"


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # (as a 1.30 server shows them: its FlowSchemas in v1, not the removed v1beta2)
    objects = [as_v130(o) for o in json.loads((REAL / "cluster.json").read_text())["items"]]
    store = InMemoryStore()
    # Every recorded object loads as it was (the store serves every kind a 1.24
    # apiserver starts with, APIService `v1.` and uid-less ComponentStatuses too);
    # the store starts with the default namespaces itself.
    fresh = [
        o
        for o in objects
        if not (o["kind"] == "Namespace" and store.exists("v1", "Namespace", o["metadata"]["name"]))
    ]
    assert len(store.load_objects(fresh)) == len(fresh)
    with run_in_thread(store) as srv:
        config = tmp_path_factory.mktemp("real") / "kubeconfig"
        srv.write_kubeconfig(config)
        yield config


def _one_of_each_kind() -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for obj in json.loads((REAL / "cluster.json").read_text())["items"]:
        if not obj["metadata"]["name"].endswith("."):  # `v1.`: refused by the store, above
            seen.setdefault(obj["kind"], obj)
    return list(seen.values())


@pytest.mark.parametrize("obj", _one_of_each_kind(), ids=lambda o: o["kind"])
def test_every_kind_is_explained(real_cluster: Path, obj: dict[str, Any]) -> None:
    meta = obj["metadata"]
    ns = ["-n", meta["namespace"]] if meta.get("namespace") else []
    result = ownergc(
        "why", f"{obj['kind']}/{meta['name']}", *ns, "--kubeconfig", str(real_cluster), "-o", "json"
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["verdict"] == "kept"
    assert answer["explanation"]["code"] == "object.noOwners"
    assert answer["target"]["name"] == meta["name"]
