"""Admission latency of ``ownergc webhook`` as an apiserver sees it, under 200 concurrent creates.

Issue 18's bar is about the apiserver's side of the call: 200 clients create
objects at the same time against an apiserver that has ``ownergc webhook``
registered, and the apiserver's admission step (the call to the webhook,
TLS included) must stay under 10 ms at p99. ``benchmarks/webhook.py``
measures the webhook alone, with 200 reviews released in the same
instant (a harsher load than an apiserver, which admits writes as it reads
them); this one puts the facade (``KubeAPIServer``, in this process, with
its default admission webhooks) in front:

* ``ownergc webhook --mode deny`` runs in its own process (self-signed TLS),
  registered in the facade by a ValidatingWebhookConfiguration with its
  ``caBundle``, as ``deploy/webhook`` registers it in a cluster;
* a client process opens ``--concurrency`` connections to the facade and
  sends waves of creates of StatefulSets whose controller reference names an
  owner (1 in 10 the cross-namespace incident, refused);
* the facade times each call of its validating webhook plugin
  (``admission_ms``: what kube-apiserver's
  ``apiserver_admission_webhook_admission_duration_seconds`` measures) and
  the client each create (``create_ms``).

The three processes share the machine's two cores. The clients are httpx by
default; ``--client raw`` makes them a minimal HTTP/1.1 client over kept-alive
sockets instead, whose CPU is a small part of httpx's, so that less of the two
cores goes to what would run on other machines in a cluster. Run:
``python benchmarks/webhook_serve.py [--concurrency N] [--waves N] [--client raw]``;
one JSON line.
"""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import httpx

from ownergc.protocols import JSONDict
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._apiserver.admission import AdmissionAttributes, AdmissionChain
from ownergc_backends.memory._apiserver.webhookadmission import webhook_admission
from ownergc_backends.memory.http import KubeAPIServer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from webhook import NAMESPACES, Conn, cluster, pct, start


class Timed:
    """A validating plugin, timed: the apiserver's admission step for one write."""

    def __init__(self, inner: Any, times: list[float]) -> None:
        self.inner = inner
        self.times = times

    def wants_old_object(self) -> bool:
        return bool(self.inner.wants_old_object())

    async def validate(self, attrs: AdmissionAttributes) -> None:
        t0 = time.perf_counter()
        try:
            await self.inner.validate(attrs)
        finally:
            if attrs.resource.resource == "statefulsets":
                self.times.append(time.perf_counter() - t0)


def statefulset(n: int) -> JSONDict:
    ns = n % NAMESPACES
    owner_ns = (ns + 1) % NAMESPACES if n % 10 == 0 else ns  # 1 in 10: another namespace
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": f"db-{n}",
            "namespace": f"ns{ns}",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "owner",
                    "uid": f"uid-{owner_ns}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "x"}]},
            },
        },
    }


def registration(port: int, ca: Path) -> JSONDict:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "ownergc"},
        "webhooks": [
            {
                "name": "ownerrefs.ownergc.io",
                "clientConfig": {
                    "url": f"https://localhost:{port}/validate",
                    "caBundle": base64.b64encode(ca.read_bytes()).decode(),
                },
                "rules": [
                    {
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["statefulsets"],
                    }
                ],
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 10,
            }
        ],
    }


def raw_client(url: str, concurrency: int, waves: int, out: Any) -> None:
    """The creating clients as minimal HTTP/1.1 over kept-alive sockets (their own process)."""

    async def run() -> list[float]:
        netloc = url.split("://", 1)[1]
        host, port = netloc.rsplit(":", 1)
        conns = [Conn(await anyio.connect_tcp(host, int(port)), netloc) for _ in range(concurrency)]
        times: list[float] = []
        for w in range(waves + 1):
            wave: list[float] = []

            async def one(n: int, conn: Conn, wave: list[float] = wave) -> None:
                obj = statefulset(n)
                path = f"/apis/apps/v1/namespaces/{obj['metadata']['namespace']}/statefulsets"
                body = json.dumps(obj).encode()
                t0 = time.perf_counter()
                status, answer = await conn.post(path, body)
                wave.append(time.perf_counter() - t0)
                refused = n % 10 == 0
                assert status == (403 if refused else 201), answer

            async with anyio.create_task_group() as tg:
                for i, conn in enumerate(conns):
                    tg.start_soon(one, w * concurrency + i, conn)
            if w:  # the first wave as the httpx clients' (which open their connections)
                times += wave
        for conn in conns:
            await anyio.aclose_forcefully(conn.stream)
        return times

    out.put(anyio.run(run))


def client(url: str, concurrency: int, waves: int, out: Any) -> None:
    """The creating clients (their own process): latencies per wave, warm waves only."""

    async def run() -> list[float]:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        times: list[float] = []
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as http:
            for w in range(waves + 1):
                wave: list[float] = []

                async def one(n: int, wave: list[float] = wave) -> None:
                    obj = statefulset(n)
                    path = f"/apis/apps/v1/namespaces/{obj['metadata']['namespace']}/statefulsets"
                    t0 = time.perf_counter()
                    answer = await http.post(path, json=obj)
                    wave.append(time.perf_counter() - t0)
                    refused = n % 10 == 0
                    assert answer.status_code == (403 if refused else 201), answer.text

                async with anyio.create_task_group() as tg:
                    for i in range(concurrency):
                        tg.start_soon(one, w * concurrency + i)
                if w:  # the first wave opens the connections
                    times += wave
        return times

    out.put(anyio.run(run))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--waves", type=int, default=5)
    parser.add_argument(
        "--client",
        choices=("httpx", "raw"),
        default="httpx",
        help="httpx clients, or a minimal HTTP/1.1 client that leaves the cores to the servers",
    )
    args = parser.parse_args()
    admission_times: list[float] = []
    store = InMemoryStore()
    store.load_objects(cluster())
    chain = webhook_admission(store)
    timed = AdmissionChain(chain.mutating, [Timed(v, admission_times) for v in chain.validating])
    with tempfile.TemporaryDirectory() as tmp:
        hook, port = start(Path(tmp))
        try:
            store.load_objects([registration(port, Path(tmp) / "certs" / "ca.crt")])
            server = KubeAPIServer(store, admission=timed)
            with anyio.from_thread.start_blocking_portal() as portal:
                future, url = portal.start_task(server.serve)
                queue: Any = multiprocessing.get_context("spawn").Queue()
                proc = multiprocessing.get_context("spawn").Process(
                    target=raw_client if args.client == "raw" else client,
                    args=(url, args.concurrency, args.waves, queue),
                )
                proc.start()
                creates = queue.get(timeout=600)
                proc.join(timeout=60)
                future.cancel()
        finally:
            hook.terminate()
            hook.wait(timeout=30)
    warm = admission_times[args.concurrency :]
    ms = 1000.0
    print(
        json.dumps(
            {
                "concurrency": args.concurrency,
                "waves": args.waves,
                "client": args.client,
                "admission_p50_ms": round(pct(warm, 0.5) * ms, 2),
                "admission_p99_ms": round(pct(warm, 0.99) * ms, 2),
                "admission_max_ms": round(max(warm) * ms, 2),
                "create_p50_ms": round(pct(creates, 0.5) * ms, 2),
                "create_p99_ms": round(pct(creates, 0.99) * ms, 2),
                "admissions": len(admission_times),
                "python": platform.python_version(),
                "cores": os.cpu_count(),
                "load_average_1m": os.getloadavg()[0],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
