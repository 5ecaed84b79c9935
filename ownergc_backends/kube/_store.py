"""KubeStore: an :class:`~ownergc.protocols.ObjectStore` over a real apiserver.

Asyncio, not threads: the controller is anyio, keeps one long-lived watch
per resource plus ``workers`` concurrent writers, and must be cancellable. A
sync client would pin one worker thread per open watch (anyio's default
thread limiter is 40, a cluster serves more resources than that) and a
blocked socket read in a thread cannot be cancelled. KubeStore needs anyio's
asyncio backend, which the controller defaults to.

The configuration (kubeconfig, in-cluster, credentials and their refresh)
is read by ``_kubeconfig`` without the ``kubernetes`` package, which is
needed only for kubeconfig users with an ``auth-provider`` or for a
``kubernetes.aio`` Configuration / ApiClient passed in. Requests go out
through ``_transport`` (a lean HTTP/1.1 client for short requests, aiohttp
for watches and proxies), never through a generated client's per-type
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
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import anyio
import msgspec  # the kube extra's typed decoder: a monitor's list reads seven fields per object
import orjson  # the kube extra's JSON decoder: the watch/list hot path decodes every body
from anyio.abc import AsyncResource

from ownergc._kit.gcpause import gc_paused
from ownergc._kit.ratelimit import TokenBucket
from ownergc.errors import APIError, BadRequest, Invalid, ResourceExpired, ServerTimeout
from ownergc.protocols import (
    APIResource,
    DiscoveryResult,
    ItemsSink,
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
from ownergc_backends.kube._http1 import BodySink, Response, StreamedAnswer
from ownergc_backends.kube._kubeconfig import ClientConfig
from ownergc_backends.kube._liststream import ListItemStream, graph_page
from ownergc_backends.kube._pbscan import COMPILED as PROTOBUF_COMPILED
from ownergc_backends.kube._transport import Transport, network_errors

if TYPE_CHECKING:
    import aiohttp


def _loads(data: bytes) -> Any:
    return orjson.loads(data)


#: Answers to a watch-list request that say the server does not serve it.
_WATCH_LIST_REFUSED: Final = frozenset({400, 403, 405, 406, 415, 422, 501})
_INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"
_PARTIAL_LIST_KIND: Final = "PartialObjectMetadataList"
#: Answers longer than this are decoded with the cyclic garbage collector paused.
_BIG_BODY: Final = 1 << 20


def _too_large(exc: APIError) -> bool:
    """kube-apiserver's "Too large resource version" (a cache behind the version asked)."""
    causes = exc.details.get("causes") if isinstance(exc.details, dict) else None
    if isinstance(causes, list):
        for cause in causes:
            if isinstance(cause, dict) and cause.get("reason") == "ResourceVersionTooLarge":
                return True
    return "too large resource version" in exc.message.lower()


async def _events(resp: aiohttp.ClientResponse | StreamedAnswer, path: str) -> AsyncIterator[Any]:
    """Decoded watch events, one per line, read in whatever chunks arrive.

    Splitting the chunks here costs less than a ``readline`` per event (the
    initial events of a watch-list arrive by the hundred thousand).
    """
    buf = b""
    while True:
        try:
            chunk = await resp.content.readany()
        except network_errors() as exc:
            log.debug("watch %s ended: %s: %s", path, type(exc).__name__, exc)
            return
        if not chunk:
            if buf.strip():
                yield _decode_event(buf, path)
            return
        if buf:
            chunk = buf + chunk
        view = memoryview(chunk)
        start = 0
        end = chunk.find(b"\n")
        while end >= 0:
            if end > start:
                yield _decode_event(view[start:end], path)
            start = end + 1
            end = chunk.find(b"\n", start)
        buf = chunk[start:]


def _decode_event(line: bytes | memoryview, path: str) -> Any:
    try:
        return orjson.loads(line)
    except ValueError as exc:
        if not bytes(line).strip():
            return None  # a blank line (some proxies add them)
        raise APIError(f"watch {path}: undecodable event: {exc}", reason="InternalError") from exc


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
#: A monitor's list in protobuf where the server can, else as ``LIST_ACCEPT`` (what
#: client-go's metadata client sends, JSON last for servers without protobuf).
LIST_ACCEPT_PROTOBUF: Final = (
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    + LIST_ACCEPT
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
    """An ObjectStore over a Kubernetes apiserver.

    Create it with :meth:`from_kubeconfig`, :meth:`from_config` (kubeconfig,
    then in-cluster), :meth:`from_kubeconfig_dict` or :meth:`from_configuration`
    and close it with :meth:`aclose` (or ``async with``).

    ``qps``/``burst`` configure the client-side token bucket every request
    but a watch passes, as in client-go (``qps <= 0`` disables it). A 429 (API
    Priority and Fairness, max in-flight) or a 5xx carrying ``Retry-After`` is
    retried after that delay, at most ``max_retries`` times, each retry taking a
    new token.
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
        watch_list: bool = False,
        graph_fields_only: bool = True,
        watch_list_idle_timeout: float = 10.0,
        list_concurrency: int = 4,
        protobuf_lists: bool | None = None,
        rate_limiter: TokenBucket | None = None,
        discovery_rate_limiter: TokenBucket | None = None,
        owns_client: bool = True,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self._api = api_client
        self._owns_client = owns_client
        #: How Retry-After delays are waited out (injectable so tests need no wall clock).
        self._sleep = sleep or anyio.sleep
        self.rate_limiter = rate_limiter or TokenBucket(qps, burst)
        #: Discovery has a bucket of its own, as kube-controller-manager's
        #: "controller-discovery" client has its own limiter: the twenty-odd
        #: discovery requests of a start-up do not spend the burst the lists need.
        self.discovery_rate_limiter = discovery_rate_limiter or TokenBucket(qps, burst)
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        self.max_retry_after = max_retry_after
        self.list_page_size = list_page_size
        self.aggregated_discovery = aggregated_discovery
        self.discovery_concurrency = max(1, discovery_concurrency)
        self.strip_managed_fields = strip_managed_fields
        self.watch_list = watch_list
        #: Lists from the cache (``consistent=False``) carry only the metadata
        #: the graph reads: uid, name, namespace, resourceVersion,
        #: ownerReferences, finalizers, deletionTimestamp.
        self.graph_fields_only = graph_fields_only
        #: Those lists are asked for in protobuf first (JSON accepted too): the
        #: apiserver encodes them about three times faster, in half the bytes. By
        #: default only where the protobuf reader is compiled (``_pbscan``).
        self.protobuf_lists = PROTOBUF_COMPILED if protobuf_lists is None else protobuf_lists
        self.watch_list_idle_timeout = watch_list_idle_timeout
        #: Group versions whose server answered a watch-list request as one
        #: that does not serve it (detected by the answer, never by version).
        self.watch_list_unsupported: set[str] = set()
        #: Per collection path, the newest resourceVersion a list or a watch
        #: reached: a relist from the cache asks for a state at least as new.
        self._watermarks: dict[str, str] = {}
        self._list_limiter = anyio.CapacityLimiter(max(1, list_concurrency))
        #: How each list was served, for tests and benchmarks.
        self.list_modes: Counter[str] = Counter()
        self._counts: Counter[str] = Counter()
        self._retries = 0
        self._closed = False
        transport = Transport(api_client)
        self.host: str = transport.host
        api_client.user_agent = f"ownergc/{_version()} (kube backend)"
        self._transport = transport

    # -- construction ------------------------------------------------------

    @classmethod
    def from_configuration(cls, configuration: Any, **options: Any) -> KubeStore:
        """From a :class:`ClientConfig` (what :meth:`from_kubeconfig` and
        :meth:`from_config` load) or a ``kubernetes.aio.client.Configuration``
        (the store owns the ApiClient it makes of it)."""
        if isinstance(configuration, ClientConfig):
            return cls(configuration, **options)
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
        stream: tuple[float | None, float] | None = None,
        sink: BodySink | None = None,
    ) -> Response | StreamedAnswer | aiohttp.ClientResponse:
        """Send one request (rate limited unless a watch, retried on Retry-After); return
        its 2xx answer:
        read whole, or with ``stream`` (a watch's timeouts: the whole stream's or None,
        connecting's) as an answer read as it arrives;
        with ``sink``, its body handed to ``sink`` as it arrives."""
        if self._closed:
            raise RuntimeError("KubeStore is closed")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError("KubeStore needs anyio's asyncio backend") from None
        data = None if body is None else orjson.dumps(body)
        attempt = 0
        while True:
            if stream is None:
                # As client-go: a watch (a stream) takes no token. It is one long
                # request, and throttling it only delays the stream a monitor
                # waits on; at start-up it was half of the requests in the bucket.
                bucket = self.discovery_rate_limiter if verb == "discovery" else self.rate_limiter
                await bucket.acquire()
            self._counts[verb] += 1
            headers = {"Accept": accept}
            if data is not None:
                headers["Content-Type"] = content_type or JSON
            try:
                if stream is None:
                    answer: (
                        Response | StreamedAnswer | aiohttp.ClientResponse
                    ) = await self._transport.call(
                        method,
                        path,
                        query=query,
                        headers=headers,
                        data=data,
                        timeout=self.request_timeout,
                        sink=sink,
                    )
                else:
                    answer = await self._transport.stream(
                        method, path, query=query, headers=headers, timeout=stream
                    )
            except network_errors() as exc:
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
            if answer.status == 401:  # an exec plugin runs again, a token file is read again
                self._transport.unauthorized(headers.get("Authorization"))
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
    def _log_apf(answer: Response | StreamedAnswer | aiohttp.ClientResponse, what: str) -> None:
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
            if len(data) > _BIG_BODY:
                with gc_paused():
                    decoded = _loads(data)
            else:
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
        consistent: bool = True,
    ) -> ObjectList:
        """Every object, the way client-go's reflector lists.

        ``consistent=True`` (the default; preview, lint, graph and why): one
        consistent snapshot from etcd, paginated by ``list_page_size``.
        ``consistent=False`` (the controller's monitors, whose decisions are
        confirmed by live reads): from the apiserver's watch cache in one
        answer (``resourceVersion=0``, or at least as new as what this store
        last saw of the collection), streamed as a watch-list when
        ``watch_list`` is on and the server serves it; a server that cannot
        answer from its cache gets the consistent paginated list instead.
        At most ``list_concurrency`` lists run at once.
        """
        path = self._path(resource, namespace)
        async with self._list_limiter:
            if consistent:
                listed = await self._list_pages(resource, path, "", metadata_only, "consistent")
            else:
                listed = await self._list_cached(resource, path, metadata_only)
        if listed.resource_version:
            self._watermarks[path] = listed.resource_version
        return listed

    async def list_in_batches(
        self, resource: APIResource, on_items: ItemsSink, *, namespace: str | None = None
    ) -> str:
        """A monitor's list (``consistent=False``, metadata only), its items handed to
        ``on_items`` in batches as the answer arrives and is decoded (see
        :class:`ownergc.protocols.BatchLister`); returns its resourceVersion."""
        path = self._path(resource, namespace)
        async with self._list_limiter:
            listed = await self._list_cached(resource, path, True, on_items)
        if listed.resource_version:
            self._watermarks[path] = listed.resource_version
        if listed.items:  # a list that was not decoded as it arrived (watch-list, full objects)
            on_items(listed.items)
        return listed.resource_version

    async def _list_cached(
        self,
        resource: APIResource,
        path: str,
        metadata_only: bool,
        on_items: ItemsSink | None = None,
    ) -> ObjectList:
        if self.watch_list and resource.api_version not in self.watch_list_unsupported:
            streamed = await self._watch_list(resource, path, metadata_only)
            if streamed is not None:
                return streamed
        watermark = self._watermarks.get(path) or "0"
        graph = self.graph_fields_only
        try:
            return await self._list_pages(
                resource, path, watermark, metadata_only, "cache", graph, on_items
            )
        except (ResourceExpired, BadRequest, Invalid) as exc:
            # The cache cannot serve that version (410 Expired, also for a page's
            # continue token), or a server refuses the parameter: the
            # reflector's fallback.
            log.info("list %s from the cache refused (%s); listing consistently", path, exc)
            self._watermarks.pop(path, None)
            return await self._list_pages(
                resource, path, "", metadata_only, "consistent", graph, on_items
            )
        except ServerTimeout as exc:
            if not _too_large(exc):
                raise
            log.info("list %s: the cache is behind (%s); listing consistently", path, exc)
            self._watermarks.pop(path, None)
            return await self._list_pages(
                resource, path, "", metadata_only, "consistent", graph, on_items
            )

    async def _list_pages(
        self,
        resource: APIResource,
        path: str,
        resource_version: str,
        metadata_only: bool,
        mode: str,
        graph_only: bool = False,
        on_items: ItemsSink | None = None,
    ) -> ObjectList:
        """One list: pages of ``list_page_size`` followed by their ``continue`` tokens.

        At ``resourceVersion=0`` the watch cache ignores ``limit`` and answers
        everything at once; a server without a cache pages it like a
        consistent list. At another non-empty version (a relist), ``limit``
        would send the request to etcd, so none is sent (client-go's choice).
        """
        accept = LIST_ACCEPT if metadata_only else JSON
        # A monitor's list (from the cache, metadata only): decoded straight
        # into the fields the graph reads.
        graph_only = graph_only and metadata_only
        items: builtins.list[JSONDict] = []
        list_rv: str | None = None
        cont: str | None = None
        page_size = self.list_page_size if resource_version in ("", "0") else 0
        pages = 0
        while True:
            query: builtins.list[tuple[str, str]] = []
            if cont:
                query.append(("continue", cont))
            elif resource_version:
                query.append(("resourceVersion", resource_version))
            if page_size > 0:
                query.append(("limit", str(page_size)))
            pages += 1
            if graph_only:
                page = await self._graph_page(path, query, on_items)
                page_rv, next_cont = page[0], page[1]
                items.extend(page[2])
            else:
                body = await self._json("list", "GET", path, query=query, accept=accept)
                meta = body.get("metadata")
                meta = meta if isinstance(meta, dict) else {}
                page_rv, next_cont = meta.get("resourceVersion"), meta.get("continue")
                raw = body.get("items") or []
                if not isinstance(raw, builtins.list):
                    raise APIError(f"GET {path}: items is not a list", reason="InternalError")
                if metadata_only:
                    self._extend_partial(items, raw, body.get("kind") == _PARTIAL_LIST_KIND)
                else:
                    items.extend(self._full(o, resource) for o in raw)
            if list_rv is None:
                list_rv = page_rv if isinstance(page_rv, str) else ""
            if not isinstance(next_cont, str) or not next_cont:
                break
            cont = next_cont
        self.list_modes[mode if pages == 1 or mode != "cache" else "cache-paginated"] += 1
        return ObjectList(items=items, resource_version=list_rv or "")

    async def _graph_page(
        self, path: str, query: Sequence[tuple[str, str]], on_items: ItemsSink | None = None
    ) -> tuple[Any, Any, builtins.list[JSONDict]]:
        """One page decoded into the graph's fields: (resourceVersion, continue, items),
        as it arrives (see ``_liststream``); read again whole if it cannot be split."""
        stream = ListItemStream(on_items)
        accept = LIST_ACCEPT_PROTOBUF if self.protobuf_lists else LIST_ACCEPT
        answer = await self._send("list", "GET", path, query=query, accept=accept, sink=stream.feed)
        assert isinstance(answer, Response)
        if stream.error is not None:
            raise stream.error  # on_items's own failure, not the answer's
        try:
            if not stream.failed:
                version, cont, items = stream.finish_decoding()
            else:
                del stream
                answer = await self._send("list", "GET", path, query=query, accept=LIST_ACCEPT)
                assert isinstance(answer, Response)
                body, answer.body = answer.body, b""
                version, cont, items = graph_page(body or b"{}")
                del body
        except (msgspec.DecodeError, ValueError) as exc:
            raise APIError(
                f"GET {path}: undecodable list answer: {exc}", reason="InternalError"
            ) from exc
        if on_items is not None:
            on_items(items)
            items = []
        return version, cont, items

    def _extend_partial(
        self, items: builtins.list[JSONDict], raw: builtins.list[Any], converted: bool
    ) -> None:
        """Append ``raw``'s items in the PartialObjectMetadata shape.

        A server that converted (the usual case) sent that shape already: the
        decoded items are kept as they are (only ``managedFields`` dropped),
        no dict is built per object.
        """
        if not converted:
            items.extend(self._partial(o) for o in raw)
            return
        if self.strip_managed_fields:
            for obj in raw:
                if type(obj) is dict:
                    meta = obj.get("metadata")
                    if type(meta) is dict and "managedFields" in meta:
                        del meta["managedFields"]
                    items.append(obj)
                else:
                    items.append(self._partial(obj))
        else:
            items.extend(o if type(o) is dict else self._partial(o) for o in raw)

    async def _watch_list(
        self, resource: APIResource, path: str, metadata_only: bool
    ) -> ObjectList | None:
        """The initial state streamed over a watch (``sendInitialEvents``), or None
        when the server does not serve that (then the caller lists).

        Support is detected by the answer, as client-go does: a refusal of the
        parameters (400, 403, 405, 406, 422, 501), or a stream that shows it
        ignored them (a change, or a bookmark without the
        ``k8s.io/initial-events-end`` annotation, before that bookmark, or
        silence for ``watch_list_idle_timeout`` seconds), marks the group
        version unsupported for the life of this store. A failure of the
        request itself (connection, 5xx, 410) falls back to a list this once.
        """
        query = [
            ("watch", "true"),
            ("sendInitialEvents", "true"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", "600"),
        ]
        accept = OBJECT_ACCEPT if metadata_only else JSON
        try:
            resp = await self._send(
                "watch",
                "GET",
                path,
                query=query,
                accept=accept,
                stream=(None, self.request_timeout),
            )
        except APIError as exc:
            if exc.code in _WATCH_LIST_REFUSED:
                self._watch_list_unsupported(resource, f"{exc.code} {exc.reason}: {exc.message}")
            else:
                log.info("watch-list %s failed (%s); listing", path, exc)
            return None
        assert not isinstance(resp, Response)
        items: builtins.list[JSONDict] = []
        strip = self.strip_managed_fields
        try:
            with anyio.move_on_after(self.watch_list_idle_timeout) as idle:
                async for event in _events(resp, path):
                    idle.deadline = anyio.current_time() + self.watch_list_idle_timeout
                    if type(event) is not dict:
                        continue
                    etype = event.get("type")
                    obj = event.get("object")
                    if etype == "ADDED" and type(obj) is dict:
                        meta = obj.get("metadata")
                        if metadata_only:
                            if obj.get("kind") != _PARTIAL_KIND or type(meta) is not dict:
                                obj = self._partial(obj)
                            elif strip and "managedFields" in meta:
                                del meta["managedFields"]
                        else:
                            obj = self._full(obj, resource)
                        items.append(obj)
                        continue
                    if etype == "BOOKMARK" and type(obj) is dict:
                        meta = obj.get("metadata")
                        meta = meta if type(meta) is dict else {}
                        notes = meta.get("annotations")
                        if type(notes) is dict and notes.get(_INITIAL_EVENTS_END) == "true":
                            rv = meta.get("resourceVersion")
                            self.list_modes["watch-list"] += 1
                            return ObjectList(
                                items=items, resource_version=rv if isinstance(rv, str) else ""
                            )
                    if etype == "ERROR":
                        status = obj if isinstance(obj, dict) else {}
                        err = error_from_status_object(status, fallback_code=500)
                        if err.code in _WATCH_LIST_REFUSED:
                            self._watch_list_unsupported(resource, f"{err.code} {err.message}")
                        else:
                            log.info("watch-list %s ended with %s; listing", path, err.message)
                        return None
                    self._watch_list_unsupported(
                        resource, f"a {etype} event came before the initial-events-end bookmark"
                    )
                    return None
                log.info("watch-list %s: the stream ended before its bookmark; listing", path)
                return None
            self._watch_list_unsupported(
                resource, f"no initial-events-end bookmark after {self.watch_list_idle_timeout}s"
            )
            return None
        finally:
            resp.close()

    def _watch_list_unsupported(self, resource: APIResource, why: str) -> None:
        self.watch_list_unsupported.add(resource.api_version)
        log.info(
            "%s does not serve watch-list (%s); listing from the cache instead",
            resource.api_version,
            why,
        )

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
            stream=(total, self.request_timeout),
        )
        assert not isinstance(resp, Response)
        last: Any = None
        strip = self.strip_managed_fields
        try:
            async for event in _events(resp, path):
                if type(event) is not dict:
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
                if not metadata_only:
                    out = self._full(obj, resource)
                elif (
                    type(obj) is dict
                    and obj.get("kind") == _PARTIAL_KIND
                    and type(meta := obj.get("metadata")) is dict
                ):
                    # Converted by the server already: no new dict per event.
                    if strip and "managedFields" in meta:
                        del meta["managedFields"]
                    out = obj
                else:
                    out = self._partial(obj)
                last = out
                yield WatchEvent(etype, out)
        finally:
            resp.close()
            if last is not None:
                rv = last["metadata"].get("resourceVersion")
                if isinstance(rv, str) and rv:
                    self._watermarks[path] = rv

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
