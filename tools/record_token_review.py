"""Record TokenRequest/TokenReview answers from the real kube-apiserver 1.20.

Namespace ``tokenreview-rec2`` (or argv[1]): ServiceAccounts, a Pod and a Secret are made,
tokens requested for them (plain, with audiences, bound to the Pod and the
Secret) and reviewed, then the bound objects and the ServiceAccount are deleted
(and the ServiceAccount recreated) and the tokens reviewed again. Tokens are
written as ``<token NAME>``, uids as ``<uid>``; each token's decoded claims are
kept too. Output: tests/data/real-apiserver-1.20/token-review.json.
"""

import base64
import http.client
import json
import re
import ssl
import sys
import time
import urllib.request

#: A new namespace each run (no namespace controller runs there to delete an old one).
BASE, NS = "https://127.0.0.1:16443", sys.argv[1] if len(sys.argv) > 1 else "tokenreview-rec2"
HDR = {"Authorization": "Bearer kcm-bench-token"}
TR = "/apis/authentication.k8s.io/v1/tokenreviews"
ctx = ssl._create_unverified_context()
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def call(method, path, body=None, ctype="application/json"):
    data = None if body is None else (body if isinstance(body, str) else json.dumps(body))
    req = urllib.request.Request(
        BASE + path,
        data=None if data is None else data.encode(),
        method=method,
        headers={**HDR, "Content-Type": ctype, "Accept": "application/json"},
    )
    try:
        r = urllib.request.urlopen(req, context=ctx)
        return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode()
    except http.client.RemoteDisconnected:
        return "panic", None


tokens: dict[str, str] = {}
claims: dict[str, object] = {}
exchanges: list[dict[str, object]] = []


def scrub(value):
    text = json.dumps(value)
    for name, token in tokens.items():
        text = text.replace(token, f"<token {name}>")
    return json.loads(UID.sub("<uid>", text))


def record(name, method, path, body=None, ctype="application/json"):
    status, answer = call(method, path, body, ctype)
    exchanges.append(
        {
            "name": name,
            "request": {"method": method, "path": path, "body": scrub(body)},
            "status": status,
            "answer": scrub(answer),
        }
    )
    return status, answer


def decode(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def token(name, sa, spec, label):
    path = f"/api/v1/namespaces/{NS}/serviceaccounts/{sa}/token"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    status, answer = record(label, "POST", path, body)
    if status == 201:
        tokens[name] = answer["status"]["token"]
        c = decode(tokens[name])
        claims[name] = scrub(
            {k: v for k, v in c.items() if k not in ("iat", "exp", "nbf")}
            | {"exp-iat": c["exp"] - c["iat"], "nbf-iat": c.get("nbf", 0) - c["iat"]}
        )
    return status, answer


def review(label, tok, audiences=None, query=""):
    spec = {"token": tok}
    if audiences is not None:
        spec["audiences"] = audiences
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
    return record(label, "POST", TR + query, body)


def main():
    assert call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})[0] == 201
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "automountServiceAccountToken": False}
    for name in ("default", "robot", "other"):
        assert (
            call(
                "POST",
                f"/api/v1/namespaces/{NS}/serviceaccounts",
                sa | {"metadata": {"name": name}},
            )[0]
            == 201
        )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1"},
        "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "nginx"}]},
    }
    s, p1 = call("POST", f"/api/v1/namespaces/{NS}/pods", pod)
    assert s == 201, p1
    s, s1 = call(
        "POST", f"/api/v1/namespaces/{NS}/secrets", {"metadata": {"name": "s1"}, "type": "Opaque"}
    )
    assert s == 201, s1
    exchanges.append(
        {
            "name": "setup",
            "note": "ServiceAccounts default/robot/other, Pod p1 (of robot), Secret s1",
        }
    )

    token("A", "robot", {}, "TokenRequest: no audiences")
    token("B", "robot", {"audiences": ["vault"]}, "TokenRequest: audiences [vault]")
    token(
        "C",
        "robot",
        {"audiences": ["vault", "https://kubernetes.default.svc"]},
        "TokenRequest: audiences [vault, api]",
    )
    pref = {"apiVersion": "v1", "kind": "Pod", "name": "p1"}
    token("P", "robot", {"boundObjectRef": pref}, "TokenRequest: bound to Pod p1")
    token(
        "PU",
        "robot",
        {"boundObjectRef": pref | {"uid": p1["metadata"]["uid"]}},
        "TokenRequest: bound to Pod p1 with its uid",
    )
    sref = {"apiVersion": "v1", "kind": "Secret", "name": "s1"}
    token("S", "robot", {"boundObjectRef": sref}, "TokenRequest: bound to Secret s1")
    token(
        "x1",
        "robot",
        {"boundObjectRef": pref | {"uid": "00000000-0000-0000-0000-000000000000"}},
        "TokenRequest: bound to Pod p1, wrong uid",
    )
    token(
        "x2",
        "other",
        {"boundObjectRef": pref},
        "TokenRequest: bound to a Pod of another ServiceAccount",
    )
    token(
        "x3",
        "robot",
        {"boundObjectRef": pref | {"name": "nope"}},
        "TokenRequest: bound to a missing Pod",
    )
    token(
        "x4",
        "robot",
        {"boundObjectRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}},
        "TokenRequest: bound to a ConfigMap",
    )
    token(
        "x5",
        "robot",
        {"boundObjectRef": {"apiVersion": "v1", "kind": "Node", "name": "n1"}},
        "TokenRequest: bound to a Node",
    )
    token(
        "x6",
        "robot",
        {"boundObjectRef": {"kind": "Pod", "name": "p1"}},
        "TokenRequest: bound Pod without apiVersion",
    )
    token(
        "x7",
        "robot",
        {"boundObjectRef": {"apiVersion": "apps/v1", "kind": "Pod", "name": "p1"}},
        "TokenRequest: bound Pod, wrong apiVersion",
    )
    token(
        "x8",
        "robot",
        {"expirationSeconds": 600, "boundObjectRef": {"apiVersion": "v1", "kind": "Pod"}},
        "TokenRequest: bound Pod without name",
    )

    review("valid token, no audiences", tokens["A"])
    review("valid token, the api audience", tokens["A"], ["https://kubernetes.default.svc"])
    review(
        "valid token, audiences [api, vault]",
        tokens["A"],
        ["https://kubernetes.default.svc", "vault"],
    )
    review("valid token, another audience", tokens["A"], ["vault"])
    review("vault token, no audiences", tokens["B"])
    review("vault token, audiences [vault]", tokens["B"], ["vault"])
    review("two-audience token, audiences [vault, other]", tokens["C"], ["vault", "other"])
    review("two-audience token, no audiences", tokens["C"])
    review("two-audience token, empty audiences", tokens["C"], [])
    review("pod-bound token", tokens["P"])
    review("pod-bound token with uid", tokens["PU"])
    review("pod-bound token, another audience", tokens["P"], ["vault"])
    review("secret-bound token", tokens["S"])
    review("dry run", tokens["A"], query="?dryRun=All")
    review("garbage token", "garbage")
    review("three dots, not a JWT", "a.b.c")
    h, p, sig = tokens["A"].split(".")
    review("signature of another token", f"{h}.{p}.{tokens['B'].split('.')[2]}")
    other = dict(decode(tokens["A"]), iss="https://other.example")
    fake = base64.urlsafe_b64encode(json.dumps(other).encode()).rstrip(b"=").decode()
    review("another issuer, bad signature", f"{h}.{fake}.{sig}")
    hs = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    review("HS256 header, kubernetes issuer", f"{hs}.{p}.{sig}")
    review("the static bearer token", "kcm-bench-token")
    review("empty token", "")
    record("no spec", "POST", TR, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"})
    record(
        "audiences without token",
        "POST",
        TR,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"audiences": ["vault"]},
        },
    )
    record(
        "with metadata",
        "POST",
        TR,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "metadata": {"name": "mine", "labels": {"a": "b"}},
            "spec": {"token": tokens["A"]},
        },
    )
    record(
        "wrong kind",
        "POST",
        TR,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"token": "x"}},
    )
    record("no kind", "POST", TR, {"spec": {"token": "x"}})
    record("not JSON", "POST", TR, "{not json")
    record(
        "token not a string",
        "POST",
        TR,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": 5}},
    )
    record("list", "GET", TR)
    record("get by name", "GET", TR + "/x")
    record("delete by name", "DELETE", TR + "/x")
    record(
        "put by name",
        "PUT",
        TR + "/x",
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "metadata": {"name": "x"},
            "spec": {"token": "x"},
        },
    )
    record(
        "namespaced path",
        "POST",
        f"/apis/authentication.k8s.io/v1/namespaces/{NS}/tokenreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "x"}},
    )
    record("discovery", "GET", "/apis/authentication.k8s.io/v1")

    record("delete Pod p1", "DELETE", f"/api/v1/namespaces/{NS}/pods/p1?gracePeriodSeconds=0")
    time.sleep(11)  # past the authenticator's 10 s cache of successful answers
    review("pod-bound token, Pod deleted", tokens["P"])
    call("POST", f"/api/v1/namespaces/{NS}/pods", pod)
    review("pod-bound token, Pod recreated (new uid)", tokens["P"])
    record("delete Secret s1", "DELETE", f"/api/v1/namespaces/{NS}/secrets/s1")
    time.sleep(11)
    review("secret-bound token, Secret deleted", tokens["S"])
    record(
        "delete ServiceAccount robot", "DELETE", f"/api/v1/namespaces/{NS}/serviceaccounts/robot"
    )
    time.sleep(11)
    review("token of a deleted ServiceAccount", tokens["A"])
    call("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", sa | {"metadata": {"name": "robot"}})
    review("token of a recreated ServiceAccount (new uid)", tokens["A"])
    review("pod-bound token, its ServiceAccount recreated", tokens["PU"])

    out = {
        "server": "kube-apiserver v1.20.2, --api-audiences=https://kubernetes.default.svc, "
        "--service-account-issuer=https://kubernetes.default.svc, RS256 signing key",
        "namespace": NS,
        "claims": claims,
        "exchanges": exchanges,
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


main()
