"""setuptools' build backend, asking for Cython only when the compiled build is requested.

``OWNERGC_COMPILE=1 pip install .`` compiles the graph core (setup.py); a plain
``pip install .`` needs no compiler and installs no Cython.
"""

from __future__ import annotations

import os
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the rest of the PEP 517 hooks)


def _compiler() -> list[str]:
    requested = os.environ.get("OWNERGC_COMPILE", "").strip().lower() in ("1", "true", "yes")
    return ["cython>=3.1"] if requested else []


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return [*_setuptools.get_requires_for_build_wheel(config_settings), *_compiler()]


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return [*_setuptools.get_requires_for_build_editable(config_settings), *_compiler()]
