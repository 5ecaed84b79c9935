"""``serviceaccounts/token``: the TokenRequest a real apiserver answers ``kubectl create token``
with, as far as a server without authentication can: a JWT whose claims name the
ServiceAccount, the API's defaults and its validation."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone
from typing import Any

import anyio
import pytest

from ownergc._kit.http import Request
from ownergc.errors import APIError
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._apiserver.context import RequestContext, ResourceRoute
from ownergc_backends.memory._apiserver.requestinfo import request_info
from ownergc_backends.memory._apiserver.token import DEFAULT_AUDIENCE, TokenRequestHandler
from ownergc_backends.memory._negotiation import _Response

NOW = datetime(2026, 11, 25, 8, 0, 0, tzinfo=timezone.utc)
PATH = "/api/v1/namespaces/default/serviceaccounts/robot/token"


def _claims(token: str) -> dict[str, Any]:
    header, payload, signature = token.split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "HS256", "typ": "JWT"}
    assert signature
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=="))
    return decoded


def _post(store: InMemoryStore, body: Any, name: str = "robot") -> Any:
    handler = TokenRequestHandler(store, clock=lambda: NOW)
    path = PATH.replace("robot", name)
    request = Request("POST", path, "HTTP/1.1", {}, json.dumps(body).encode())
    ctx = RequestContext(request, request_info("POST", request.path, request.query))
    resource = store.resource_for("v1", "ServiceAccount")
    route = ResourceRoute(resource, "default", name, "token")

    async def main() -> Any:
        reply = await handler(ctx, route)
        assert isinstance(reply, _Response) and reply.status == 201
        return json.loads(reply.body)

    return anyio.run(main)


@pytest.fixture
def store() -> InMemoryStore:
    store = InMemoryStore()
    store.load_objects(
        [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "robot", "namespace": "default", "uid": "sa-uid"},
            }
        ]
    )
    return store


def test_a_token_request_answers_a_jwt_for_the_service_account(store: InMemoryStore) -> None:
    answer = _post(store, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"})
    assert answer["kind"] == "TokenRequest"
    assert answer["apiVersion"] == "authentication.k8s.io/v1"
    assert answer["spec"]["expirationSeconds"] == 3600  # the API's default
    assert answer["spec"]["audiences"] == [DEFAULT_AUDIENCE]
    assert answer["status"]["expirationTimestamp"] == "2026-11-25T09:00:00Z"
    claims = _claims(answer["status"]["token"])
    assert claims["sub"] == "system:serviceaccount:default:robot"
    assert claims["kubernetes.io"]["serviceaccount"] == {"name": "robot", "uid": "sa-uid"}
    assert claims["exp"] - claims["iat"] == 3600
    assert claims["aud"] == [DEFAULT_AUDIENCE]


def test_duration_and_audiences_are_taken_from_the_request(store: InMemoryStore) -> None:
    answer = _post(store, {"spec": {"expirationSeconds": 7200, "audiences": ["vault"]}})
    assert answer["spec"]["expirationSeconds"] == 7200
    assert _claims(answer["status"]["token"])["aud"] == ["vault"]


@pytest.mark.parametrize(
    ("seconds", "detail"),
    [
        (599, "may not specify a duration less than 10 minutes"),
        ((1 << 32) + 1, "may not specify a duration larger than 2^32 seconds"),
    ],
)
def test_durations_out_of_range_are_invalid(
    store: InMemoryStore, seconds: int, detail: str
) -> None:
    with pytest.raises(APIError) as refused:
        _post(store, {"spec": {"expirationSeconds": seconds}})
    assert refused.value.code == 422
    # the TokenRequest is named "", not after its ServiceAccount (a real 1.20 answered so;
    # 1.30's token REST validates it with errors.NewInvalid(kind, "", ...))
    assert str(refused.value).startswith(
        f'TokenRequest.authentication.k8s.io "" is invalid: '
        f"spec.expirationSeconds: Invalid value: {seconds}: {detail}"
    )


def test_a_missing_service_account_is_404(store: InMemoryStore) -> None:
    with pytest.raises(APIError) as refused:
        _post(store, {}, name="nobody")
    assert refused.value.code == 404
