"""Record a real kube-apiserver's answers to the connect subresources of a cluster
without kubelets: ``pods/log``, ``pods/exec``, ``pods/attach``, ``pods/portforward``,
``pods/proxy``, ``nodes/proxy`` and ``services/proxy``, and what kubectl prints.

The server runs no scheduler and no kubelet: Pods stay unscheduled unless
``spec.nodeName`` is set here, and a Node's kubelet address (its status address and
``daemonEndpoints.kubeletEndpoint.Port``) points at a closed local port. Writes
``tests/data/real-apiserver-1.20/pod-connect.json``. Usage::

    python tools/record_pod_connect.py [--server https://127.0.0.1:16443]
        [--token kcm-bench-token] [--kubeconfig /work/k8sbuild/kubeconfig]
        [--kubectl kubectl] [--namespace streamsubres-rec]

The namespace and the Nodes (named after it) must not exist yet.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import ssl
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/data/real-apiserver-1.20/pod-connect.json"

#: The headers kubectl's SPDY executor sends to upgrade (remotecommand v4 and older).
SPDY_UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "SPDY/3.1",
    "X-Stream-Protocol-Version": "v4.channel.k8s.io",
}
PORTFORWARD_UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "SPDY/3.1",
    "X-Stream-Protocol-Version": "portforward.k8s.io",
}


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    return port


class Client:
    def __init__(self, server: str, token: str) -> None:
        parts = urlsplit(server)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 443
        self.token = token
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE

    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=60)
        sent = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        sent.update(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        payload = response.read()
        answer_headers = {k.lower(): v for k, v in response.getheaders()}
        conn.close()
        return response.status, answer_headers, payload

    def must(self, method: str, path: str, body: Any = None) -> Any:
        status, _, payload = self.send(method, path, body)
        if status >= 300:
            raise SystemExit(f"{method} {path}: {status} {payload!r}")
        return json.loads(payload)


def pod(name: str, containers: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {**spec, "containers": [{"name": c, "image": "nginx"} for c in containers]},
    }


def setup_objects(ns: str, kubelet_port: int, pod_port: int, pod_ip: str) -> list[dict[str, Any]]:
    """What the recording creates, in order (the test creates the same in serve).

    ``pod_ip`` is an address of this machine that is not a loopback one (pods/proxy
    refuses those): the Pod ``withip`` and the Endpoints of ``svc2`` name it, with
    ``pod_port``, a closed port.
    """
    node = f"{ns}-node"
    with_ip = pod("withip", ["c"])
    with_ip["spec"]["containers"][0]["ports"] = [{"containerPort": pod_port}]
    return [
        {"path": "/api/v1/namespaces", "body": {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": ns}}},
        {"path": f"/api/v1/namespaces/{ns}/serviceaccounts",
         "body": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"},
                  "automountServiceAccountToken": False}},
        {"path": "/api/v1/nodes", "body": {"apiVersion": "v1", "kind": "Node",
                                           "metadata": {"name": node}},
         "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}}}},
        {"path": "/api/v1/nodes", "body": {"apiVersion": "v1", "kind": "Node",
                                           "metadata": {"name": f"{node}-noaddr"}}},
        {"path": "/api/v1/nodes", "body": {"apiVersion": "v1", "kind": "Node",
                                           "metadata": {"name": f"{node}-ext"}},
         "status": {"addresses": [{"type": "ExternalIP", "address": "127.0.0.2"},
                                  {"type": "InternalIP", "address": "127.0.0.1"}]}},
        {"path": f"/api/v1/namespaces/{ns}/pods", "body": pod("one", ["c"])},
        {"path": f"/api/v1/namespaces/{ns}/pods", "body": pod("two", ["a", "b"])},
        {"path": f"/api/v1/namespaces/{ns}/pods",
         "body": {**pod("init", ["a", "b"]),
                  "spec": {"initContainers": [{"name": "i", "image": "busybox"}],
                           "containers": [{"name": "a", "image": "nginx"},
                                          {"name": "b", "image": "nginx"}]}}},
        {"path": f"/api/v1/namespaces/{ns}/pods",
         "body": pod("ghost", ["c"], nodeName=f"{ns}-nowhere")},
        {"path": f"/api/v1/namespaces/{ns}/pods", "body": pod("bound", ["c"], nodeName=node)},
        {"path": f"/api/v1/namespaces/{ns}/pods", "body": pod("bound2", ["a", "b"],
                                                             nodeName=node)},
        {"path": f"/api/v1/namespaces/{ns}/pods",
         "body": pod("noaddr", ["c"], nodeName=f"{node}-noaddr")},
        {"path": f"/api/v1/namespaces/{ns}/pods",
         "body": pod("ext", ["c"], nodeName=f"{node}-ext")},
        {"path": f"/api/v1/namespaces/{ns}/pods", "body": pod("running", ["c"], nodeName=node),
         "status": {"phase": "Running"}},
        {"path": f"/api/v1/namespaces/{ns}/services",
         "body": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
                  "spec": {"ports": [{"port": 80}]}}},
        {"path": f"/api/v1/namespaces/{ns}/services",
         "body": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "empty"},
                  "spec": {"ports": [{"port": 80}]}}},
        {"path": f"/api/v1/namespaces/{ns}/endpoints",
         "body": {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "empty"}}},
        {"path": f"/api/v1/namespaces/{ns}/pods", "body": with_ip,
         "status": {"podIP": pod_ip, "podIPs": [{"ip": pod_ip}]}},
        {"path": f"/api/v1/namespaces/{ns}/services",
         "body": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc2"},
                  "spec": {"ports": [{"port": 80, "targetPort": pod_port}]}}},
        {"path": f"/api/v1/namespaces/{ns}/endpoints",
         "body": {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "svc2"},
                  "subsets": [{"addresses": [{"ip": pod_ip, "targetRef": {
                      "kind": "Pod", "namespace": ns, "name": "withip"}}],
                               "ports": [{"port": pod_port}]}]}},
        {"path": f"/api/v1/namespaces/{ns}/services",
         "body": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "noref"},
                  "spec": {"ports": [{"port": 80, "targetPort": pod_port}]}}},
        {"path": f"/api/v1/namespaces/{ns}/endpoints",
         "body": {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "noref"},
                  "subsets": [{"addresses": [{"ip": pod_ip}], "ports": [{"port": pod_port}]}]}},
    ]  # fmt: skip


def exchanges(ns: str) -> list[dict[str, Any]]:
    """The requests, each with a note."""
    p = f"/api/v1/namespaces/{ns}/pods"
    node = f"{ns}-node"
    out: list[dict[str, Any]] = []

    def add(note: str, method: str, path: str, headers: dict[str, str] | None = None) -> None:
        out.append({"note": note, "method": method, "path": path, "headers": headers or {}})

    # pods/log
    add("log: no such pod", "GET", f"{p}/nothere/log")
    add("log: unscheduled pod, one container: empty", "GET", f"{p}/one/log")
    add("log: unscheduled pod, follow: empty", "GET", f"{p}/one/log?follow=true")
    add("log: two containers, none named", "GET", f"{p}/two/log")
    add("log: two containers and an init container, none named", "GET", f"{p}/init/log")
    add("log: the init container named", "GET", f"{p}/init/log?container=i")
    add("log: unknown container", "GET", f"{p}/two/log?container=zz")
    add("log: unknown container, one-container pod", "GET", f"{p}/one/log?container=zz")
    add("log: tailLines negative", "GET", f"{p}/one/log?tailLines=-1")
    add("log: tailLines zero", "GET", f"{p}/one/log?tailLines=0")
    add("log: tailLines not a number", "GET", f"{p}/one/log?tailLines=x")
    add("log: sinceSeconds negative", "GET", f"{p}/one/log?sinceSeconds=-1")
    add("log: sinceSeconds zero", "GET", f"{p}/one/log?sinceSeconds=0")
    add("log: limitBytes zero", "GET", f"{p}/one/log?limitBytes=0")
    add("log: limitBytes negative", "GET", f"{p}/one/log?limitBytes=-5")
    add("log: sinceTime not a time", "GET", f"{p}/one/log?sinceTime=bad")
    for bad in (
        "2020-13-01T00:00:00Z",
        "2020-01-32T00:00:00Z",
        "2020-02-30T00:00:00Z",
        "2020-01-01",
        "2020-01-01T25:00:00Z",
        "2020-01-01T00:00:00",
        "2020-01-01T00:00:00Zjunk",
        "2020-01-01T00:61:00Z",
        "2020/01/01",
    ):
        add(f"log: sinceTime {bad}", "GET", f"{p}/one/log?sinceTime={bad}")
    add(
        "log: sinceTime with a fraction and an offset",
        "GET",
        f"{p}/bound/log?sinceTime=2020-01-01T00:00:00.5%2B01:00",
    )
    add(
        "log: sinceTime and sinceSeconds",
        "GET",
        f"{p}/one/log?sinceSeconds=1&sinceTime=2020-01-01T00:00:00Z",
    )
    add("log: two invalid values", "GET", f"{p}/one/log?sinceSeconds=-1&tailLines=-1")
    add("log: previous not a bool", "GET", f"{p}/one/log?previous=x")
    add("log: previous=false", "GET", f"{p}/one/log?previous=false")
    add("log: unknown parameter", "GET", f"{p}/one/log?bogus=1")
    add("log: invalid and bad container", "GET", f"{p}/two/log?container=zz&tailLines=-1")
    add("log: POST", "POST", f"{p}/one/log")
    add("log: DELETE", "DELETE", f"{p}/one/log")
    add("log: HEAD", "HEAD", f"{p}/one/log")
    add("log: OPTIONS", "OPTIONS", f"{p}/one/log")
    add("exec: HEAD", "HEAD", f"{p}/one/exec?command=ls")
    add("portforward: OPTIONS", "OPTIONS", f"{p}/one/portforward")
    add("log: bound to a node that does not exist", "GET", f"{p}/ghost/log")
    add("log: node without addresses", "GET", f"{p}/noaddr/log")
    add("log: kubelet refuses", "GET", f"{p}/bound/log")
    add(
        "log: kubelet refuses, every option",
        "GET",
        f"{p}/bound/log?follow=true&previous=true&timestamps=true&sinceSeconds=10&tailLines=5"
        "&limitBytes=100",
    )
    add("log: kubelet refuses, sinceTime", "GET", f"{p}/bound/log?sinceTime=2020-01-01T00:00:00Z")
    add("log: kubelet refuses, container named", "GET", f"{p}/bound2/log?container=b")
    add("log: kubelet refuses, two containers unnamed", "GET", f"{p}/bound2/log")
    add("log: node with ExternalIP then InternalIP", "GET", f"{p}/ext/log")
    # pods/exec
    for verb in ("exec", "attach"):
        add(f"{verb}: no such pod", "POST", f"{p}/nothere/{verb}?command=ls&stdout=true")
        add(f"{verb}: unscheduled pod, GET", "GET", f"{p}/one/{verb}?command=ls&stdout=true")
        add(f"{verb}: unscheduled pod", "POST", f"{p}/one/{verb}?command=ls&stdout=true")
        add(
            f"{verb}: unscheduled pod, upgrade",
            "POST",
            f"{p}/one/{verb}?command=ls&stdout=true",
            SPDY_UPGRADE,
        )
        add(
            f"{verb}: two containers, none named",
            "POST",
            f"{p}/two/{verb}?command=ls&stdout=true",
            SPDY_UPGRADE,
        )
        add(
            f"{verb}: unknown container",
            "POST",
            f"{p}/one/{verb}?command=ls&stdout=true&container=zz",
            SPDY_UPGRADE,
        )
        add(
            f"{verb}: node does not exist",
            "POST",
            f"{p}/ghost/{verb}?command=ls&stdout=true",
            SPDY_UPGRADE,
        )
        add(
            f"{verb}: node without addresses",
            "POST",
            f"{p}/noaddr/{verb}?command=ls&stdout=true",
            SPDY_UPGRADE,
        )
        add(f"{verb}: bound, no upgrade", "POST", f"{p}/bound/{verb}?command=ls&stdout=true")
        add(
            f"{verb}: bound, GET without upgrade", "GET", f"{p}/bound/{verb}?command=ls&stdout=true"
        )
        add(
            f"{verb}: kubelet refuses",
            "POST",
            f"{p}/bound/{verb}?command=ls&stdout=true",
            SPDY_UPGRADE,
        )
        add(
            f"{verb}: kubelet refuses, no streams",
            "POST",
            f"{p}/bound/{verb}?command=ls&stdout=false&stderr=false",
            SPDY_UPGRADE,
        )
        add(
            f"{verb}: stdout not a bool",
            "POST",
            f"{p}/bound/{verb}?command=ls&stdout=maybe",
            SPDY_UPGRADE,
        )
        add(f"{verb}: PUT", "PUT", f"{p}/one/{verb}")
        add(f"{verb}: DELETE", "DELETE", f"{p}/one/{verb}")
    add("exec: no command, kubelet refuses", "POST", f"{p}/bound/exec?stdout=true", SPDY_UPGRADE)
    add("exec: no command, unscheduled", "POST", f"{p}/one/exec?stdout=true", SPDY_UPGRADE)
    # pods/portforward
    add("portforward: no such pod", "POST", f"{p}/nothere/portforward")
    add("portforward: unscheduled pod", "POST", f"{p}/one/portforward", PORTFORWARD_UPGRADE)
    add("portforward: unscheduled pod, GET", "GET", f"{p}/one/portforward")
    add(
        "portforward: two containers: no container asked",
        "POST",
        f"{p}/two/portforward",
        PORTFORWARD_UPGRADE,
    )
    add(
        "portforward: ports not numbers",
        "POST",
        f"{p}/bound/portforward?ports=abc",
        PORTFORWARD_UPGRADE,
    )
    add("portforward: port zero", "POST", f"{p}/bound/portforward?ports=0", PORTFORWARD_UPGRADE)
    add("portforward: node does not exist", "POST", f"{p}/ghost/portforward", PORTFORWARD_UPGRADE)
    add("portforward: bound, no upgrade", "POST", f"{p}/bound/portforward?ports=80")
    add(
        "portforward: kubelet refuses",
        "POST",
        f"{p}/bound/portforward?ports=80",
        PORTFORWARD_UPGRADE,
    )
    add("portforward: PUT", "PUT", f"{p}/one/portforward")
    # pods/proxy
    add("pods/proxy: no such pod", "GET", f"{p}/nothere/proxy")
    add("pods/proxy: no pod IP", "GET", f"{p}/one/proxy")
    add("pods/proxy: no pod IP, a path", "GET", f"{p}/one/proxy/some/path")
    add("pods/proxy: no pod IP, a port", "GET", f"{p}/one:8080/proxy/")
    add("pods/proxy: bad name:port", "GET", f"{p}/a:b:c:d/proxy/")
    add("pods/proxy: POST", "POST", f"{p}/one/proxy")
    add("pods/proxy: PATCH", "PATCH", f"{p}/one/proxy")
    add("pods/proxy: HEAD", "HEAD", f"{p}/one/proxy")
    add("pods/proxy: OPTIONS", "OPTIONS", f"{p}/one/proxy")
    add("pods/proxy: the pod's IP refuses", "GET", f"{p}/withip/proxy/healthz")
    add("pods/proxy: the pod's IP refuses, port 81 asked", "GET", f"{p}/withip:81/proxy/")
    add("pods/proxy: https scheme", "GET", f"{p}/https:withip:81/proxy/")
    # nodes/proxy
    add("nodes/proxy: no such node", "GET", "/api/v1/nodes/nothere-node/proxy/")
    add("nodes/proxy: node without addresses", "GET", f"/api/v1/nodes/{node}-noaddr/proxy/")
    add("nodes/proxy: kubelet refuses", "GET", f"/api/v1/nodes/{node}/proxy/pods")
    add("nodes/proxy: bad name", "GET", "/api/v1/nodes/a:b:c:d/proxy/")
    # services/proxy
    add("services/proxy: no such service", "GET", f"/api/v1/namespaces/{ns}/services/nosvc/proxy/")
    add(
        "services/proxy: no Endpoints object", "GET", f"/api/v1/namespaces/{ns}/services/svc/proxy/"
    )
    add(
        "services/proxy: Endpoints without subsets",
        "GET",
        f"/api/v1/namespaces/{ns}/services/empty/proxy/",
    )
    add(
        "services/proxy: port named not served",
        "GET",
        f"/api/v1/namespaces/{ns}/services/svc:9999/proxy/",
    )
    add(
        "services/proxy: numeric port of the service, no endpoints",
        "GET",
        f"/api/v1/namespaces/{ns}/services/svc:80/proxy/",
    )
    add("services/proxy: POST", "POST", f"/api/v1/namespaces/{ns}/services/empty/proxy/")
    add(
        "services/proxy: the endpoint refuses",
        "GET",
        f"/api/v1/namespaces/{ns}/services/svc2/proxy/x",
    )
    add(
        "services/proxy: the endpoint refuses, service port named by number",
        "GET",
        f"/api/v1/namespaces/{ns}/services/svc2:80/proxy/",
    )
    add(
        "services/proxy: an address without targetRef",
        "GET",
        f"/api/v1/namespaces/{ns}/services/noref/proxy/",
    )
    add("services/proxy: bad name", "GET", f"/api/v1/namespaces/{ns}/services/a:b:c:d/proxy/")
    # discovery
    add("discovery", "GET", "/api/v1")
    return out  # fmt: skip


def kubectl_runs(ns: str) -> list[dict[str, Any]]:
    n = ["-n", ns]
    runs = [
        ("logs, unscheduled pod", ["logs", "one", *n]),
        ("logs, no such pod", ["logs", "nothere", *n]),
        ("logs, two containers", ["logs", "two", *n]),
        ("logs, unknown container", ["logs", "two", "-c", "zz", *n]),
        ("logs, tail negative is all", ["logs", "one", "--tail=-1", *n]),
        ("logs, since negative", ["logs", "one", "--since=-1s", *n]),
        ("logs, limit-bytes 0", ["logs", "one", "--limit-bytes=0", *n]),
        ("logs, node does not exist", ["logs", "ghost", *n]),
        ("logs, kubelet refuses", ["logs", "bound", *n]),
        ("exec, unscheduled pod", ["exec", "one", *n, "--", "ls"]),
        ("exec, no such pod", ["exec", "nothere", *n, "--", "ls"]),
        ("exec, unknown container", ["exec", "one", "-c", "zz", *n, "--", "ls"]),
        ("exec, kubelet refuses", ["exec", "bound", *n, "--", "ls"]),
        ("attach, unscheduled pod", ["attach", "one", "--pod-running-timeout=1s", *n]),
        ("port-forward, unscheduled pod", ["port-forward", "one", "18080:80", *n]),
        ("cp, unscheduled pod", ["cp", f"{ns}/one:/etc/hosts", "/tmp/streamsubres-cp-out"]),
        ("get --raw log", ["get", "--raw", f"/api/v1/namespaces/{ns}/pods/two/log"]),
        ("logs, Running pod, kubelet refuses", ["logs", "running", "--tail=3", *n]),
        ("exec, Running pod, kubelet refuses", ["exec", "running", *n, "--", "ls"]),
        ("attach, Running pod, kubelet refuses", ["attach", "running", *n]),
        ("port-forward, Running pod, kubelet refuses", ["port-forward", "running", "18081:80", *n]),
        (
            "cp, Running pod, kubelet refuses",
            ["cp", f"{ns}/running:/etc/hosts", "/tmp/streamsubres-cp-out"],
        ),
        ("proxy get --raw, node", ["get", "--raw", f"/api/v1/nodes/{ns}-node/proxy/pods"]),
    ]
    return [{"note": note, "args": args} for note, args in runs]


def body_of(headers: dict[str, str], payload: bytes) -> Any:
    if headers.get("content-type", "").startswith("application/json") and payload:
        return json.loads(payload)
    return payload.decode("utf-8", "replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", default="https://127.0.0.1:16443")
    parser.add_argument("--token", default="kcm-bench-token")
    parser.add_argument("--kubeconfig", default="/work/k8sbuild/kubeconfig")
    parser.add_argument("--kubectl", default="kubectl")
    parser.add_argument("--namespace", default="streamsubres-rec")
    parser.add_argument("--pod-ip", default="192.0.2.2", help="a non-loopback local address")
    args = parser.parse_args()
    client = Client(args.server, args.token)
    ns = args.namespace
    kubelet_port = closed_port()
    pod_port = closed_port()
    pod_ip = args.pod_ip
    setup = setup_objects(ns, kubelet_port, pod_port, pod_ip)
    for step in setup:
        made = client.must("POST", step["path"], step["body"])
        if "status" in step:
            made["status"] = step["status"]
            client.must("PUT", f"{step['path']}/{made['metadata']['name']}/status", made)
    time.sleep(1)
    records = []
    for ex in exchanges(ns):
        status, headers, payload = client.send(ex["method"], ex["path"], headers=ex["headers"])
        answer = body_of(headers, payload)
        if ex["note"] == "discovery":
            answer = {
                "resources": [
                    r for r in answer["resources"]
                    if r["name"].split("/")[-1] in ("log", "exec", "attach", "portforward", "proxy")
                ]
            }  # fmt: skip
        records.append({**ex, "status": status, "content-type": headers.get("content-type"),
                        "answer": answer})  # fmt: skip
    version = subprocess.run(
        [args.kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True
    )
    kubectl_version = json.loads(version.stdout)["clientVersion"]["gitVersion"]
    runs = []
    for run in kubectl_runs(ns):
        done = subprocess.run(
            [args.kubectl, "--kubeconfig", args.kubeconfig, *run["args"]],
            capture_output=True,
            text=True,
            timeout=120,
        )
        runs.append({**run, "rc": done.returncode, "stdout": done.stdout,
                     "stderr": done.stderr})  # fmt: skip
    document = {
        "recorded": (
            "kube-apiserver v1.20.2 (this machine's /work/k8sbuild), "
            + time.strftime("%Y-%m-%d")
            + ", no scheduler, no kubelet: the Nodes' kubelet address is 127.0.0.1 and a "
            "closed local port; a Pod's and an Endpoints' address this machine's "
            "non-loopback one, with another closed port. kubectl runs with " + kubectl_version
        ),
        "namespace": ns,
        "kubelet_port": kubelet_port,
        "pod_port": pod_port,
        "pod_ip": pod_ip,
        "setup": setup,
        "exchanges": records,
        "kubectl": runs,
    }
    text = json.dumps(document, indent=1) + "\n"
    OUT.write_text(text)
    print(f"{len(records)} exchanges, {len(runs)} kubectl runs -> {OUT}")


if __name__ == "__main__":
    main()
