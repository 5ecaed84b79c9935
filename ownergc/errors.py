"""The ownergc error tree.

Every backend translates its native errors (HTTP status codes, gRPC status
codes, client exceptions) into these classes at its seam, so the controller
and user code only ever catch ownergc errors::

    OwnerGCError
     ├── InvalidObject                 local: malformed input handed to ownergc
     │    └── InvalidOwnerReference    an ownerReferences entry that cannot be used
     │         ├── OwnerNotCreated     the owner has no uid: not created, or not read back
     │         ├── EventOwner          a core v1 Event named as an owner
     │         ├── UnknownOwnerKind    the owner's apiVersion/kind is not served
     │         ├── MultipleControllers more than one reference says controller: true
     │         ├── AlreadyOwned        another controller already owns the object
     │         ├── CrossNamespaceOwner the owner is in another namespace
     │         └── NamespacedOwnerOfClusterScoped
     │                                 a cluster-scoped object names a namespaced owner
     ├── RESTMappingError              no served resource for (apiVersion, kind)
     ├── BackendUnavailable            an optional backend's extra is not installed
     └── APIError                      remote: the backend answered with an error
          ├── BadRequest               400
          ├── Unauthorized             401
          ├── Forbidden                403
          ├── NotFound                 404 (for deletes: already gone, i.e. success)
          ├── MethodNotAllowed         405
          ├── Conflict                 409 (precondition failed, stale resourceVersion)
          │    └── AlreadyExists       409 with reason AlreadyExists
          ├── ResourceExpired          410 (watch or list from a compacted version)
          ├── UnsupportedPatchType     415 (e.g. strategic merge on a custom resource)
          ├── Invalid                  422 (validation failed)
          ├── TooManyRequests          429 (carries retry_after seconds)
          ├── ServerError              5xx
          │    └── ServerTimeout       504 / request timed out on the server
          └── Unavailable              no answer at all: connection refused, TLS, timeout

The ``InvalidOwnerReference`` subclasses are what :mod:`ownergc.ownerrefs`
raises; each names its ``ownergc lint`` rule in ``rule`` and says how to fix
it in ``fix``.

``APIError.retryable`` says whether retrying the same request later can help.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "APIError",
    "AlreadyExists",
    "AlreadyOwned",
    "BackendUnavailable",
    "BadRequest",
    "Conflict",
    "CrossNamespaceOwner",
    "EventOwner",
    "Forbidden",
    "Invalid",
    "InvalidObject",
    "InvalidOwnerReference",
    "MethodNotAllowed",
    "MultipleControllers",
    "NamespacedOwnerOfClusterScoped",
    "NotFound",
    "OwnerGCError",
    "OwnerNotCreated",
    "RESTMappingError",
    "ResourceExpired",
    "ServerError",
    "ServerTimeout",
    "TooManyRequests",
    "Unauthorized",
    "Unavailable",
    "UnknownOwnerKind",
    "UnsupportedPatchType",
    "error_for_status",
]


class OwnerGCError(Exception):
    """Base class of every error ownergc raises on purpose."""


class InvalidObject(OwnerGCError, ValueError):
    """An object handed to ownergc is malformed (bad metadata, wrong types)."""


class InvalidOwnerReference(InvalidObject):
    """An ``ownerReferences`` entry lacks a required field or has the wrong type."""


class _RuleError(InvalidOwnerReference):
    """A reference breaks one of the rules ``ownergc lint`` checks."""

    rule: ClassVar[str] = "invalid-owner-reference"

    def __init__(self, message: str, *, fix: str = "") -> None:
        self.fix = fix
        super().__init__(f"{message}. Fix: {fix}" if fix else message)


class OwnerNotCreated(_RuleError):
    """The owner has no ``metadata.uid``: create it (and use what the apiserver returned) first."""


class EventOwner(_RuleError):
    """A core v1 Event cannot own anything; the apiserver refuses such a reference."""


class UnknownOwnerKind(_RuleError):
    """The owner's apiVersion/kind is not served: the GC can never resolve the reference."""

    rule = "unknown-owner-kind"


class MultipleControllers(_RuleError):
    """More than one reference says ``controller: true`` (the apiserver answers 422)."""

    rule = "multiple-controllers"


class AlreadyOwned(_RuleError):
    """Another controller already owns the object (controller-runtime's AlreadyOwnedError).

    ``owner`` is the existing controller reference, as a dict.
    """

    rule = "already-owned"

    def __init__(self, message: str, *, owner: dict[str, Any], fix: str = "") -> None:
        self.owner = owner
        super().__init__(message, fix=fix)


class CrossNamespaceOwner(_RuleError):
    """The owner lives in another namespace: the GC would delete the dependent."""

    rule = "cross-namespace-owner"


class NamespacedOwnerOfClusterScoped(_RuleError):
    """A cluster-scoped object names a namespaced owner: never resolvable, never collected."""

    rule = "namespaced-owner-of-cluster-scoped"


class RESTMappingError(OwnerGCError):
    """No served resource matches an (apiVersion, kind) pair.

    Kubernetes' GC never treats such an owner as absent: the dependent is kept
    and retried with backoff (unknown or removed API types are never garbage).
    """

    def __init__(self, api_version: str, kind: str, message: str | None = None) -> None:
        self.api_version = api_version
        self.kind = kind
        super().__init__(message or f"no resource mapping for kind {kind!r} in {api_version!r}")


class BackendUnavailable(OwnerGCError, ImportError):
    """A backend was asked for whose optional dependencies are not installed.

    The message names the extra to install (``pip install 'ownergc[kube]'``).
    """


class APIError(OwnerGCError):
    """An error answered by a backend, with the HTTP status it corresponds to."""

    status: ClassVar[int] = 500
    retryable: ClassVar[bool] = False
    #: The Status ``reason`` kube-apiserver sends with this error (the class name when unset).
    default_reason: ClassVar[str | None] = None

    def __init__(
        self,
        message: str = "",
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
        code: int | None = None,
    ) -> None:
        self.message = message or self.__class__.__name__
        self.reason = reason or self.default_reason or self.__class__.__name__
        self.details = details or {}
        #: An empty ``details`` given on purpose is sent as ``{}`` (kube-apiserver's 404 for
        #: a path nothing serves carries one); otherwise empty details are left out.
        self._empty_details = details is not None and not details
        self.retry_after = retry_after
        self.code = code if code is not None else self.status
        super().__init__(self.message)

    def to_status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body a Kubernetes apiserver sends for this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        # StatusDetails' fields are all omitempty: an empty group or name is left out.
        details = {k: v for k, v in self.details.items() if v not in ("", None, [], 0)}
        if details or self._empty_details:
            body["details"] = details
        return body


class BadRequest(APIError):
    """400: the request itself is wrong (malformed body, bad selector or option)."""

    status = 400


class Unauthorized(APIError):
    """401: no valid credentials; refresh them (exec plugin, token file) and retry."""

    status = 401


class Forbidden(APIError):
    status = 403  # RBAC said no: the GC lacks a verb on a resource (see docs/deploy.md)


class NotFound(APIError):
    """404: the object (or the resource) does not exist.

    For the collector a 404 on an owner is the *absence* it needs to be
    sure of before deleting a dependent; it is never guessed.
    """

    status = 404


class MethodNotAllowed(APIError):
    status = 405


class Conflict(APIError):
    """409: a precondition (uid, resourceVersion) failed; re-read and decide again."""

    status = 409
    retryable = True


class AlreadyExists(Conflict):
    retryable = False


class ResourceExpired(APIError):
    """410 Gone: the requested resourceVersion is too old; relist."""

    status = 410
    default_reason = "Expired"


class UnsupportedPatchType(APIError):
    """415: the resource does not accept this patch content type."""

    status = 415
    default_reason = "UnsupportedMediaType"


class Invalid(APIError):
    status = 422  # validation failed: a field error names what


class TooManyRequests(APIError):
    """429: the apiserver's priority and fairness shed the request.

    Wait ``retry_after`` seconds (the Retry-After header) and send it again.
    """

    status = 429
    retryable = True


class ServerError(APIError):
    status = 500
    retryable = True
    default_reason = "InternalError"


class ServerTimeout(ServerError):
    """504: the server gave up answering in time; a write may or may not have happened."""

    status = 504
    default_reason = "Timeout"


class Unavailable(APIError):
    """The backend could not be reached or did not answer (no HTTP status)."""

    status = 503
    retryable = True
    default_reason = "ServiceUnavailable"


_BY_STATUS: dict[int, type[APIError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        Conflict,
        ResourceExpired,
        UnsupportedPatchType,
        Invalid,
        TooManyRequests,
        ServerTimeout,
    )
}


def error_for_status(
    code: int,
    message: str = "",
    *,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
    retry_after: float | None = None,
) -> APIError:
    """Build the ownergc error for an HTTP status code (and Status reason)."""
    cls: type[APIError]
    if code == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    elif code in _BY_STATUS:
        cls = _BY_STATUS[code]
    elif code >= 500:
        cls = ServerError
    else:
        cls = APIError
    return cls(message, reason=reason, details=details, retry_after=retry_after, code=code)
