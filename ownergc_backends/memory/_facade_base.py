"""What the REST facade's parts share: its state, the route and watch records, version facts."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol, runtime_checkable

import anyio
import anyio.abc
import anyio.from_thread

from ownergc._kit.http import (
    Request,
)
from ownergc.errors import (
    BadRequest,
    NotFound,
)
from ownergc.protocols import APIResource, JSONDict, ObjectStore, PatchType, WatchEvent

from ._negotiation import (
    _json_body,
    _Target,
    query_flag,
)
from ._selectors import (
    _Filter,
)
from ._tables import Printer, printer_for
from .store import InMemoryStore

__all__ = [
    "_ALL_CATEGORY",
    "_APPLY_PATCH",
    "_PATCH_TYPES",
    "_RETURN_DELETED_OBJECT",
    "_SHORT_NAMES",
    "FacadeState",
    "RequestCredentials",
    "RequestLogEntry",
    "StoreWrapper",
    "WriteHook",
    "_OpenWatch",
    "_ResourceRoute",
    "_WatchPlan",
    "_key",
    "_kube_verb",
    "memory_store_behind",
]


_SHORT_NAMES: Final[dict[tuple[str, str], list[str]]] = {
    ("", "namespaces"): ["ns"],
    ("", "nodes"): ["no"],
    ("", "pods"): ["po"],
    ("", "configmaps"): ["cm"],
    ("", "services"): ["svc"],
    ("", "serviceaccounts"): ["sa"],
    ("", "replicationcontrollers"): ["rc"],
    ("", "persistentvolumeclaims"): ["pvc"],
    ("", "persistentvolumes"): ["pv"],
    ("", "events"): ["ev"],
    ("apps", "deployments"): ["deploy"],
    ("apps", "replicasets"): ["rs"],
    ("apps", "daemonsets"): ["ds"],
    ("apps", "statefulsets"): ["sts"],
    ("batch", "cronjobs"): ["cj"],
    ("events.k8s.io", "events"): ["ev"],
    ("apiextensions.k8s.io", "customresourcedefinitions"): ["crd", "crds"],
}


#: ``kubectl get all`` expands the "all" category.
_ALL_CATEGORY: Final = frozenset(
    {
        ("", "pods"),
        ("", "services"),
        ("", "replicationcontrollers"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "daemonsets"),
        ("apps", "statefulsets"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
    }
)


#: Registries with ``ReturnDeletedObject: true``: a DELETE that removes the object
#: answers with the object; every other resource answers with a Status.
_RETURN_DELETED_OBJECT: Final = frozenset(
    {
        ("", "pods"),
        ("", "services"),
        ("", "serviceaccounts"),
        ("", "namespaces"),
        ("storage.k8s.io", "storageclasses"),
    }
)


_PATCH_TYPES: Final[dict[str, PatchType]] = {p.value: p for p in PatchType}


_APPLY_PATCH: Final = "application/apply-patch+yaml"


class RequestLogEntry(NamedTuple):
    """One request as the server answered it (``path`` without the query)."""

    method: str
    path: str
    status: int


class RequestCredentials(NamedTuple):
    """Who a request said it came from (the entry of :attr:`requests` at the same index).

    The server authenticates nobody; it records what a client sent so tests
    can check that credentials (and their refresh) reach a server.
    """

    user_agent: str
    authorization: str


#: Called after every successful write through the API with the verb
#: (create, update, patch, delete), the resource and the resulting object
#: (for a delete that removed it, its last state), before the response: a seam
#: for servers built on the facade (``ownergc serve``) to react to writes.
WriteHook = Callable[[str, APIResource, JSONDict], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class _ResourceRoute:
    resource: APIResource
    namespace: str | None
    name: str | None
    #: ``status`` / ``scale`` for a subresource path.
    subresource: str | None = None

    @property
    def key(self) -> str:
        """Which collection this route names (continue tokens are bound to one)."""
        return f"{self.resource}|{self.namespace or ''}"


@dataclass(slots=True)
class _WatchPlan:
    route: _ResourceRoute
    resource_version: str
    timeout: float | None
    target: _Target
    filter: _Filter
    include: str
    #: ``sendInitialEvents``: the current objects first, then the initial-events-end bookmark.
    send_initial: bool = False
    #: ``allowWatchBookmarks``: the client takes BOOKMARK events.
    bookmarks: bool = False


@dataclass(eq=False, slots=True)
class _OpenWatch:
    scope: anyio.CancelScope


@runtime_checkable
class StoreWrapper(Protocol):
    """A wrapper of the served store, such as ``ownergc.testing.faults.FaultyStore``.

    The facade serves the :class:`InMemoryStore` behind ``inner`` (following
    nested wrappers), admits each request through :meth:`admit` (which may
    wait, or raise the error the client then gets) and reads every watch
    through the wrapper. That is how tests inject HTTP faults without the
    facade having fault hooks of its own.
    """

    inner: ObjectStore

    async def admit(
        self, verb: str, resource: APIResource | None = None, *, name: str | None = None
    ) -> None: ...

    def watch(
        self,
        resource: APIResource,
        *,
        resource_version: str,
        namespace: str | None = None,
        metadata_only: bool = True,
        timeout_seconds: float | None = None,
    ) -> AsyncIterator[WatchEvent]: ...


def memory_store_behind(served: InMemoryStore | StoreWrapper) -> InMemoryStore:
    """The :class:`InMemoryStore` a facade serves, unwrapping wrappers."""
    store: object = served
    while not isinstance(store, InMemoryStore):
        inner = getattr(store, "inner", None)
        if inner is None:
            raise TypeError(
                "KubeAPIServer serves an InMemoryStore or a wrapper of one "
                f"(with .inner, e.g. FaultyStore), not {type(served).__name__}"
            )
        store = inner
    return store


def _kube_verb(request: Request) -> str:
    """The verb kube-apiserver's audit log would give (``discovery`` and ``nonresource``
    for paths outside resources)."""
    segments = [s for s in request.path.split("/") if s]
    if not segments or segments[0] not in ("api", "apis"):
        return "nonresource"
    depth = 2 if segments[0] == "api" else 3
    if len(segments) <= depth:
        return "discovery"
    rest = segments[depth:]
    namespaced = rest[0] == "namespaces" and len(rest) >= 3
    has_name = len(rest) >= (4 if namespaced else 2)
    method = request.method
    if method == "GET":
        if has_name:
            return "get"
        return "watch" if request.param("watch") in ("true", "1") else "list"
    if method == "DELETE":
        return "delete" if has_name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def _key(obj: JSONDict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


class FacadeState:
    """The attributes of :class:`~ownergc_backends.memory.http.KubeAPIServer`.

    They are set by its ``__init__``.
    """

    store: InMemoryStore
    host: str
    port: int
    url: str
    requests: list[RequestLogEntry]
    request_credentials: list[RequestCredentials]
    verb_counts: Counter[str]
    write_hooks: list[WriteHook]
    #: What requests are admitted by and watches read through: the store, or a wrapper of it.
    served: InMemoryStore | StoreWrapper
    _watches: set[_OpenWatch]
    _portal: anyio.from_thread.BlockingPortal | None
    _task_group: anyio.abc.TaskGroup | None
    _loop_thread: int | None
    #: Seconds between BOOKMARK events on an idle watch that allows them.
    bookmark_interval: float

    def _printer(self, resource: APIResource) -> Printer:
        """How ``kubectl get`` shows ``resource`` (a CRD's printer columns for its kinds)."""
        return printer_for(resource, self.store.crd_for(resource))

    @staticmethod
    def _no_route(path: str) -> NotFound:
        return NotFound(
            "the server could not find the requested resource", reason="NotFound", details={}
        )

    @staticmethod
    def _delete_options(request: Request) -> JSONDict:
        """DeleteOptions from the body, or from the query when there is no body
        (kube-apiserver never merges the two)."""
        if request.body.strip():
            options = _json_body(request.body, "the DeleteOptions body")
            if not isinstance(options, dict):
                raise BadRequest("DeleteOptions must be a JSON object", reason="BadRequest")
            kind = options.get("kind")
            if kind not in (None, "", "DeleteOptions"):
                raise BadRequest(
                    f"expected DeleteOptions in the request body, got kind {kind!r}",
                    reason="BadRequest",
                )
            return options
        options = {}
        policy = request.param("propagationPolicy")
        if policy is not None:
            options["propagationPolicy"] = policy
        if "orphanDependents" in request.query:
            options["orphanDependents"] = query_flag(request, "orphanDependents")
        return options

    def kubeconfig(self, *, context: str = "ownergc", namespace: str = "default") -> JSONDict:
        """A kubeconfig for :attr:`url` with no credentials (the server has no auth)."""
        if not self.url:
            raise RuntimeError("the server is not serving yet: no URL for a kubeconfig")
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": {}}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": namespace},
                }
            ],
            "current-context": context,
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | os.PathLike[str], **kw: str) -> None:
        """Write :meth:`kubeconfig` as JSON (which every YAML reader accepts)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.kubeconfig(**kw), f, indent=2)
            f.write("\n")
