"""The backends ownergc knows by name, imported only when asked for (fsspec's registry).

Optional extras (``kube``, ``cri``) stay optional: ``ownergc --help`` and the
in-memory default work without them, and asking for a missing one raises
:class:`~ownergc.errors.BackendUnavailable` with the install command instead of
an ImportError traceback.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ownergc.errors import BackendUnavailable

__all__ = ["KNOWN_BACKENDS", "BackendSpec", "load_backend", "load_class"]


@dataclass(frozen=True, slots=True)
class BackendSpec:
    """Where a backend lives and what to install when it is missing."""

    module: str
    extra: str | None
    what: str

    @property
    def hint(self) -> str:
        if self.extra is None:
            return "it ships with ownergc"
        return f"pip install 'ownergc[{self.extra}]'"


KNOWN_BACKENDS: dict[str, BackendSpec] = {
    "memory": BackendSpec("ownergc_backends.memory", None, "the in-memory store and runtime"),
    "kube": BackendSpec("ownergc_backends.kube", "kube", "a real apiserver"),
    "cri": BackendSpec("ownergc_backends.cri", "cri", "a CRI runtime over gRPC"),
}
_loaded: dict[str, ModuleType] = {}


def load_backend(name: str) -> ModuleType:
    """Import a backend package by its registry name (cached)."""
    try:
        return _loaded[name]
    except KeyError:
        pass
    try:
        spec = KNOWN_BACKENDS[name]
    except KeyError:
        known = ", ".join(sorted(KNOWN_BACKENDS))
        raise BackendUnavailable(f"no backend named {name!r} (known: {known})") from None
    try:
        module = importlib.import_module(spec.module)
    except ImportError as exc:
        raise BackendUnavailable(
            f"the {name} backend ({spec.what}) is not installed ({exc}): {spec.hint}"
        ) from exc
    _loaded[name] = module
    return module


def load_class(name: str, attribute: str) -> Any:
    """One public class of a backend, e.g. ``load_class("kube", "KubeStore")``."""
    return getattr(load_backend(name), attribute)
