"""Fixtures of the node-GC suite: the anyio backend and a private containerd.

The containerd session starts lazily, only when a ``cri`` test asks for it.
Where containerd is missing it is installed with .ci/install-containerd.sh
(root only). Under CI=true a missing or broken containerd fails the tests
instead of skipping them: they must run in CI.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.nodegc._nodegc_cri_env import CRIEnv, missing_tools, new_base

REPO = Path(__file__).resolve().parents[2]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"real-CRI tests must run in CI, but: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def containerd() -> Iterator[CRIEnv]:
    """A containerd on private directories, with the test images imported."""
    try:
        import cri_api  # noqa: F401
        import grpc  # noqa: F401
    except ImportError as exc:
        _unavailable(f"the cri extra is not installed ({exc}); pip install -e '.[cri]'")
    if missing_tools():
        if os.geteuid() != 0:
            _unavailable(f"missing {missing_tools()} and not root to install them")
        subprocess.run(["bash", str(REPO / ".ci" / "install-containerd.sh")], check=False)
        if missing_tools():
            _unavailable(f"still missing after install-containerd.sh: {missing_tools()}")
    if os.geteuid() != 0:
        _unavailable("containerd needs root")
    env = CRIEnv(new_base())
    try:
        env.start()
    except Exception as exc:
        env.stop()
        _unavailable(f"could not start containerd: {exc}")
    try:
        yield env
    finally:
        env.stop()
