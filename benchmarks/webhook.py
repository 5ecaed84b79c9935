"""Admission latency of ``ownergc webhook`` under 200 concurrent AdmissionReviews.

Starts ``ownergc webhook`` (deny mode, in-memory cluster of 20 namespaces with
one owner Deployment each, self-signed TLS) in a subprocess, as it runs in a
cluster, then sends waves of ``--concurrency`` AdmissionReviews at once over
kept-alive HTTPS connections, as kube-apiserver does: creates of
StatefulSets whose controller reference names an owner, 1 in 10 of them the
cross-namespace incident (refused). The first wave opens the connections
(TLS handshakes) and is reported apart. Prints one JSON object: client-side
p50/p99/max per request in ms over the warm waves, and the server's own mean
time per review (its histogram), so queueing and client cost can be told apart.

Client and server share the machine's cores: the client's own CPU counts
against the figures (a minimal HTTP/1.1 client keeps it small). The server's
CPU per review (from /proc) is printed too: it does not depend on queueing.
``--spread 1`` releases each wave over one second instead of at once (200
creates/s rather than a burst of 200).

Run: ``python benchmarks/webhook.py [--waves N] [--spread SECONDS]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from anyio.streams.tls import TLSStream

ROOT = Path(__file__).resolve().parents[1]
NAMESPACES = 20


def cluster() -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = []
    for i in range(NAMESPACES):
        objs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns{i}"}})
        objs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "owner", "namespace": f"ns{i}", "uid": f"uid-{i}"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "x"}]},
                    },
                },
            }
        )
    return objs


def review(n: int) -> dict[str, Any]:
    ns = n % NAMESPACES
    owner_ns = (ns + 1) % NAMESPACES if n % 10 == 0 else ns  # 1 in 10: another namespace
    ref = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "owner",
        "uid": f"uid-{owner_ns}",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    obj = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": f"db-{n}", "namespace": f"ns{ns}", "ownerReferences": [ref]},
        "spec": {"replicas": 1, "serviceName": "db", "template": {"spec": {"containers": []}}},
    }
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": f"req-{n}",
            "kind": {"group": "apps", "version": "v1", "kind": "StatefulSet"},
            "resource": {"group": "apps", "version": "v1", "resource": "statefulsets"},
            "namespace": f"ns{ns}",
            "operation": "CREATE",
            "object": obj,
        },
    }


def start(tmp: Path) -> tuple[subprocess.Popen[str], int]:
    manifests = tmp / "cluster.json"
    manifests.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": cluster()}))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ownergc",
            "webhook",
            "-f",
            str(manifests),
            "--mode",
            "deny",
            "--bind-address",
            "127.0.0.1",
            "--port",
            "0",
            "--cert-dir",
            str(tmp / "certs"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "/validate" in line:
            return proc, int(line.rsplit(":", 1)[1].split("/")[0])
    raise SystemExit("ownergc webhook did not start")


class Conn:
    """One kept-alive HTTPS connection, speaking just enough HTTP/1.1 (a light client:
    the figures should be the server's, and client and server share the cores)."""

    def __init__(self, stream: Any, host: str = "localhost") -> None:
        self.stream = stream
        self.host = host
        self.buffer = b""

    @classmethod
    async def open(cls, port: int, ctx: ssl.SSLContext) -> Conn:
        tcp = await anyio.connect_tcp("127.0.0.1", port)
        stream = await TLSStream.wrap(
            tcp, hostname="localhost", ssl_context=ctx, standard_compatible=False
        )
        return cls(stream)

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        await self.stream.send(head + body)
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += await self.stream.receive()
        header, _, rest = self.buffer.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", header).group(1))  # type: ignore[union-attr]
        while len(rest) < length:
            rest += await self.stream.receive()
        self.buffer = rest[length:]
        return int(header.split(b" ", 2)[1]), rest[:length]


async def wave(conns: list[Conn], base: int, spread: float) -> list[float]:
    """One AdmissionReview on each connection: released at once, or spread evenly
    over ``spread`` seconds (an arrival rate of len(conns)/spread per second)."""
    times: list[float] = []
    go = anyio.Event()

    async def one(conn: Conn, n: int) -> None:
        body = json.dumps(review(n)).encode()
        await go.wait()
        if spread:
            await anyio.sleep(spread * (n % len(conns)) / len(conns))
        t0 = time.perf_counter()
        status, answer = await conn.post("/validate", body)
        times.append(time.perf_counter() - t0)
        assert status == 200, answer
        allowed = json.loads(answer)["response"]["allowed"]
        assert allowed == (n % 10 != 0), (n, answer)  # 1 in 10 is the incident: refused

    async with anyio.create_task_group() as tg:
        for i, conn in enumerate(conns):
            tg.start_soon(one, conn, base + i)
        await anyio.sleep(0.1)
        go.set()
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def bench(
    port: int, ca: Path, concurrency: int, waves: int, pid: int, spread: float
) -> dict[str, Any]:
    ctx = ssl.create_default_context(cafile=str(ca))
    t0 = time.perf_counter()
    conns = [await Conn.open(port, ctx) for _ in range(concurrency)]
    handshakes = time.perf_counter() - t0
    first = await wave(conns, 0, spread)  # caches fill (one GET per owner)
    warm: list[float] = []
    walls: list[float] = []
    cpu0 = cpu_seconds(pid)
    for w in range(waves):
        t0 = time.perf_counter()
        warm += await wave(conns, (w + 1) * concurrency, spread)
        walls.append(time.perf_counter() - t0 - 0.1)
    rate = len(warm) / sum(walls)
    server_cpu = cpu_seconds(pid) - cpu0
    async with httpx.AsyncClient(verify=ctx) as client:
        metrics = (await client.get(f"https://localhost:{port}/metrics")).text
    for conn in conns:
        await anyio.aclose_forcefully(conn.stream)
    total = float(re.search(r"admission_duration_seconds_sum (\S+)", metrics).group(1))  # type: ignore[union-attr]
    count = float(re.search(r"admission_duration_seconds_count (\S+)", metrics).group(1))  # type: ignore[union-attr]
    gets = re.search(r'store_requests_total\{verb="get"\} (\S+)', metrics)
    ms = 1000.0
    return {
        "concurrency": concurrency,
        "spread_s": spread,
        "waves": waves,
        "tls_handshakes_ms_each": round(handshakes / concurrency * ms, 2),
        "first_wave_p99_ms": round(pct(first, 0.99) * ms, 2),
        "p50_ms": round(pct(warm, 0.5) * ms, 2),
        "p99_ms": round(pct(warm, 0.99) * ms, 2),
        "max_ms": round(max(warm) * ms, 2),
        "reviews_per_s": round(rate),
        "server_mean_review_ms": round(total / count * ms, 3),
        "server_cpu_ms_per_review": round(server_cpu / len(warm) * ms, 3),
        "owner_gets": int(float(gets.group(1))) if gets else 0,
        "reviews": int(count),
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--waves", type=int, default=10)
    parser.add_argument(
        "--spread",
        type=float,
        default=0.0,
        help="spread each wave's requests over this many seconds (default 0: all at once)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = start(Path(tmp))
        try:
            ca = Path(tmp) / "certs" / "ca.crt"
            result = anyio.run(bench, port, ca, args.concurrency, args.waves, proc.pid, args.spread)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
