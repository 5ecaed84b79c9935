"""TokenReviews (``authentication.k8s.io/v1``): is this token one of serve's, and whose?

A webhook server or a test POSTs ``/apis/authentication.k8s.io/v1/tokenreviews``
with ``spec.token`` (and ``spec.audiences``); kube-apiserver answers 201 with
the review and its ``status``, and keeps nothing. serve knows the tokens it
issued itself (``serviceaccounts/token``, :mod:`.token`), and checks them as
1.30's ServiceAccount token authenticator does:

- a token that is not a JWT of serve's issuer is no token of its: ``error:
  invalid bearer token``;
- the signature must be serve's; the token's audiences (the server's when it
  has none) must meet the requested ones (the server's when none are asked),
  and the answer's ``audiences`` are the ones they share;
- ``exp``, ``nbf`` and ``iat`` are checked with go-jose's minute of leeway;
- the ServiceAccount, and the Pod, Secret or Node the token is bound to,
  must still exist with the uid the token names, and not have been deleted
  (``deletionTimestamp``) more than a minute ago.

The user of a valid token is ``system:serviceaccount:NS:NAME`` with the
ServiceAccount's uid, the groups ``system:serviceaccounts``,
``system:serviceaccounts:NS`` and ``system:authenticated``, and as ``extra``
the bound Pod's name and uid, its node's (1.30's ServiceAccountTokenPodNodeInfo)
and the token's ``jti`` as ``authentication.kubernetes.io/credential-id``
(``JTI=<jti>``, 1.30's ServiceAccountTokenJTI). A refused token has
``authenticated`` left out, an empty ``user`` and the ``error`` text the real
server gives: each check's error after ``invalid bearer token`` (the
loopback-token authenticator the server tries first), as Go prints an
aggregate of two errors: ``[invalid bearer token, <error>]``.

Where serve differs: kube-apiserver keeps a successful answer ten seconds (a
token whose Pod was just deleted still passes a moment); serve checks each
time. serve knows no other tokens (no token file, OIDC or webhook), and its
tokens are HS256-signed, so a real server's tokens fail its check of the
signature, and the other way round.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Final

from ownergc._kit.http import Request
from ownergc.errors import BadRequest, NotFound
from ownergc.protocols import JSONDict

from .._negotiation import _json_response, object_body
from ..store import InMemoryStore
from .admission import AdmissionAttributes
from .context import Reply, RequestContext, ResourceRoute
from .dryrun import AcceptDryRun, DryRunPolicy
from .fieldmanager import FieldManager, manager_name
from .token import CRYPTO_FAILURE, TokenSigner

__all__ = ["INVALID_BEARER_TOKEN", "TokenReviewHandler", "review_token"]

GROUP_VERSION: Final = "authentication.k8s.io/v1"
#: What kube-apiserver answers a token no authenticator knows (and puts first in an
#: aggregate of errors: its loopback-token authenticator's).
INVALID_BEARER_TOKEN: Final = "invalid bearer token"
#: go-jose's leeway for exp, nbf and iat, and the age past which a deleted object
#: no longer vouches for a token.
LEEWAY: Final = timedelta(minutes=1)
_POD_NAME: Final = "authentication.kubernetes.io/pod-name"
_POD_UID: Final = "authentication.kubernetes.io/pod-uid"
_NODE_NAME: Final = "authentication.kubernetes.io/node-name"
_NODE_UID: Final = "authentication.kubernetes.io/node-uid"
_CREDENTIAL_ID: Final = "authentication.kubernetes.io/credential-id"


class _Refused(Exception):
    """A check the token failed, with the authenticator's words."""


def _go_quoted(values: list[str]) -> str:
    """A list of strings as Go's ``%q`` prints a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"


def _intersect(ours: list[str], theirs: list[str]) -> list[str]:
    return [a for a in ours if a in theirs]


def _numeric(claims: JSONDict, name: str) -> float | None:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


async def review_token(
    store: InMemoryStore,
    signer: TokenSigner,
    token: str,
    requested: list[str],
    now: datetime,
) -> JSONDict:
    """The ``status`` of a TokenReview of ``token`` for ``requested`` audiences (the
    server's own when empty), as kube-apiserver 1.30 fills it in."""
    implicit = [signer.issuer]
    wanted = requested or implicit
    claims = signer.issued_claims(token)
    if claims is None:
        return {"user": {}, "error": INVALID_BEARER_TOKEN}
    try:
        user, audiences = await _authenticate(store, signer, token, claims, wanted, implicit, now)
    except _Refused as refused:
        return {"user": {}, "error": f"[{INVALID_BEARER_TOKEN}, {refused}]"}
    return {"authenticated": True, "user": user, "audiences": audiences}


async def _authenticate(
    store: InMemoryStore,
    signer: TokenSigner,
    token: str,
    claims: JSONDict,
    wanted: list[str],
    implicit: list[str],
    now: datetime,
) -> tuple[JSONDict, list[str]]:
    if not signer.verified(token):
        raise _Refused(CRYPTO_FAILURE)
    aud = claims.get("aud")
    token_audiences = [aud] if isinstance(aud, str) else list(aud or [])
    if not token_audiences:
        token_audiences = implicit  # a legacy token: the server's own audiences
    audiences = _intersect(token_audiences, wanted)
    if not audiences:
        raise _Refused(
            f"token audiences {_go_quoted(token_audiences)} is invalid for the target "
            f"audiences {_go_quoted(wanted)}"
        )
    _check_times(claims, now)
    private = claims.get("kubernetes.io")
    if not isinstance(private, dict):
        private = {}
    namespace = str(private.get("namespace") or "")
    account = _ref(private.get("serviceaccount")) or {"name": "", "uid": ""}
    deleted_before = now - LEEWAY
    try:
        found = await _get(store, "ServiceAccount", account["name"], namespace)
    except NotFound as missing:
        raise _Refused(str(missing)) from None
    uid = found["metadata"].get("uid", "")
    if uid != account["uid"]:
        raise _Refused(f"service account UID ({uid}) does not match claim ({account['uid']})")
    if _deleted(found, deleted_before):
        raise _Refused(f"service account {namespace}/{account['name']} has been deleted")
    extra: dict[str, list[str]] = {}
    secret = _ref(private.get("secret"))
    if secret is not None:
        await _check_bound(store, "Secret", secret, namespace, deleted_before)
    pod = _ref(private.get("pod"))
    if pod is not None:
        await _check_bound(store, "Pod", pod, namespace, deleted_before)
        extra[_POD_NAME] = [pod["name"]]
        extra[_POD_UID] = [pod["uid"]]
    if pod is not None or secret is not None:
        node = _ref(private.get("node")) if pod is not None else None
    else:
        node = _ref(private.get("node"))
        if node is not None:  # a token bound to the Node itself
            await _check_bound(store, "Node", node, None, deleted_before)
    jti = claims.get("jti")
    if isinstance(jti, str) and jti:
        extra[_CREDENTIAL_ID] = [f"JTI={jti}"]
    if node is not None and node["name"]:
        extra[_NODE_NAME] = [node["name"]]
        if node["uid"]:
            extra[_NODE_UID] = [node["uid"]]
    user: JSONDict = {
        "username": f"system:serviceaccount:{namespace}:{account['name']}",
        "uid": account["uid"],
        "groups": [
            "system:serviceaccounts",
            f"system:serviceaccounts:{namespace}",
            "system:authenticated",
        ],
    }
    if extra:
        user["extra"] = dict(sorted(extra.items()))
    return user, audiences


def _check_times(claims: JSONDict, now: datetime) -> None:
    """go-jose's checks of exp, nbf and iat (each with a minute of leeway), worded as
    kube-apiserver's ServiceAccount token validator words their failures."""
    at = now.timestamp()
    leeway = LEEWAY.total_seconds()
    nbf, exp, iat = _numeric(claims, "nbf"), _numeric(claims, "exp"), _numeric(claims, "iat")
    if nbf is not None and at + leeway < nbf:
        raise _Refused("service account token is not valid yet")
    if exp is not None and at - leeway > exp:
        raise _Refused("service account token has expired")
    if iat is not None and at + leeway < iat:
        raise _Refused("service account token is issued in the future")


def _ref(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {"name": str(value.get("name") or ""), "uid": str(value.get("uid") or "")}


def _deleted(obj: JSONDict, before: datetime) -> bool:
    stamp = obj["metadata"].get("deletionTimestamp")
    if not stamp:
        return False
    when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return when < before


async def _get(store: InMemoryStore, kind: str, name: str, namespace: str | None) -> JSONDict:
    resource = store.resource_for("v1", kind)
    return await store.get(resource, name, namespace=namespace if namespace else None)


async def _check_bound(
    store: InMemoryStore,
    kind: str,
    ref: dict[str, str],
    namespace: str | None,
    deleted_before: datetime,
) -> None:
    invalidated = "service account token has been invalidated"
    try:
        found = await _get(store, kind, ref["name"], namespace)
    except NotFound:
        raise _Refused(invalidated) from None
    uid = found["metadata"].get("uid", "")
    if uid != ref["uid"]:
        raise _Refused(
            f"{kind.lower()} UID ({uid}) does not match service account {kind.lower()} ref "
            f"claim ({ref['uid']})"
        )
    if _deleted(found, deleted_before):
        raise _Refused(invalidated)


class TokenReviewHandler:
    """``create`` of TokenReview: 201 with the review and its status, nothing stored."""

    def __init__(
        self,
        store: InMemoryStore,
        signer: TokenSigner,
        *,
        clock: Callable[[], datetime] | None = None,
        dry_run: DryRunPolicy | None = None,
        fields: FieldManager | None = None,
    ) -> None:
        self.store = store
        self.signer = signer
        self.clock = clock or store.now
        self.dry_run = dry_run or AcceptDryRun()
        #: Records the writer's ``Update`` entry in the answer's managedFields, as
        #: kube-apiserver's create handler does before the review is answered.
        self.fields = fields

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        request = ctx.request
        dry_run = self.dry_run.dry_run(request.query.get("dryRun"))  # (answered the same)
        decoded = ctx.decoded_body
        body = decoded[0] if decoded is not None else _body(request)
        review = _check_review(body)
        spec = review.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        token = spec.get("token")
        if not token:
            raise BadRequest(
                "token is required for TokenReview in authentication", reason="BadRequest"
            )
        audiences = spec.get("audiences") or []
        given = review.get("metadata")
        meta: JSONDict = copy.deepcopy(given) if isinstance(given, dict) else {}
        answer: JSONDict = {
            "kind": "TokenReview",
            "apiVersion": GROUP_VERSION,
            # An ObjectMeta never stored: its zero creationTimestamp is written as null.
            "metadata": {**meta, "creationTimestamp": meta.get("creationTimestamp")},
            # (TokenReviewSpec's fields are omitempty: empty audiences are left out)
            "spec": {k: copy.deepcopy(v) for k, v in spec.items() if v not in ([], None)},
        }
        if self.fields is not None:
            attrs = AdmissionAttributes(
                "CREATE", route.resource, None, None, None, answer, None, dry_run, ctx.user
            )
            answer = self.fields.on_write(attrs, manager_name(request)) or answer
        answer["status"] = await review_token(
            self.store, self.signer, str(token), list(audiences), self.clock()
        )
        return _json_response(201, answer)


def _body(request: Request) -> Any:
    """The request's TokenReview, JSON or protobuf; a body that is not JSON is the 400
    kube-apiserver answers (worded as its decoder words it, with Python's reason)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in ("", "application/json", "*/*"):
        try:
            return json.loads(request.body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadRequest(
                "the object provided is unrecognized (must be of type TokenReview): couldn't "
                f"get version/kind; json parse error: {exc}",
                reason="BadRequest",
            ) from None
    return object_body(request, "the TokenReview")


def _check_review(body: Any) -> JSONDict:
    """The TokenReview a body holds (one that leaves out its apiVersion and kind is read
    as one), or the 400 kube-apiserver answers."""
    if not isinstance(body, dict):
        raise BadRequest("the TokenReview must be a JSON object", reason="BadRequest")
    api_version, kind = body.get("apiVersion"), body.get("kind")
    version = str(api_version or GROUP_VERSION).rpartition("/")[2]
    kind = kind or "TokenReview"
    if api_version not in (None, "", GROUP_VERSION) or kind != "TokenReview":
        raise BadRequest(
            f'{kind} in version "{version}" cannot be handled as a TokenReview: converting '
            f"({version}.{kind}) to (authentication.TokenReview): unknown conversion",
            reason="BadRequest",
        )
    spec = body.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise BadRequest(
            f'TokenReview in version "{version}" cannot be handled as a TokenReview: json: '
            "cannot unmarshal into Go struct field TokenReview.spec of type "
            "v1.TokenReviewSpec",
            reason="BadRequest",
        )
    return body
