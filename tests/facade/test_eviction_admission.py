"""``pods/eviction`` through admission, replayed against what kube-apiserver 1.20 sent
(tests/data/real-apiserver-1.20/eviction-admission.json, recorded by
tools/record_eviction_admission.py).

A real server admits an eviction as a CREATE of ``pods/eviction`` carrying the
``Eviction`` (mutating webhooks, then the name check, then validating webhooks),
admits the budget's status write the eviction makes through its loopback client
(an UPDATE of ``poddisruptionbudgets/status`` by ``system:apiserver``), and deletes
the Pod without admission: no ``pods`` DELETE review comes out of an eviction.

Where serve (which follows 1.30) differs from the recording, on purpose or not:

=========================  ==========================  ===============================
what                       1.20 (recorded)             serve (and 1.30)
=========================  ==========================  ===============================
the Eviction's kind and    policy/v1beta1              policy/v1: 1.30's
``object.apiVersion``                                  ``EvictionREST.GroupVersionKind``
                                                       (pkg/registry/core/pod/storage/
                                                       eviction.go, read through the
                                                       code search)
the Eviction's namespace   left out when the client    filled in from the URL: 1.22+'s
in ``object``              left it out                 create handler calls
                                                       ``EnsureObjectNamespaceMatches
                                                       RequestNamespace`` before
                                                       admission (apiserver endpoints/
                                                       handlers/create.go)
the Eviction's metadata    ``creationTimestamp: null``  as sent (not done: the field
                           and, with deleteOptions,    manager does not run on an
                           ``managedFields``           Eviction)
the budget's status        policy/v1beta1 (1.20's      policy/v1, and 1.30's
UPDATE                     loopback client)            ``DisruptionAllowed`` condition
                                                       in its status (eviction.go's
                                                       ``checkAndDecrement``)
``userInfo`` of the        the recording's token user  the client's (anonymous here)
Eviction CREATE            ``admin``
a Pod's own DELETE         reviewed twice (graceful    reviewed once, with the options
                           deletion, then the final    as sent (not done)
                           delete), options with the
                           ``gracePeriodSeconds: 0``
                           the Pod strategy set
=========================  ==========================  ===============================
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trustme

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_facade_admission import Hook, _serve_hook, register
from tests.facade.test_field_validation_cases import send

JSONDict = dict[str, Any]
RECORDED: JSONDict = json.loads(
    (
        Path(__file__).resolve().parent.parent / "data/real-apiserver-1.20/eviction-admission.json"
    ).read_text()
)
NS = RECORDED["namespace"]
PODS = f"/api/v1/namespaces/{NS}/pods"
PDBS = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"
#: Which webhook (by its URL's path) the recording's webhooks were.
PATHS = {
    "evict.evictadm.example.com": "/evict",
    "delete.evictadm.example.com": "/delete",
    "all.evictadm.example.com": "/all",
    "mutate.evictadm.example.com": "/mutate",
}


@pytest.fixture
def hook() -> Iterator[Hook]:
    state, server = _serve_hook(trustme.CA())
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def server(store: InMemoryStore) -> Iterator[KubeAPIServer]:
    with run_in_thread(store) as running:
        yield running


def call(server: KubeAPIServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    status, _, answer = send(server, method, path, "" if body is None else json.dumps(body))
    return status, answer


def configurations(hook: Hook, **side_effects: str) -> dict[str, list[JSONDict]]:
    """The recording's webhooks, at ``hook`` (``side_effects``: by webhook name)."""
    made: dict[str, list[JSONDict]] = {}
    for kind, hooks in RECORDED["webhooks"].items():
        made[kind] = [
            {
                "name": entry["name"],
                "clientConfig": {
                    "url": hook.url.removesuffix("/admit") + PATHS[entry["name"]],
                    "caBundle": hook.ca_bundle,
                },
                "rules": entry["rules"],
                "namespaceSelector": {"matchLabels": {"evictadm-rec": "yes"}},
                "failurePolicy": "Fail",
                "sideEffects": side_effects.get(entry["name"], "None"),
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 5,
            }
            for entry in hooks
        ]
    return made


def setup(store: InMemoryStore, server: KubeAPIServer, hook: Hook, **side_effects: str) -> None:
    """The recording's namespace, Pods, budget and webhooks."""
    store.load_objects(
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": NS, "labels": {"evictadm-rec": "yes"}},
            }
        ]
    )
    for name in ("evict-dry", "evict-me", "evict-deny", "delete-me", "evict-grace", "running"):
        labels = {"app": "evictadm", **({"run": "yes"} if name == "running" else {})}
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
        status, pod = call(server, "POST", PODS, body)
        assert status == 201, pod
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    assert call(server, "PUT", f"{PODS}/running/status", pod)[0] == 200
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "evictadm-budget"},
        "spec": {"minAvailable": 0, "selector": {"matchLabels": {"run": "yes"}}},
    }
    status, budget = call(server, "POST", PDBS, body)
    assert status == 201, budget
    budget["status"] = {
        "observedGeneration": 1,
        "disruptionsAllowed": 1,
        "currentHealthy": 1,
        "desiredHealthy": 0,
        "expectedPods": 1,
    }
    assert call(server, "PUT", f"{PDBS}/evictadm-budget/status", budget)[0] == 200
    made = configurations(hook, **side_effects)
    register(store, "Validating", "evictadm-validating", *made["validating"])
    register(store, "Mutating", "evictadm-mutating", *made["mutating"])


# -- the review's shape ----------------------------------------------------------------------

_GONE_FROM_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")


def _meta_shape(meta: JSONDict) -> JSONDict:
    return {k: v for k, v in meta.items() if k not in _GONE_FROM_META}


def _object_shape(obj: Any, *, recorded: bool) -> Any:
    """An object as compared: no uids, versions, times; in 1.30's versions; a Pod by its
    name, namespace and labels only (the two servers' Pods differ in their defaults)."""
    if not isinstance(obj, dict):
        return obj
    obj = copy.deepcopy(obj)
    meta = _meta_shape(obj.get("metadata") or {})
    if obj.get("kind") == "Pod":
        return {
            "kind": "Pod",
            "apiVersion": obj["apiVersion"],
            "metadata": {k: meta.get(k) for k in ("name", "namespace", "labels")},
        }
    obj["metadata"] = meta
    if recorded and obj.get("apiVersion") == "policy/v1beta1":
        obj["apiVersion"] = "policy/v1"
    if obj.get("kind") == "Eviction" and recorded:
        meta.setdefault("namespace", NS)  # (1.22+ fills it in before admission)
    status = obj.get("status")
    if isinstance(status, dict):
        status.pop("conditions", None)  # (1.30 adds DisruptionAllowed; 1.20 had none)
        if isinstance(status.get("disruptedPods"), dict):
            status["disruptedPods"] = sorted(status["disruptedPods"])
    return obj


def review_shape(review: JSONDict, *, recorded: bool) -> JSONDict:
    """A review as compared between the recording and serve."""
    request = copy.deepcopy(review["request"])
    del request["uid"]
    user = request.pop("userInfo")
    if user["username"] == "system:apiserver":  # the server's own write: the same user
        request["userInfo"] = {"username": user["username"], "groups": user["groups"]}
    for field in ("kind", "requestKind", "resource", "requestResource"):
        if recorded and request[field]["version"] == "v1beta1":
            request[field]["version"] = "v1"
    for field in ("object", "oldObject"):
        request[field] = _object_shape(request[field], recorded=recorded)
    if recorded and request["operation"] == "DELETE":
        request["options"].pop("gracePeriodSeconds", None)  # (the Pod strategy's)
    return request


def reviews_of(reviews: list[JSONDict], *, recorded: bool) -> list[tuple[str, str]]:
    """Each review's webhook path and shape, the mutating first, then the validating
    (called at once) in a stable order, each distinct one once."""
    shapes = {
        (
            review["path"].partition("?")[0],
            json.dumps(review_shape(review, recorded=recorded), sort_keys=True),
        )
        for review in (
            r if "review" not in r else {**r["review"], "path": r["path"]} for r in reviews
        )
    }
    return sorted(shapes, key=lambda entry: (entry[0] != "/mutate", entry))


def recorders_answer(review: JSONDict) -> JSONDict:
    """What the recording's webhook answered: the ``pods/eviction`` one denies the
    evictions of Pods whose name ends in ``-deny``, with a 403."""
    if review["path"] == "/evict" and review["request"]["name"].endswith("-deny"):
        status = {"code": 403, "reason": "Forbidden", "message": "this pod stays"}
        return {"allowed": False, "status": status}
    return {"allowed": True}


def test_serve_sends_the_reviews_the_real_server_sent(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    hook.answer = recorders_answer
    setup(store, server, hook)
    for step in RECORDED["steps"]:
        request = step["request"]
        before = len(hook.reviews)
        status, answer = call(server, request["method"], request["path"], request["body"])
        assert status == step["status"], (step["what"], answer)
        if request["method"] == "POST":
            assert answer == step["answer"], step["what"]
        got = reviews_of(hook.reviews[before:], recorded=False)
        assert got == reviews_of(step["reviews"], recorded=True), step["what"]


def test_no_eviction_sends_the_pods_own_delete() -> None:
    """What the recording shows, and serve's replay above holds it to."""
    for step in RECORDED["steps"]:
        if step["request"]["path"].endswith("/eviction"):
            operations = {
                (
                    r["review"]["request"]["operation"],
                    r["review"]["request"]["resource"]["resource"],
                )
                for r in step["reviews"]
            }
            assert ("DELETE", "pods") not in operations, step["what"]


def test_an_eviction_review_as_recorded() -> None:
    """The fields of the recorded review, spelled out (1.20's kind version aside)."""
    step = next(s for s in RECORDED["steps"] if s["request"]["path"].endswith("evict-me/eviction"))
    review = next(r["review"] for r in step["reviews"] if r["path"].startswith("/evict?"))
    request = review["request"]
    assert request["kind"] == {"group": "policy", "version": "v1beta1", "kind": "Eviction"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["subResource"] == request["requestSubResource"] == "eviction"
    assert request["requestResource"] == request["resource"]
    assert request["operation"] == "CREATE"
    assert request["name"] == "evict-me" and request["namespace"] == NS
    assert request["oldObject"] is None
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}


# -- what admission does to an eviction ------------------------------------------------------


def _evict(server: KubeAPIServer, name: str, query: str = "", **fields: Any) -> tuple[int, Any]:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}, **fields}
    return call(server, "POST", f"{PODS}/{name}/eviction{query}", body)


def _exists(server: KubeAPIServer, name: str) -> bool:
    return call(server, "GET", f"{PODS}/{name}")[0] == 200


def test_a_denial_is_the_clients_answer_and_the_pod_stays(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    def answer(review: JSONDict) -> JSONDict:
        if review["path"] == "/evict":
            return {
                "allowed": False,
                "status": {"code": 403, "reason": "Forbidden", "message": "this pod stays"},
            }
        return {"allowed": True}

    hook.answer = answer
    setup(store, server, hook)
    status, body = _evict(server, "running")
    assert status == 403
    assert body["message"] == (
        'admission webhook "evict.evictadm.example.com" denied the request: this pod stays'
    )
    assert body["reason"] == "Forbidden"
    assert _exists(server, "running")
    budget = call(server, "GET", f"{PDBS}/evictadm-budget")[1]
    assert budget["status"]["disruptionsAllowed"] == 1  # not spent


def test_a_denied_budget_write_fails_the_eviction(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    def answer(review: JSONDict) -> JSONDict:
        request = review["request"]
        if request["resource"]["resource"] == "poddisruptionbudgets":
            return {"allowed": False, "status": {"message": "budget frozen"}}
        return {"allowed": True}

    hook.answer = answer
    setup(store, server, hook)
    status, body = _evict(server, "running")
    assert status == 400, body
    assert body["message"].endswith("denied the request: budget frozen")
    assert _exists(server, "running")
    update = next(
        r["request"] for r in hook.reviews if r["request"]["resource"]["resource"] != "pods"
    )
    assert update["operation"] == "UPDATE" and update["subResource"] == "status"
    assert update["userInfo"]["username"] == "system:apiserver"
    assert update["userInfo"]["groups"] == ["system:masters"]
    assert update["oldObject"]["status"]["disruptionsAllowed"] == 1
    assert update["object"]["status"]["disruptionsAllowed"] == 0


def test_a_mutating_webhook_changes_the_eviction_that_is_carried_out(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    """A patch that makes the Eviction a dry run: the Pod stays."""

    def answer(review: JSONDict) -> JSONDict:
        if review["path"] != "/mutate":
            return {"allowed": True}
        patch = [{"op": "add", "path": "/deleteOptions", "value": {"dryRun": ["All"]}}]
        return {
            "allowed": True,
            "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
        }

    hook.answer = answer
    setup(store, server, hook)
    status, body = _evict(server, "evict-me")
    assert status == 201, body
    assert _exists(server, "evict-me")
    validated = [r["request"] for r in hook.reviews if r["path"] == "/evict"]
    assert validated[0]["object"]["deleteOptions"] == {"dryRun": ["All"]}


def test_a_dry_run_is_refused_by_a_hook_with_side_effects(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    setup(store, server, hook, **{"evict.evictadm.example.com": "Some"})
    status, body = _evict(server, "evict-dry", "?dryRun=All")
    assert status == 400
    assert body["message"] == (
        'admission webhook "evict.evictadm.example.com" does not support dry run'
    )
    assert _exists(server, "evict-dry")
    assert not [r for r in hook.reviews if r["path"] == "/evict"]
    # a real eviction is reviewed
    status, body = _evict(server, "evict-dry")
    assert status == 201, body
    assert [r["request"]["dryRun"] for r in hook.reviews if r["path"] == "/evict"] == [False]


def test_the_name_check_comes_between_mutating_and_validating(
    store: InMemoryStore, server: KubeAPIServer, hook: Hook
) -> None:
    setup(store, server, hook)
    status, body = call(
        server,
        "POST",
        f"{PODS}/evict-me/eviction",
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}},
    )
    assert status == 400, body
    assert {r["path"] for r in hook.reviews} == {"/mutate"}


# -- the clock -------------------------------------------------------------------------------


def test_the_last_disruption_is_stamped_with_one_reading_of_the_clock() -> None:
    """The budget's ``DisruptionAllowed`` condition and its ``disruptedPods`` entry carry
    the same time, on a clock that moves at every reading."""
    start = datetime(2030, 1, 1, tzinfo=UTC)
    readings = iter(range(1_000_000))

    def ticking() -> datetime:
        return start + timedelta(seconds=next(readings))

    store = InMemoryStore(clock=ticking)
    with run_in_thread(store) as server:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
        pods = "/api/v1/namespaces/default/pods"
        status, made = call(server, "POST", pods, pod)
        assert status == 201, made
        made["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        assert call(server, "PUT", f"{pods}/web/status", made)[0] == 200
        budgets = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
        body = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        }
        status, budget = call(server, "POST", budgets, body)
        assert status == 201, budget
        budget["status"] = {
            "observedGeneration": 1,
            "disruptionsAllowed": 1,
            "currentHealthy": 2,
            "desiredHealthy": 1,
        }
        assert call(server, "PUT", f"{budgets}/web/status", budget)[0] == 200
        eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web"}}
        status, answer = call(server, "POST", f"{pods}/web/eviction", eviction)
        assert status == 201, answer
        status = call(server, "GET", f"{budgets}/web")[1]["status"]
    (condition,) = status["conditions"]
    assert condition["type"] == "DisruptionAllowed" and condition["status"] == "False"
    assert status["disruptedPods"]["web"] == condition["lastTransitionTime"]
