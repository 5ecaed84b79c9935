"""Fixtures of the HTTP facade suite: an InMemoryStore served over loopback.

``server`` runs the facade in a background thread (for the sync official
client, kubectl subprocesses and raw ``http.client`` requests); async tests
use ``serve_in_background`` in the test's own loop instead. A test that also
asks for ``faulty`` gets a server serving the store through that
``FaultyStore`` (no random faults), to script HTTP faults on it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc.protocols import APIResource
from ownergc.testing.faults import FaultyStore
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.facade_helpers import Kubectl, find_kubectl


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def faulty(store: InMemoryStore) -> FaultyStore:
    return FaultyStore(store)


@pytest.fixture
def server(store: InMemoryStore, request: pytest.FixtureRequest) -> Iterator[KubeAPIServer]:
    served = request.getfixturevalue("faulty") if "faulty" in request.fixturenames else store
    with run_in_thread(served) as srv:
        yield srv


@pytest.fixture
def configmaps(store: InMemoryStore) -> APIResource:
    return store.resource_for("v1", "ConfigMap")


@pytest.fixture
def kubectl(server: KubeAPIServer, tmp_path: Path) -> Kubectl:
    binary = find_kubectl()
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kubectl is required in CI (Debian package kubernetes-client)")
        pytest.skip("no kubectl on PATH (set OWNERGC_KUBECTL or install kubernetes-client)")
    config = tmp_path / "kubeconfig"
    server.write_kubeconfig(config)
    return Kubectl(binary, config, tmp_path / "cache", tmp_path)


@pytest.fixture
def api_client(server: KubeAPIServer) -> Iterator[Any]:
    """The official sync client configured from the facade's kubeconfig."""
    kubernetes = pytest.importorskip("kubernetes")
    client = kubernetes.config.new_client_from_config_dict(server.kubeconfig())
    try:
        yield client
    finally:
        client.close()
