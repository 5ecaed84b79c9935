"""tests/core: only a reporting fix.

When a hypothesis test fails, its pytest plugin imports libcst to suggest a patch, and
libcst imports ``mypy_extensions.TypedDict``, which warns; the project turns warnings
into errors, which would hide the falsifying example behind an INTERNALERROR.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator
from typing import Any

import pytest


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="mypy_extensions.TypedDict is deprecated", category=DeprecationWarning
        )
        yield
