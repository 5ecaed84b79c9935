"""What the REST facade's parts share: its state, the route and watch records, version facts."""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, NamedTuple

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
from ownergc.protocols import APIResource, JSONDict, PatchType

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
    "_FAULT_REASONS",
    "_PATCH_TYPES",
    "_RETURN_DELETED_OBJECT",
    "_SHORT_NAMES",
    "FacadeState",
    "RequestLogEntry",
    "WriteHook",
    "_Fault",
    "_OpenWatch",
    "_ResourceRoute",
    "_WatchPlan",
    "_key",
    "_kube_verb",
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


_FAULT_REASONS: Final[dict[int, str]] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class RequestLogEntry(NamedTuple):
    """One request as the server answered it (``path`` without the query)."""

    method: str
    path: str
    status: int


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


@dataclass(slots=True)
class _Fault:
    method: str | None
    path: re.Pattern[str] | None
    verb: str | None
    status: int
    retry_after: float | None
    delay: float
    remaining: int
    reason: str | None


@dataclass(eq=False, slots=True)
class _OpenWatch:
    scope: anyio.CancelScope
    ending: str | None = None  # "drop" or "expire"


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
    verb_counts: Counter[str]
    write_hooks: list[WriteHook]
    _faults: list[_Fault]
    _faults_lock: threading.Lock
    _watches: set[_OpenWatch]
    _expired_before: int
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
