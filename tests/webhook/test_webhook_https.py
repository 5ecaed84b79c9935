"""`ownergc webhook` over HTTPS: AdmissionReviews in, allowed / warnings / status out.

The server runs in the test's event loop on a self-signed pair, against an
InMemoryStore; httpx posts the reviews as kube-apiserver would (keep-alive,
verifying the certificate against the CA the webhook made).
"""

from __future__ import annotations

import copy
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from ownergc.controller._webhook import AdmissionChecker, OwnerCache
from ownergc.controller._webhook_server import (
    WebhookApp,
    ensure_self_signed,
    serve_webhook,
    server_ssl_context,
)
from ownergc.errors import Unavailable
from ownergc_backends.memory import InMemoryStore

pytestmark = pytest.mark.anyio

OWNER_UID = "5b1b1c8e-0000-4000-8000-00000000000b"
LOCAL_UID = "5b1b1c8e-0000-4000-8000-00000000000a"
NS_UID = "5b1b1c8e-0000-4000-8000-0000000000ff"


def cluster() -> list[dict[str, Any]]:
    """Namespaces a and b, an owner in each, and a cluster-scoped owner."""

    def deploy(ns: str, uid: str) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "owner", "namespace": ns, "uid": uid},
            "spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                },
            },
        }

    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "uid": NS_UID}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}},
        deploy("b", OWNER_UID),
        deploy("a", LOCAL_UID),
    ]


def ref(uid: str = OWNER_UID, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "owner",
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
        **extra,
    }


def review(
    refs: list[Any],
    *,
    namespace: str = "a",
    operation: str = "CREATE",
    old_refs: list[Any] | None = None,
    kind: str = "StatefulSet",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "db", "ownerReferences": refs}
    if namespace:
        meta["namespace"] = namespace
    obj = {"apiVersion": "apps/v1", "kind": kind, "metadata": meta}
    request: dict[str, Any] = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": "apps", "version": "v1", "kind": kind},
        "resource": {"group": "apps", "version": "v1", "resource": kind.lower() + "s"},
        "name": "db",
        "namespace": namespace,
        "operation": operation,
        "object": obj,
        "dryRun": False,
    }
    if old_refs is not None:
        old = copy.deepcopy(obj)
        old["metadata"]["ownerReferences"] = old_refs
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@dataclass
class Webhook:
    client: httpx.AsyncClient
    checker: AdmissionChecker
    url: str

    async def post(self, body: Any) -> dict[str, Any]:
        answer = await self.client.post(self.url + "/validate", json=body)
        assert answer.status_code == 200, answer.text
        out = answer.json()
        assert out["apiVersion"] == "admission.k8s.io/v1"
        assert out["kind"] == "AdmissionReview"
        assert out["response"]["uid"] == body["request"]["uid"]
        response: dict[str, Any] = out["response"]
        return response


async def start(tmp: Path, store: Any, **options: Any) -> AsyncIterator[Webhook]:
    paths = ensure_self_signed(tmp / "certs", ["localhost", "127.0.0.1"])
    checker = AdmissionChecker(OwnerCache(store), **options)
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            lambda task_status: serve_webhook(
                WebhookApp(checker),
                host="127.0.0.1",
                port=0,
                ssl_context=server_ssl_context(paths.cert, paths.key),
                task_status=task_status,
            )
        )
        verify = ssl.create_default_context(cafile=str(paths.ca))
        async with httpx.AsyncClient(verify=verify, timeout=30) as client:
            yield Webhook(client, checker, f"https://localhost:{port}")
        tg.cancel_scope.cancel()


def memory_store() -> InMemoryStore:
    store = InMemoryStore()
    store.load_objects(cluster())
    return store


@pytest.fixture
async def deny(tmp_path: Path) -> AsyncIterator[Webhook]:
    async for hook in start(tmp_path, memory_store(), mode="deny"):
        yield hook


@pytest.fixture
async def warn(tmp_path: Path) -> AsyncIterator[Webhook]:
    async for hook in start(tmp_path, memory_store(), mode="warn"):
        yield hook


async def test_seed_incident_cross_namespace_owner_is_refused(deny: Webhook) -> None:
    """A StatefulSet in a with its controller reference to a Deployment in b."""
    response = await deny.post(review([ref()]))
    assert response["allowed"] is False
    status = response["status"]
    assert status["code"] == 403
    assert "[cross-namespace-owner]" in status["message"]
    assert 'namespace "b"' in status["message"] and "Fix:" in status["message"]
    assert "warnings" not in response


async def test_warn_mode_admits_with_the_rule_and_fix(warn: Webhook) -> None:
    response = await warn.post(review([ref()]))
    assert response["allowed"] is True
    (warning,) = response["warnings"]
    assert "[cross-namespace-owner]" in warning and "Fix:" in warning
    assert "status" not in response


async def test_a_valid_reference_passes(deny: Webhook) -> None:
    response = await deny.post(review([ref(LOCAL_UID)]))
    assert response == {"uid": response["uid"], "allowed": True}
    # A cluster-scoped owner of a namespaced object is fine too.
    ns_ref = {"apiVersion": "v1", "kind": "Namespace", "name": "a", "uid": NS_UID}
    assert (await deny.post(review([ns_ref])))["allowed"] is True


@pytest.mark.parametrize(
    ("refs", "namespace", "rule"),
    [
        ([ref("0000-recreated")], "a", "owner-uid-mismatch"),
        ([{**ref(), "name": "gone", "uid": "nobody"}], "a", "dangling-owner"),
        ([{**ref(), "kind": "Gadget", "apiVersion": "example.com/v1"}], "a", "unknown-owner-kind"),
        ([ref(LOCAL_UID)], "", "namespaced-owner-of-cluster-scoped"),
        (
            [{"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}],
            "a",
            "invalid-owner-reference",
        ),
        (
            [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "owner"}],
            "a",
            "invalid-owner-reference",
        ),
        ([ref(LOCAL_UID), {**ref(LOCAL_UID), "name": "other"}], "a", "multiple-controllers"),
    ],
)
async def test_each_rule_is_refused_in_deny_mode(
    deny: Webhook, refs: list[Any], namespace: str, rule: str
) -> None:
    kind = "ClusterRole" if not namespace else "StatefulSet"
    response = await deny.post(review(refs, namespace=namespace, kind=kind))
    assert response["allowed"] is False
    assert f"[{rule}]" in response["status"]["message"]
    assert deny.checker.metrics.violations[rule] >= 1


async def test_updates_that_keep_the_references_are_not_checked(deny: Webhook) -> None:
    bad = [ref()]
    response = await deny.post(review(bad, operation="UPDATE", old_refs=bad))
    assert response["allowed"] is True
    assert deny.checker.metrics.lookups["get"] == 0
    # An update that adds the bad reference is.
    response = await deny.post(review(bad, operation="UPDATE", old_refs=[]))
    assert response["allowed"] is False
    assert (await deny.post(review(bad, operation="DELETE")))["allowed"] is True


async def test_concurrent_reviews_share_one_owner_lookup(deny: Webhook) -> None:
    answers: list[dict[str, Any]] = []

    async def one() -> None:
        answers.append(await deny.post(review([ref(LOCAL_UID)])))

    async with anyio.create_task_group() as tg:
        for _ in range(50):
            tg.start_soon(one)
    assert len(answers) == 50 and all(a["allowed"] for a in answers)
    assert deny.checker.metrics.lookups["get"] == 1
    assert deny.checker.metrics.requests[("CREATE", "allowed")] == 50


async def test_metrics_health_and_bad_requests(deny: Webhook) -> None:
    await deny.post(review([ref()]))
    metrics = (await deny.client.get(deny.url + "/metrics")).text
    assert 'ownergc_webhook_admission_requests_total{operation="CREATE",decision="denied"} 1' in (
        metrics
    )
    assert 'ownergc_webhook_violations_total{rule="cross-namespace-owner"} 1' in metrics
    assert "ownergc_webhook_admission_duration_seconds_count 1" in metrics
    assert (await deny.client.get(deny.url + "/healthz")).status_code == 200
    bad = await deny.client.post(deny.url + "/validate", content=b"{not json")
    assert bad.status_code == 400 and "bad AdmissionReview" in bad.text
    no_request = await deny.client.post(deny.url + "/validate", json={"kind": "AdmissionReview"})
    assert no_request.status_code == 400


class _Unreachable:
    """A store whose apiserver is down (discovery works from before, lookups fail)."""

    def __init__(self, store: InMemoryStore, *, hang: bool) -> None:
        self.store = store
        self.hang = hang

    async def discover(self) -> Any:
        return await self.store.discover()

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        if self.hang:
            await anyio.sleep_forever()
        raise Unavailable("connection refused")


@pytest.mark.parametrize("hang", [False, True])
async def test_fails_open_with_a_warning(tmp_path: Path, hang: bool) -> None:
    store = _Unreachable(memory_store(), hang=hang)
    async for hook in start(tmp_path, store, mode="deny", timeout=0.2):
        response = await hook.post(review([ref()]))
        assert response["allowed"] is True
        assert "could not check ownerReferences" in response["warnings"][0]
        assert hook.checker.metrics.requests[("CREATE", "failed_open")] == 1


async def test_fail_closed_refuses(tmp_path: Path) -> None:
    store = _Unreachable(memory_store(), hang=False)
    async for hook in start(tmp_path, store, mode="deny", fail_closed=True):
        response = await hook.post(review([ref(LOCAL_UID)]))
        assert response["allowed"] is False
        assert "failing closed" in response["status"]["message"]


class ListRecorder:
    """The store, with every list's keyword arguments recorded."""

    def __init__(self, inner: InMemoryStore) -> None:
        self.inner = inner
        self.lists: list[dict[str, Any]] = []

    async def list(self, resource: Any, **options: Any) -> Any:
        self.lists.append(options)
        return await self.inner.list(resource, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_the_cross_namespace_lookup_lists_from_the_watch_cache(tmp_path: Path) -> None:
    """Telling the cross-namespace incident from a missing owner lists the owner's
    kind once: from the apiserver's watch cache (one answer), as the collector's
    monitors do. A consistent list of 100k ConfigMaps, hundreds of pages from etcd,
    outran the check's 2 s deadline against a real apiserver and failed open."""
    store = ListRecorder(memory_store())
    async for hook in start(tmp_path, store, mode="deny"):
        response = await hook.post(review([ref()]))
        assert response["allowed"] is False
        assert "[cross-namespace-owner]" in response["status"]["message"]
    assert store.lists and all(options.get("consistent") is False for options in store.lists)
