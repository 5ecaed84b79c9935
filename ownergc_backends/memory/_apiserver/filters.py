"""The handler chain's filters: each wraps the next handler, as k8s.io/apiserver's
filters wrap its handler (read for structure only).

The facade's chain, outermost first (see ``docs/architecture.md``)::

    RequestLog -> StatusErrors -> Authentication -> Router

``RequestLog`` records every request and its status (errors included, as
answered); ``StatusErrors`` turns what a later stage raised into the
``metav1.Status`` a client gets; ``Authentication`` says who sent the request.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import NamedTuple, Protocol

from ownergc._kit.http import Request
from ownergc.errors import APIError, NotFound, RESTMappingError, error_for_status

from .._negotiation import _error_response, _HTTPError
from .context import ANONYMOUS, Handler, Reply, RequestContext, UserInfo, WatchPlan

__all__ = [
    "AnonymousAuthenticator",
    "Authentication",
    "Authenticator",
    "RequestCredentials",
    "RequestLog",
    "RequestLogEntry",
    "RequestRecorder",
    "StatusErrors",
]

log = logging.getLogger("ownergc.memory.http")


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


class RequestRecorder:
    """What the request log keeps: each request, its credentials, and counts per kube verb."""

    def __init__(self) -> None:
        self.requests: list[RequestLogEntry] = []
        self.request_credentials: list[RequestCredentials] = []
        self.verb_counts: Counter[str] = Counter()

    def record(self, request: Request, status: int) -> None:
        self.requests.append(RequestLogEntry(request.method, request.path, status))
        headers = request.headers
        self.request_credentials.append(
            RequestCredentials(headers.get("user-agent", ""), headers.get("authorization", ""))
        )

    def count(self, verb: str | None = None) -> int:
        if verb is None:
            return sum(self.verb_counts.values())
        return self.verb_counts[verb]

    def clear(self) -> None:
        self.requests.clear()
        self.request_credentials.clear()
        self.verb_counts.clear()


class RequestLog:
    """Counts the request's verb on arrival and records its status once answered
    (a watch as 200 when its stream opens)."""

    def __init__(self, inner: Handler, recorder: RequestRecorder) -> None:
        self.inner = inner
        self.recorder = recorder

    async def __call__(self, ctx: RequestContext) -> Reply:
        self.recorder.verb_counts[ctx.info.verb] += 1
        reply = await self.inner(ctx)
        status = 200 if isinstance(reply, WatchPlan) else reply.status
        self.recorder.record(ctx.request, status)
        return reply


class StatusErrors:
    """An error raised by a later stage becomes the Status response kube-apiserver sends:
    an APIError as itself, an unknown resource as 404, a bug as 500 (logged)."""

    def __init__(self, inner: Handler) -> None:
        self.inner = inner

    async def __call__(self, ctx: RequestContext) -> Reply:
        try:
            return await self.inner(ctx)
        except APIError as exc:
            return _error_response(exc)
        except _HTTPError as exc:
            return _error_response(exc.error)
        except RESTMappingError as exc:
            return _error_response(NotFound(str(exc), reason="NotFound"))
        except Exception as exc:
            request = ctx.request
            log.exception("internal error answering %s %s", request.method, request.target)
            return _error_response(
                error_for_status(500, f"internal error: {exc!r}", reason="InternalError")
            )


class Authenticator(Protocol):
    """Who sent a request; raises ``Unauthorized`` to refuse it."""

    def authenticate(self, request: Request) -> UserInfo: ...


class AnonymousAuthenticator:
    """Everyone is ``system:anonymous`` (the facade checks no credentials)."""

    def authenticate(self, request: Request) -> UserInfo:
        return ANONYMOUS


class Authentication:
    """Fills in :attr:`RequestContext.user` for the stages after it (admission reads it)."""

    def __init__(self, inner: Handler, authenticator: Authenticator) -> None:
        self.inner = inner
        self.authenticator = authenticator

    async def __call__(self, ctx: RequestContext) -> Reply:
        ctx.user = self.authenticator.authenticate(ctx.request)
        return await self.inner(ctx)
