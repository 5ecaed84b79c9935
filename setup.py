"""The compiled graph core (docs/performance.md, "The compiled core").

``pip install .`` (and ``-e .``) compiles the graph and the graph builder with
Cython when a C compiler is present; without one it installs the pure-Python
core and says so in one line (as PyYAML and msgpack do). The pure modules are
the reference and always ship beside the compiled ones, which Python imports
first. Environment:

* ``OWNERGC_PURE=1``: do not compile (the pure-Python core).
* ``OWNERGC_COMPILE=1``: compile or fail (CI, the Docker image): no silent fallback.

Everything else is declared in pyproject.toml (Cython is a build requirement).
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: The hot path of every watch event (the graph and its builder). ``graph.pxd``
#: and ``graph_builder.pxd`` declare their extension types for the compiler;
#: the rest compiles as plain Python.
COMPILED_MODULES = [
    "ownergc/_core/graph.py",
    "ownergc/_core/graph_builder.py",
    # A protobuf list's items (KubeStore asks for protobuf lists only when compiled).
    "ownergc_backends/kube/_pbscan.py",
]


def _flag(name: str) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise SystemExit(f"{name}={value!r}: use 1 or 0")


def _say(message: str) -> None:
    print(f"ownergc: {message}", file=sys.stderr, flush=True)


class OptionalCythonBuildExt(build_ext):
    """Cythonizes and compiles the graph core when it is built (not when setup.py
    is read), and falls back to the pure-Python core when that fails, unless
    ``OWNERGC_COMPILE=1`` asked for the compiled core."""

    def run(self) -> None:
        required = _flag("OWNERGC_COMPILE")
        try:
            from Cython.Build import cythonize
        except ImportError:
            if required:
                raise SystemExit(
                    "OWNERGC_COMPILE=1 needs Cython >= 3.1 at build time: pip installs it "
                    "for `pip install .`; with --no-build-isolation, "
                    "`pip install 'cython>=3.1'` first"
                ) from None
            _say("Cython is not installed; installing the pure-Python graph core")
            return
        try:
            for ext in self.extensions:  # the same setuptools objects, now built from C
                (translated,) = cythonize(
                    [ext], language_level=3, quiet=True, build_dir=self.build_temp
                )
                ext.sources = translated.sources
            super().run()
        except Exception as exc:  # no compiler, no Python headers, a compile error
            if required:
                raise
            self._drop_partial_build()
            reason = " ".join(str(exc).split())[:100] or type(exc).__name__
            _say(f"could not compile the graph core ({reason}); installing the pure-Python core")

    def _drop_partial_build(self) -> None:
        """Leave no half of the compiled core behind: both modules, or neither."""
        for ext in self.extensions:
            for path in (self.get_ext_fullpath(ext.name),):
                if os.path.exists(path):
                    os.remove(path)
        self.extensions = []

    def get_outputs(self) -> list[str]:
        return [path for path in super().get_outputs() if os.path.exists(path)]


def ext_modules() -> list[Extension]:
    if _flag("OWNERGC_PURE"):
        if _flag("OWNERGC_COMPILE"):
            raise SystemExit("OWNERGC_PURE=1 and OWNERGC_COMPILE=1 contradict each other")
        return []
    return [Extension(path[:-3].replace("/", "."), [path]) for path in COMPILED_MODULES]


setup(ext_modules=ext_modules(), cmdclass={"build_ext": OptionalCythonBuildExt})
