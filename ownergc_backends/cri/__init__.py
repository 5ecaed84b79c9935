"""A real CRI v1 runtime (containerd, CRI-O) over gRPC: ``pip install ownergc[cri]``.

Only this package imports ``grpc``; ``import ownergc`` never does.
"""

from __future__ import annotations

from ownergc_backends.cri._runtime import DEFAULT_ENDPOINT, CRIRuntime, error_from_rpc

__all__ = ["DEFAULT_ENDPOINT", "CRIRuntime", "error_from_rpc"]
