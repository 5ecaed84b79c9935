"""The optional compiled build of the graph core (docs/performance.md, "The compiled core").

``pip install .`` builds the pure-Python package, which is the reference. With
``OWNERGC_COMPILE=1`` in the environment the graph and the graph builder are also
compiled with Cython; the wheel keeps the pure modules beside the compiled ones,
which are imported first. Everything else is declared in pyproject.toml.
"""

from __future__ import annotations

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: The hot path of every watch event (the graph and its builder). ``graph.pxd``
#: declares ``Node`` for the compiler; the rest compiles as plain Python.
COMPILED_MODULES = ["ownergc/_core/graph.py", "ownergc/_core/graph_builder.py"]


def compile_requested() -> bool:
    value = os.environ.get("OWNERGC_COMPILE", "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise SystemExit(f"OWNERGC_COMPILE={value!r}: use 1 to compile the graph core, 0 not to")


class CythonBuildExt(build_ext):
    """Cythonizes the modules when they are built, not when setup.py is read: pip
    reads it first to learn the build requirements, Cython among them."""

    def run(self) -> None:
        try:
            from Cython.Build import cythonize
        except ImportError:
            raise SystemExit(
                "OWNERGC_COMPILE=1 needs Cython >= 3.1 at build time: pip installs it "
                "for `pip install .`; with --no-build-isolation, "
                "`pip install 'cython>=3.1'` first"
            ) from None
        for ext in self.extensions:  # the same setuptools objects, now built from C
            (translated,) = cythonize([ext], language_level=3, quiet=True)
            ext.sources = translated.sources
        super().run()


def ext_modules() -> list[Extension]:
    if not compile_requested():
        return []
    return [Extension(path[:-3].replace("/", "."), [path]) for path in COMPILED_MODULES]


setup(ext_modules=ext_modules(), cmdclass={"build_ext": CythonBuildExt})
