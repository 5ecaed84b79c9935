"""The contract tests reuse the node-GC suite's private containerd."""

from tests.nodegc.conftest import containerd

__all__ = ["containerd"]
