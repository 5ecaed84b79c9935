"""Find and load cluster configuration the way kubectl and client-go do.

Order: an explicit kubeconfig path (or list of paths), then ``KUBECONFIG``
(a ``os.pathsep``-separated list, merged), then ``~/.kube/config``, then the
in-cluster ServiceAccount. Every failure becomes a :class:`KubeConfigError`
that says how to point ownergc at a cluster, never a bare traceback.

The files and the in-cluster configuration are read by ``_kubeconfig``
(no ``kubernetes`` import). Only a user with an ``auth-provider`` goes through
the ``kubernetes`` package's loader (:func:`_with_kubernetes_client`), with
:func:`attach_refresh` keeping its credentials fresh.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio

from ownergc_backends.kube._errors import HOW_TO_CONNECT, KubeConfigError
from ownergc_backends.kube._kubeconfig import (
    SA_DIR,
    ClientConfig,
    Kubeconfig,
    NeedsKubernetesClient,
    client_config,
    in_cluster_config,
    kubeconfig_from_dict,
    read_kubeconfig,
)

__all__ = ["ClientConfig", "in_cluster", "kubeconfig_paths", "load_configuration"]

PathLike = str | os.PathLike[str]

_SA_DIR = SA_DIR


def kubeconfig_paths(path: PathLike | Sequence[PathLike] | None = None) -> list[str]:
    """Candidate kubeconfig files, in kubectl's precedence (existence not checked)."""
    if path is not None:
        if isinstance(path, (str, os.PathLike)):
            raw = [os.fspath(path)]
            # An explicit string may itself be a KUBECONFIG-style list.
            if isinstance(path, str) and os.pathsep in path:
                raw = path.split(os.pathsep)
        else:
            raw = [os.fspath(p) for p in path]
    else:
        env = os.environ.get("KUBECONFIG", "")
        raw = env.split(os.pathsep) if env else [str(Path("~/.kube/config"))]
    return [os.path.expanduser(p) for p in raw if p]


#: Refresh this long before an exec credential's expiry (client-go's margin is similar).
_EXPIRY_SKEW = timedelta(seconds=10)
#: How often a ``tokenFile`` is read again (client-go re-reads it every minute).
_TOKEN_FILE_PERIOD = 60.0


def attach_refresh(loader: Any, configuration: Any) -> None:
    """Keep a kubeconfig's credentials fresh for a long-running process.

    ``kubernetes.aio`` reads a kubeconfig user's credentials once; client-go
    runs an ``exec`` plugin again when its token expires (EKS, GKE and
    OIDC helpers hand out tokens of minutes) and re-reads a ``tokenFile``
    periodically. The client calls ``refresh_api_key_hook`` before every
    request, so this hook only compares a timestamp on the hot path.
    """
    user = getattr(loader, "_user", None)
    if not user:
        return  # (a client version without these loader internals keeps its own behaviour)
    lock = anyio.Lock()
    if "exec" in user and hasattr(loader, "load_from_exec_plugin"):

        async def refresh_exec(config: Any) -> None:
            if not _expired(getattr(loader, "exec_plugin_expiry", None)):
                return
            async with lock:
                if not _expired(getattr(loader, "exec_plugin_expiry", None)):
                    return  # another request refreshed it meanwhile
                await loader.load_from_exec_plugin()
                if getattr(loader, "token", None):
                    config.api_key["BearerToken"] = loader.token

        configuration.refresh_api_key_hook = refresh_exec
    elif "tokenFile" in user and hasattr(loader, "_load_user_token"):
        read_at = [time.monotonic()]

        def refresh_token_file(config: Any) -> None:
            if time.monotonic() - read_at[0] < _TOKEN_FILE_PERIOD:
                return
            read_at[0] = time.monotonic()
            if loader._load_user_token():
                config.api_key["BearerToken"] = loader.token

        configuration.refresh_api_key_hook = refresh_token_file


def _expired(expiry: object) -> bool:
    """Whether an exec credential's expiry (None: it never expires) has come."""
    if not isinstance(expiry, datetime):
        return False
    when: datetime = expiry if expiry.tzinfo else expiry.replace(tzinfo=timezone.utc)
    return when - _EXPIRY_SKEW <= datetime.now(timezone.utc)


def in_cluster() -> bool:
    """True inside a pod with a mounted ServiceAccount (client-go's test)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (_SA_DIR / "token").is_file()


def _kube_config() -> Any:
    """``kubernetes.aio.config`` (untyped: kept behind ``Any`` for mypy --strict)."""
    return importlib.import_module("kubernetes.aio.config")


async def load_configuration(
    *,
    path: PathLike | Sequence[PathLike] | None = None,
    context: str | None = None,
    config_dict: Mapping[str, Any] | None = None,
    allow_in_cluster: bool = True,
) -> Any:
    """The configuration of the chosen cluster: a :class:`ClientConfig` read without the
    ``kubernetes`` package, or, for a user with an ``auth-provider`` (legacy gcp,
    azure and oidc helpers), a ``kubernetes.aio.client.Configuration`` from that
    package's loader. ``KubeStore.from_configuration`` takes either."""
    try:
        if config_dict is not None:
            return await _native(kubeconfig_from_dict(config_dict), context)
        paths = kubeconfig_paths(path)
        explicit = path is not None or bool(os.environ.get("KUBECONFIG"))
        if explicit or any(os.path.isfile(p) for p in paths) or not allow_in_cluster:
            try:
                merged = read_kubeconfig(paths)
            except KubeConfigError as exc:
                raise KubeConfigError(f"{exc}. {HOW_TO_CONNECT}") from None
            return await _native(merged, context)
        if not in_cluster():
            raise KubeConfigError(
                f"no kubeconfig found (looked at {', '.join(paths)}) and not running inside "
                f"a cluster (KUBERNETES_SERVICE_HOST unset or no ServiceAccount token). "
                f"{HOW_TO_CONNECT}"
            )
        if context is not None:
            raise KubeConfigError(
                f"--context {context!r} needs a kubeconfig, but none was found. {HOW_TO_CONNECT}"
            )
        return in_cluster_config(_SA_DIR)
    except KubeConfigError:
        raise
    except NeedsKubernetesClient as legacy:
        return await _with_kubernetes_client(legacy.config, legacy.context)


async def _native(kubeconfig: Kubeconfig, context: str | None) -> ClientConfig:
    try:
        return await client_config(kubeconfig, context)
    except KubeConfigError as exc:
        msg = str(exc)
        if HOW_TO_CONNECT not in msg:
            # After an exec plugin's installHint (its own paragraph), a paragraph too.
            msg += ("\n\n" if "\n" in msg else ". ") + HOW_TO_CONNECT
        raise KubeConfigError(msg) from None


async def _with_kubernetes_client(config_dict: Mapping[str, Any], context: str | None) -> Any:
    """A ``kubernetes.aio.client.Configuration`` from the ``kubernetes`` package's loader
    (users with an ``auth-provider``), its credentials kept fresh by :func:`attach_refresh`."""
    try:
        from kubernetes.aio.client import Configuration
        from kubernetes.aio.config import ConfigException
    except ImportError as exc:  # pragma: no cover - the kube extra installs it
        raise KubeConfigError(
            f"this kubeconfig user has an auth-provider, which needs the kubernetes "
            f"package: {exc}. {HOW_TO_CONNECT}"
        ) from exc
    kconfig = _kube_config()
    configuration = Configuration()
    try:
        loader = await kconfig.load_kube_config_from_dict(
            config_dict=dict(config_dict), context=context, client_configuration=configuration
        )
        attach_refresh(loader, configuration)
        return configuration
    except ConfigException as exc:
        raise KubeConfigError(f"invalid cluster configuration: {exc}. {HOW_TO_CONNECT}") from exc
    except Exception as exc:
        # Unreadable files, malformed entries: the loader raises raw errors.
        raise KubeConfigError(
            f"cannot load the cluster configuration: {type(exc).__name__}: {exc}. {HOW_TO_CONNECT}"
        ) from exc
