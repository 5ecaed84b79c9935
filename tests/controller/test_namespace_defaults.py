"""NamespaceDefaults keeps what kube-controller-manager's serviceaccount controller and
root-ca-cert-publisher keep in every namespace: ServiceAccount ``default`` and ConfigMap
``kube-root-ca.crt`` (key ``ca.crt``, a PEM certificate, and the publisher's
``kubernetes.io/description`` annotation). They come with the namespace, come back when
deleted or changed while it lives, and go with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from ownergc.controller._namespace_defaults import (
    FAKE_ROOT_CA,
    ROOT_CA_DESCRIPTION,
    NamespaceDefaults,
)
from ownergc.testing._cluster import EmbeddedCluster, new_store
from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import delete, make, patch_merge

pytestmark = pytest.mark.anyio

INITIAL = ("default", "kube-system", "kube-public", "kube-node-lease")


@asynccontextmanager
async def running(store: InMemoryStore) -> AsyncIterator[NamespaceDefaults]:
    ctl = NamespaceDefaults(store, retry_base=0.01, retry_cap=0.05)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ctl.run)
        with anyio.fail_after(10):
            await ctl.wait_synced()
            await ctl.wait_idle()
        yield ctl
        tg.cancel_scope.cancel()


def account(store: InMemoryStore, namespace: str) -> dict[str, Any] | None:
    return store.get_object("v1", "ServiceAccount", "default", namespace)


def root_ca(store: InMemoryStore, namespace: str) -> dict[str, Any] | None:
    return store.get_object("v1", "ConfigMap", "kube-root-ca.crt", namespace)


async def until(check: Any, timeout: float = 10) -> None:
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.02)


def test_the_fake_ca_is_one_well_formed_pem_certificate() -> None:
    lines = FAKE_ROOT_CA.splitlines()
    assert lines[0] == "-----BEGIN CERTIFICATE-----"
    assert lines[-1] == "-----END CERTIFICATE-----"
    assert FAKE_ROOT_CA.endswith("\n")
    import base64

    der = base64.b64decode("".join(lines[1:-1]), validate=True)
    assert der[0] == 0x30  # a DER SEQUENCE
    x509 = pytest.importorskip("cryptography.x509")
    cert = x509.load_pem_x509_certificate(FAKE_ROOT_CA.encode())
    assert "fake" in cert.subject.rfc4514_string()


async def test_the_initial_namespaces_get_both_objects() -> None:
    store = InMemoryStore(terminating_namespaces=True)
    async with running(store) as ctl:
        for ns in INITIAL:
            sa = account(store, ns)
            assert sa is not None and set(sa) == {"apiVersion", "kind", "metadata"}
            cm = root_ca(store, ns)
            assert cm is not None
            assert cm["data"] == {"ca.crt": FAKE_ROOT_CA}
            assert cm["metadata"]["annotations"] == {
                "kubernetes.io/description": ROOT_CA_DESCRIPTION
            }
        assert len(ctl.created) == 2 * len(INITIAL)


async def test_a_new_namespace_gets_both_and_they_come_back_when_deleted() -> None:
    store = InMemoryStore(terminating_namespaces=True)
    async with running(store):
        await make(store, "Namespace", "shop", namespace=None)
        await until(
            lambda: account(store, "shop") is not None and root_ca(store, "shop") is not None
        )

        sa = account(store, "shop")
        cm = root_ca(store, "shop")
        assert sa is not None and cm is not None
        await delete(store, sa)
        await delete(store, cm)
        await until(
            lambda: (
                (a := account(store, "shop")) is not None
                and a["metadata"]["uid"] != sa["metadata"]["uid"]
            )
        )
        await until(
            lambda: (
                (c := root_ca(store, "shop")) is not None
                and c["metadata"]["uid"] != cm["metadata"]["uid"]
            )
        )


async def test_a_changed_root_ca_configmap_is_put_back() -> None:
    store = InMemoryStore(terminating_namespaces=True)
    async with running(store):
        cm = root_ca(store, "default")
        assert cm is not None
        await patch_merge(
            store,
            cm,
            {"metadata": {"annotations": None}, "data": {"ca.crt": "nope", "extra": "x"}},
        )
        await until(
            lambda: (
                (c := root_ca(store, "default")) is not None
                and c["data"] == {"ca.crt": FAKE_ROOT_CA}
                and c["metadata"].get("annotations")
                == {"kubernetes.io/description": ROOT_CA_DESCRIPTION}
            )
        )


async def test_a_terminating_namespace_is_emptied_and_left_alone() -> None:
    cluster = EmbeddedCluster(new_store(), serve_http=False, service_accounts=True)
    store = cluster.store
    async with anyio.create_task_group() as tg:
        await tg.start(cluster.run)
        await make(store, "Namespace", "shop", namespace=None)
        await until(
            lambda: account(store, "shop") is not None and root_ca(store, "shop") is not None
        )
        ns = store.get_object("v1", "Namespace", "shop")
        assert ns is not None
        await delete(store, ns)
        await until(lambda: store.get_object("v1", "Namespace", "shop") is None)
        await cluster.wait_idle()
        assert account(store, "shop") is None and root_ca(store, "shop") is None
        assert cluster.defaults is not None
        assert not [c for c in cluster.defaults.created if "shop/" in c][2:]
        tg.cancel_scope.cancel()


async def test_off_by_default_in_the_embedded_cluster() -> None:
    cluster = EmbeddedCluster(new_store(), serve_http=False)
    async with anyio.create_task_group() as tg:
        await tg.start(cluster.run)
        await cluster.wait_idle()
        assert cluster.defaults is None
        assert account(cluster.store, "default") is None
        assert root_ca(cluster.store, "default") is None
        tg.cancel_scope.cancel()
