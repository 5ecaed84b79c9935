"""TokenRequests and TokenReviews answered as kube-apiserver answers them
(``_apiserver/token.py``, ``_apiserver/tokenreview.py``).

The requests of tests/data/real-apiserver-1.20/token-review.json, recorded from a
real kube-apiserver 1.20 (tools/record_token_review.py), are sent to serve in the
same order, with serve's own tokens where the recording has ``<token NAME>`` (and
the same forgeries made of them), and each answer is compared with the real one:
the status code, a Status' message, reason and details, a TokenRequest's spec
and its token's claims, a TokenReview's metadata, spec and status.

Serve follows 1.30 where 1.30 differs; the differences, and where they were read:

============================  ==========================================================
the server's audience         an apiserver's ``--api-audiences``: the recorded server's
                              ``https://kubernetes.default.svc``; serve's is
                              ``https://kubernetes.default.svc.cluster.local`` (mapped)
``jti`` / credential-id       1.30 (ServiceAccountTokenJTI, beta, on) gives each token a
                              ``jti`` and its user the extra
                              ``authentication.kubernetes.io/credential-id: JTI=<jti>``
                              (pkg/serviceaccount/claims.go Claims and Validate;
                              apiserver pkg/authentication/serviceaccount/util.go)
validator's errors            1.2x reworded them: ``service account token has been
                              invalidated``, ``service account UID (x) does not match
                              claim (y)``, ``pod UID (x) does not match service account
                              pod ref claim (y)`` (pkg/serviceaccount/claims.go)
signature errors              1.30 vendors gopkg.in/go-jose/go-jose.v2: ``go-jose/go-jose:
                              error in cryptographic primitive`` (1.20: ``square/...``)
a Node in ``boundObjectRef``  1.30 knows Nodes, behind ServiceAccountTokenNodeBinding
                              (alpha, off): ``cannot bind token to a Node object as the
                              "ServiceAccountTokenNodeBinding" feature-gate is disabled``
                              (pkg/registry/core/serviceaccount/storage/token.go)
discovery                     1.30 also lists selfsubjectreviews (GA in 1.28) and fills
                              ``singularName`` (1.27+)
a type error in the body      1.30 decodes with encoding/json's words (``json: cannot
                              unmarshal number into Go struct field ...``)
============================  ==========================================================

And where serve is not a real server: its tokens are HS256 (a real one's RS256, so the
recorded "HS256 header" forgery is made here as an RS256 header over serve's token);
it has no static token file (the recorded bearer token is no token to serve); a real
server keeps a successful review ten
seconds (the recorder waited that long after each deletion), serve keeps none.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._apiserver.token import DEFAULT_AUDIENCE
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDING = json.loads(
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/token-review.json").read_text()
)
EXCHANGES: list[dict[str, Any]] = [e for e in RECORDING["exchanges"] if "request" in e]
NS = RECORDING["namespace"]
RECORDED_AUDIENCE = "https://kubernetes.default.svc"
#: 1.20's words -> 1.30's (see the module's table).
REWORDED_1_30 = {
    "[invalid bearer token, Token has been invalidated]": (
        "[invalid bearer token, service account token has been invalidated]"
    ),
    "[invalid bearer token, ServiceAccount UID (<uid>) does not match claim (<uid>)]": (
        "[invalid bearer token, service account UID (<uid>) does not match claim (<uid>)]"
    ),
    "[invalid bearer token, Pod UID (<uid>) does not match claim (<uid>)]": (
        "[invalid bearer token, pod UID (<uid>) does not match service account pod ref "
        "claim (<uid>)]"
    ),
    "[invalid bearer token, square/go-jose: error in cryptographic primitive]": (
        "[invalid bearer token, go-jose/go-jose: error in cryptographic primitive]"
    ),
    "cannot bind token to object of type /v1, Kind=Node": (
        'cannot bind token to a Node object as the "ServiceAccountTokenNodeBinding" '
        "feature-gate is disabled"
    ),
}
#: Answers serve gives otherwise, by exchange (see the module's last paragraph).
NOT_A_REAL_SERVER = {"the static bearer token": {"user": {}, "error": "invalid bearer token"}}
#: Status messages whose 1.30 wording is encoding/json's, not 1.20's json-iterator's.
DECODER_WORDING = {"token not a string", "not JSON"}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Replay:
    """serve, the tokens it issued (by the recording's names) and the uids it made."""

    def __init__(self, server: KubeAPIServer) -> None:
        self.server = server
        self.tokens: dict[str, str] = {}
        self.uids: set[str] = set()

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        text = body if isinstance(body, str) else ("" if body is None else json.dumps(body))
        status, _, answer = send(self.server, method, path, text)
        return status, answer

    def create(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        status, answer = self.call("POST", path, obj)
        assert status == 201, answer
        self.uids.add(answer["metadata"]["uid"])
        return dict(answer)

    def scrub(self, value: Any) -> Any:
        """serve's answer as the recording writes answers: tokens named, uids ``<uid>``,
        serve's audience the recorded server's."""
        text = json.dumps(value)
        for name, token in self.tokens.items():
            text = text.replace(token, f"<token {name}>")
        for uid in self.uids:
            text = text.replace(uid, "<uid>")
        return json.loads(text.replace(DEFAULT_AUDIENCE, RECORDED_AUDIENCE))

    def body(self, exchange: dict[str, Any]) -> Any:
        """The recorded request's body with serve's tokens, uids and audience in it."""
        name, body = exchange["name"], exchange["request"]["body"]
        if isinstance(body, str) or body is None:
            return body
        forged = self.forged(name)
        text = json.dumps(body).replace(RECORDED_AUDIENCE, DEFAULT_AUDIENCE)
        for token_name, token in self.tokens.items():
            text = text.replace(f"<token {token_name}>", token)
        if "<uid>" in text:  # a bound object's uid: p1's, or (the "wrong uid" case) zeros
            uid = "00000000-0000-0000-0000-000000000000" if "wrong uid" in name else self.p1
            text = text.replace("<uid>", uid)
        sent = json.loads(text)
        if forged is not None:
            sent["spec"]["token"] = forged
        return sent

    def forged(self, name: str) -> str | None:
        """The recording's forgeries, made of serve's tokens."""
        if name not in (
            "signature of another token",
            "another issuer, bad signature",
            "HS256 header, kubernetes issuer",
        ):
            return None
        header, payload, signature = self.tokens["A"].split(".")
        if name == "signature of another token":
            return f"{header}.{payload}.{self.tokens['B'].split('.')[2]}"
        if name == "another issuer, bad signature":
            claims = json.loads(_unb64(payload)) | {"iss": "https://other.example"}
            return f"{header}.{_b64(json.dumps(claims).encode())}.{signature}"
        rs256 = _b64(b'{"alg":"RS256","typ":"JWT"}')  # (serve's tokens are the HS256 ones)
        return f"{rs256}.{payload}.{signature}"

    p1 = ""


@pytest.fixture(scope="module")
def replay() -> Iterator[Replay]:
    with run_in_thread(InMemoryStore()) as server:
        yield Replay(server)


def _setup(replay: Replay) -> None:
    replay.uids.add("00000000-0000-0000-0000-000000000000")  # (the recorder's wrong uid)
    replay.create("/api/v1/namespaces", {"metadata": {"name": NS}})
    for name in ("default", "robot", "other"):
        replay.create(f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": name}})
    replay.p1 = replay.create(f"/api/v1/namespaces/{NS}/pods", _pod())["metadata"]["uid"]
    replay.create(f"/api/v1/namespaces/{NS}/secrets", {"metadata": {"name": "s1"}})


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1"},
        "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "nginx"}]},
    }


def _claims(token: str) -> dict[str, Any]:
    claims: dict[str, Any] = json.loads(_unb64(token.split(".")[1]))
    return claims


def _expected_status(exchange: dict[str, Any]) -> Any:
    recorded = exchange["answer"]["status"]
    if exchange["name"] in NOT_A_REAL_SERVER:
        return NOT_A_REAL_SERVER[exchange["name"]]
    if "error" in recorded:
        return {**recorded, "error": REWORDED_1_30.get(recorded["error"], recorded["error"])}
    return recorded


def _entries(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The managedFields taken out of ``meta``, without their manager and time."""
    return [
        {k: v for k, v in entry.items() if k not in ("time", "manager")}
        for entry in meta.pop("managedFields")
    ]


def _check_review(replay: Replay, exchange: dict[str, Any], answer: dict[str, Any]) -> None:
    recorded = exchange["answer"]
    assert answer["kind"] == "TokenReview" and answer["apiVersion"] == "authentication.k8s.io/v1"
    # managedFields: the writer's Update entry (its manager, the client, and time aside).
    meta, recorded_meta = dict(answer["metadata"]), dict(recorded["metadata"])
    assert _entries(meta) == _entries(recorded_meta)
    assert meta == recorded_meta
    forged = replay.forged(exchange["name"])
    if forged is None:
        assert replay.scrub(answer["spec"]) == recorded["spec"]
    status = replay.scrub(answer["status"])
    extra = status.get("user", {}).get("extra", {})
    if status.get("authenticated"):
        # 1.30 names the credential: the token's jti.
        token = answer["spec"]["token"]
        credential = extra.pop("authentication.kubernetes.io/credential-id")
        assert credential == [f"JTI={_claims(token)['jti']}"]
        if not extra:
            del status["user"]["extra"]
    assert status == _expected_status(exchange)


def _check_token_request(replay: Replay, exchange: dict[str, Any], answer: Any) -> None:
    recorded = exchange["answer"]
    label = exchange["name"]
    if recorded.get("kind") == "Status":
        return
    assert replay.scrub(answer["spec"]) == recorded["spec"]
    name = {
        "TokenRequest: no audiences": "A",
        "TokenRequest: audiences [vault]": "B",
        "TokenRequest: audiences [vault, api]": "C",
        "TokenRequest: bound to Pod p1": "P",
        "TokenRequest: bound to Pod p1 with its uid": "PU",
        "TokenRequest: bound to Secret s1": "S",
        "TokenRequest: bound Pod without apiVersion": "x6",
    }[label]
    replay.tokens[name] = answer["status"]["token"]
    claims = _claims(replay.tokens[name])
    assert claims.pop("jti")  # 1.30 (ServiceAccountTokenJTI)
    kept = {k: v for k, v in claims.items() if k not in ("iat", "exp", "nbf")}
    kept |= {"exp-iat": claims["exp"] - claims["iat"], "nbf-iat": claims["nbf"] - claims["iat"]}
    assert replay.scrub(kept) == {
        **RECORDING["claims"][name],
        "iss": RECORDED_AUDIENCE,  # (serve's issuer is its audience, scrubbed the same)
    }


def test_serve_answers_the_recorded_token_requests_and_reviews(replay: Replay) -> None:
    _setup(replay)
    compared = 0
    for exchange in EXCHANGES:
        request, name = exchange["request"], exchange["name"]
        status, answer = replay.call(request["method"], request["path"], replay.body(exchange))
        assert status == exchange["status"], (name, answer)
        recorded = exchange["answer"]
        if name == "discovery":
            (listed,) = [r for r in answer["resources"] if r["name"] == "tokenreviews"]
            assert listed == {**recorded["resources"][0], "singularName": "tokenreview"}
        elif isinstance(recorded, dict) and recorded.get("kind") == "Status":
            got = replay.scrub(answer)
            expected = dict(recorded)
            if "message" in recorded:
                expected["message"] = REWORDED_1_30.get(recorded["message"], recorded["message"])
            if name in DECODER_WORDING:
                assert got["message"].split(":")[0] == expected["message"].split(":")[0]
                got["message"] = expected["message"]
            assert got == expected, name
        elif request["path"].endswith("/token"):
            _check_token_request(replay, exchange, answer)
        elif request["path"].startswith("/apis/authentication.k8s.io/v1/tokenreviews"):
            _check_review(replay, exchange, answer)
        compared += 1
        # What the recorder did between its recorded requests.
        if name == "pod-bound token, Pod deleted":
            replay.uids.add(
                replay.create(f"/api/v1/namespaces/{NS}/pods", _pod())["metadata"]["uid"]
            )
        if name == "token of a deleted ServiceAccount":
            replay.create(
                f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": "robot"}}
            )
    assert compared == len(EXCHANGES) == 57
