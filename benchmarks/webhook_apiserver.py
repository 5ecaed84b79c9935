"""200 concurrent creates against any apiserver with a validating webhook registered,
timed by the apiserver itself.

Each wave sends ``--clients`` ConfigMap creates at the same instant (one
connection per client), each with a controller reference to ``--owner`` in
``--namespace``; then the apiserver's own histogram of its validating webhook
calls (``apiserver_admission_webhook_admission_duration_seconds``, read from
``/metrics`` before and after) says how long the calls took, bucket by bucket.
This is issue 18's setting (docs/performance.md, "Admission webhook").

    python benchmarks/webhook_apiserver.py --server https://127.0.0.1:6443 \\
        --token TOKEN --namespace burst --owner owner --waves 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from typing import Any

import httpx

METRIC = "apiserver_admission_webhook_admission_duration_seconds_bucket"


async def buckets(client: httpx.AsyncClient, server: str) -> dict[str, float]:
    """Cumulative counts per ``le`` of the validating CREATE calls admitted."""
    text = (await client.get(f"{server}/metrics")).text
    out: dict[str, float] = {}
    for line in text.splitlines():
        if (
            line.startswith(METRIC)
            and 'type="validating"' in line
            and 'operation="CREATE"' in line
            and 'rejected="false"' in line
        ):
            le = line.split('le="')[1].split('"')[0]
            out[le] = out.get(le, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


async def main(args: argparse.Namespace) -> None:
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    verify: Any = args.ca or False
    async with httpx.AsyncClient(verify=verify, headers=headers) as admin:
        owner = (
            await admin.get(
                f"{args.server}/api/v1/namespaces/{args.namespace}/configmaps/{args.owner}"
            )
        ).json()
        owner_uid = owner["metadata"]["uid"]
        before = await buckets(admin, args.server)
        run = uuid.uuid4().hex[:6]
        clients = [
            httpx.AsyncClient(verify=verify, headers=headers, timeout=60)
            for _ in range(args.clients)
        ]
        latencies: list[float] = []
        for wave in range(args.waves):

            async def create(i: int, client: httpx.AsyncClient, wave: int = wave) -> None:
                body = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": f"burst-{run}-{wave}-{i}",
                        "namespace": args.namespace,
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "ConfigMap",
                                "name": args.owner,
                                "uid": owner_uid,
                                "controller": True,
                                "blockOwnerDeletion": True,
                            }
                        ],
                    },
                }
                start = time.perf_counter()
                answer = await client.post(
                    f"{args.server}/api/v1/namespaces/{args.namespace}/configmaps", json=body
                )
                latencies.append(time.perf_counter() - start)
                answer.raise_for_status()

            await asyncio.gather(*(create(i, c) for i, c in enumerate(clients)))
        for client in clients:
            await client.aclose()
        after = await buckets(admin, args.server)
    latencies.sort()
    total = after.get("+Inf", 0.0) - before.get("+Inf", 0.0)
    report = {
        "creates": len(latencies),
        "create_p50_ms": round(latencies[len(latencies) // 2] * 1e3, 1),
        "create_p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1e3, 1),
        "webhook_calls": total,
        "share_at_or_below": {
            le: round((after[le] - before.get(le, 0.0)) / total, 3) if total else None
            for le in after
        },
    }
    print(json.dumps(report))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--token", default="")
    parser.add_argument("--ca", default="", help="the apiserver's CA (default: not verified)")
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--owner", required=True, help="a ConfigMap in --namespace")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--waves", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
