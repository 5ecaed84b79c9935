"""Record the protobuf bodies kubectl sends for each of its ``create`` generators.

For every generator this runs the command twice against a tiny recording
server that answers discovery from the real apiserver's recorded documents
(``fixtures/real-apiserver-1.24/discovery.json``):

- as ``--dry-run=client -o json``: kubectl's own JSON of the object it builds
  (Go's encoding/json of the same struct: the expected decode);
- for real: the request body kubectl sends (``application/vnd.kubernetes.protobuf``).

Both land in ``tests/data/kubectl-protobuf/<name>.{json,pb}`` with the kubectl
version in ``index.json``. Usage::

    python tools/record_kubectl_protobuf.py [--kubectl kubectl] [--fixtures ../shared/fixtures]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/data/kubectl-protobuf"

#: name -> the arguments after ``kubectl create``; namespaced ones get ``-n demo``.
GENERATORS: dict[str, list[str]] = {
    "clusterrole": [
        "clusterrole",
        "reader",
        "--verb=get,list,watch",
        "--resource=pods,deployments.apps",
        "--resource-name=a",
    ],
    "clusterrole-aggregation": [
        "clusterrole",
        "agg",
        "--aggregation-rule=rbac.example.com/agg=true",
    ],
    "clusterrolebinding": [
        "clusterrolebinding",
        "crb",
        "--clusterrole=reader",
        "--user=alice",
        "--group=devs",
        "--serviceaccount=demo:robot",
    ],
    "configmap": ["configmap", "cm", "--from-literal=a=1", "--from-literal=b=", "-n", "demo"],
    "cronjob": [
        "cronjob",
        "cj",
        "--image=busybox",
        "--schedule=*/5 * * * *",
        "-n",
        "demo",
        "--restart=OnFailure",
        "--",
        "echo",
        "hi",
    ],
    "deployment": ["deployment", "web", "--image=nginx", "--replicas=3", "--port=80", "-n", "demo"],
    "deployment-zero": ["deployment", "idle", "--image=nginx", "--replicas=0", "-n", "demo"],
    "ingress": [
        "ingress",
        "ing",
        "--class=nginx",
        "--rule=foo.com/bar=svc1:8080,tls=my-cert",
        "--rule=/path*=svc2:http",
        "--default-backend=defsvc:80",
        "--annotation=a.example.com/x=y",
        "-n",
        "demo",
    ],
    "job": ["job", "jb", "--image=busybox", "-n", "demo", "--", "date"],
    "namespace": ["namespace", "demo2"],
    "poddisruptionbudget": [
        "poddisruptionbudget",
        "pdb",
        "--selector=app=web",
        "--min-available=50%",
        "-n",
        "demo",
    ],
    "poddisruptionbudget-max": [
        "poddisruptionbudget",
        "pdb2",
        "--selector=app=web",
        "--max-unavailable=1",
        "-n",
        "demo",
    ],
    "priorityclass": [
        "priorityclass",
        "high",
        "--value=1000",
        "--description=high priority",
        "--preemption-policy=Never",
    ],
    "quota": [
        "quota",
        "q",
        "--hard=cpu=1,memory=1G,pods=2,services=0",
        "--scopes=BestEffort",
        "-n",
        "demo",
    ],
    "role": ["role", "r", "--verb=get", "--verb=list", "--resource=pods,secrets", "-n", "demo"],
    "rolebinding": ["rolebinding", "rb", "--role=r", "--user=bob", "-n", "demo"],
    "rolebinding-clusterrole": [
        "rolebinding",
        "rb2",
        "--clusterrole=reader",
        "--serviceaccount=demo:robot",
        "-n",
        "demo",
    ],
    "secret-generic": [
        "secret",
        "generic",
        "s",
        "--from-literal=password=hunter2",
        "--type=Opaque",
        "-n",
        "demo",
    ],
    "secret-docker-registry": [
        "secret",
        "docker-registry",
        "reg",
        "--docker-server=r.example.com",
        "--docker-username=u",
        "--docker-password=p",
        "--docker-email=e@x",
        "-n",
        "demo",
    ],
    "service-clusterip": ["service", "clusterip", "svc", "--tcp=80:8080", "-n", "demo"],
    "service-clusterip-headless": [
        "service",
        "clusterip",
        "headless",
        "--clusterip=None",
        "-n",
        "demo",
    ],
    "service-externalname": [
        "service",
        "externalname",
        "ext",
        "--external-name=example.com",
        "-n",
        "demo",
    ],
    "service-loadbalancer": ["service", "loadbalancer", "lb", "--tcp=443:8443", "-n", "demo"],
    "service-nodeport": [
        "service",
        "nodeport",
        "np",
        "--tcp=80:8080",
        "--node-port=30080",
        "-n",
        "demo",
    ],
    "serviceaccount": ["serviceaccount", "robot", "-n", "demo"],
}

#: Generators kubectl cannot run client-side (they need a server answer first).
SERVER_ONLY: dict[str, list[str]] = {
    "token": ["token", "robot", "-n", "demo", "--duration=10m", "--audience=https://example.com"],
    "secret-tls": [],  # needs files: built below
}


class Recorder(BaseHTTPRequestHandler):
    discovery: ClassVar[dict[str, Any]] = {}
    bodies: ClassVar[list[tuple[str, str, bytes]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in self.discovery:
            self._json(200, self.discovery[path])
        else:
            self._json(
                404,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "reason": "NotFound",
                    "code": 404,
                    "message": "not recorded",
                },
            )

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.bodies.append((self.path, self.headers.get("Content-Type", ""), body))
        # kubectl reads the answer; an error is fine (the body is what we want).
        self._json(
            500,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "InternalError",
                "code": 500,
                "message": "recorded",
            },
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubectl", default="kubectl")
    parser.add_argument("--fixtures", type=Path, default=ROOT.parent / "shared/fixtures")
    args = parser.parse_args()
    Recorder.discovery = json.loads(
        (args.fixtures / "real-apiserver-1.24/discovery.json").read_text()
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    OUT.mkdir(parents=True, exist_ok=True)
    version = subprocess.run(
        [args.kubectl, "version", "--client", "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    index: dict[str, Any] = {
        "kubectl": json.loads(version)["clientVersion"]["gitVersion"],
        "bodies": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "config"
        kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "rec",
                    "clusters": [
                        {
                            "name": "rec",
                            "cluster": {"server": f"http://127.0.0.1:{server.server_port}"},
                        }
                    ],
                    "users": [{"name": "rec", "user": {}}],
                    "contexts": [{"name": "rec", "context": {"cluster": "rec", "user": "rec"}}],
                }
            )
        )
        cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=x",
                "-days",
                "1",
                "-keyout",
                str(key),
                "-out",
                str(cert),
            ],
            check=True,
            capture_output=True,
        )
        generators = dict(GENERATORS)
        generators["secret-tls"] = [
            "secret",
            "tls",
            "tls",
            f"--cert={cert}",
            f"--key={key}",
            "-n",
            "demo",
        ]
        env = {"KUBECONFIG": str(kubeconfig), "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": tmp}
        for name, argv in {**generators, "token": SERVER_ONLY["token"]}.items():
            base = [args.kubectl, "create", *argv]
            if name != "token":
                cut = base.index("--") if "--" in base else len(base)
                dry_argv = [*base[:cut], "--dry-run=client", "-o", "json", *base[cut:]]
                dry = subprocess.run(dry_argv, env=env, capture_output=True, text=True)
                if dry.returncode != 0:
                    raise SystemExit(f"{name}: {dry.stderr}")
                (OUT / f"{name}.json").write_text(
                    json.dumps(json.loads(dry.stdout), indent=1) + "\n"
                )
            Recorder.bodies.clear()
            subprocess.run(base, env=env, capture_output=True, text=True)
            posts = [
                b for b in Recorder.bodies if b[1].startswith("application/vnd.kubernetes.protobuf")
            ]
            if not posts:
                raise SystemExit(
                    f"{name}: kubectl sent no protobuf body ({Recorder.bodies!r:.300})"
                )
            path, content_type, body = posts[-1]
            (OUT / f"{name}.pb").write_bytes(body)
            index["bodies"][name] = {
                "argv": ["kubectl", "create", *argv],
                "path": path,
                "contentType": content_type,
            }
    (OUT / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    server.shutdown()
    print(f"{len(index['bodies'])} bodies from kubectl {index['kubectl']} in {OUT}")


if __name__ == "__main__":
    main()
