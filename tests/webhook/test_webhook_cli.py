"""`ownergc webhook` as a command: caBundle, an in-memory cluster (-f), a served cluster."""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.cli_helpers import Served, ownergc, start_serve, stop_serve
from tests.webhook.test_webhook_https import cluster, ref, review

ROOT = Path(__file__).resolve().parents[2]


def start_webhook(*args: str) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ownergc",
            "webhook",
            "--bind-address",
            "127.0.0.1",
            "--port",
            "0",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(proc.stderr.read() if proc.stderr else "exited")
        if "/validate" in line:
            return proc, int(line.rsplit(":", 1)[1].split("/")[0])
    raise AssertionError("no banner")


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)  # also closes the pipes
    assert proc.returncode == 0, err


def post(port: int, ca: Path, body: Any) -> dict[str, Any]:
    ctx = ssl.create_default_context(cafile=str(ca))
    req = urllib.request.Request(
        f"https://localhost:{port}/validate",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, context=ctx, timeout=30) as answer:
        out: dict[str, Any] = json.loads(answer.read())["response"]
        return out


def test_print_ca_bundle_is_the_ca_that_signs_the_serving_cert(tmp_path: Path) -> None:
    out = ownergc("webhook", "--cert-dir", str(tmp_path), "--print-ca-bundle")
    assert out.returncode == 0, out.stderr
    pem = base64.b64decode(out.stdout.strip())
    assert pem.startswith(b"-----BEGIN CERTIFICATE-----")
    assert pem == (tmp_path / "ca.crt").read_bytes()
    again = ownergc("webhook", "--cert-dir", str(tmp_path), "--print-ca-bundle")
    assert again.stdout == out.stdout  # the pair is made once, then reused
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

    ca = x509.load_pem_x509_certificate(pem)
    leaf = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    assert leaf.issuer == ca.subject
    key = ca.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey)
    assert leaf.signature_hash_algorithm is not None
    key.verify(  # raises InvalidSignature unless the CA signed it
        leaf.signature, leaf.tbs_certificate_bytes, ec.ECDSA(leaf.signature_hash_algorithm)
    )
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "ownergc-webhook.ownergc-system.svc" in names.get_values_for_type(x509.DNSName)


def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    out = ownergc("webhook")
    assert out.returncode == 2 and "give a cluster" in out.stderr
    out = ownergc("webhook", "--tls-cert", "x")
    assert out.returncode == 2 and "both --tls-cert and --tls-key" in out.stderr
    out = ownergc("webhook", "--print-ca-bundle")
    assert out.returncode == 2 and "--cert-dir" in out.stderr
    manifests = tmp_path / "cluster.json"
    manifests.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": cluster()}))
    missing = str(tmp_path / "missing.pem")
    out = ownergc("webhook", "-f", str(manifests), "--tls-cert", missing, "--tls-key", missing)
    assert out.returncode == 1 and "cannot serve TLS" in out.stderr
    out = ownergc("webhook", "--mode", "block", "-f", "x")
    assert out.returncode == 2 and "invalid choice" in out.stderr
    assert "Traceback" not in out.stderr


def test_in_memory_cluster_deny_then_warn(tmp_path: Path) -> None:
    manifests = tmp_path / "cluster.json"
    manifests.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": cluster()}))
    certs = tmp_path / "certs"
    proc, port = start_webhook("-f", str(manifests), "--mode", "deny", "--cert-dir", str(certs))
    try:
        response = post(port, certs / "ca.crt", review([ref()]))
        assert response["allowed"] is False
        assert "[cross-namespace-owner]" in response["status"]["message"]
    finally:
        stop(proc)
    proc, port = start_webhook("-f", str(manifests), "--cert-dir", str(certs))
    try:
        response = post(port, certs / "ca.crt", review([ref()]))
        assert response["allowed"] is True
        assert "[cross-namespace-owner]" in response["warnings"][0]
    finally:
        stop(proc)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    srv = start_serve(tmp_path)
    try:
        yield srv
    finally:
        code, err = stop_serve(srv)
        assert code == 0, err


def test_seed_incident_against_a_served_cluster(served: Served, tmp_path: Path) -> None:
    """Owners read through a kubeconfig (KubeStore) from `ownergc serve`.

    The seed incident: a StatefulSet in namespace a whose controller is a
    Deployment in namespace b is refused at create; the same reference to
    the Deployment in a (its real uid) is admitted. Then what the refusal
    prevents: created anyway (serve does not call webhooks yet), the refused
    object is deleted by the collector, the admitted one stays.
    """
    kubectl = os.environ.get("OWNERGC_KUBECTL", "kubectl")
    objs = cluster()
    for o in objs:
        o["metadata"].pop("uid", None)
    (tmp_path / "objs.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})
    )
    base = [kubectl, "--kubeconfig", str(served.kubeconfig)]
    created = subprocess.run(
        [*base, "create", "-f", str(tmp_path / "objs.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    listed_now = subprocess.run(
        [*base, "get", "deployments", "-A", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed_now.returncode == 0, listed_now.stderr
    uids = {
        o["metadata"]["namespace"]: o["metadata"]["uid"]
        for o in json.loads(listed_now.stdout)["items"]
    }
    assert set(uids) == {"a", "b"}
    certs = tmp_path / "certs"
    proc, port = start_webhook(
        "--kubeconfig", str(served.kubeconfig), "--mode", "deny", "--cert-dir", str(certs)
    )
    try:
        refused = post(port, certs / "ca.crt", review([ref(uids["b"])]))
        assert refused["allowed"] is False
        assert "[cross-namespace-owner]" in refused["status"]["message"]
        admitted = post(port, certs / "ca.crt", review([ref(uids["a"])]))
        assert admitted["allowed"] is True
    finally:
        stop(proc)
    for name, owner_uid in (("refused", uids["b"]), ("admitted", uids["a"])):
        obj = review([ref(owner_uid)])["request"]["object"]
        obj["metadata"]["name"] = name
        obj["spec"] = {
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        }
        (tmp_path / f"{name}.json").write_text(json.dumps(obj))
        made = subprocess.run(
            [*base, "create", "-f", str(tmp_path / f"{name}.json")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert made.returncode == 0, made.stderr

    def names() -> set[str]:
        got = subprocess.run(
            [*base, "get", "statefulsets", "-n", "a", "-o", "json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert got.returncode == 0, got.stderr
        return {o["metadata"]["name"] for o in json.loads(got.stdout)["items"]}

    deadline = time.monotonic() + 60
    while "refused" in names() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert names() == {"admitted"}  # the collector deleted what the webhook refuses
