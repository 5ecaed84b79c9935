"""The namespace controller reports each pass in the namespace's status conditions,
with kube-controller-manager's condition types, reasons and messages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from ownergc.controller._namespace import NamespaceController, _ContentReport, namespace_conditions
from ownergc.errors import ServerError
from ownergc.protocols import DiscoveryResult
from ownergc.testing.faults import FaultyStore
from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import delete, exists, live, make, patch_merge

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(store: InMemoryStore) -> AsyncIterator[NamespaceController]:
    ctl = NamespaceController(store, retry_base=0.01, retry_cap=0.05)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ctl.run)
        with anyio.fail_after(10):
            await ctl.wait_synced()
        yield ctl
        tg.cancel_scope.cancel()


def conditions(store: InMemoryStore, ns: dict[str, Any]) -> dict[str, dict[str, str]]:
    got = live(store, ns)
    assert got is not None
    return {c["type"]: c for c in (got.get("status") or {}).get("conditions") or []}


async def until(check: Any, timeout: float = 10) -> None:
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.02)


async def test_conditions_name_the_content_and_finalizers_that_remain() -> None:
    store = InMemoryStore(terminating_namespaces=True)
    async with running(store):
        ns = await make(store, "Namespace", "shop", namespace=None)
        held = await make(store, "ConfigMap", "held", namespace="shop", finalizers=["example/test"])
        plain = await make(store, "Secret", "plain", namespace="shop")
        await delete(store, ns)
        await until(lambda: "NamespaceContentRemaining" in conditions(store, ns))

        conds = conditions(store, ns)
        assert not exists(store, plain)
        assert [(t, c["status"], c["reason"], c["message"]) for t, c in conds.items()] == [
            (
                "NamespaceDeletionDiscoveryFailure",
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            (
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            (
                "NamespaceDeletionContentFailure",
                "False",
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            ),
            (
                "NamespaceContentRemaining",
                "True",
                "SomeResourcesRemain",
                "Some resources are remaining: configmaps. has 1 resource instances",
            ),
            (
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: example/test in 1 "
                "resource instances",
            ),
        ]
        assert all(c["lastTransitionTime"].endswith("Z") for c in conds.values())

        await patch_merge(store, held, {"metadata": {"finalizers": None}})
        await until(lambda: not exists(store, ns))


async def test_a_failing_list_is_a_content_failure_until_a_pass_succeeds() -> None:
    store = FaultyStore(InMemoryStore(terminating_namespaces=True))
    namespaces = store.resource_for("v1", "Namespace")
    seen: list[dict[str, str]] = []

    async def record(rv: str) -> None:
        async for event in store.watch(namespaces, resource_version=rv, metadata_only=False):
            for c in (event.object.get("status") or {}).get("conditions") or []:
                if c["type"] == "NamespaceDeletionContentFailure":
                    seen.append(c)

    async with running(store), anyio.create_task_group() as tg:
        ns = await make(store, "Namespace", "shop", namespace=None)
        held = await make(store, "ConfigMap", "c", namespace="shop", finalizers=["example/test"])
        tg.start_soon(record, (await store.list(namespaces)).resource_version)
        store.fail_next(
            "list", ServerError("etcd hiccup"), resource=store.resource_for("v1", "ConfigMap")
        )
        await delete(store, ns)
        await until(lambda: any(c["status"] == "False" for c in seen))
        failure, *_ = seen
        assert failure["status"] == "True"
        assert failure["reason"] == "ContentDeletionFailed"
        assert failure["message"] == (
            "Failed to delete all resource types, 1 remaining: configmaps.: etcd hiccup"
        )
        assert seen[-1]["reason"] == "ContentDeleted"
        await patch_merge(store, held, {"metadata": {"finalizers": None}})
        await until(lambda: not exists(store, ns))
        tg.cancel_scope.cancel()


def test_discovery_failure_condition() -> None:
    report = _ContentReport(
        discovery_failures={"metrics.k8s.io/v1beta1": "the server is currently unable"}
    )
    [discovery, *_] = namespace_conditions(report)
    assert discovery == {
        "type": "NamespaceDeletionDiscoveryFailure",
        "status": "True",
        "reason": "DiscoveryFailed",
        "message": "Discovery failed for some groups, 1 failing: metrics.k8s.io/v1beta1: "
        "the server is currently unable",
    }


class _FailingDiscovery:
    """The store, with one aggregated group version whose discovery fails (its
    APIService is unavailable), as kube-apiserver reports it in discovery."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store
        self.failing = True

    async def discover(self) -> DiscoveryResult:
        result = await self.store.discover()
        if not self.failing:
            return result
        failed = {"metrics.k8s.io/v1beta1": "the server is currently unable to handle the request"}
        return DiscoveryResult(result.resources, failed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


async def test_a_discovery_failure_keeps_the_namespace_until_discovery_recovers() -> None:
    store = InMemoryStore(terminating_namespaces=True)
    failing = _FailingDiscovery(store)
    ctl = NamespaceController(failing, retry_base=0.01, retry_cap=0.05)  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        tg.start_soon(ctl.run)
        ns = await make(store, "Namespace", "shop", namespace=None)
        content = await make(store, "ConfigMap", "c", namespace="shop")
        await delete(store, ns)
        await until(
            lambda: (
                conditions(store, ns).get("NamespaceDeletionDiscoveryFailure", {}).get("status")
                == "True"
            )
        )
        # What could be listed was deleted; the namespace stays, as on a real cluster.
        assert not exists(store, content)
        await anyio.sleep(0.2)
        assert exists(store, ns)
        failure = conditions(store, ns)["NamespaceDeletionDiscoveryFailure"]
        assert failure["message"] == (
            "Discovery failed for some groups, 1 failing: metrics.k8s.io/v1beta1: the server is "
            "currently unable to handle the request"
        )
        failing.failing = False
        await until(lambda: not exists(store, ns))
        tg.cancel_scope.cancel()
