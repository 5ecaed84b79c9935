"""Helpers of the HTTP facade suite: raw HTTP requests, manifests, kubectl."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ownergc_backends.memory.http import KubeAPIServer

PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode()


def connect(server: KubeAPIServer, timeout: float = 10) -> http.client.HTTPConnection:
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def request(
    server: KubeAPIServer,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> Reply:
    """One request on a fresh connection; ``body`` is sent as JSON."""
    conn = connect(server)
    try:
        hdrs = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


def configmap(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "data": {"k": "v"},
    }


def find_kubectl() -> str | None:
    return os.environ.get("OWNERGC_KUBECTL") or shutil.which("kubectl")


@dataclass
class Kubectl:
    """kubectl pointed at the facade through a written kubeconfig."""

    binary: str
    kubeconfig: Path
    cache: Path
    workdir: Path

    def run(
        self, *args: str, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        cmd = [
            self.binary,
            "--kubeconfig",
            str(self.kubeconfig),
            "--cache-dir",
            str(self.cache),
            "--request-timeout",
            "10s",
            *args,
        ]
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        result = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, cwd=self.workdir, env=env
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-o", "json").stdout)

    def manifest(self, name: str, text: str) -> str:
        path = self.workdir / name
        path.write_text(text)
        return str(path)


#: What a real kube-apiserver 1.24 answered (server-side apply, dry run, discovery).
REAL_124 = Path(__file__).resolve().parents[1] / "data" / "real-apiserver-1.24"


def recorded_exchanges() -> list[dict[str, Any]]:
    return list(json.loads((REAL_124 / "ssa-dryrun-exchanges.json").read_text()))


def recorded_exchange(path_part: str) -> dict[str, Any]:
    """The first recorded exchange whose request path contains ``path_part``."""
    return next(e for e in recorded_exchanges() if path_part in e["request"]["path"])


def recorded_discovery() -> dict[str, Any]:
    return dict(json.loads((REAL_124 / "discovery.json").read_text()))


def body_shape(value: Any) -> Any:
    """Keys and value types, recursively: what 'the same body shape' compares."""
    if isinstance(value, dict):
        return {k: body_shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [body_shape(v) for v in value]
    return type(value).__name__


def create_namespace(server: KubeAPIServer, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    assert request(server, "POST", "/api/v1/namespaces", body).status == 201
