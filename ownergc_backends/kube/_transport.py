"""The HTTP path of every KubeStore request: one aiohttp session, set up once.

The ``kubernetes`` package keeps what it is best at: the Configuration
(kubeconfig, in-cluster config, exec plugins and token files refreshed
through its ``refresh_api_key_hook``) and the TLS context its REST client
builds from it. Requests no longer go through its generic call path, which
costs on every request a sanitizing pass over the parameters, copies of the
default headers, a JSON re-encoding, and (aiohttp with ``trust_env=True``) a
hop to a worker thread to read ``~/.netrc``: a third of the collector's CPU
per deleted object in the profile (docs/performance.md). Proxy variables
(``HTTPS_PROXY``, ``NO_PROXY``) are still honoured, read once here.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp

__all__ = ["Transport"]


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (as aiohttp's ``trust_env`` would)."""
    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


class Transport:
    """Requests to one apiserver over one long-lived connection pool.

    The pool has no connection limit: every watch holds one connection and
    the workers' writes must never queue behind them (the token bucket, not
    the pool, bounds the request rate). Keep-alive reuses connections.
    """

    def __init__(self, api_client: Any) -> None:
        self._api = api_client
        config = api_client.configuration
        self._config = config
        self.base_url = str(config.host).rstrip("/")
        self._proxy: str | None = config.proxy or env_proxy(self.base_url)
        self._proxy_headers: Mapping[str, str] | None = config.proxy_headers
        self._server_hostname: str | None = config.tls_server_name or None
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        """The pool, created on first use (inside the running event loop)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=self._connector(),
                trust_env=False,
                # Watch events (a whole object each) can exceed aiohttp's default buffer.
                read_bufsize=2**21,
                headers=dict(self._api.default_headers),
            )
        return self._session

    def _connector(self) -> aiohttp.TCPConnector:
        """A connector with the client's TLS context (CA, client certificate, verify)."""
        rest = self._api.rest_client
        make = getattr(rest, "_create_connector", None)  # the client's documented override
        if make is not None:
            connector: aiohttp.TCPConnector = make()
            return connector
        return aiohttp.TCPConnector(limit=0, ssl=rest.ssl_context)

    async def _authorization(self) -> str | None:
        """The bearer token, refreshed by the client's hook when it expires."""
        config = self._config
        if "BearerToken" not in config.api_key and "authorization" not in config.api_key:
            return None
        token: str | None = await config.get_api_key_with_prefix(
            "BearerToken", alias="authorization"
        )
        return token

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        headers: dict[str, str],
        data: bytes | None = None,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """Send one request; the caller reads (or streams) and releases the answer."""
        url = self.base_url + path
        if query:
            url += "?" + urlencode(query)
        token = await self._authorization()
        if token is not None:
            headers["Authorization"] = token
        return await self.session.request(
            method,
            url,
            headers=headers,
            data=data,
            timeout=timeout,
            proxy=self._proxy,
            proxy_headers=self._proxy_headers,
            server_hostname=self._server_hostname,
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
