"""The ``serviceaccounts/token`` subresource: TokenRequests (``kubectl create token``).

kube-apiserver answers a TokenRequest with a signed JWT for the ServiceAccount
(authentication.k8s.io/v1). This server authenticates nobody, so the token
only has to look and decode like one: the claims a real token carries
(issuer, subject ``system:serviceaccount:<ns>:<name>``, audiences, expiry,
the ``kubernetes.io`` claim naming the ServiceAccount and its uid), signed
with HMAC-SHA256 under a key made when the server starts. Clients that read
the token's expiry or subject get what they would get from a real server.

The rules kept are the API's: the ServiceAccount must exist (404),
``expirationSeconds`` defaults to one hour and must lie between ten minutes
and 2^32 seconds (422), audiences default to the server's own.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Final

from ownergc.errors import BadRequest, MethodNotAllowed
from ownergc.protocols import JSONDict

from .._negotiation import _json_response, object_body
from .._objects import _invalid, format_time
from .._validation import FieldError
from ..store import InMemoryStore
from .context import Reply, RequestContext, ResourceRoute

__all__ = ["DEFAULT_AUDIENCE", "TokenRequestHandler"]

#: The apiserver's default ``--api-audiences`` / ``--service-account-issuer``.
DEFAULT_AUDIENCE: Final = "https://kubernetes.default.svc.cluster.local"
_DEFAULT_SECONDS: Final = 3600
_MIN_SECONDS: Final = 600
_MAX_SECONDS: Final = 1 << 32


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class TokenRequestHandler:
    """POST ``/api/v1/namespaces/<ns>/serviceaccounts/<name>/token``."""

    def __init__(
        self,
        store: InMemoryStore,
        *,
        clock: Callable[[], datetime] | None = None,
        issuer: str = DEFAULT_AUDIENCE,
        key: bytes | None = None,
    ) -> None:
        self.store = store
        #: The store's clock unless given (what stamps its objects' timestamps).
        self.clock = clock or store.now
        self.issuer = issuer
        self.key = key if key is not None else secrets.token_bytes(32)

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        request = ctx.request
        if request.method != "POST":
            raise MethodNotAllowed(
                "the server does not allow this method on the requested resource "
                f"({request.method})",
                reason="MethodNotAllowed",
            )
        assert route.name is not None
        body = object_body(request, "the TokenRequest") if request.body.strip() else {}
        if not isinstance(body, dict):
            raise BadRequest("the TokenRequest must be a JSON object", reason="BadRequest")
        account = await self.store.get(
            route.resource, route.name, namespace=route.namespace, metadata_only=True
        )
        spec = body.get("spec") or {}
        if not isinstance(spec, dict):
            raise BadRequest("spec must be an object", reason="BadRequest")
        seconds = self._expiration(route.name, spec.get("expirationSeconds"))
        audiences = spec.get("audiences") or [self.issuer]
        if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
            raise BadRequest("spec.audiences must be a list of strings", reason="BadRequest")
        now = self.clock()
        expires = now + timedelta(seconds=seconds)
        meta = account["metadata"]
        token = self._sign(
            {
                "aud": audiences,
                "exp": int(expires.timestamp()),
                "iat": int(now.timestamp()),
                "iss": self.issuer,
                "nbf": int(now.timestamp()),
                "sub": f"system:serviceaccount:{route.namespace}:{route.name}",
                "kubernetes.io": {
                    "namespace": route.namespace,
                    "serviceaccount": {"name": route.name, "uid": meta.get("uid", "")},
                },
            }
        )
        answer: JSONDict = {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {
                "name": route.name,
                "namespace": route.namespace,
                "creationTimestamp": None,
            },
            "spec": {
                "audiences": audiences,
                "expirationSeconds": seconds,
                "boundObjectRef": spec.get("boundObjectRef"),
            },
            "status": {"token": token, "expirationTimestamp": format_time(expires)},
        }
        return _json_response(201, answer)

    @staticmethod
    def _expiration(name: str, value: Any) -> int:
        if value is None:
            return _DEFAULT_SECONDS
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadRequest("spec.expirationSeconds must be an integer", reason="BadRequest")
        detail = None
        if value < _MIN_SECONDS:
            detail = "may not specify a duration less than 10 minutes"
        elif value > _MAX_SECONDS:
            detail = "may not specify a duration larger than 2^32 seconds"
        if detail is not None:
            error = FieldError("spec.expirationSeconds", "FieldValueInvalid", detail, value)
            raise _invalid("TokenRequest", name, [error], "authentication.k8s.io")
        return value

    def _sign(self, claims: JSONDict) -> str:
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        signing_input = f"{header}.{payload}".encode("ascii")
        signature = hmac.new(self.key, signing_input, hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(signature)}"
