"""Real scenarios for the pictures: run by the garbage collector and the namespace controller.

Shared by tests/cli/test_cli_pictures.py (which inspects what is drawn) and
docs/img/render.py (which regenerates the images of docs/graph.md and
docs/why.md): an embedded cluster (`ownergc.testing.start_in_thread`, the
store, its REST facade, the GC and the namespace controller), objects created
and deleted through the store as kubectl would, then the states the
controllers leave behind.
"""

from __future__ import annotations

import functools
from typing import Any

from ownergc.testing import ClusterThread

NAMESPACE = "shop"
DRAIN = "example.com/drain"


def _ref(owner: dict[str, Any], *, controller: bool, block: bool) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": block,
    }


def _create(cluster: ClusterThread, obj: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = cluster.call(cluster.store.create_object, obj)
    return created


def _delete(cluster: ClusterThread, api_version: str, kind: str, name: str, **kw: Any) -> None:
    resource = cluster.store.resource_for(api_version, kind)
    cluster.call(functools.partial(cluster.store.delete, resource, name, **kw))


def _pod(name: str, owner: dict[str, Any], finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "labels": {"app": "web", "pod-template-hash": "5d8f7"},
        "ownerReferences": [_ref(owner, controller=True, block=True)],
    }
    if finalizers:
        meta["finalizers"] = finalizers
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
    }


def foreground_blocked_by_finalizer(cluster: ClusterThread) -> None:
    """Deployment shop/web deleted in the foreground; one of its pods carries a finalizer.

    Left behind: the Deployment and its ReplicaSet waiting for their dependents,
    Pod web-5d8f7-a held by ``example.com/drain`` (no controller removes it),
    and ClusterRole web-reader, whose namespaced owner the GC cannot resolve.
    """
    _create(cluster, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    web = _create(
        cluster,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NAMESPACE},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
                },
            },
        },
    )
    rs = _create(
        cluster,
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "web-5d8f7",
                "namespace": NAMESPACE,
                "ownerReferences": [_ref(web, controller=True, block=True)],
            },
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
                },
            },
        },
    )
    _create(cluster, _pod("web-5d8f7-a", rs, [DRAIN]))
    _create(cluster, _pod("web-5d8f7-b", rs))
    _create(
        cluster,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "web-config",
                "namespace": NAMESPACE,
                "ownerReferences": [_ref(web, controller=False, block=False)],
            },
            "data": {"greeting": "hello"},
        },
    )
    _create(
        cluster,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": "web-reader",
                "ownerReferences": [_ref(web, controller=False, block=False)],
            },
            "rules": [],
        },
    )
    cluster.wait_idle()
    _delete(
        cluster,
        "apps/v1",
        "Deployment",
        "web",
        namespace=NAMESPACE,
        propagation_policy="Foreground",
    )
    cluster.wait_idle()


def stuck_namespace(cluster: ClusterThread) -> None:
    """Then namespace shop deleted: its content goes, except what the finalizer holds."""
    _delete(cluster, "v1", "Namespace", NAMESPACE)
    cluster.wait_idle()
