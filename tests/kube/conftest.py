"""Fixtures of the kube-backend suite: KubeStore against the HTTP facade of InMemoryStore.

Everything here talks real HTTP over loopback: the facade
(``ownergc_backends.memory.http.KubeAPIServer``) serves an InMemoryStore, and
the store under test is a :class:`~ownergc_backends.kube.KubeStore` built from
the facade's kubeconfig. Nothing mocks the kubernetes client.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

HERE = Path(__file__).parent
# The cascade scenarios and their helpers live beside the in-memory e2e tests.

if importlib.util.find_spec("kubernetes") is None:  # pragma: no cover - environment
    if os.environ.get("CI", "").lower() == "true":
        raise RuntimeError("tests/kube need the kube extra: pip install -e '.[test,kube]'")
    collect_ignore_glob = ["test_*.py"]
