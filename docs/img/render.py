"""Regenerate the pictures of docs/graph.md and docs/why.md from real scenarios.

    python docs/img/render.py          # from the repository root; needs Graphviz `dot`

An embedded cluster (store, REST facade, garbage collector, namespace
controller) plays tests/cli/picture_scenarios.py — a Deployment deleted in the
foreground whose pod carries a finalizer nobody removes, then its namespace
deleted — and `ownergc graph` / `ownergc why` read it over the kubeconfig, as
they read any cluster. tests/cli/test_cli_pictures.py checks the same
drawings. The uids (in tooltips) change on every run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from ownergc.testing import start_in_thread  # noqa: E402
from tests.cli.picture_scenarios import (  # noqa: E402
    foreground_blocked_by_finalizer,
    stuck_namespace,
)


def ownergc(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-m", "ownergc", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    if result.returncode not in (0, 1):
        raise SystemExit(f"ownergc {' '.join(args)}: {result.stderr}")
    return result.stdout


def write(name: str, svg: str) -> None:
    (HERE / name).write_text(svg)
    print(f"wrote docs/img/{name}")


def main() -> None:
    with start_in_thread() as cluster:
        kc = str(cluster.kubeconfig_path)
        foreground_blocked_by_finalizer(cluster)
        write("graph-foreground.svg", ownergc("graph", "--kubeconfig", kc, "-o", "svg"))
        write(
            "why-foreground.svg",
            ownergc("why", "deploy/web", "-n", "shop", "--kubeconfig", kc, "-o", "svg"),
        )
        print(ownergc("why", "deploy/web", "-n", "shop", "--kubeconfig", kc))
        stuck_namespace(cluster)
        write(
            "why-namespace.svg", ownergc("why", "namespace/shop", "--kubeconfig", kc, "-o", "svg")
        )
        print(ownergc("why", "namespace/shop", "--kubeconfig", kc))


if __name__ == "__main__":
    main()
