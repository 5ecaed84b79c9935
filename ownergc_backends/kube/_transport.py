"""The HTTP path of every KubeStore request, set up once.

A transport reaches one apiserver as a :class:`~._kubeconfig.ClientConfig`
describes it (URL, TLS context, ``tls-server-name``, proxy, credentials,
kept fresh by its ``auth``), or as a ``kubernetes.aio`` ApiClient does (its
Configuration, the ssl context of its REST client, the bearer token through
its ``refresh_api_key_hook``). Requests never go through that client's
generic call path (a sanitizing pass over the parameters, copies of the
default headers, a JSON re-encoding, and with aiohttp's ``trust_env=True`` a
hop to a worker thread to read ``~/.netrc`` on every request).

Short requests (everything but watches) go through the lean HTTP/1.1 client
of ``_http1`` on the TLS context; watches, which stream, go through one
aiohttp session, and so does everything when a proxy is configured
(``HTTPS_PROXY`` / ``NO_PROXY`` are read once here). aiohttp is imported when
that session is first needed, not before: a command that never watches
(``ownergc why``, ``lint``, ``graph``, ``preview``) never loads it.
docs/performance.md has the profile behind each step.
"""

from __future__ import annotations

import asyncio
import ssl
import sys
import urllib.request
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from ownergc_backends.kube._auth import NoAuth, StaticAuth
from ownergc_backends.kube._http1 import BodySink, HTTP1Pool, Response, StreamedAnswer
from ownergc_backends.kube._kubeconfig import ClientConfig

if TYPE_CHECKING:
    import aiohttp

__all__ = ["Transport", "network_errors"]


def network_errors() -> tuple[type[BaseException], ...]:
    """The exceptions of a request that got no answer (aiohttp's only once it is loaded)."""
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is None:
        return (OSError, asyncio.TimeoutError)
    return (aiohttp.ClientError, OSError, asyncio.TimeoutError)


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (as aiohttp's ``trust_env`` would)."""
    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


class Transport:
    """Requests to one apiserver over long-lived keep-alive connection pools.

    Neither pool has a connection limit: every watch holds one connection and
    the workers' writes must never queue behind them (the token bucket, not
    the pool, bounds the request rate; the workers bound the concurrency).
    """

    def __init__(self, client: ClientConfig | Any) -> None:
        """``client``: a :class:`ClientConfig`, or a ``kubernetes.aio`` ApiClient."""
        self._api = client
        #: A ``kubernetes`` client's REST client (its ``_create_connector`` makes the
        #: aiohttp pool's connector when it has one).
        self._rest: Any = None
        #: Credentials asked before each request (None: they never change, and
        #: ``_static_headers`` holds them, rendered once with the default headers).
        self._authorize: Callable[[], Awaitable[str | None]] | None
        self._static_headers: dict[str, str] = {}
        if isinstance(client, ClientConfig):
            host = client.host
            self._ssl_context: ssl.SSLContext | None = client.ssl_context
            self._auth: Any = client.auth
            self._authorize = client.auth.authorization
            if isinstance(client.auth, StaticAuth):
                self._static_headers["Authorization"] = client.auth.value
                self._authorize = None
            elif isinstance(client.auth, NoAuth):
                self._authorize = None
            proxy, proxy_headers, tls_server_name = (
                client.proxy,
                client.proxy_headers,
                client.tls_server_name,
            )
        else:
            config = client.configuration
            self._config = config
            host = config.host
            rest = client.rest_client
            context = getattr(rest, "ssl_context", None)
            self._ssl_context = context if isinstance(context, ssl.SSLContext) else None
            self._auth = None
            self._authorize = self._api_key
            self._rest = rest
            proxy, proxy_headers, tls_server_name = (
                config.proxy,
                config.proxy_headers,
                config.tls_server_name,
            )
        #: The client's default headers (a live dict: the user agent is set after this).
        self._default_headers: dict[str, str] = client.default_headers
        self.host = str(host)
        self.base_url = self.host.rstrip("/")
        self._proxy: str | None = proxy or env_proxy(self.base_url)
        self._proxy_headers: Mapping[str, str] | None = proxy_headers
        self._server_hostname: str | None = tls_server_name or None
        self._session: aiohttp.ClientSession | None = None
        #: Short requests go through the lean HTTP/1.1 client unless a proxy is set.
        self._lean = self._proxy is None
        self._pool: HTTP1Pool | None = None
        self._path_prefix = urlsplit(self.base_url).path

    @property
    def session(self) -> aiohttp.ClientSession:
        """The pool, created on first use (inside the running event loop)."""
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession(
                connector=self._connector(),
                trust_env=False,
                # Watch events (a whole object each) can exceed aiohttp's default buffer.
                read_bufsize=2**21,
                headers={**self._default_headers, **self._static_headers},
            )
        return self._session

    def _connector(self) -> aiohttp.TCPConnector:
        """A connector with the TLS context (CA, client certificate, verify)."""
        import aiohttp

        make = getattr(self._rest, "_create_connector", None)  # the client's documented override
        if make is not None:
            connector: aiohttp.TCPConnector = make()
            return connector
        return aiohttp.TCPConnector(
            limit=0, ssl=self._ssl_context if self._ssl_context is not None else True
        )

    async def _api_key(self) -> str | None:
        """A ``kubernetes`` client's bearer token, refreshed by its hook when it expires."""
        config = self._config
        if "BearerToken" not in config.api_key and "authorization" not in config.api_key:
            return None
        token: str | None = await config.get_api_key_with_prefix(
            "BearerToken", alias="authorization"
        )
        return token

    def unauthorized(self, sent: str | None) -> None:
        """A 401 answered a request that carried ``sent``: the credentials may be stale."""
        if self._auth is not None:
            self._auth.unauthorized(sent)

    def _lean_pool(self) -> HTTP1Pool | None:
        """The lean client's pool, or None where aiohttp must serve (a proxy, an
        unknown scheme, a client without an ssl context)."""
        if self._pool is None and self._lean:
            parts = urlsplit(self.base_url)
            ssl_context = None
            if parts.scheme == "https":
                ssl_context = self._ssl_context
                if ssl_context is None:
                    self._lean = False
                    return None
            elif parts.scheme != "http" or not parts.hostname:
                self._lean = False
                return None
            self._pool = HTTP1Pool(
                host=parts.hostname or "",
                port=parts.port or (443 if ssl_context is not None else 80),
                host_header=parts.netloc.rpartition("@")[2],
                ssl_context=ssl_context,
                server_hostname=self._server_hostname,
                default_headers={**self._default_headers, **self._static_headers},
            )
        return self._pool

    def _target(self, path: str, query: Sequence[tuple[str, str]]) -> str:
        return self._path_prefix + path + ("?" + urlencode(query) if query else "")

    async def call(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        headers: dict[str, str],
        data: bytes | None = None,
        timeout: float,
        sink: BodySink | None = None,
    ) -> Response:
        """Send one request and read its whole answer; with ``sink``, a 2xx answer's
        body goes to ``sink`` instead (as it arrives, or whole through aiohttp)."""
        if self._authorize is not None:
            token = await self._authorize()
            if token is not None:
                headers["Authorization"] = token
        pool = self._lean_pool()
        if pool is not None:
            return await pool.request(
                method, self._target(path, query), headers, data, timeout, sink
            )
        import aiohttp

        resp = await self._aiohttp_request(
            method, path, query, headers, data, aiohttp.ClientTimeout(total=timeout)
        )
        try:
            body = await resp.read()
        finally:
            resp.release()
        answer = _buffered(resp, body)
        if sink is not None and 200 <= answer.status < 300:
            with memoryview(answer.body) as view:
                sink(view)
            answer.body = b""
        return answer

    async def stream(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        headers: dict[str, str],
        timeout: tuple[float | None, float],
    ) -> aiohttp.ClientResponse | StreamedAnswer | Response:
        """Send one request whose answer is read as it comes (a watch); an error
        answer (>= 400) is read whole and returned as a :class:`Response`.
        ``timeout``: (the whole exchange's, or None; connecting's)."""
        if self._authorize is not None:
            token = await self._authorize()
            if token is not None:
                headers["Authorization"] = token
        total, connect = timeout
        pool = self._lean_pool()
        if pool is not None:
            return await pool.stream(method, self._target(path, query), headers, total, connect)
        import aiohttp

        resp = await self._aiohttp_request(
            method,
            path,
            query,
            headers,
            None,
            aiohttp.ClientTimeout(total=total, sock_connect=connect),
        )
        if resp.status < 400:
            return resp
        try:
            body = await resp.read()
        except network_errors():
            body = b""
        finally:
            resp.release()
        return _buffered(resp, body)

    async def _aiohttp_request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: dict[str, str],
        data: bytes | None,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        url = self.base_url + path
        if query:
            url += "?" + urlencode(query)
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
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        if self._session is not None:
            await self._session.close()
            self._session = None


def _buffered(resp: aiohttp.ClientResponse, body: bytes) -> Response:
    """An aiohttp answer read whole (aiohttp has already removed any content coding)."""
    return Response(resp.status, {k.lower(): v for k, v in resp.headers.items()}, body)
