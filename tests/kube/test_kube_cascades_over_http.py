"""The end-to-end cascade scenarios of tests/e2e/test_cascades.py, re-run through
KubeStore -> HTTP facade -> InMemoryStore.

Same scenario bodies, same expectations: every ``test_*`` of that module is
re-collected here, and while it runs its ``running_gc`` starts the facade on
the scenario's InMemoryStore and hands the GarbageCollector a KubeStore
instead of the store itself. Assertions still read the InMemoryStore.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import tests.e2e.test_cascades as _scenarios
from ownergc_backends.memory import InMemoryStore
from tests.kube.kube_helpers import gc_over_http, settle_over_http

pytestmark = pytest.mark.anyio

for _name in dir(_scenarios):
    if _name.startswith("test_"):
        globals()[_name] = getattr(_scenarios, _name)


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture(autouse=True)
def _over_http(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_scenarios, "running_gc", gc_over_http)
    monkeypatch.setattr(_scenarios, "settle", settle_over_http)
    yield
