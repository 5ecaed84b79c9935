"""Shared pytest configuration: the event loops async tests run on.

Every async test runs on asyncio; a test (or module) marked
``@pytest.mark.event_loops("asyncio", "trio")`` runs once on each — the
controller and the in-memory backend use anyio only, so they must work on
both. (``KubeStore`` is asyncio-only: it rides on aiohttp.)
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "anyio_backend" not in metafunc.fixturenames:
        return
    if any(
        "anyio_backend" in str(m.args[0]) for m in metafunc.definition.iter_markers("parametrize")
    ):
        return
    marker = metafunc.definition.get_closest_marker("event_loops")
    metafunc.parametrize("anyio_backend", marker.args if marker else ("asyncio",))
