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
and 2^32 seconds (422), audiences default to the server's own. A
``boundObjectRef`` names a Pod (running as the ServiceAccount) or a Secret of
the namespace, which must exist (404) and have the uid given (409); the token
then carries its name and uid, and a Pod's node (1.30's
ServiceAccountTokenPodNodeInfo). Binding to a Node is refused as 1.30 refuses
it with its ServiceAccountTokenNodeBinding gate off (alpha), any other kind
with a 400. Every token carries a ``jti`` (1.30's ServiceAccountTokenJTI, beta).
:class:`TokenSigner` signs and checks them; the TokenReview handler
(:mod:`.tokenreview`) reads them back.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Final

from ownergc.errors import BadRequest, Conflict, MethodNotAllowed, NotFound
from ownergc.protocols import JSONDict

from .._negotiation import _json_response, object_body
from .._objects import _invalid, format_time
from .._validation import FieldError
from ..store import InMemoryStore
from .context import Reply, RequestContext, ResourceRoute

__all__ = ["CRYPTO_FAILURE", "DEFAULT_AUDIENCE", "TokenRequestHandler", "TokenSigner"]

#: The apiserver's default ``--api-audiences`` / ``--service-account-issuer``.
DEFAULT_AUDIENCE: Final = "https://kubernetes.default.svc.cluster.local"
_DEFAULT_SECONDS: Final = 3600
_MIN_SECONDS: Final = 600
_MAX_SECONDS: Final = 1 << 32


#: go-jose's error for a signature that does not verify (kube-apiserver 1.30 vendors
#: gopkg.in/go-jose/go-jose.v2, whose errors start "go-jose/go-jose"; 1.20's
#: square/go-jose said "square/go-jose: error in cryptographic primitive").
CRYPTO_FAILURE: Final = "go-jose/go-jose: error in cryptographic primitive"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenSigner:
    """Signs serve's ServiceAccount tokens (HS256 under a key made at start) and checks them."""

    def __init__(self, issuer: str = DEFAULT_AUDIENCE, key: bytes | None = None) -> None:
        self.issuer = issuer
        self.key = key if key is not None else secrets.token_bytes(32)

    def sign(self, claims: JSONDict) -> str:
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        signing_input = f"{header}.{payload}".encode("ascii")
        signature = hmac.new(self.key, signing_input, hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(signature)}"

    def issued_claims(self, token: str) -> JSONDict | None:
        """The claims of a JWT whose ``iss`` is this server's, read before any check
        (kube-apiserver's authenticator passes over tokens of another issuer in silence);
        None for anything else."""
        if token.lstrip().startswith("{"):
            return None
        parts = token.split(".")
        if len(parts) != 3:
            return None
        try:
            claims = json.loads(_unb64(parts[1]))
            json.loads(_unb64(parts[0]))
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(claims, dict) or claims.get("iss") != self.issuer:
            return None
        return claims

    def verified(self, token: str) -> bool:
        """Whether the token's signature is this server's (HS256 under its key)."""
        header, payload, signature = token.split(".")
        try:
            alg = json.loads(_unb64(header)).get("alg")
            given = _unb64(signature)
        except (ValueError, UnicodeDecodeError, AttributeError):
            return False
        expected = hmac.new(
            self.key, f"{header}.{payload}".encode("ascii"), hashlib.sha256
        ).digest()
        return alg == "HS256" and hmac.compare_digest(given, expected)


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
        self.signer = TokenSigner(issuer, key)

    @property
    def issuer(self) -> str:
        return self.signer.issuer

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
        seconds = self._expiration(spec.get("expirationSeconds"))
        audiences = spec.get("audiences") or [self.issuer]
        if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
            raise BadRequest("spec.audiences must be a list of strings", reason="BadRequest")
        assert route.namespace is not None
        bound = await self._bound_claims(route.namespace, route.name, spec.get("boundObjectRef"))
        now = self.clock()
        expires = now + timedelta(seconds=seconds)
        meta = account["metadata"]
        private: JSONDict = {
            "namespace": route.namespace,
            "serviceaccount": {"name": route.name, "uid": meta.get("uid", "")},
            **bound,
        }
        token = self.signer.sign(
            {
                "aud": audiences,
                "exp": int(expires.timestamp()),
                "iat": int(now.timestamp()),
                "iss": self.issuer,
                "jti": str(uuid.uuid4()),
                "nbf": int(now.timestamp()),
                "sub": f"system:serviceaccount:{route.namespace}:{route.name}",
                "kubernetes.io": private,
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
    def _expiration(value: Any) -> int:
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
            # (named "": kube-apiserver validates the TokenRequest, which has no name)
            raise _invalid("TokenRequest", "", [error], "authentication.k8s.io")
        return value

    async def _bound_claims(self, namespace: str, account: str, ref: Any) -> JSONDict:
        """The claims naming the object a token is bound to (``pod`` and its ``node``, or
        ``secret``), or the error kube-apiserver 1.30 answers for the reference."""
        if ref is None:
            return {}
        if not isinstance(ref, dict):
            raise BadRequest("spec.boundObjectRef must be an object", reason="BadRequest")
        api_version = str(ref.get("apiVersion") or "")
        kind = str(ref.get("kind") or "")
        name = str(ref.get("name") or "")
        group, _, version = api_version.rpartition("/")
        if group or kind not in ("Pod", "Secret", "Node"):
            raise BadRequest(
                f"cannot bind token to object of type {group}/{version}, Kind={kind}",
                reason="BadRequest",
            )
        if kind == "Node":
            raise BadRequest(
                'cannot bind token to a Node object as the "ServiceAccountTokenNodeBinding" '
                "feature-gate is disabled",
                reason="BadRequest",
            )
        if not name:
            raise BadRequest("Name parameter required.", reason="BadRequest")
        resource = self.store.resource_for("v1", kind)
        obj = await self.store.get(resource, name, namespace=namespace, metadata_only=False)
        uid = obj["metadata"].get("uid", "")
        if ref.get("uid") and ref["uid"] != uid:
            raise Conflict(
                f'Operation cannot be fulfilled on {kind} "{name}": the UID in the bound '
                f"object reference ({ref['uid']}) does not match the UID in record. The "
                "object might have been deleted and then recreated",
                reason="Conflict",
                details={"name": name, "kind": kind},
            )
        if kind == "Secret":
            return {"secret": {"name": name, "uid": uid}}
        pod_spec = obj.get("spec") or {}
        if pod_spec.get("serviceAccountName", "default") != account:
            raise BadRequest(
                f"cannot bind token for serviceaccount {json.dumps(account)} to pod running "
                "with different serviceaccount name.",
                reason="BadRequest",
            )
        claims: JSONDict = {"pod": {"name": name, "uid": uid}}
        node_name = pod_spec.get("nodeName")
        if node_name:
            # The node's uid too when it exists; its name alone when it does not.
            node: JSONDict = {"name": node_name}
            try:
                found = await self.store.get(self.store.resource_for("v1", "Node"), node_name)
            except NotFound:
                pass
            else:
                node["uid"] = found["metadata"].get("uid", "")
            claims["node"] = node
        return claims
