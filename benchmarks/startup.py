"""Start-up: how long ``ownergc controller`` takes to list a big cluster and report synced.

Every restart and leader failover starts with the collector listing all it
watches; it collects nothing until then. This benchmark populates an
apiserver with ``--objects N`` ConfigMaps (N/10 owners with 9 dependents
each: 10,000 × 9 + 10,000 = 100k by default), starts the real ``ownergc
controller`` CLI as its own process (default client settings: 40 QPS, burst
30, as deployed) and reports, once ``/readyz`` answers 200 (every monitor
synced):

* ``sync_seconds``: wall time from process start (interpreter start-up included);
* ``cpu_seconds``: the collector's user + system CPU by then;
* ``rss_mb``: its resident set then, ``rss_settled_mb`` one second later,
  ``peak_rss_mb`` its high-water mark;
* ``cpu_settled_seconds``: its CPU one second after synced (work that the
  synced signal does not wait for shows here);
* ``lists``: list requests the server saw during the start-up (facade only).

The apiserver is the REST facade (``KubeAPIServer`` over an
``InMemoryStore``, in this process) or, with ``--kubeconfig``, any server
(populate it first, e.g. with ``--populate``). ``--source DIR`` runs the
controller from another checkout (``PYTHONPATH=DIR``), repeatable: the
checkouts are measured in turn, ``--rounds`` times, interleaved, so a
"before" and an "after" share the machine's load. ``facade_list_seconds``
says what one metadata-only list of all ConfigMaps costs the facade itself
(it is part of every ``sync_seconds`` measured against it).

With ``--kubeconfig`` and ``--kcm PATH``, each round also starts
kube-controller-manager (that binary, its ``garbagecollector`` controller
only, ``--leader-elect=false``, its default client settings) against the
same server and reads the same figures at the moment it logs that all
resource monitors have synced (the garbage collector's own line), so the
two collectors are measured in turn under the same load. ``--kcm-arg``
passes more flags to it (repeatable: ``--kcm-arg=--port=0`` for a
pre-1.24 binary). Every run against a kubeconfig also records the 1-minute
load average when it started and, with ``--apiserver-pid PID``, the CPU that
the apiserver spent during it.

Run: ``python benchmarks/startup.py [--objects N] [--rounds R] [--source DIR ...]
[--kubeconfig PATH [--populate] [--kcm PATH [--kcm-arg ARG ...]]]``. One JSON
line per run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
from _which_ownergc import checkout_unless_installed  # benchmarks/

HERE = Path(__file__).resolve().parent
sys.path.extend(checkout_unless_installed())
sys.path.insert(0, str(HERE))

from cascade import _free_port, _http_get, _ready  # noqa: E402 - benchmarks/cascade.py
from scale import _proc_cpu, _proc_kb  # noqa: E402 - benchmarks/scale.py

NAMESPACE = "default"
DEPENDENTS = 9


def objects(n: int) -> Iterator[dict[str, Any]]:
    """``n`` ConfigMaps: every tenth an owner, the nine after it its dependents."""
    owners = max(1, n // (DEPENDENTS + 1))
    for i in range(owners):
        owner_uid = str(uuid.uuid4())
        yield {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"owner-{i}", "namespace": NAMESPACE, "uid": owner_uid},
        }
        for j in range(DEPENDENTS):
            ref = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": f"owner-{i}",
                "uid": owner_uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
            yield {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"dep-{i}-{j}",
                    "namespace": NAMESPACE,
                    "uid": str(uuid.uuid4()),
                    "ownerReferences": [ref],
                },
            }


def controller(kubeconfig: Path, port: int, unthrottled: bool = False) -> list[str]:
    """``ownergc controller`` with its default client settings (as deployed), or
    without the client's rate limit."""
    limits = ["--qps", "1e9", "--burst", str(10**9)] if unthrottled else []
    return [
        sys.executable,
        "-m",
        "ownergc",
        "controller",
        "--kubeconfig",
        str(kubeconfig),
        "--port",
        str(port),
        "--bind-address",
        "127.0.0.1",
        *limits,
    ]


async def run_one(
    kubeconfig: Path,
    source: str | None,
    timeout: float,
    server: Any,
    profile: str | None = None,
    unthrottled: bool = False,
) -> Any:
    """One start of the collector, until /readyz; ``profile``: under py-spy into that
    file (its CPU and RSS figures are then py-spy's, not the collector's)."""
    port = _free_port()
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = source
    lists_before = server.request_count("list") if server is not None else 0
    start = time.perf_counter()
    cmd = controller(kubeconfig, port, unthrottled)
    if profile:
        cmd = ["py-spy", "record", "--rate", "250", "--format", "raw", "-o", profile, "--", *cmd]
    proc = await anyio.open_process(
        cmd,
        env=env,
        stdout=None,
        stderr=subprocess.DEVNULL,
        cwd=source or None,
    )
    result: dict[str, Any] = {"source": source or "."}
    async with proc:
        try:
            with anyio.fail_after(timeout):
                while await _ready(port) != 200:
                    if proc.returncode is not None:
                        raise RuntimeError(f"controller exited with {proc.returncode}")
                    await anyio.sleep(0.02)
            result["sync_seconds"] = round(time.perf_counter() - start, 2)
            result["cpu_seconds"] = round(_proc_cpu(proc.pid), 2)
            result["rss_mb"] = round(_proc_kb(proc.pid, "VmRSS") / 2**20)
            await anyio.sleep(1.0)
            result["cpu_settled_seconds"] = round(_proc_cpu(proc.pid), 2)
            result["rss_settled_mb"] = round(_proc_kb(proc.pid, "VmRSS") / 2**20)
            result["peak_rss_mb"] = round(_proc_kb(proc.pid, "VmHWM") / 2**20)
            if server is not None:
                result["lists"] = server.request_count("list") - lists_before
            _, text = await _http_get(port, "/metrics")
            for line in text.splitlines():
                if line.startswith("ownergc_graph_nodes "):
                    result["graph_nodes"] = int(float(line.split()[1]))
        finally:
            if profile:
                proc.send_signal(2)
                with anyio.move_on_after(30):
                    await proc.wait()
            proc.terminate()
    return result


KCM_SYNCED = "all resource monitors have synced"


def kcm_command(binary: str, kubeconfig: Path, extra: list[str]) -> list[str]:
    """kube-controller-manager running its garbage collector only, as one replica,
    with its default client settings (20 QPS, burst 30) and log level (the synced
    line is logged at level 0)."""
    return [
        binary,
        f"--kubeconfig={kubeconfig}",
        "--controllers=garbagecollector",
        "--leader-elect=false",
        "--secure-port=0",
        *extra,
    ]


async def run_kcm(binary: str, kubeconfig: Path, extra: list[str], timeout: float) -> Any:
    """One start of kube-controller-manager, until its garbage collector logs that all
    resource monitors have synced: the same figures as ``run_one``'s, read then."""
    start = time.perf_counter()
    proc = await anyio.open_process(
        kcm_command(binary, kubeconfig, extra),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    result: dict[str, Any] = {"source": "kube-controller-manager"}
    synced = anyio.Event()
    tail: list[str] = []

    async def drain() -> None:
        # klog writes to stderr: read it all (a full pipe would stall the process).
        assert proc.stderr is not None
        pending = b""
        async for chunk in proc.stderr:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if synced.is_set():
                    continue
                text = line.decode(errors="replace")
                tail[:] = [*tail[-19:], text]
                if KCM_SYNCED in text:
                    result["sync_seconds"] = round(time.perf_counter() - start, 2)
                    result["cpu_seconds"] = round(_proc_cpu(proc.pid), 2)
                    result["rss_mb"] = round(_proc_kb(proc.pid, "VmRSS") / 2**20)
                    synced.set()

    async with proc, anyio.create_task_group() as tg:
        tg.start_soon(drain)
        try:
            with anyio.fail_after(timeout):
                while not synced.is_set():
                    if proc.returncode is not None:
                        raise RuntimeError(
                            f"kube-controller-manager exited with {proc.returncode}: "
                            + "\n".join(tail)
                        )
                    with anyio.move_on_after(0.1):
                        await synced.wait()
            await anyio.sleep(1.0)
            result["cpu_settled_seconds"] = round(_proc_cpu(proc.pid), 2)
            result["rss_settled_mb"] = round(_proc_kb(proc.pid, "VmRSS") / 2**20)
            result["peak_rss_mb"] = round(_proc_kb(proc.pid, "VmHWM") / 2**20)
        finally:
            proc.terminate()
            with anyio.move_on_after(10):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
            tg.cancel_scope.cancel()
    return result


class StaticServer:
    """An apiserver answering from bytes encoded up front: only ``v1`` ConfigMaps.

    It stands in for kube-apiserver's watch cache (``resourceVersion=0`` is
    one answer whatever the ``limit``; other lists are pages of ``limit``;
    ``sendInitialEvents`` streams the objects and the initial-events-end
    bookmark), at almost no cost of its own, so that the figures are the
    collector's. Items carry ``managedFields`` as a real server's do.
    """

    def __init__(self, n: int, *, watch_list: bool = True) -> None:
        import orjson

        self.watch_list = watch_list
        self.rv = "1000000"
        items = [_partial(o) for o in objects(n)]
        self.requests: list[str] = []
        self.full = orjson.dumps(_list_body(items, self.rv, None))
        self.pages: dict[int, list[bytes]] = {}
        self._items = items
        self.events = (
            b"".join(orjson.dumps({"type": "ADDED", "object": o}) + b"\n" for o in items)
            + orjson.dumps(
                {
                    "type": "BOOKMARK",
                    "object": {
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": {
                            "resourceVersion": self.rv,
                            "annotations": {"k8s.io/initial-events-end": "true"},
                        },
                    },
                }
            )
            + b"\n"
        )
        self.port = 0

    def _pages(self, limit: int) -> list[bytes]:
        import orjson

        if limit not in self.pages:
            chunks = [self._items[i : i + limit] for i in range(0, len(self._items), limit)]
            self.pages[limit] = [
                orjson.dumps(_list_body(c, self.rv, str(k + 1) if k + 1 < len(chunks) else None))
                for k, c in enumerate(chunks)
            ]
        return self.pages[limit]

    def request_count(self, verb: str) -> int:
        return sum(1 for r in self.requests if r == verb)

    async def handle(self, request: Any) -> Any:
        from aiohttp import web

        path, q = request.path, request.query
        if path == "/api":
            return web.json_response({"kind": "APIVersions", "versions": ["v1"]})
        if path == "/apis":
            return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": []})
        if path == "/api/v1":
            return web.json_response(
                {
                    "kind": "APIResourceList",
                    "groupVersion": "v1",
                    "resources": [
                        {
                            "name": "configmaps",
                            "singularName": "",
                            "namespaced": True,
                            "kind": "ConfigMap",
                            "verbs": ["create", "delete", "get", "list", "patch", "watch"],
                        }
                    ],
                }
            )
        if path not in ("/api/v1/configmaps", f"/api/v1/namespaces/{NAMESPACE}/configmaps"):
            return web.json_response(
                {"kind": "Status", "code": 404, "reason": "NotFound"}, status=404
            )
        if q.get("watch") in ("true", "1"):
            self.requests.append("watch")
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            await resp.prepare(request)
            if q.get("sendInitialEvents") == "true":
                if not self.watch_list:
                    return web.json_response(
                        {"kind": "Status", "code": 422, "reason": "Invalid"}, status=422
                    )
                await resp.write(self.events)
            await anyio.sleep(float(q.get("timeoutSeconds", "600")))
            return resp
        self.requests.append("list")
        rv, limit, cont = q.get("resourceVersion", ""), int(q.get("limit", "0")), q.get("continue")
        if cont:
            body = self._pages(limit or 500)[int(cont)]
        elif rv == "0" or not limit:
            body = self.full
        else:
            body = self._pages(limit)[0]
        return web.Response(body=body, content_type="application/json")

    async def serve(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        from aiohttp import web

        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self.handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        task_status.started()
        try:
            await anyio.sleep_forever()
        finally:
            await runner.cleanup()

    def write_kubeconfig(self, path: Path) -> None:
        url = f"http://127.0.0.1:{self.port}"
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "s", "cluster": {"server": url}}],
                    "users": [{"name": "u", "user": {}}],
                    "contexts": [{"name": "s", "context": {"cluster": "s", "user": "u"}}],
                    "current-context": "s",
                }
            )
        )


def _partial(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as a real 1.24 server lists it metadata-only (``kubectl create`` made it)."""
    meta = dict(obj["metadata"])
    meta["resourceVersion"] = str(abs(hash(meta["uid"])) % 10**6)
    meta["creationTimestamp"] = "2026-11-25T05:00:00Z"
    fields: dict[str, Any] = {}
    for ref in meta.get("ownerReferences", ()):
        fields.setdefault("f:ownerReferences", {".": {}})[f'k:{{"uid":"{ref["uid"]}"}}'] = {}
    meta["managedFields"] = [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-25T05:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {}, **({"f:metadata": fields} if fields else {})},
        }
    ]
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}


def _list_body(items: list[Any], rv: str, cont: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "items": items,
    }


async def facade_list_seconds(server: Any) -> float:
    """One metadata-only list of every ConfigMap, as the collector asks for it."""
    from ownergc_backends.kube import KubeStore

    store = await KubeStore.from_kubeconfig_dict(server.kubeconfig(), qps=0, burst=0)
    async with store:
        res = next(r for r in (await store.discover()).resources if r.resource == "configmaps")
        start = time.perf_counter()
        await store.list(res, consistent=False)
        return round(time.perf_counter() - start, 2)


async def main_async(args: argparse.Namespace) -> None:
    sources: list[str | None] = list(args.source) or [None]
    with tempfile.TemporaryDirectory() as tmp:
        if args.kubeconfig:
            kubeconfig = Path(args.kubeconfig)
            if args.populate:
                await populate(kubeconfig, args.objects)
            for _ in range(args.rounds):
                if args.kcm:
                    with _server_cpu(args.apiserver_pid) as base:
                        out = await run_kcm(args.kcm, kubeconfig, args.kcm_arg, args.timeout)
                    print(json.dumps({**base, **out}), flush=True)
                for source in sources:
                    with _server_cpu(args.apiserver_pid) as base:
                        out = await run_one(
                            kubeconfig, source, args.timeout, None, None, args.unthrottled
                        )
                    print(json.dumps({**base, **out}), flush=True)
            return
        if args.server == "static":
            static = StaticServer(args.objects, watch_list=args.watch_list)
            async with anyio.create_task_group() as tg:
                await tg.start(static.serve)
                kubeconfig = Path(tmp) / "kubeconfig"
                static.write_kubeconfig(kubeconfig)
                base = {"server": "static", "objects": args.objects}
                for _ in range(args.rounds):
                    for source in sources:
                        out = await run_one(
                            kubeconfig, source, args.timeout, static, args.profile, args.unthrottled
                        )
                        print(json.dumps({**base, **out}), flush=True)
                tg.cancel_scope.cancel()
            return
        from ownergc_backends.memory import InMemoryStore
        from ownergc_backends.memory.http import serve_in_background

        store = InMemoryStore(request_log_limit=1000)
        loaded = len(store.load_objects(objects(args.objects)))
        async with serve_in_background(store) as server:
            kubeconfig = Path(tmp) / "kubeconfig"
            server.write_kubeconfig(kubeconfig)
            base = {
                "server": "facade",
                "objects": loaded,
                "facade_list_seconds": await facade_list_seconds(server),
            }
            for _ in range(args.rounds):
                for source in sources:
                    out = await run_one(
                        kubeconfig, source, args.timeout, server, None, args.unthrottled
                    )
                    print(json.dumps({**base, **out}), flush=True)


@contextlib.contextmanager
def _server_cpu(pid: int | None) -> Iterator[dict[str, Any]]:
    """The 1-minute load average at the start of a run and, given the apiserver's
    pid, the CPU it spent during the run (until the collector's figures were read,
    the second after synced included)."""
    base: dict[str, Any] = {"server": "kubeconfig", "load_1m": round(os.getloadavg()[0], 2)}
    before = _proc_cpu(pid) if pid else 0.0
    yield base
    if pid:
        base["apiserver_cpu_seconds"] = round(_proc_cpu(pid) - before, 2)


async def populate(kubeconfig: Path, n: int) -> None:
    """Create the ConfigMaps on a real server (uids are the server's: owners first)."""
    from ownergc_backends.kube import KubeStore

    store = await KubeStore.from_kubeconfig(kubeconfig, qps=0, burst=0)
    async with store:
        res = next(r for r in (await store.discover()).resources if r.resource == "configmaps")
        limiter = anyio.CapacityLimiter(16)
        owner_uid: dict[str, str] = {}

        async def create(obj: dict[str, Any]) -> None:
            meta = obj["metadata"]
            meta.pop("uid", None)
            for ref in meta.get("ownerReferences", ()):
                ref["uid"] = owner_uid[ref["name"]]
            async with limiter:
                made = await store.create(res, obj, namespace=NAMESPACE)
            owner_uid[meta["name"]] = made["metadata"]["uid"]

        batch: list[dict[str, Any]] = []
        for obj in objects(n):
            batch.append(obj)
            if len(batch) == 1000:
                await _create_all(create, batch)
                batch = []
        await _create_all(create, batch)


async def _create_all(create: Any, batch: list[dict[str, Any]]) -> None:
    owners = [o for o in batch if "ownerReferences" not in o["metadata"]]
    deps = [o for o in batch if "ownerReferences" in o["metadata"]]
    for group in (owners, deps):
        async with anyio.create_task_group() as tg:
            for obj in group:
                tg.start_soon(create, obj)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--source",
        action="append",
        default=[],
        help="run the controller from this checkout (repeatable; default: this one)",
    )
    parser.add_argument(
        "--server",
        choices=("facade", "static"),
        default="static",
        help="facade: ownergc's REST facade over an InMemoryStore; static: answers encoded "
        "up front, standing in for kube-apiserver's watch cache (default)",
    )
    parser.add_argument(
        "--no-watch-list",
        dest="watch_list",
        action="store_false",
        help="static server: refuse sendInitialEvents (422), as a server without watch-list",
    )
    parser.add_argument(
        "--unthrottled", action="store_true", help="the controller without its 40 QPS limit"
    )
    parser.add_argument("--profile", help="run the collector under py-spy, into this file")
    parser.add_argument("--kubeconfig", help="measure against this apiserver, not a facade")
    parser.add_argument(
        "--populate", action="store_true", help="with --kubeconfig: create the objects first"
    )
    parser.add_argument(
        "--kcm",
        help="with --kubeconfig: also measure this kube-controller-manager binary "
        "(garbagecollector controller only), interleaved round by round",
    )
    parser.add_argument(
        "--kcm-arg",
        action="append",
        default=[],
        help="one more flag for kube-controller-manager (repeatable)",
    )
    parser.add_argument(
        "--apiserver-pid",
        type=int,
        help="with --kubeconfig: also record this process's CPU (the apiserver's) per run",
    )
    args = parser.parse_args(argv)
    if args.kcm and not args.kubeconfig:
        parser.error("--kcm needs --kubeconfig")
    anyio.run(main_async, args)


if __name__ == "__main__":
    main()
