"""KubeStore's own HTTP path: credentials, their refresh, the user agent and proxies,
checked on what the REST facade received."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ownergc.errors import Unavailable
from ownergc_backends.kube import KubeStore
from ownergc_backends.kube._transport import env_proxy
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer
from tests.kube.kube_helpers import served

pytestmark = pytest.mark.anyio


def with_user(server: KubeAPIServer, user: dict[str, Any]) -> dict[str, Any]:
    config = server.kubeconfig()
    config["users"][0]["user"] = user
    return config


async def configmaps_listed(config: dict[str, Any], **options: Any) -> None:
    async with await KubeStore.from_kubeconfig_dict(config, qps=0, **options) as kube:
        configmaps = next(
            r for r in (await kube.discover()).resources if r.resource == "configmaps"
        )
        await kube.list(configmaps)
        await kube.list(configmaps)


def resource_requests(server: KubeAPIServer) -> list[Any]:
    """What the client said about itself on each list of configmaps."""
    return [
        said
        for entry, said in zip(server.requests, server.request_credentials, strict=True)
        if entry.path.endswith("/configmaps")
    ]


async def test_a_bearer_token_and_the_user_agent_reach_the_server() -> None:
    async with served(InMemoryStore()) as server:
        await configmaps_listed(with_user(server, {"token": "s3cret"}))
    sent = resource_requests(server)
    assert [r.authorization for r in sent] == ["Bearer s3cret"] * 2
    assert all(r.user_agent.startswith("ownergc/") for r in sent)


async def test_basic_auth_from_the_kubeconfig() -> None:
    async with served(InMemoryStore()) as server:
        await configmaps_listed(with_user(server, {"username": "ann", "password": "pw"}))
    assert {r.authorization for r in resource_requests(server)} == {"Basic YW5uOnB3"}


async def test_an_exec_plugin_token_is_refreshed_once_expired(tmp_path: Path) -> None:
    """The plugin hands out tokens that expire at once: each request runs it again."""
    counter = tmp_path / "count"
    counter.write_text("0")
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, pathlib, sys\n"
        f"p = pathlib.Path({str(counter)!r})\n"
        "n = int(p.read_text()) + 1\n"
        "p.write_text(str(n))\n"
        "json.dump({'apiVersion': 'client.authentication.k8s.io/v1beta1',\n"
        "  'kind': 'ExecCredential', 'status': {'token': f'tok-{n}',\n"
        "  'expirationTimestamp': '2000-01-01T00:00:00Z'}}, sys.stdout)\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(plugin)],
            "interactiveMode": "Never",
        }
    }
    async with served(InMemoryStore()) as server:
        await configmaps_listed(with_user(server, user))
    tokens = [r.authorization for r in resource_requests(server)]
    assert len(tokens) == 2 and len(set(tokens)) == 2, tokens
    assert all(t.startswith("Bearer tok-") for t in tokens)


def test_env_proxy_follows_the_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert env_proxy("https://api.example:6443") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    assert env_proxy("https://api.example:6443") == "http://proxy.corp:3128"
    assert env_proxy("http://api.example") is None  # only HTTPS_PROXY is set
    monkeypatch.setenv("NO_PROXY", "api.example")
    assert env_proxy("https://api.example:6443") is None


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_requests_go_through_the_environments_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A proxy that is down fails the request; NO_PROXY for the server bypasses it."""
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_closed_port()}")
    async with served(InMemoryStore()) as server:
        config = json.loads(json.dumps(server.kubeconfig()))
        with pytest.raises(Unavailable):
            await configmaps_listed(config, request_timeout=5)
        assert server.requests == []  # nothing reached the server
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        await configmaps_listed(config, request_timeout=5)
        assert len(resource_requests(server)) == 2


async def test_a_token_file_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Projected ServiceAccount tokens rotate on disk; the new one is used."""
    from ownergc_backends.kube import _auth

    monkeypatch.setattr(_auth, "TOKEN_FILE_PERIOD", 0.0)  # client-go: once a minute
    token = tmp_path / "token"
    token.write_text("first")
    async with served(InMemoryStore()) as server:
        config = with_user(server, {"tokenFile": str(token)})
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            configmaps = next(
                r for r in (await kube.discover()).resources if r.resource == "configmaps"
            )
            await kube.list(configmaps)
            token.write_text("second")
            await kube.list(configmaps)
    assert [r.authorization for r in resource_requests(server)] == [
        "Bearer first",
        "Bearer second",
    ]


async def kubernetes_configuration(config: dict[str, Any]) -> Any:
    """A ``kubernetes.aio`` Configuration loaded by that package's own loader."""
    from kubernetes.aio import config as kconfig
    from kubernetes.aio.client import Configuration

    configuration = Configuration()
    await kconfig.load_kube_config_from_dict(config_dict=config, client_configuration=configuration)
    return configuration


async def test_a_kubernetes_configuration_still_serves() -> None:
    """``KubeStore.from_configuration`` with the ``kubernetes`` package's Configuration
    (and its bearer token, through the client's own api_key)."""
    async with served(InMemoryStore()) as server:
        configuration = await kubernetes_configuration(with_user(server, {"token": "k8s"}))
        async with KubeStore.from_configuration(configuration, qps=0) as kube:
            configmaps = next(
                r for r in (await kube.discover()).resources if r.resource == "configmaps"
            )
            await kube.list(configmaps)
    assert [r.authorization for r in resource_requests(server)] == ["Bearer k8s"]


async def test_without_the_clients_connector_factory_watches_still_go_out() -> None:
    """Another client version may lack ``_create_connector``: an unlimited aiohttp pool
    on the client's ssl context serves the watches instead."""
    async with served(InMemoryStore()) as server:
        configuration = await kubernetes_configuration(server.kubeconfig())
        async with KubeStore.from_configuration(configuration, qps=0) as kube:
            kube._api.rest_client._create_connector = None
            configmaps = next(
                r for r in (await kube.discover()).resources if r.resource == "configmaps"
            )
            listed = await kube.list(configmaps)
            stream = kube.watch(configmaps, resource_version=listed.resource_version)
            await server.store.create_object(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "a", "namespace": "default"},
                }
            )
            with anyio.fail_after(10):
                event = await stream.__anext__()
            await stream.aclose()
            assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "a")
            connector = kube._transport.session.connector
            assert connector is not None and connector.limit == 0
