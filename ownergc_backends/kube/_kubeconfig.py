"""Kubeconfig files and the in-cluster configuration, read as kubectl reads them.

Without the ``kubernetes`` package: importing its asyncio client and loader
cost the CLI 0.2–0.4 s of CPU and about 21 MB at every start
(docs/performance.md). What is read:

* files: one explicit file, or a ``KUBECONFIG``-style list merged as kubectl
  merges it (files that do not exist are skipped; the first file to define a
  named cluster, user or context wins, and so does the first to set
  ``current-context``); relative paths in a file (certificate files, a token
  file, an exec command holding a ``/``) are relative to that file's directory;
* the context: ``--context`` or ``current-context``; its cluster and user;
* cluster: ``server``, ``certificate-authority`` / ``-data``,
  ``insecure-skip-tls-verify``, ``tls-server-name``, ``proxy-url``;
* user: ``token``, ``tokenFile`` (read again every minute), ``client-certificate``
  / ``-data`` with ``client-key`` / ``-data``, ``username`` / ``password``,
  ``exec`` (see :mod:`._auth`). A user with an ``auth-provider`` (the legacy
  gcp / azure / oidc helpers) is left to the ``kubernetes`` package's loader:
  :func:`select` says so with :class:`NeedsKubernetesClient`;
* in a pod: ``KUBERNETES_SERVICE_HOST`` / ``_PORT``, the ServiceAccount token
  (read again every minute: the kubelet rotates it) and its ``ca.crt``.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import ssl
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ownergc_backends.kube._auth import (
    Auth,
    ExecAuth,
    ExecPlugin,
    NoAuth,
    StaticAuth,
    TokenFileAuth,
    basic_authorization,
    load_client_certificate,
)
from ownergc_backends.kube._errors import KubeConfigError

__all__ = [
    "ClientConfig",
    "Kubeconfig",
    "NeedsKubernetesClient",
    "SelectedContext",
    "client_config",
    "in_cluster_config",
    "read_kubeconfig",
]

log = logging.getLogger("ownergc.kube")

#: Where the kubelet mounts a pod's ServiceAccount.
SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_EXEC_EXTENSION = "client.authentication.k8s.io/exec"


class ClientConfig:
    """Everything a :class:`~ownergc_backends.kube._transport.Transport` needs to reach
    one apiserver: its URL, the TLS context, a proxy, the credentials.

    ``KubeStore(config)`` and ``KubeStore.from_configuration(config)`` take it
    where they take a ``kubernetes`` ApiClient / Configuration.
    """

    def __init__(
        self,
        host: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        tls_server_name: str | None = None,
        proxy: str | None = None,
        auth: Auth | None = None,
        default_headers: Mapping[str, str] | None = None,
        context: str | None = None,
    ) -> None:
        self.host = host
        self.ssl_context = ssl_context
        self.tls_server_name = tls_server_name
        self.proxy = proxy
        self.proxy_headers: Mapping[str, str] | None = None
        self.auth: Auth = auth or NoAuth()
        self.default_headers: dict[str, str] = dict(default_headers or {})
        #: The kubeconfig context it came from (None in a pod or from a dict without one).
        self.context = context

    @property
    def user_agent(self) -> str | None:
        return self.default_headers.get("User-Agent")

    @user_agent.setter
    def user_agent(self, value: str) -> None:
        self.default_headers["User-Agent"] = value

    async def close(self) -> None:
        """Nothing to release (the transport owns the connections)."""

    def __repr__(self) -> str:
        return f"ClientConfig(host={self.host!r}, context={self.context!r})"


class NeedsKubernetesClient(Exception):
    """The selected user needs the ``kubernetes`` package's loader (``auth-provider``)."""

    def __init__(self, config: dict[str, Any], context: str) -> None:
        super().__init__(context)
        #: A kubeconfig of just the selected context, its paths made absolute.
        self.config = config
        self.context = context


# -- files -----------------------------------------------------------------------


def _load_yaml(text: str) -> Any:
    import importlib

    yaml: Any = importlib.import_module("yaml")  # untyped
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def _parse(text: str, where: str) -> Mapping[str, Any]:
    try:
        if text.lstrip().startswith("{"):
            import json

            try:
                doc = json.loads(text)
            except ValueError:
                doc = _load_yaml(text)
        else:
            doc = _load_yaml(text)
    except Exception as exc:  # yaml's errors share no base class we may name untyped
        raise KubeConfigError(
            f"cannot load the kubeconfig {where}: {type(exc).__name__}: {exc}"
        ) from exc
    if doc is None:
        return {}  # an empty file is an empty kubeconfig
    if not isinstance(doc, Mapping):
        raise KubeConfigError(f"cannot load the kubeconfig {where}: not a mapping")
    return doc


class _Entry:
    """A named cluster or user and the directory its relative paths start from."""

    __slots__ = ("base_dir", "body", "source")

    def __init__(self, body: Mapping[str, Any], base_dir: str | None, source: str) -> None:
        self.body = body
        self.base_dir = base_dir
        self.source = source


class Kubeconfig:
    """One or more kubeconfig documents merged (the first definition of a name wins)."""

    def __init__(self) -> None:
        self.clusters: dict[str, _Entry] = {}
        self.users: dict[str, _Entry] = {}
        self.contexts: dict[str, Mapping[str, Any]] = {}
        self.current_context: str | None = None
        self.sources: list[str] = []

    def add(self, doc: Mapping[str, Any], *, base_dir: str | None, source: str) -> None:
        self.sources.append(source)
        for key, inner, table in (
            ("clusters", "cluster", self.clusters),
            ("users", "user", self.users),
        ):
            for item in _named(doc, key, source):
                body = item.get(inner) or {}
                if not isinstance(body, Mapping):
                    raise KubeConfigError(
                        f"cannot load the kubeconfig {source}: {key} entry {item['name']!r} "
                        f"has no {inner} mapping"
                    )
                table.setdefault(item["name"], _Entry(body, base_dir, source))
        for item in _named(doc, "contexts", source):
            body = item.get("context") or {}
            if not isinstance(body, Mapping):
                raise KubeConfigError(
                    f"cannot load the kubeconfig {source}: context {item['name']!r} "
                    "has no context mapping"
                )
            self.contexts.setdefault(item["name"], body)
        current = doc.get("current-context")
        if self.current_context is None and isinstance(current, str) and current:
            self.current_context = current


def _named(doc: Mapping[str, Any], key: str, source: str) -> list[Mapping[str, Any]]:
    items = doc.get(key) or []
    if not isinstance(items, list):
        raise KubeConfigError(f"cannot load the kubeconfig {source}: {key} is not a list")
    out = []
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise KubeConfigError(f"cannot load the kubeconfig {source}: a {key} entry has no name")
        out.append(item)
    return out


def read_kubeconfig(paths: Sequence[str]) -> Kubeconfig:
    """The files of ``paths`` that exist, merged in order (none: KubeConfigError)."""
    merged = Kubeconfig()
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        except IsADirectoryError:
            raise KubeConfigError(f"cannot load the kubeconfig {path}: it is a directory") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise KubeConfigError(f"cannot load the kubeconfig {path}: {exc}") from exc
        base_dir = os.path.dirname(os.path.abspath(path))
        merged.add(_parse(text, path), base_dir=base_dir, source=path)
    if not merged.sources:
        raise KubeConfigError(f"no kubeconfig found (looked at {', '.join(paths)})")
    return merged


def kubeconfig_from_dict(config: Mapping[str, Any]) -> Kubeconfig:
    """An already-parsed kubeconfig (relative paths are relative to the working directory)."""
    if not isinstance(config, Mapping):
        raise KubeConfigError("a kubeconfig dict must be a mapping")
    merged = Kubeconfig()
    merged.add(config, base_dir=None, source="the kubeconfig dict")
    return merged


# -- the selected context ---------------------------------------------------------


class SelectedContext:
    """The context chosen, its cluster and its user."""

    def __init__(self, kubeconfig: Kubeconfig, context: str | None) -> None:
        name = context or kubeconfig.current_context
        if not name:
            raise KubeConfigError(
                "invalid cluster configuration: the kubeconfig sets no current-context and "
                "no --context was given"
            )
        body = kubeconfig.contexts.get(name)
        if body is None:
            known = ", ".join(sorted(kubeconfig.contexts)) or "none"
            raise KubeConfigError(
                f"invalid cluster configuration: context {name!r} not found in the kubeconfig "
                f"(contexts: {known})"
            )
        self.name = name
        cluster_name = body.get("cluster")
        if not cluster_name or cluster_name not in kubeconfig.clusters:
            raise KubeConfigError(
                f"invalid cluster configuration: context {name!r} names cluster "
                f"{cluster_name!r}, which the kubeconfig does not define"
            )
        self.cluster_name: str = cluster_name
        self.cluster = kubeconfig.clusters[cluster_name]
        user_name = body.get("user")
        if user_name and user_name not in kubeconfig.users:
            raise KubeConfigError(
                f"invalid cluster configuration: context {name!r} names user {user_name!r}, "
                "which the kubeconfig does not define"
            )
        self.user_name: str = user_name or ""
        self.user = kubeconfig.users[user_name] if user_name else _Entry({}, None, "")


def _path(entry: _Entry, value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise KubeConfigError(f"invalid cluster configuration: {what} is not a path")
    if entry.base_dir is not None and not os.path.isabs(value):
        return os.path.join(entry.base_dir, value)
    return value


def _file_or_data(entry: _Entry, key: str, what: str) -> bytes | None:
    """``key``-data (base64) or the file named by ``key``, as bytes; data wins."""
    data = entry.body.get(key + "-data")
    if data:
        try:
            return base64.b64decode("".join(str(data).split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KubeConfigError(
                f"invalid cluster configuration: {key}-data of {what} is not valid base64: {exc}"
            ) from exc
    name = entry.body.get(key)
    if not name:
        return None
    path = _path(entry, name, f"{key} of {what}")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise KubeConfigError(
            f"invalid cluster configuration: cannot read {key} {path} of {what}: "
            f"{exc.strerror or exc}"
        ) from exc


def _ssl_context(ca: bytes | None, insecure: bool, what: str) -> ssl.SSLContext:
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if ca is None:
        return ssl.create_default_context()
    try:
        text = ca.decode("ascii")
    except UnicodeDecodeError:
        text = None
    try:
        if text is not None and "-----BEGIN" in text:
            return ssl.create_default_context(cadata=text)
        return ssl.create_default_context(cadata=ca)  # DER
    except (ssl.SSLError, ValueError) as exc:
        raise KubeConfigError(
            f"invalid cluster configuration: the certificate authority of {what} is not a "
            f"certificate: {exc}"
        ) from exc


def _exec_cluster_info(selected: SelectedContext, ca: bytes | None) -> dict[str, Any]:
    """``spec.cluster`` of an ExecCredential (provideClusterInfo)."""
    body = selected.cluster.body
    info: dict[str, Any] = {"server": body.get("server")}
    for key in ("tls-server-name", "proxy-url"):
        if body.get(key):
            info[key] = body[key]
    if body.get("insecure-skip-tls-verify"):
        info["insecure-skip-tls-verify"] = True
    if ca:
        info["certificate-authority-data"] = base64.b64encode(ca).decode("ascii")
    if body.get("disable-compression"):
        info["disable-compression"] = True
    for ext in body.get("extensions") or []:
        if isinstance(ext, Mapping) and ext.get("name") == _EXEC_EXTENSION:
            info["config"] = ext.get("extension")
    return info


def _legacy(kubeconfig: Kubeconfig, selected: SelectedContext) -> NeedsKubernetesClient:
    """The selected context alone, as a dict the ``kubernetes`` loader reads."""

    def absolute(entry: _Entry, keys: Sequence[str]) -> dict[str, Any]:
        body = dict(entry.body)
        for key in keys:
            if body.get(key) and isinstance(body[key], str):
                body[key] = _path(entry, body[key], key)
        return body

    cluster = absolute(selected.cluster, ("certificate-authority",))
    user = absolute(selected.user, ("client-certificate", "client-key", "tokenFile"))
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": selected.cluster_name, "cluster": cluster}],
        "users": [{"name": selected.user_name or "user", "user": user}],
        "contexts": [
            {
                "name": selected.name,
                "context": {
                    **kubeconfig.contexts[selected.name],
                    "user": selected.user_name or "user",
                },
            }
        ],
        "current-context": selected.name,
    }
    return NeedsKubernetesClient(config, selected.name)


async def client_config(kubeconfig: Kubeconfig, context: str | None = None) -> ClientConfig:
    """The :class:`ClientConfig` of ``context`` (default: current-context).

    Runs the user's exec plugin, if any, once. Raises :class:`KubeConfigError`,
    or :class:`NeedsKubernetesClient` for an ``auth-provider`` user.
    """
    selected = SelectedContext(kubeconfig, context)
    cluster = selected.cluster.body
    user = selected.user.body
    if user.get("auth-provider"):
        raise _legacy(kubeconfig, selected)
    cluster_what = f"cluster {selected.cluster_name!r}"
    server = cluster.get("server")
    if not server or not isinstance(server, str):
        raise KubeConfigError(f"invalid cluster configuration: {cluster_what} has no server")
    for field in ("as", "as-uid", "as-groups", "as-user-extra"):
        if user.get(field):
            log.warning(
                "user %r: impersonation (%s) is not supported and is ignored",
                selected.user_name,
                field,
            )
    ca = _file_or_data(selected.cluster, "certificate-authority", cluster_what)
    insecure = bool(cluster.get("insecure-skip-tls-verify"))
    host = server.rstrip("/")
    if "://" not in host:
        # client-go's default scheme: https when TLS is configured, else http.
        tls = (
            ca is not None
            or insecure
            or any(user.get(k) for k in ("client-certificate", "client-certificate-data"))
        )
        host = ("https://" if tls else "http://") + host
    context_ssl = None
    if host.startswith("https://"):
        context_ssl = _ssl_context(ca, insecure, cluster_what)
    user_what = f"user {selected.user_name!r}"
    cert: bytes | None = _file_or_data(selected.user, "client-certificate", user_what)
    key: bytes | None = _file_or_data(selected.user, "client-key", user_what)
    auth: Auth | None = None
    exec_auth: ExecAuth | None = None
    if user.get("tokenFile"):
        auth = TokenFileAuth(_path(selected.user, user["tokenFile"], f"tokenFile of {user_what}"))
    elif user.get("token"):
        auth = StaticAuth("Bearer " + str(user["token"]))
    elif user.get("exec"):
        spec = user["exec"]
        if not isinstance(spec, Mapping):
            raise KubeConfigError(
                f"invalid cluster configuration: exec of {user_what} is not a mapping"
            )
        plugin = ExecPlugin(
            spec,
            user=selected.user_name,
            base_dir=selected.user.base_dir,
            cluster=_exec_cluster_info(selected, ca),
        )
        first = await plugin.run()
        exec_auth = ExecAuth(plugin, first)
        auth = exec_auth
        if first.client_certificate and first.client_key and not cert:
            cert = first.client_certificate.encode()
            key = first.client_key.encode()
    elif user.get("username") is not None or user.get("password") is not None:
        auth = StaticAuth(
            basic_authorization(str(user.get("username") or ""), str(user.get("password") or ""))
        )
    if bool(cert) != bool(key):
        raise KubeConfigError(
            f"invalid cluster configuration: {user_what} has a client certificate without "
            "its key, or a key without its certificate"
        )
    if cert and key:
        if context_ssl is None:
            log.warning("%s: a client certificate is not used over plain http", user_what)
        else:
            try:
                load_client_certificate(context_ssl, cert, key)
            except (ssl.SSLError, OSError) as exc:
                raise KubeConfigError(
                    f"invalid cluster configuration: the client certificate and key of "
                    f"{user_what} cannot be used: {exc}"
                ) from exc
    if exec_auth is not None:
        exec_auth.ssl_context = context_ssl
    proxy = cluster.get("proxy-url") or None
    return ClientConfig(
        host,
        ssl_context=context_ssl,
        tls_server_name=cluster.get("tls-server-name") or None,
        proxy=proxy,
        auth=auth,
        context=selected.name,
    )


# -- in a pod ----------------------------------------------------------------------


def in_cluster_config(sa_dir: Path | None = None) -> ClientConfig:
    """The apiserver a pod reaches through its ServiceAccount (client-go's rules)."""
    sa_dir = sa_dir or SA_DIR
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeConfigError(
            "not running inside a cluster: KUBERNETES_SERVICE_HOST and "
            "KUBERNETES_SERVICE_PORT must both be set"
        )
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    auth = TokenFileAuth(str(sa_dir / "token"), what="ServiceAccount token")
    ca_path = sa_dir / "ca.crt"
    try:
        context = ssl.create_default_context(cafile=str(ca_path))
    except (OSError, ssl.SSLError) as exc:
        # client-go logs this and goes on with the system's roots.
        log.error("cannot load the ServiceAccount CA %s (using the system's): %s", ca_path, exc)
        context = ssl.create_default_context()
    return ClientConfig(f"https://{host}:{port}", ssl_context=context, auth=auth)
