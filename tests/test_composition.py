"""Compose, don't stack: no class in ownergc or ownergc_backends inherits from a class of
the project, except a Protocol, an ABC, an exception or a dataclass of plain data.

Three towers of inheritance (collector, store, facade) were taken apart into
parts that hold each other; this keeps a new floor from being added anywhere.
"""

from __future__ import annotations

import abc
import dataclasses
import importlib
import inspect
import pkgutil
from types import ModuleType

import ownergc
import ownergc_backends

PACKAGES = ("ownergc", "ownergc_backends")


def _modules() -> list[ModuleType]:
    modules: list[ModuleType] = []
    for package in (ownergc, ownergc_backends):
        modules.append(package)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith(".__main__"):  # importing it would run the CLI
                modules.append(importlib.import_module(info.name))
    return modules


def _ours(cls: type) -> bool:
    return cls.__module__.split(".")[0] in PACKAGES


def _allowed_base(base: type) -> bool:
    if issubclass(base, BaseException):
        return True
    if getattr(base, "_is_protocol", False):
        return True
    if isinstance(base, abc.ABCMeta) and inspect.isabstract(base):
        return True
    if base is abc.ABC or abc.ABC in base.__bases__:
        return True
    return dataclasses.is_dataclass(base) or issubclass(base, tuple)  # plain data


def test_no_project_class_stacks_on_another() -> None:
    stacked: list[str] = []
    seen: set[type] = set()
    for module in _modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls in seen or not _ours(cls) or cls.__module__ != module.__name__:
                continue
            seen.add(cls)
            for base in cls.__bases__:
                if _ours(base) and not _allowed_base(base):
                    stacked.append(f"{cls.__module__}.{cls.__qualname__}({base.__qualname__})")
    assert len(seen) > 100  # the walk found the project's classes
    assert stacked == []


def test_the_three_composed_objects_have_no_project_base() -> None:
    from ownergc.controller import GarbageCollector
    from ownergc_backends.memory import InMemoryStore
    from ownergc_backends.memory.http import KubeAPIServer

    for cls in (GarbageCollector, InMemoryStore, KubeAPIServer):
        assert [b for b in cls.__mro__[1:] if _ours(b)] == [], cls
