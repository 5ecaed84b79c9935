"""What flows through the facade's pipeline: one request's context, the reply, the
handler interface every stage implements, and the resolved resource route."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ownergc._kit.http import Request
from ownergc.errors import NotFound
from ownergc.protocols import APIResource

from .._negotiation import _Response, _Target
from .._selectors import _Filter
from .requestinfo import RequestInfo

__all__ = [
    "ANONYMOUS",
    "Handler",
    "Reply",
    "RequestContext",
    "ResourceRoute",
    "UserInfo",
    "WatchPlan",
    "no_route",
]


def no_route() -> NotFound:
    """kube-apiserver's 404 for a path nothing serves."""
    return NotFound(
        "the server could not find the requested resource", reason="NotFound", details={}
    )


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who the authentication stage says sent the request (k8s ``user.Info``)."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""


#: What kube-apiserver calls a request nobody authenticated.
ANONYMOUS = UserInfo("system:anonymous", ("system:unauthenticated",))


@dataclass(slots=True)
class RequestContext:
    """One request as it goes down the handler chain; stages fill in what they learn."""

    request: Request
    info: RequestInfo
    user: UserInfo = ANONYMOUS
    #: Warnings for the client (admission webhooks'), sent as ``Warning: 299`` headers.
    warnings: list[str] = field(default_factory=list)
    #: The JSON body as field validation decoded it (unknown fields dropped), in a
    #: 1-tuple; None when nothing decoded it (the handler decodes it then).
    decoded_body: tuple[Any] | None = None


@dataclass(frozen=True, slots=True)
class ResourceRoute:
    """A resource request resolved against the registry."""

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
class WatchPlan:
    """A watch the response writer is to stream (a reply, like a :class:`_Response`)."""

    route: ResourceRoute
    resource_version: str
    timeout: float | None
    target: _Target
    filter: _Filter
    include: str
    #: ``sendInitialEvents``: the current objects first, then the initial-events-end bookmark.
    send_initial: bool = False
    #: ``allowWatchBookmarks``: the client takes BOOKMARK events.
    bookmarks: bool = False


#: What a handler answers: a whole response, or a watch to stream.
Reply = _Response | WatchPlan


class Handler(Protocol):
    """A stage of the pipeline: the filters, the router, a REST handler."""

    async def __call__(self, ctx: RequestContext) -> Reply: ...
