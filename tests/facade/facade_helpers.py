"""Helpers of the HTTP facade suite: raw HTTP requests, manifests, kubectl."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
from collections.abc import Callable
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


_FIELD_ERROR_REASONS = {
    "Invalid value": "FieldValueInvalid",
    "Required value": "FieldValueRequired",
    "Forbidden": "FieldValueForbidden",
    "Unsupported value": "FieldValueNotSupported",
    "Duplicate value": "FieldValueDuplicate",
    "Too long": "FieldValueTooLong",
}


def answer_essentials(status: int, body: dict[str, Any]) -> dict[str, Any]:
    """What the recorded-answer tests compare: the status, and for a refusal its reason,
    message and details."""
    if status in (200, 201):
        return {"status": status}
    return {
        "status": status,
        "reason": body.get("reason"),
        "message": body.get("message"),
        "details": body.get("details"),
    }


def invalid_answer(kind: str, name: str, errors: list[str], group: str = "") -> dict[str, Any]:
    """The essentials of the 422 kube-apiserver answers for ``errors`` (each as its
    message prints it, ``field: Label: ...``): the message lists each once."""
    once = list(dict.fromkeys(errors))
    listed = once[0] if len(once) == 1 else "[" + ", ".join(once) + "]"
    qualified = f"{kind}.{group}" if group else kind
    causes = []
    for error in errors:
        field, _, body = error.partition(": ")
        reason = _FIELD_ERROR_REASONS[body.partition(": ")[0]]
        causes.append({"reason": reason, "message": body, "field": field})
    details: dict[str, Any] = {"name": name, "kind": kind, "causes": causes}
    if group:
        details = {"name": name, "group": group, "kind": kind, "causes": causes}
    return {
        "status": 422,
        "reason": "Invalid",
        "message": f'{qualified} "{name}" is invalid: {listed}',
        "details": details,
    }


def replay_dry_run(
    server: KubeAPIServer,
    collection: str,
    exchange: dict[str, Any],
    expand: Callable[[Any], Any] = lambda value: value,
) -> tuple[int, Any]:
    """A recorded ``dryRun=All`` write sent again: a create's ``body`` POSTed to
    ``collection``, or an update's merge ``patch`` of the object ``name`` in it (each
    passed through ``expand`` first); the status and the JSON answer."""
    if exchange["op"] == "create":
        reply = request(server, "POST", f"{collection}?dryRun=All", expand(exchange["body"]))
    else:
        reply = request(
            server,
            "PATCH",
            f"{collection}/{exchange['name']}?dryRun=All",
            expand(exchange["patch"]),
            headers={"Content-Type": "application/merge-patch+json"},
        )
    return reply.status, reply.json()


def expected_answer(
    exchange: dict[str, Any],
    errors_1_30: list[str] | bool | None,
    kind: str,
    name: str,
    group: str = "",
) -> dict[str, Any]:
    """What a replayed exchange must answer: as recorded, unless ``errors_1_30`` (not
    False) gives kube-apiserver 1.30's errors for it (None: 1.30 takes it)."""
    if errors_1_30 is False:
        recorded = exchange["answer"]
        return answer_essentials(recorded["status"], recorded)
    if errors_1_30 is None or errors_1_30 is True:
        return {"status": 201 if exchange["op"] == "create" else 200}
    return invalid_answer(kind, name, errors_1_30, group)
