"""KubeStore: an :class:`~ownergc.protocols.ObjectStore` over a real apiserver.

Built on ``kubernetes.aio`` (the official client's asyncio package, on
aiohttp) rather than the sync client: the controller is anyio, keeps one
long-lived watch per resource plus ``workers`` concurrent writers, and must
be cancellable. The sync client would pin one worker thread per open watch
(anyio's default thread limiter is 40, a cluster serves more resources than
that) and a blocked socket read in a thread cannot be cancelled. The asyncio
client needs anyio's asyncio backend, which the controller defaults to.

The client provides the configuration, TLS and auth-token refresh; requests
go out through ``_transport`` (a lean HTTP/1.1 client for short requests,
aiohttp for watches and proxies), never through the generated per-type
methods or models: requests carry metadata-only ``Accept`` headers, bodies
are encoded and answers decoded with orjson, and answers stay plain JSON
dicts.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import math
import os
from collections import Counter
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
    Sequence,
)
from typing import Any, Final
from urllib.parse import quote

import aiohttp
import anyio
import orjson  # the kube extra's JSON decoder: the watch/list hot path decodes every body
from anyio.abc import AsyncResource

from ownergc._kit.ratelimit import TokenBucket
from ownergc.errors import APIError, BadRequest, ResourceExpired
from ownergc.protocols import (
    APIResource,
    DiscoveryResult,
    JSONDict,
    ObjectList,
    PatchType,
    Preconditions,
    PropagationPolicy,
    WatchEvent,
)
from ownergc_backends.kube._config import load_configuration
from ownergc_backends.kube._discovery import (
    AGGREGATED_ACCEPT,
    GroupVersion,
    group_versions_from_api_versions,
    group_versions_from_group_list,
    is_aggregated,
    parse_aggregated,
    parse_resource_list,
)
from ownergc_backends.kube._errors import (
    error_from_exception,
    error_from_response,
    error_from_status_object,
)
from ownergc_backends.kube._http1 import Response
from ownergc_backends.kube._transport import Transport


def _loads(data: bytes) -> Any:
    return orjson.loads(data)


__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "LIST_ACCEPT",
    "OBJECT_ACCEPT",
    "KubeStore",
]

log = logging.getLogger("ownergc.kube")

#: kube-controller-manager runs with ``--kube-api-qps=20 --kube-api-burst=30`` and
#: doubles QPS for its garbage collector's client (each deletion cost it two
#: requests); the GC's budget is therefore 40 requests/s with a burst of 30.
DEFAULT_QPS: Final = 40.0
DEFAULT_BURST: Final = 30

#: Metadata-only reads, with a plain JSON fallback for servers that cannot convert.
LIST_ACCEPT: Final = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)
OBJECT_ACCEPT: Final = (
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
)
JSON: Final = "application/json"

_PARTIAL_API_VERSION: Final = "meta.k8s.io/v1"
_PARTIAL_KIND: Final = "PartialObjectMetadata"
_WATCH_TYPES: Final = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})
_APF_HEADERS: Final = ("X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID")
#: Verbs counted by :attr:`KubeStore.request_counts`.
VERBS: Final = ("discovery", "list", "watch", "get", "create", "patch", "delete")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ownergc")
    except Exception:  # pragma: no cover - not installed
        return "dev"


class KubeStore(AsyncResource):
    """An ObjectStore over a Kubernetes apiserver, via ``kubernetes.aio``.

    Create it with :meth:`from_kubeconfig`, :meth:`from_config` (kubeconfig,
    then in-cluster), :meth:`from_kubeconfig_dict` or :meth:`from_configuration`
    and close it with :meth:`aclose` (or ``async with``).

    ``qps``/``burst`` configure the client-side token bucket every request
    passes (``qps <= 0`` disables it). A 429 (API Priority and Fairness, max
    in-flight) or a 5xx carrying ``Retry-After`` is retried after that delay,
    at most ``max_retries`` times, each retry taking a new token.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        request_timeout: float = 60.0,
        max_retries: int = 10,
        max_retry_after: float = 30.0,
        list_page_size: int = 500,
        aggregated_discovery: bool = True,
        discovery_concurrency: int = 8,
        strip_managed_fields: bool = True,
        rate_limiter: TokenBucket | None = None,
        owns_client: bool = True,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self._api = api_client
        self._owns_client = owns_client
        #: How Retry-After delays are waited out (injectable so tests need no wall clock).
        self._sleep = sleep or anyio.sleep
        self.rate_limiter = rate_limiter or TokenBucket(qps, burst)
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        self.max_retry_after = max_retry_after
        self.list_page_size = list_page_size
        self.aggregated_discovery = aggregated_discovery
        self.discovery_concurrency = max(1, discovery_concurrency)
        self.strip_managed_fields = strip_managed_fields
        self._counts: Counter[str] = Counter()
        self._retries = 0
        self._closed = False
        self.host: str = str(getattr(api_client.configuration, "host", ""))
        api_client.user_agent = f"ownergc/{_version()} (kube backend; kubernetes.aio)"
        self._transport = Transport(api_client)

    # -- construction ------------------------------------------------------

    @classmethod
    def from_configuration(cls, configuration: Any, **options: Any) -> KubeStore:
        """From a ``kubernetes.aio.client.Configuration`` (the store owns the client)."""
        from kubernetes.aio.client import ApiClient

        # One HTTP/1.1 connection per open watch (one per resource) plus the
        # workers' requests: the client's default pool of 100 could deadlock
        # writers behind watches on a cluster with many resources. The token
        # bucket, not the pool, bounds the request rate.
        configuration.connection_pool_maxsize = 0
        return cls(ApiClient(configuration), **options)

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        context: str | None = None,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        **options: Any,
    ) -> KubeStore:
        """From kubeconfig file(s): ``path`` (a path, list, or ``KUBECONFIG``-style
        string), else ``KUBECONFIG``, else ``~/.kube/config``; ``context`` defaults
        to the current context. Raises :class:`KubeConfigError`."""
        configuration = await load_configuration(path=path, context=context, allow_in_cluster=False)
        return cls.from_configuration(configuration, qps=qps, burst=burst, **options)

    @classmethod
    async def from_kubeconfig_dict(
        cls,
        config: Mapping[str, Any],
        context: str | None = None,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        **options: Any,
    ) -> KubeStore:
        """From a kubeconfig already parsed into a dict (tests, generated configs)."""
        configuration = await load_configuration(config_dict=config, context=context)
        return cls.from_configuration(configuration, qps=qps, burst=burst, **options)

    @classmethod
    async def from_config(
        cls,
        kubeconfig: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        context: str | None = None,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        **options: Any,
    ) -> KubeStore:
        """kubectl's resolution: ``kubeconfig``, ``KUBECONFIG``, ``~/.kube/config``,
        then the in-cluster ServiceAccount. Raises :class:`KubeConfigError` saying
        how to point ownergc at a cluster when none applies."""
        configuration = await load_configuration(path=kubeconfig, context=context)
        return cls.from_configuration(configuration, qps=qps, burst=burst, **options)

    async def aclose(self) -> None:
        """Close the HTTP connection pool (open watches end with it)."""
        if self._closed:
            return
        self._closed = True
        await self._transport.close()
        if self._owns_client:
            await self._api.close()

    # -- counters ----------------------------------------------------------

    @property
    def request_counts(self) -> dict[str, int]:
        """HTTP requests sent, per verb (retries included), for benchmarks."""
        return {verb: self._counts.get(verb, 0) for verb in VERBS}

    @property
    def requests_total(self) -> int:
        return sum(self._counts.values())

    @property
    def retries(self) -> int:
        """Requests repeated after a 429 / Retry-After answer."""
        return self._retries

    def reset_counts(self) -> None:
        self._counts.clear()
        self._retries = 0

    # -- HTTP --------------------------------------------------------------

    async def _send(
        self,
        verb: str,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        accept: str = JSON,
        content_type: str | None = None,
        body: Any = None,
        stream: aiohttp.ClientTimeout | None = None,
    ) -> Response | aiohttp.ClientResponse:
        """Send one request (rate limited, retried on Retry-After); return its 2xx answer:
        read whole, or with ``stream`` (the watch's timeouts) as an open aiohttp response."""
        if self._closed:
            raise RuntimeError("KubeStore is closed")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "KubeStore needs anyio's asyncio backend (kubernetes.aio runs on aiohttp)"
            ) from None
        data = None if body is None else orjson.dumps(body)
        attempt = 0
        while True:
            await self.rate_limiter.acquire()
            self._counts[verb] += 1
            headers = {"Accept": accept}
            if data is not None:
                headers["Content-Type"] = content_type or JSON
            try:
                if stream is None:
                    answer: Response | aiohttp.ClientResponse = await self._transport.call(
                        method,
                        path,
                        query=query,
                        headers=headers,
                        data=data,
                        timeout=self.request_timeout,
                    )
                else:
                    answer = await self._transport.stream(
                        method, path, query=query, headers=headers, timeout=stream
                    )
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                raise error_from_exception(exc, host=self.host, what=f"{method} {path}") from exc
            except ValueError as exc:  # a request that cannot be written (control characters)
                raise BadRequest(f"{method} {path}: {exc}", reason="BadRequest") from exc
            if log.isEnabledFor(logging.DEBUG):
                self._log_apf(answer, f"{method} {path}")
            if answer.status < 400:
                return answer
            assert isinstance(answer, Response)  # error answers are always read whole
            what = f"{method} {path}"
            err = error_from_response(answer.status, answer.body, answer.headers, what=what)
            retry = answer.status == 429 or (answer.status >= 500 and err.retry_after is not None)
            if not retry or attempt >= self.max_retries:
                raise err
            attempt += 1
            self._retries += 1
            delay = min(
                err.retry_after if err.retry_after is not None else 1.0, self.max_retry_after
            )
            log.debug(
                "%s: %d %s; retrying in %.2fs (attempt %d/%d)",
                what,
                answer.status,
                err.reason,
                delay,
                attempt,
                self.max_retries,
            )
            await self._sleep(delay)

    @staticmethod
    def _log_apf(answer: Response | aiohttp.ClientResponse, what: str) -> None:
        apf = {h: answer.headers[h] for h in _APF_HEADERS if h in answer.headers}
        if apf:
            log.debug("%s: %d, API priority and fairness %s", what, answer.status, apf)

    async def _json(
        self,
        verb: str,
        method: str,
        path: str,
        **kw: Any,
    ) -> JSONDict:
        answer = await self._send(verb, method, path, **kw)
        assert isinstance(answer, Response)
        data = answer.body
        try:
            decoded = _loads(data) if data else {}
        except ValueError as exc:
            raise APIError(
                f"{method} {path}: undecodable JSON answer: {exc}", reason="InternalError"
            ) from exc
        if not isinstance(decoded, dict):
            raise APIError(f"{method} {path}: expected a JSON object", reason="InternalError")
        return decoded

    # -- paths and shapes --------------------------------------------------

    @staticmethod
    def _path(resource: APIResource, namespace: str | None, name: str | None = None) -> str:
        if resource.group:
            path = f"/apis/{resource.group}/{resource.version}"
        else:
            path = f"/api/{resource.version}"
        if resource.namespaced and namespace:
            path += f"/namespaces/{quote(namespace, safe='')}"
        path += f"/{resource.resource}"
        if name is not None:
            if not name:
                raise BadRequest("resource name may not be empty", reason="BadRequest")
            path += f"/{quote(name, safe='')}"
        return path

    @staticmethod
    def _require_namespace(resource: APIResource, namespace: str | None) -> None:
        if resource.namespaced and not namespace:
            raise BadRequest(
                f"{resource}: a namespace is required for a namespaced resource",
                reason="BadRequest",
            )

    def _partial(self, obj: Any) -> JSONDict:
        """The PartialObjectMetadata shape, whatever the server sent (it may fall back)."""
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(meta, dict):
            meta = {}
        if self.strip_managed_fields:
            meta.pop("managedFields", None)
        return {"apiVersion": _PARTIAL_API_VERSION, "kind": _PARTIAL_KIND, "metadata": meta}

    @staticmethod
    def _full(obj: Any, resource: APIResource) -> JSONDict:
        if not isinstance(obj, dict):
            return {}
        obj.setdefault("apiVersion", resource.api_version)
        obj.setdefault("kind", resource.kind)
        return obj

    # -- ObjectStore: discovery ----------------------------------------------

    async def discover(self) -> DiscoveryResult:
        """Every served resource of every group version; failures per group version.

        Tries aggregated discovery (two requests) and falls back to the legacy
        documents (``/api``, ``/apis``, one request per group version, fetched
        concurrently). A failing group version lands in ``failed``; a failing
        root document fails the whole call (the controller retries).
        """
        accept = AGGREGATED_ACCEPT if self.aggregated_discovery else JSON
        core = await self._json("discovery", "GET", "/api", accept=accept)
        groups = await self._json("discovery", "GET", "/apis", accept=accept)
        if is_aggregated(core) and is_aggregated(groups):
            resources, failed = parse_aggregated((core, groups))
            return DiscoveryResult(resources=tuple(resources), failed=failed)
        if is_aggregated(core) or is_aggregated(groups):
            # Mixed answers (a proxy in between?): redo both the legacy way.
            core = await self._json("discovery", "GET", "/api")
            groups = await self._json("discovery", "GET", "/apis")
        gvs = group_versions_from_api_versions(core) + group_versions_from_group_list(groups)
        found: dict[str, builtins.list[APIResource]] = {}
        failed_gv: dict[str, str] = {}
        limiter = anyio.CapacityLimiter(self.discovery_concurrency)

        async def fetch(gv: GroupVersion) -> None:
            async with limiter:
                try:
                    body = await self._json("discovery", "GET", gv.path)
                except APIError as exc:
                    failed_gv[gv.name] = f"{exc.code} {exc.reason}: {exc.message}"
                    return
            found[gv.name] = parse_resource_list(body, gv)

        async with anyio.create_task_group() as tg:
            for gv in gvs:
                tg.start_soon(fetch, gv)
        ordered = [r for gv in gvs for r in found.get(gv.name, ())]
        return DiscoveryResult(resources=tuple(ordered), failed=failed_gv)

    # -- ObjectStore: reads ------------------------------------------------

    async def list(
        self,
        resource: APIResource,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
    ) -> ObjectList:
        """Every object, paginated by ``list_page_size`` (one consistent snapshot)."""
        path = self._path(resource, namespace)
        accept = LIST_ACCEPT if metadata_only else JSON
        items: builtins.list[JSONDict] = []
        resource_version: str | None = None
        cont: str | None = None
        while True:
            query: builtins.list[tuple[str, str]] = []
            if self.list_page_size > 0:
                query.append(("limit", str(self.list_page_size)))
            if cont:
                query.append(("continue", cont))
            body = await self._json("list", "GET", path, query=query, accept=accept)
            meta = body.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            if resource_version is None:
                rv = meta.get("resourceVersion")
                resource_version = rv if isinstance(rv, str) else ""
            raw = body.get("items") or []
            if metadata_only:
                items.extend(self._partial(o) for o in raw)
            else:
                items.extend(self._full(o, resource) for o in raw)
            next_cont = meta.get("continue")
            if not isinstance(next_cont, str) or not next_cont:
                break
            cont = next_cont
        return ObjectList(items=items, resource_version=resource_version or "")

    async def get(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        metadata_only: bool = True,
    ) -> JSONDict:
        self._require_namespace(resource, namespace)
        path = self._path(resource, namespace, name)
        body = await self._json("get", "GET", path, accept=OBJECT_ACCEPT if metadata_only else JSON)
        return self._partial(body) if metadata_only else self._full(body, resource)

    def watch(
        self,
        resource: APIResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        metadata_only: bool = True,
        timeout_seconds: float | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """A watch stream from ``resource_version`` (bookmarks on), as an async generator.

        The request is sent on first iteration. The stream ends (normally) when
        the server closes it or the connection drops; an ``ERROR`` event raises
        its error (410 → :class:`ResourceExpired`). Closing or cancelling the
        consumer closes the connection.
        """
        return self._watch(resource, resource_version, namespace, metadata_only, timeout_seconds)

    async def _watch(
        self,
        resource: APIResource,
        resource_version: str,
        namespace: str | None,
        metadata_only: bool,
        timeout_seconds: float | None,
    ) -> AsyncGenerator[WatchEvent, None]:
        path = self._path(resource, namespace)
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", resource_version),
        ]
        total: float | None = None
        if timeout_seconds is not None and timeout_seconds > 0:
            query.append(("timeoutSeconds", str(max(1, math.ceil(timeout_seconds)))))
            # A server that forgets to close the stream must not hang us forever.
            # One deadline for the whole stream, not a read timeout, which aiohttp
            # re-arms (a timer cancelled and scheduled) on every chunk of events.
            total = timeout_seconds + 30.0
        resp = await self._send(
            "watch",
            "GET",
            path,
            query=query,
            accept=OBJECT_ACCEPT if metadata_only else JSON,
            stream=aiohttp.ClientTimeout(total=total, sock_connect=self.request_timeout),
        )
        assert isinstance(resp, aiohttp.ClientResponse)
        try:
            while True:
                try:
                    line = await resp.content.readline()
                except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                    log.debug("watch %s ended: %s: %s", path, type(exc).__name__, exc)
                    return
                if not line:
                    return
                line = line.strip()
                if not line:
                    continue
                try:
                    event = _loads(line)
                except ValueError as exc:
                    raise APIError(
                        f"watch {path}: undecodable event: {exc}", reason="InternalError"
                    ) from exc
                if not isinstance(event, dict):
                    continue
                etype = event.get("type")
                obj = event.get("object")
                if etype == "ERROR":
                    status = obj if isinstance(obj, dict) else {}
                    err = error_from_status_object(status, fallback_code=500)
                    if status.get("reason") in ("Expired", "Gone"):
                        err = ResourceExpired(err.message, reason=err.reason, code=410)
                    raise err
                if etype not in _WATCH_TYPES:
                    log.warning("watch %s: unknown event type %r", path, etype)
                    continue
                out = self._partial(obj) if metadata_only else self._full(obj, resource)
                yield WatchEvent(etype, out)
        finally:
            resp.close()

    # -- ObjectStore: writes -----------------------------------------------

    async def create(
        self,
        resource: APIResource,
        obj: JSONDict,
        *,
        namespace: str | None = None,
    ) -> JSONDict:
        meta = obj.get("metadata")
        ns = namespace
        if ns is None and isinstance(meta, dict):
            ns = meta.get("namespace")
        ns = ns if isinstance(ns, str) else None
        self._require_namespace(resource, ns)
        body = await self._json("create", "POST", self._path(resource, ns), body=obj)
        return self._full(body, resource)

    async def patch(
        self,
        resource: APIResource,
        name: str,
        patch: JSONDict | builtins.list[JSONDict],
        *,
        patch_type: PatchType,
        namespace: str | None = None,
    ) -> JSONDict:
        """PATCH with ``patch_type`` as the Content-Type (415 → UnsupportedPatchType)."""
        self._require_namespace(resource, namespace)
        content_type = PatchType(patch_type).value
        if content_type == PatchType.JSON.value and not isinstance(patch, builtins.list):
            raise BadRequest("a JSON patch must be a list of operations", reason="BadRequest")
        body = await self._json(
            "patch",
            "PATCH",
            self._path(resource, namespace, name),
            body=patch,
            content_type=content_type,
        )
        return self._full(body, resource)

    async def delete(
        self,
        resource: APIResource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        preconditions: Preconditions | None = None,
    ) -> JSONDict | None:
        """DELETE with a DeleteOptions body; ``None`` when the answer says it is gone."""
        self._require_namespace(resource, namespace)
        options: JSONDict = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy is not None:
            options["propagationPolicy"] = PropagationPolicy(propagation_policy).value
        if preconditions is not None:
            pre = preconditions.to_dict()
            if pre:
                options["preconditions"] = pre
        body = await self._json(
            "delete", "DELETE", self._path(resource, namespace, name), body=options
        )
        if body.get("kind") == "Status" and body.get("status") == "Success":
            return None
        if not body:
            return None
        return self._full(body, resource)
