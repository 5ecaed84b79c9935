"""The ownergc pytest plugin: a garbage-collecting Kubernetes for your tests.

Registered as the ``ownergc`` pytest11 entry point, so installing ownergc
makes these fixtures available (disable with ``-p no:ownergc``):

``ownergc_store``
    an in-process :class:`~ownergc.testing.OwnerGCStore` with
    kube-controller-manager's garbage collector and namespace controller
    running on it, in the test's event loop. Works under anyio's plugin
    (``@pytest.mark.anyio``) and pytest-asyncio (``@pytest.mark.asyncio`` in
    strict mode, any ``async def`` test in auto mode) alike; after a delete,
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
from typing import TYPE_CHECKING, Any

import pytest

_pytest_asyncio: Any
try:  # optional: most operator test suites run on pytest-asyncio
    import pytest_asyncio as _pytest_asyncio
except ImportError:  # pragma: no cover - depends on the environment
    _pytest_asyncio = None

if TYPE_CHECKING:
    from ownergc.testing._fixtures import ClusterThread, OwnerGCStore


async def _running_store() -> AsyncIterator[OwnerGCStore]:
    from ownergc.testing._fixtures import running_store

    async with running_store() as store:
        yield store


#: Run by anyio's plugin, in the event loop of the ``@pytest.mark.anyio`` test.
_ownergc_store_anyio = pytest.fixture(_running_store, name="_ownergc_store_anyio")


async def _running_store_in_own_task() -> AsyncIterator[OwnerGCStore]:
    """The store's controllers in a task of their own.

    pytest-asyncio may run a fixture's setup and teardown in different tasks,
    and an anyio task group must be left by the task that entered it, so the
    group lives in one task from start to stop.
    """
    import asyncio

    loop = asyncio.get_running_loop()
    ready: asyncio.Future[OwnerGCStore] = loop.create_future()
    stop = asyncio.Event()

    async def run() -> None:
        from ownergc.testing._fixtures import running_store

        try:
            async with running_store() as store:
                ready.set_result(store)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    task = loop.create_task(run())
    try:
        yield await ready
    finally:
        stop.set()
        await task


if _pytest_asyncio is not None:
    #: Run by pytest-asyncio, in the event loop of the ``asyncio`` test (strict or auto mode).
    _ownergc_store_asyncio = _pytest_asyncio.fixture(
        _running_store_in_own_task, name="_ownergc_store_asyncio"
    )


@pytest.fixture
def ownergc_store(request: pytest.FixtureRequest) -> OwnerGCStore:
    """An in-memory apiserver with the garbage collector running, in the test's event loop.

    Works for tests run by anyio's plugin (``@pytest.mark.anyio``) and by
    pytest-asyncio (``@pytest.mark.asyncio``, or any ``async def`` test in
    auto mode): the store and its controllers must live in the loop the
    test runs in, so this picks the plugin that runs the test.
    """
    node = request.node
    if node.get_closest_marker("anyio") is not None or "anyio_backend" in request.fixturenames:
        store: OwnerGCStore = request.getfixturevalue("_ownergc_store_anyio")
        return store
    if _pytest_asyncio is not None and node.get_closest_marker("asyncio") is not None:
        store = request.getfixturevalue("_ownergc_store_asyncio")
        return store
    raise pytest.UsageError(
        f"{node.nodeid}: ownergc_store runs in the test's event loop, so the test must be "
        "async and run by anyio (@pytest.mark.anyio) or pytest-asyncio "
        "(@pytest.mark.asyncio, or asyncio_mode = auto); sync tests use ownergc_cluster"
    )


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
