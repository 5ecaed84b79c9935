"""The kube backend: :class:`KubeStore`, an ObjectStore over a real apiserver.

Needs the ``kube`` extra (``pip install 'ownergc[kube]'``). Kubeconfig files and
the in-cluster configuration are read without the ``kubernetes`` package;
this is the only ownergc module that may import it (``kubernetes.aio``, for a
kubeconfig user with an ``auth-provider`` or a Configuration passed in).
"""

from __future__ import annotations

from ownergc._kit.ratelimit import TokenBucket
from ownergc_backends.kube._config import in_cluster, kubeconfig_paths
from ownergc_backends.kube._errors import KubeConfigError
from ownergc_backends.kube._kubeconfig import ClientConfig
from ownergc_backends.kube._store import (
    DEFAULT_BURST,
    DEFAULT_QPS,
    LIST_ACCEPT,
    OBJECT_ACCEPT,
    KubeStore,
)

__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "LIST_ACCEPT",
    "OBJECT_ACCEPT",
    "ClientConfig",
    "KubeConfigError",
    "KubeStore",
    "TokenBucket",
    "in_cluster",
    "kubeconfig_paths",
]
