"""Helpers of the CLI suite: run `python -m ownergc`, a served cluster, kubectl."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def ownergc(
    *args: str, timeout: float = 60, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m ownergc ARGS` (no shell), output captured."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "ownergc", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
        cwd=ROOT,
        env=env,
    )


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str
    kubeconfig: Path
    banner: list[str]


def start_serve(tmp: Path, *extra: str) -> Served:
    kubeconfig = tmp / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ownergc",
            "serve",
            "--port",
            "0",
            "--kubeconfig-out",
            str(kubeconfig),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    banner: list[str] = []
    deadline = time.monotonic() + 30
    url = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(
                f"ownergc serve exited: {proc.stderr.read() if proc.stderr else ''}"
            )
        banner.append(line.rstrip("\n"))
        if "Kubernetes API at " in line:
            url = line.split("Kubernetes API at ")[1].split()[0]
        if line.startswith("Ctrl-C to stop"):
            break
    assert url, banner
    return Served(proc, url, kubeconfig, banner)


def stop_serve(srv: Served, sig: int = signal.SIGTERM) -> tuple[int, str]:
    """Signal the server, wait for it, close its pipes; (exit code, stderr)."""
    srv.proc.send_signal(sig)
    try:
        _, err = srv.proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        srv.proc.communicate()
        raise
    return srv.proc.returncode, err


def wait_for(check: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@dataclass
class Kubectl:
    binary: str
    kubeconfig: Path
    workdir: Path

    def run(
        self, *args: str, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        cmd = [
            self.binary,
            "--kubeconfig",
            str(self.kubeconfig),
            "--cache-dir",
            str(self.workdir / "kubectl-cache"),
            "--request-timeout",
            "10s",
            *args,
        ]
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env["HOME"] = str(self.workdir)
        result = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, cwd=self.workdir, env=env
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
            )
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-o", "json").stdout)

    def apply(self, name: str, text: str) -> str:
        path = self.workdir / name
        path.write_text(text)
        return self.run("apply", "-f", str(path)).stdout

    def exists(self, *args: str) -> bool:
        result = self.run("get", *args, "-o", "name", check=False)
        if result.returncode == 0:
            return bool(result.stdout.strip())
        if "NotFound" in result.stderr or "not found" in result.stderr:
            return False
        raise AssertionError(result.stderr)

    def uid(self, *args: str) -> str:
        return str(self.json("get", *args)["metadata"]["uid"])
