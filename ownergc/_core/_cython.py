"""What ``import cython`` provides to the core when Cython is not installed.

The optional compiled build (docs/performance.md, "The compiled core") reads
these decorators as Cython directives; run as plain Python they change
nothing, so the pure-Python modules stay the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

_T = TypeVar("_T")

#: Compiled, True (the compiler folds the tests on it); here False.
compiled = False
_F = TypeVar("_F", bound=Callable[..., Any])


def cclass(cls: _T) -> _T:
    """Compiled: an extension type (attributes declared in the ``.pxd`` beside the module)."""
    return cls


def no_gc(cls: _T) -> _T:
    """Compiled: instances are not tracked by the interpreter's cyclic garbage collector."""
    return cls


def cast(kind: type[_T], value: object) -> _T:
    """Compiled: a C-level cast, no check. Here: the value itself (it is a ``kind``)."""
    assert isinstance(value, kind)
    return value


def locals(**types: object) -> Callable[[_F], _F]:
    """Compiled: C types for the function's local variables."""

    def keep(function: _F) -> _F:
        return function

    return keep


def annotation_typing(on: bool) -> Callable[[_F], _F]:
    """Compiled: whether the function's annotations type its arguments (``str`` exactly)."""

    def keep(function: _F) -> _F:
        return function

    return keep


#: C integer types named in ``locals``, ``cast`` and annotations: plain ints here.
Py_ssize_t: TypeAlias = int
ulonglong: TypeAlias = int
longlong: TypeAlias = int
uchar: TypeAlias = int
