"""Kubeconfig files and the in-cluster configuration, read without the ``kubernetes``
package, checked against the REST facade over HTTP and HTTPS (a TLS terminator in
front of it, tests/data/tls): what each kubeconfig feature makes the client send."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from ownergc.errors import Unavailable
from ownergc_backends.kube import ClientConfig, KubeConfigError, KubeStore, _auth, _config
from ownergc_backends.kube._auth import ExecAuth, ExecPlugin
from ownergc_backends.kube._kubeconfig import in_cluster_config
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer
from tests.kube.kube_helpers import served, tls_in_front_of

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
TLS = REPO / "tests" / "data" / "tls"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(
    server: str,
    user: dict[str, Any],
    *,
    name: str = "c",
    cluster: dict[str, Any] | None = None,
    current: str | None = "c",
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    }
    if current is not None:
        config["current-context"] = current
    return config


@pytest.fixture
def no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


async def configmaps_listed(kube: KubeStore, times: int = 1) -> None:
    configmaps = next(r for r in (await kube.discover()).resources if r.resource == "configmaps")
    for _ in range(times):
        await kube.list(configmaps)


def sent(server: KubeAPIServer) -> list[str]:
    """The Authorization header of each list of configmaps the server received."""
    return [
        said.authorization
        for entry, said in zip(server.requests, server.request_credentials, strict=True)
        if entry.path.endswith("/configmaps")
    ]


# -- files, merging, contexts -------------------------------------------------------


async def test_a_merged_kubeconfig_list_takes_each_name_and_current_context_first(
    no_ambient_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KUBECONFIG=a:b as kubectl merges it: a's current-context, a's definition of a
    name both files define, b's names a does not define; relative paths from the
    directory of the file that holds them."""
    async with served(InMemoryStore()) as server:
        first, second = no_ambient_config / "first", no_ambient_config / "second"
        first.mkdir()
        second.mkdir()
        (first / "token").write_text("from-first\n")
        (second / "token").write_text("from-second\n")
        a = kubeconfig(server.url, {"tokenFile": "token"}, name="shared")
        a["current-context"] = "shared"
        b = kubeconfig("http://127.0.0.1:9", {"token": "unused"}, name="shared")
        b["current-context"] = "only-b"
        b["users"].append({"name": "b-user", "user": {"tokenFile": "token"}})
        b["contexts"].append({"name": "only-b", "context": {"cluster": "shared", "user": "b-user"}})
        (first / "config").write_text(yaml.safe_dump(a))
        (second / "config").write_text(yaml.safe_dump(b))
        monkeypatch.setenv("KUBECONFIG", f"{first / 'config'}{os.pathsep}{second / 'config'}")
        async with await KubeStore.from_config(qps=0) as kube:
            assert kube.host == server.url  # a's cluster "shared", not b's
            await configmaps_listed(kube)
        async with await KubeStore.from_config(context="only-b", qps=0) as kube:
            await configmaps_listed(kube)  # b's user, a's cluster, b's directory
    assert sent(server) == ["Bearer from-first", "Bearer from-second"]


async def test_an_explicit_path_list_and_missing_files(no_ambient_config: Path) -> None:
    good = no_ambient_config / "good.yaml"
    good.write_text(yaml.safe_dump(kubeconfig("http://127.0.0.1:1234", {})))
    missing = no_ambient_config / "missing.yaml"
    config = await _config.load_configuration(path=[missing, good])
    assert isinstance(config, ClientConfig) and config.host == "http://127.0.0.1:1234"
    with pytest.raises(KubeConfigError, match="no kubeconfig found") as info:
        await _config.load_configuration(path=missing)
    assert "--kubeconfig" in str(info.value)
    (no_ambient_config / "empty.yaml").write_text("")
    with pytest.raises(KubeConfigError, match="no current-context"):
        await _config.load_configuration(path=no_ambient_config / "empty.yaml")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.update({"current-context": "nope"}), "context 'nope' not found"),
        (lambda c: c["contexts"][0]["context"].update(user="ghost"), "names user 'ghost'"),
        (lambda c: c["contexts"][0]["context"].update(cluster="gone"), "names cluster 'gone'"),
        (lambda c: c.pop("current-context"), "no current-context"),
        (lambda c: c["clusters"][0]["cluster"].pop("server"), "has no server"),
        (
            lambda c: c["clusters"][0]["cluster"].update({"certificate-authority-data": "@@"}),
            "certificate-authority-data of cluster 'c' is not valid base64",
        ),
        (
            lambda c: c["clusters"][0]["cluster"].update({"certificate-authority": "/nonexistent"}),
            "cannot read certificate-authority /nonexistent",
        ),
        (
            lambda c: c["clusters"][0]["cluster"].update(
                {"certificate-authority-data": b64(b"not a certificate")}
            ),
            "is not a certificate",
        ),
        (
            lambda c: c["users"][0]["user"].update({"client-certificate-data": b64(b"x")}),
            "without its key",
        ),
        (lambda c: c["users"][0]["user"].update({"tokenFile": "/nonexistent"}), "tokenFile"),
    ],
)
async def test_configuration_errors_say_what_is_wrong(change: Any, message: str) -> None:
    config = kubeconfig("https://127.0.0.1:6443", {})
    change(config)
    with pytest.raises(KubeConfigError, match=message) as info:
        await KubeStore.from_kubeconfig_dict(config)
    assert "KUBECONFIG" in str(info.value)  # and how to point ownergc at a cluster


async def test_context_selection_and_proxy_url() -> None:
    config = kubeconfig("https://a.example:6443", {"token": "a"}, name="a")
    other = kubeconfig(
        "https://b.example:6443/prefix/",
        {"username": "u", "password": "p"},
        name="b",
        cluster={"proxy-url": "http://proxy.example:3128", "tls-server-name": "b.internal"},
    )
    for key in ("clusters", "users", "contexts"):
        config[key] += other[key]
    config["current-context"] = "a"
    chosen = await _config.load_configuration(config_dict=config, context="b")
    assert isinstance(chosen, ClientConfig)
    assert (chosen.host, chosen.proxy, chosen.tls_server_name, chosen.context) == (
        "https://b.example:6443/prefix",
        "http://proxy.example:3128",
        "b.internal",
        "b",
    )
    assert await chosen.auth.authorization() == "Basic dTpw"
    async with KubeStore.from_configuration(chosen) as kube:
        assert kube._transport._proxy == "http://proxy.example:3128"
        assert kube._transport._lean_pool() is None  # through the proxy: aiohttp


async def test_a_server_without_a_scheme_gets_client_gos_default() -> None:
    plain = await _config.load_configuration(config_dict=kubeconfig("10.0.0.1:8080", {}))
    assert isinstance(plain, ClientConfig) and plain.host == "http://10.0.0.1:8080"
    tls = await _config.load_configuration(
        config_dict=kubeconfig("10.0.0.1:6443", {}, cluster={"insecure-skip-tls-verify": True})
    )
    assert isinstance(tls, ClientConfig) and tls.host == "https://10.0.0.1:6443"
    assert tls.ssl_context is not None and tls.ssl_context.verify_mode == ssl.CERT_NONE


async def test_a_relative_token_file_of_a_file_is_relative_to_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_auth, "TOKEN_FILE_PERIOD", 0.0)  # client-go: once a minute
    (tmp_path / "sub").mkdir()
    token = tmp_path / "sub" / "token"
    token.write_text("one")
    async with served(InMemoryStore()) as server:
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(server.url, {"tokenFile": "sub/token"})))
        elsewhere = tmp_path / "sub"
        monkeypatch.chdir(elsewhere)
        async with await KubeStore.from_kubeconfig(path, qps=0) as kube:
            await configmaps_listed(kube)
            token.write_text("two")
            await configmaps_listed(kube)
            token.unlink()  # a failed read keeps the last token
            await configmaps_listed(kube)
    assert sent(server) == ["Bearer one", "Bearer two", "Bearer two"]


# -- TLS: certificate authority, client certificates -----------------------------------


async def test_client_certificate_files_and_data(tmp_path: Path) -> None:
    """A server that requires a client certificate: refused without one, served with
    the kubeconfig's (files relative to the kubeconfig, or inline data)."""
    for name in ("ca.crt", "client.crt", "client.key"):
        (tmp_path / name).write_bytes((TLS / name).read_bytes())
    async with (
        served(InMemoryStore()) as server,
        tls_in_front_of(server.port, client_ca=TLS / "client.crt") as port,
    ):
        url = f"https://127.0.0.1:{port}"
        files = kubeconfig(
            url,
            {"client-certificate": "client.crt", "client-key": "client.key"},
            cluster={"certificate-authority": "ca.crt"},
        )
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(files))
        async with await KubeStore.from_kubeconfig(path, qps=0) as kube:
            await configmaps_listed(kube)
        data = kubeconfig(
            url,
            {
                "client-certificate-data": b64((TLS / "client.crt").read_bytes()),
                "client-key-data": b64((TLS / "client.key").read_bytes()),
            },
            cluster={"certificate-authority-data": b64((TLS / "ca.crt").read_bytes())},
        )
        async with await KubeStore.from_kubeconfig_dict(data, qps=0) as kube:
            await configmaps_listed(kube)
        without = kubeconfig(url, {}, cluster={"certificate-authority": str(tmp_path / "ca.crt")})
        async with await KubeStore.from_kubeconfig_dict(without, qps=0, request_timeout=5) as kube:
            with pytest.raises(Unavailable):
                await configmaps_listed(kube)
    assert len(sent(server)) == 2


async def test_insecure_skip_tls_verify_accepts_any_server_certificate() -> None:
    async with served(InMemoryStore()) as server, tls_in_front_of(server.port) as port:
        config = kubeconfig(
            f"https://127.0.0.1:{port}", {"token": "t"}, cluster={"insecure-skip-tls-verify": True}
        )
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            await configmaps_listed(kube)
    assert sent(server) == ["Bearer t"]


# -- exec plugins -------------------------------------------------------------------


def write_plugin(
    tmp_path: Path,
    *,
    api_version: str = "client.authentication.k8s.io/v1",
    expiry: str | None = None,
    cert: bool = False,
    token: bool = True,
) -> Path:
    """A plugin that counts its runs, records its environment and hands out tok-<n>."""
    plugin = tmp_path / "plugin.py"
    status: dict[str, Any] = {}
    if expiry:
        status["expirationTimestamp"] = expiry
    if cert:
        status["clientCertificateData"] = (TLS / "client.crt").read_text()
        status["clientKeyData"] = (TLS / "client.key").read_text()
    plugin.write_text(
        textwrap.dedent(
            f"""\
            import json, os, pathlib, sys
            here = pathlib.Path({str(tmp_path)!r})
            count = here / "count"
            n = int(count.read_text()) + 1 if count.exists() else 1
            count.write_text(str(n))
            (here / f"run-{{n}}.json").write_text(json.dumps({{
                "info": json.loads(os.environ["KUBERNETES_EXEC_INFO"]),
                "env": os.environ.get("PLUGIN_ENV"),
                "args": sys.argv[1:],
                "stdin_tty": sys.stdin is not None and sys.stdin.isatty(),
            }}))
            status = {status!r}
            if {token!r}:
                status["token"] = f"tok-{{n}}"
            json.dump({{"apiVersion": {api_version!r}, "kind": "ExecCredential",
                       "status": status}}, sys.stdout)
            """
        )
    )
    return plugin


def exec_user(plugin: Path, **spec: Any) -> dict[str, Any]:
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(plugin), "--flag"],
            "env": [{"name": "PLUGIN_ENV", "value": "from-kubeconfig"}],
            "interactiveMode": "Never",
            **spec,
        }
    }


def runs(tmp_path: Path) -> list[dict[str, Any]]:
    n = int((tmp_path / "count").read_text())
    return [json.loads((tmp_path / f"run-{i}.json").read_text()) for i in range(1, n + 1)]


@pytest.mark.parametrize(
    "api_version",
    [
        "client.authentication.k8s.io/v1",
        "client.authentication.k8s.io/v1beta1",
        "client.authentication.k8s.io/v1alpha1",
    ],
)
async def test_an_exec_plugin_token_is_refreshed_when_it_expires(
    tmp_path: Path, api_version: str
) -> None:
    """Each token expires at once: every request runs the plugin again; the plugin
    gets its env, args and ExecCredential spec (cluster info where asked for)."""
    plugin = write_plugin(tmp_path, api_version=api_version, expiry="2000-01-01T00:00:00Z")
    async with served(InMemoryStore()) as server:
        config = kubeconfig(
            server.url,
            exec_user(plugin, apiVersion=api_version, provideClusterInfo=True),
            cluster={
                "extensions": [
                    {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "x"}}
                ]
            },
        )
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            await configmaps_listed(kube, times=2)
    tokens = sent(server)
    assert (
        len(tokens) == 2
        and len(set(tokens)) == 2
        and all(t.startswith("Bearer tok-") for t in tokens)
    )
    first = runs(tmp_path)[0]
    assert first["env"] == "from-kubeconfig" and first["args"] == ["--flag"]
    assert first["info"]["apiVersion"] == api_version
    assert first["info"]["kind"] == "ExecCredential"
    assert first["info"]["spec"]["interactive"] is False
    assert first["stdin_tty"] is False
    if api_version.endswith("v1alpha1"):
        assert "cluster" not in first["info"]["spec"]
    else:
        assert first["info"]["spec"]["cluster"] == {
            "server": server.url,
            "config": {"audience": "x"},
        }


async def test_an_exec_token_that_has_not_expired_is_kept(tmp_path: Path) -> None:
    plugin = write_plugin(tmp_path, expiry="2999-01-01T00:00:00.123456789Z")
    async with served(InMemoryStore()) as server:
        config = kubeconfig(server.url, exec_user(plugin))
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            await configmaps_listed(kube, times=3)
    assert sent(server) == ["Bearer tok-1"] * 3
    assert len(runs(tmp_path)) == 1


async def test_an_exec_plugin_runs_again_after_a_401(tmp_path: Path) -> None:
    plugin = ExecPlugin(exec_user(write_plugin(tmp_path))["exec"], user="u", base_dir=None)
    auth = ExecAuth(plugin, await plugin.run())
    assert await auth.authorization() == "Bearer tok-1"
    auth.unauthorized("Bearer some-older-token")  # a stale request's 401: no new run
    assert await auth.authorization() == "Bearer tok-1"
    auth.unauthorized("Bearer tok-1")
    assert await auth.authorization() == "Bearer tok-2"
    assert auth.refreshes == 1


async def test_an_exec_plugin_client_certificate(tmp_path: Path) -> None:
    plugin = write_plugin(tmp_path, cert=True, token=False)
    async with (
        served(InMemoryStore()) as server,
        tls_in_front_of(server.port, client_ca=TLS / "client.crt") as port,
    ):
        config = kubeconfig(
            f"https://127.0.0.1:{port}",
            exec_user(plugin),
            cluster={"certificate-authority-data": b64((TLS / "ca.crt").read_bytes())},
        )
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            await configmaps_listed(kube)
    assert sent(server) == [""]  # no bearer token: the certificate is the credential


async def test_a_relative_exec_command_is_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    write_plugin(tmp_path)
    script = tmp_path / "bin" / "plugin"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {tmp_path / "plugin.py"} "$@"\n')
    script.chmod(0o755)
    async with served(InMemoryStore()) as server:
        path = tmp_path / "kubeconfig"
        user = exec_user(tmp_path / "unused", command="./bin/plugin", args=[])
        path.write_text(yaml.safe_dump(kubeconfig(server.url, user)))
        async with await KubeStore.from_kubeconfig(path, qps=0) as kube:
            await configmaps_listed(kube)
    assert sent(server) == ["Bearer tok-1"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"command": "ownergc-no-such-plugin", "installHint": "brew install the-plugin"},
            r"executable 'ownergc-no-such-plugin' not found\n\nbrew install the-plugin",
        ),
        ({"interactiveMode": None}, "interactiveMode must be set"),
        ({"interactiveMode": "Always"}, "standard input is not a terminal"),
        ({"interactiveMode": "Sometimes"}, "interactiveMode 'Sometimes'"),
        ({"apiVersion": "client.authentication.k8s.io/v2"}, "apiVersion"),
        ({"args": ["-c", "import sys; sys.exit(3)"]}, "exit code 3"),
        ({"args": ["-c", "print('hello')"]}, "no ExecCredential"),
        (
            {
                "args": [
                    "-c",
                    "import json; print(json.dumps({'apiVersion': "
                    "'client.authentication.k8s.io/v1beta1', 'kind': 'ExecCredential', "
                    "'status': {'token': 't'}}))",
                ]
            },
            "but it answered client.authentication.k8s.io/v1beta1",
        ),
        (
            {
                "args": [
                    "-c",
                    "import json; print(json.dumps({'apiVersion': "
                    "'client.authentication.k8s.io/v1', 'kind': 'ExecCredential', "
                    "'status': {}}))",
                ]
            },
            "neither a token nor a client certificate",
        ),
    ],
)
async def test_exec_plugin_errors(spec: dict[str, Any], message: str, tmp_path: Path) -> None:
    user = exec_user(tmp_path / "unused", **{"args": [], **spec})
    user["exec"] = {k: v for k, v in user["exec"].items() if v is not None}
    if spec.get("interactiveMode") == "Always":
        stdin = sys.stdin
        sys.stdin = open(os.devnull)  # noqa: SIM115 - closed below
    try:
        with pytest.raises(KubeConfigError, match=message):
            await KubeStore.from_kubeconfig_dict(kubeconfig("http://127.0.0.1:9", user))
    finally:
        if spec.get("interactiveMode") == "Always":
            sys.stdin.close()
            sys.stdin = stdin


# -- in a pod ---------------------------------------------------------------------


async def test_in_cluster_service_account_token_and_ca(
    no_ambient_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KUBERNETES_SERVICE_HOST/PORT, the mounted token (read again: it rotates) and
    ca.crt; used when no kubeconfig exists."""
    sa = no_ambient_config / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text("sa-token-1")
    (sa / "ca.crt").write_bytes((TLS / "ca.crt").read_bytes())
    monkeypatch.setattr(_config, "_SA_DIR", sa)
    monkeypatch.setattr(_auth, "TOKEN_FILE_PERIOD", 0.0)
    async with served(InMemoryStore()) as server, tls_in_front_of(server.port) as port:
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(port))
        async with await KubeStore.from_config(qps=0) as kube:
            assert kube.host == f"https://127.0.0.1:{port}"
            await configmaps_listed(kube)
            (sa / "token").write_text("sa-token-2")
            await configmaps_listed(kube)
    assert sent(server) == ["Bearer sa-token-1", "Bearer sa-token-2"]


def test_in_cluster_ipv6_host_and_a_missing_ca(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("t")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    config = in_cluster_config(tmp_path)  # no ca.crt: the system's roots, as client-go
    assert config.host == "https://[fd00::1]:443"
    assert config.ssl_context is not None
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "")
    with pytest.raises(KubeConfigError, match="not running inside a cluster"):
        in_cluster_config(tmp_path)


# -- legacy auth-provider users -----------------------------------------------------------


async def test_an_auth_provider_user_goes_through_the_kubernetes_package() -> None:
    """oidc with a current id-token: the ``kubernetes`` loader sends it."""
    claims = b64(json.dumps({"exp": 4102444800}).encode()).rstrip("=")
    id_token = f"eyJhbGciOiJub25lIn0.{claims}.sig"
    user = {
        "auth-provider": {
            "name": "oidc",
            "config": {
                "client-id": "c",
                "id-token": id_token,
                "idp-issuer-url": "https://issuer.invalid",
            },
        }
    }
    async with served(InMemoryStore()) as server:
        configuration = await _config.load_configuration(config_dict=kubeconfig(server.url, user))
        assert not isinstance(configuration, ClientConfig)
        async with KubeStore.from_configuration(configuration, qps=0) as kube:
            await configmaps_listed(kube)
    assert sent(server) == [f"Bearer {id_token}"]


# -- what start-up imports ------------------------------------------------------------------


def test_the_cli_and_a_store_from_a_kubeconfig_import_neither_kubernetes_nor_aiohttp(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig("https://127.0.0.1:6443", {"token": "t"})))
    code = textwrap.dedent(
        f"""\
        import contextlib, io, runpy, sys
        sys.argv = ["ownergc", "controller", "--help"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            runpy.run_module("ownergc", run_name="__main__")
        assert "kubernetes" not in sys.modules and "aiohttp" not in sys.modules
        import anyio
        from ownergc_backends.kube import KubeStore

        async def main():
            async with await KubeStore.from_kubeconfig({str(path)!r}):
                pass

        anyio.run(main)
        bad = [m for m in ("kubernetes", "aiohttp") if m in sys.modules]
        assert not bad, bad
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, env=env, timeout=120)
