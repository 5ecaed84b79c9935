"""`ownergc demo` and the CLI's error handling, through a real subprocess."""

from __future__ import annotations

import subprocess
import sys


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ownergc", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_demo_shows_all_three_policies() -> None:
    proc = run("demo", "--pods", "2")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "== Background" in out and "== Foreground" in out and "== Orphan" in out
    background = out.split("== Foreground")[0]
    assert "removed   Pod default/web-background-5d8f7-1" in background
    foreground = out.split("== Foreground")[1].split("== Orphan")[0]
    # The Deployment goes last in a Foreground cascade.
    removed = [line for line in foreground.splitlines() if "removed" in line]
    assert removed[-1].endswith("Deployment default/web-foreground")
    orphan = out.split("== Orphan")[1]
    assert "left: Pod default/web-orphan-5d8f7-0" in orphan
    assert "errors: 0" in out


def test_bad_flags_give_a_clear_error_not_a_traceback() -> None:
    proc = run("demo", "--pods", "zero")
    assert proc.returncode == 2
    assert "not an integer" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run("controller", "--resync-period", "soon")
    assert proc.returncode == 2 and 'invalid duration "soon"' in proc.stderr
    proc = run("controller", "--ignore-resource", "Bad/Thing")
    assert proc.returncode == 2 and "group/resource" in proc.stderr


def test_controller_without_a_cluster_says_how_to_point_it_at_one(tmp_path) -> None:
    env_home = tmp_path
    proc = subprocess.run(
        [sys.executable, "-m", "ownergc", "controller"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"HOME": str(env_home), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 1
    assert "--kubeconfig" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_lists_the_commands() -> None:
    proc = run("--help")
    assert proc.returncode == 0
    for command in ("demo", "controller", "node"):
        assert command in proc.stdout


def test_kubectl_finds_the_ownergc_plugin() -> None:
    """`kubectl ownergc ...` runs the kubectl-ownergc console script (kubectl's plugin rule)."""
    import os
    import shutil

    kubectl = os.environ.get("OWNERGC_KUBECTL") or shutil.which("kubectl")
    plugin = shutil.which("kubectl-ownergc")
    assert kubectl, "kubectl is needed (.ci/run installs Debian's kubernetes-client)"
    assert plugin, "the kubectl-ownergc console script is not installed (pip install -e .)"
    env = {**os.environ, "PATH": f"{os.path.dirname(plugin)}:{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        [kubectl, "ownergc", "lint", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ownerReferences" in proc.stdout
