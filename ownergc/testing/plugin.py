"""The ownergc pytest plugin: a garbage-collecting Kubernetes for your tests.

Registered as the ``ownergc`` pytest11 entry point, so installing ownergc
makes these fixtures available (disable with ``-p no:ownergc``):

``ownergc_store``
    async (anyio) fixture: an in-process :class:`~ownergc.testing.OwnerGCStore`
    with kube-controller-manager's garbage collector and namespace controller
    running on it. Mark the test ``@pytest.mark.anyio``; after a delete,
    ``await ownergc_store.wait_idle()`` and assert on what is left.
``ownergc_cluster``
    sync fixture: the same served over HTTP from a background thread
    (:class:`~ownergc.testing.ClusterThread`: ``.url``, ``.kubeconfig_path``,
    ``.kubeconfig()``, ``.store``, ``.wait_idle()``), for the official
    client, kubectl or any operator code that talks HTTP.
``ownergc_kubeconfig``
    ``ownergc_cluster``'s kubeconfig path, also exported as ``KUBECONFIG``
    for the test, for code that loads its configuration the default way.

Envtest never runs the garbage collector; these do, so a test can prove
that owned objects are collected instead of only that ownerReferences are set.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ownergc.testing._fixtures import ClusterThread, OwnerGCStore


@pytest.fixture
async def ownergc_store() -> AsyncIterator[OwnerGCStore]:
    """An in-memory apiserver with the garbage collector running (anyio tests)."""
    from ownergc.testing._fixtures import running_store

    async with running_store() as store:
        yield store


@pytest.fixture
def ownergc_cluster(tmp_path: Path) -> Iterator[ClusterThread]:
    """An in-memory apiserver served on 127.0.0.1 with the GC running, for sync tests."""
    from ownergc.testing._fixtures import start_in_thread

    with start_in_thread(kubeconfig_path=tmp_path / "ownergc-kubeconfig") as cluster:
        yield cluster


@pytest.fixture
def ownergc_kubeconfig(ownergc_cluster: ClusterThread, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Path of ``ownergc_cluster``'s kubeconfig, exported as ``KUBECONFIG``."""
    monkeypatch.setenv("KUBECONFIG", str(ownergc_cluster.kubeconfig_path))
    return ownergc_cluster.kubeconfig_path
