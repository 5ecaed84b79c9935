"""A tiny operator: every Widget gets one ConfigMap per entry of spec.parts, owned by it.

The ConfigMaps carry an ownerReference to their Widget (controller: true,
blockOwnerDeletion: true, as kopf's adopt() and controller-runtime's
SetControllerReference write it), so deleting a Widget must garbage-collect
them. That is the part envtest cannot test: it runs no garbage collector.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"


def owner_reference(widget: dict[str, Any]) -> dict[str, Any]:
    meta = widget["metadata"]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def reconcile(api: client.ApiClient, namespace: str, name: str) -> list[str]:
    """Create the Widget's ConfigMaps (idempotent); returns their names."""
    widget = client.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name
    )
    core = client.CoreV1Api(api)
    existing = {cm.metadata.name for cm in core.list_namespaced_config_map(namespace).items}
    made = []
    for part in widget.get("spec", {}).get("parts", []):
        cm_name = f"{name}-{part}"
        made.append(cm_name)
        if cm_name in existing:
            continue
        core.create_namespaced_config_map(
            namespace,
            {
                "metadata": {"name": cm_name, "ownerReferences": [owner_reference(widget)]},
                "data": {"part": part},
            },
        )
    return made
