"""`ownergc controller` as a real process against the Kubernetes REST facade.

The controller talks HTTP through the kube backend to KubeAPIServer (over an
InMemoryStore); these tests check what an operator of a cluster sees: objects
collected, probes and metrics served, and leader election handing over
between two replicas.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes", reason="the kube extra is needed for `ownergc controller`")

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[InMemoryStore, KubeAPIServer, Path]]:
    store = InMemoryStore()
    with run_in_thread(store) as server:
        kubeconfig = tmp_path / "kubeconfig"
        server.write_kubeconfig(kubeconfig)
        yield store, server, kubeconfig


class Controller:
    """An `ownergc controller` process whose stderr is drained by a thread (logs never block)."""

    def __init__(self, kubeconfig: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ownergc",
                "-v",
                "controller",
                "--kubeconfig",
                str(kubeconfig),
                "--port",
                "0",
                "--bind-address",
                "127.0.0.1",
                "--resync-period",
                "1s",
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
        self.proc.stderr.close()

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def port(self, deadline: float = 30) -> int:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            m = re.search(r"serving probes and metrics on 127\.0\.0\.1:(\d+)", self.log)
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise AssertionError(f"controller exited {self.proc.returncode}: {self.log}")
            time.sleep(0.05)
        raise AssertionError(f"controller never reported its port: {self.log}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        return self.proc.returncode


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def wait_until(predicate: Any, timeout: float = 30, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def create(server: KubeAPIServer, store: InMemoryStore, obj: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = server.call(store.create_object, obj)
    return created


def cm(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "blockOwnerDeletion": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def test_controller_collects_and_serves_probes_metrics_and_graph(cluster) -> None:
    store, server, kubeconfig = cluster
    owner = create(server, store, cm("owner"))
    deps = [create(server, store, cm(f"dep-{i}", owner)) for i in range(5)]
    ctl = Controller(kubeconfig)
    try:
        port = ctl.port()
        assert get(port, "/healthz")[0] == 200
        wait_until(lambda: get(port, "/readyz")[0] == 200, what="readyz")
        status, dot = get(
            port, f"/debug/controllers/garbagecollector/graph?uid={owner['metadata']['uid']}"
        )
        assert status == 200 and dot.count(" -> ") == len(deps)
        resource = store.resource_for("v1", "ConfigMap")
        server.call(
            lambda: store.delete(
                resource, "owner", namespace="default", propagation_policy="Foreground"
            )
        )
        wait_until(
            lambda: not store.exists("v1", "ConfigMap", "owner", "default"),
            what="foreground cascade",
        )
        assert not any(
            store.exists("v1", "ConfigMap", d["metadata"]["name"], "default") for d in deps
        )
        _, metrics = get(port, "/metrics")
        assert 'ownergc_deletions_total{policy="Background"} 5' in metrics
        assert "ownergc_finalizers_removed_total 1" in metrics
    finally:
        code = ctl.stop()
    assert code == 0, ctl.log


def test_dry_run_deletes_nothing(cluster) -> None:
    store, server, kubeconfig = cluster
    create(
        server,
        store,
        {
            **cm("orphan"),
            "metadata": {
                "name": "orphan",
                "namespace": "default",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "no-such-uid"}
                ],
            },
        },
    )
    ctl = Controller(kubeconfig, "--dry-run")
    try:
        port = ctl.port()
        wait_until(lambda: get(port, "/readyz")[0] == 200, what="readyz")
        wait_until(lambda: "dry-run: would delete" in ctl.log, what="dry-run log")
        assert store.exists("v1", "ConfigMap", "orphan", "default")
    finally:
        ctl.stop()


def test_leader_election_hands_over_between_two_replicas(cluster) -> None:
    store, server, kubeconfig = cluster
    flags = (
        "--leader-elect",
        "--leader-elect-lease-duration",
        "3s",
        "--leader-elect-renew-deadline",
        "2s",
        "--leader-elect-retry-period",
        "500ms",
        "--leader-elect-resource-namespace",
        "default",
    )
    first = Controller(kubeconfig, *flags)
    second = Controller(kubeconfig, *flags)
    try:
        ports = [first.port(), second.port()]

        def leaders() -> list[int]:
            out = []
            for port in ports:
                _, metrics = get(port, "/metrics")
                if "ownergc_leader 1" in metrics:
                    out.append(port)
            return out

        wait_until(lambda: len(leaders()) == 1, what="one leader")
        leader_port = leaders()[0]
        standby_port = ports[1 - ports.index(leader_port)]
        status, body = get(standby_port, "/readyz")
        assert status == 200 and "standby" in body
        # The standby does not collect; kill the leader and the standby takes over.
        leader = first if leader_port == ports[0] else second
        leader.stop(signal.SIGKILL)
        owner = create(server, store, cm("owner"))
        dep = create(server, store, cm("dep", owner))
        wait_until(
            lambda: get(standby_port, "/metrics")[1].count("ownergc_leader 1") == 1,
            timeout=30,
            what="takeover",
        )
        resource = store.resource_for("v1", "ConfigMap")
        server.call(
            lambda: store.delete(
                resource, "owner", namespace="default", propagation_policy="Background"
            )
        )
        wait_until(lambda: not store.exists("v1", "ConfigMap", "dep", "default"), what="collection")
        del dep
    finally:
        first.stop()
        second.stop()
