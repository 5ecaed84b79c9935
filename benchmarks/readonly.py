"""The read-only commands on a big cluster: time and peak RSS of preview, why, graph and lint.

The cluster (``--objects N``, default 100000): namespace ``bulk`` holds N/10
owner ConfigMaps with 9 dependents each (the shape issue 22 measured on a
real apiserver); namespace ``gdemo`` holds 5 objects (a root, three
dependents, one of them owning a fifth). The objects are loaded into an
InMemoryStore and served by the REST facade in this process (a thread), or
read from any apiserver given with ``--kubeconfig`` (which must already hold
them).

Each command runs as its own process (``python -m ownergc``), as a user runs
it, and reports wall time and its own peak RSS (``wait4``):

* ``preview --delete namespace/gdemo``   (a small namespace beside 100k objects)
* ``why namespace/gdemo``
* ``graph -o json``                      (the whole cluster)
* ``lint``                               (the whole cluster)

Run: ``python benchmarks/readonly.py [--objects N] [--kubeconfig PATH] [--repeat R]``.
Prints one JSON line per command run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from _which_ownergc import checkout_unless_installed  # benchmarks/

#: The checkout, when no installed ownergc is measured instead (benchmarks/_which_ownergc.py).
CHECKOUT = checkout_unless_installed()
sys.path.extend(CHECKOUT)

COMMANDS: dict[str, list[str]] = {
    "preview namespace/gdemo": ["preview", "--delete", "namespace/gdemo", "-o", "json"],
    "why namespace/gdemo": ["why", "namespace/gdemo"],
    "graph -o json": ["graph", "-o", "json"],
    "lint": ["lint"],
}


def _cm(name: str, namespace: str, owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"{namespace}.{name}"}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner,
                "uid": f"{namespace}.{owner}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def cluster(objects: int) -> Iterator[dict[str, Any]]:
    for ns in ("bulk", "gdemo"):
        yield {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    for i in range(objects // 10):
        yield _cm(f"owner-{i}", "bulk")
        for j in range(9):
            yield _cm(f"dep-{i}-{j}", "bulk", owner=f"owner-{i}")
    yield _cm("root", "gdemo")
    for j in range(3):
        yield _cm(f"child-{j}", "gdemo", owner="root")
    yield _cm("grandchild", "gdemo", owner="child-0")


#: Runs ``python -m ownergc ARGS`` and writes the process's own VmHWM at exit.
#: ``ru_maxrss`` of a child is no use here: Linux carries the high-water mark of
#: the forked copy of this (big, store-holding) process across exec.
_WRAPPER = """
import atexit, runpy, sys
out = sys.argv.pop(1)
def hwm():
    with open('/proc/self/status') as f, open(out, 'w') as o:
        o.write(next(l for l in f if l.startswith('VmHWM')).split()[1])
atexit.register(hwm)
sys.argv[0] = 'ownergc'
runpy.run_module('ownergc', run_name='__main__', alter_sys=True)
"""


def _vm_hwm_mb(path: str) -> int | None:
    text = Path(path).read_text().strip()
    return int(text) // 1024 if text else None


def run_measured(command: list[str], kubeconfig: Path) -> dict[str, Any]:
    """One command in a process of its own, with its own peak RSS (a fresh ``wait4``)."""
    env = dict(os.environ)
    if CHECKOUT:  # (the measured ownergc: in the child as here)
        env["PYTHONPATH"] = os.pathsep.join([*CHECKOUT, *filter(None, [env.get("PYTHONPATH")])])
    start = time.perf_counter()
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile() as hwm,
    ):
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRAPPER, hwm.name, *command, "--kubeconfig", str(kubeconfig)],
            stdout=out,
            stderr=err,
            env=env,
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        out.seek(0)
        return {
            "seconds": round(wall, 2),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": _vm_hwm_mb(hwm.name),
            "ru_maxrss_mb": usage.ru_maxrss // 1024,
            "exit": proc.returncode,
            "stdout_bytes": len(out.read()),
            "stderr_tail": err.read().decode(errors="replace")[-300:],
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--kubeconfig", type=Path, help="an apiserver already holding the objects")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", choices=sorted(COMMANDS), action="append")
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        kubeconfig = args.kubeconfig
        if kubeconfig is None:
            from ownergc_backends.memory import InMemoryStore
            from ownergc_backends.memory.http import run_in_thread

            store = InMemoryStore()
            start = time.perf_counter()
            store.load_objects(list(cluster(args.objects)))
            loaded = time.perf_counter() - start
            server = stack.enter_context(run_in_thread(store))
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            kubeconfig = tmp / "kubeconfig"
            server.write_kubeconfig(kubeconfig)
            print(
                json.dumps({"objects": store.object_count(), "load_seconds": round(loaded, 2)}),
                flush=True,
            )
        for _ in range(args.repeat):
            for name in args.only or COMMANDS:
                result = run_measured(COMMANDS[name], kubeconfig)
                print(json.dumps({"command": name, **result}), flush=True)


if __name__ == "__main__":
    main()
