"""Real kubectl (Debian's kubernetes-client, kubectl 1.20, or any newer one) against the facade.

``OWNERGC_KUBECTL`` picks the binary; otherwise ``kubectl`` on PATH.
"""

from __future__ import annotations

import re
import subprocess
import time
from typing import Any

import anyio
import pytest

from ownergc.controller import GarbageCollector
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import Kubectl, configmap, request

MANIFESTS = """\
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
  labels: {app: shop}
data:
  color: blue
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
"""

# Built with -f rather than `kubectl create configmap`: kubectl >= 1.32 sends
# protobuf bodies from its generators, which the facade does not decode.
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
data:
  a: "1"
"""


def test_api_resources_lists_served_kinds(kubectl: Kubectl) -> None:
    out = kubectl.run("api-resources").stdout
    assert re.search(r"^deployments\s+deploy\s+apps/v1\s+true\s+Deployment$", out, re.M)
    assert re.search(r"^namespaces\s+ns\s+v1\s+false\s+Namespace$", out, re.M)
    namespaced = kubectl.run("api-resources", "--namespaced=false", "-o", "name").stdout
    assert "nodes" in namespaced.split() and "pods" not in namespaced.split()


def test_version_and_direct_server_flag(kubectl: Kubectl, server: KubeAPIServer) -> None:
    assert "Server Version" in kubectl.run("version").stdout
    result = subprocess.run(
        [kubectl.binary, "--server", server.url, "get", "namespaces", "-o", "name"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"HOME": str(kubectl.workdir), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert "namespace/default" in result.stdout.split()


def test_create_get_and_table_output(kubectl: Kubectl, store: InMemoryStore) -> None:
    created = kubectl.run("create", "-f", kubectl.manifest("all.yaml", MANIFESTS)).stdout
    assert "namespace/shop created" in created and "deployment.apps/web created" in created
    deployment = store.get_object("apps/v1", "Deployment", "web", "shop")
    assert deployment is not None and deployment["spec"]["replicas"] == 1
    got = kubectl.json("get", "configmap", "settings", "-n", "shop")
    assert got["data"] == {"color": "blue"}
    assert (
        got["metadata"]["uid"]
        == store.get_object("v1", "ConfigMap", "settings", "shop")["metadata"]["uid"]
    )
    listing = kubectl.json("get", "deployments", "-n", "shop")
    assert [i["metadata"]["name"] for i in listing["items"]] == ["web"]
    table = kubectl.run("get", "configmaps", "-n", "shop").stdout.splitlines()
    assert table[0].split() == ["NAME", "DATA", "AGE"]  # ConfigMap's printer columns
    assert table[1].split()[0] == "settings"
    wide = kubectl.run("get", "configmaps", "--all-namespaces", "-l", "app=shop").stdout
    assert wide.splitlines()[0].split() == ["NAMESPACE", "NAME", "DATA", "AGE"]
    assert wide.splitlines()[1].split()[:2] == ["shop", "settings"]
    missing = kubectl.run("get", "configmap", "nope", check=False)
    assert missing.returncode == 1
    assert 'configmaps "nope" not found' in missing.stderr


def test_apply_creates_then_patches(
    kubectl: Kubectl, server: KubeAPIServer, store: InMemoryStore
) -> None:
    manifest = MANIFESTS.split("---\n")[0] + "---\n" + MANIFESTS.split("---\n")[1]
    path = kubectl.manifest("app.yaml", manifest)
    kubectl.run("apply", "-f", path)
    stored = store.get_object("v1", "ConfigMap", "settings", "shop")
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"]["annotations"]
    patches = server.verb_counts["patch"]
    kubectl.manifest("app.yaml", manifest.replace("color: blue", "color: red"))
    out = kubectl.run("apply", "-f", path).stdout
    assert "configmap/settings configured" in out
    assert store.get_object("v1", "ConfigMap", "settings", "shop")["data"] == {"color": "red"}
    assert server.verb_counts["patch"] == patches + 1
    again = kubectl.run("apply", "-f", path).stdout
    assert "configmap/settings unchanged" in again


@pytest.mark.parametrize(
    ("patch_type", "patch", "expected"),
    [
        ("strategic", '{"data":{"b":"2"}}', {"a": "1", "b": "2"}),
        ("merge", '{"data":{"a":null,"c":"3"}}', {"c": "3"}),
        ("json", '[{"op":"replace","path":"/data/a","value":"9"}]', {"a": "9"}),
    ],
)
def test_kubectl_patch_types(
    kubectl: Kubectl, store: InMemoryStore, patch_type: str, patch: str, expected: Any
) -> None:
    kubectl.run("create", "-f", kubectl.manifest("p.yaml", CONFIGMAP.format(name="p")))
    kubectl.run("patch", "configmap", "p", "--type", patch_type, "-p", patch)
    assert store.get_object("v1", "ConfigMap", "p", "default")["data"] == expected


def test_custom_kind_strategic_patch_is_refused_but_apply_works(
    kubectl: Kubectl, store: InMemoryStore
) -> None:
    store.register_resource(group="example.com", versions="v1", resource="widgets", kind="Widget")
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: {}\n"
    path = kubectl.manifest("w.yaml", widget.format(1))
    kubectl.run("apply", "-f", path)
    kubectl.manifest("w.yaml", widget.format(2))
    kubectl.run("apply", "-f", path)  # unstructured: kubectl sends a JSON merge patch
    assert store.get_object("example.com/v1", "Widget", "w", "default")["spec"] == {"size": 2}
    refused = kubectl.run(
        "patch",
        "widgets.example.com",
        "w",
        "--type",
        "strategic",
        "-p",
        '{"spec":{"size":3}}',
        check=False,
    )
    assert refused.returncode != 0
    # kubectl 1.20 prints the Status reason; newer ones rephrase the 415.
    assert "UnsupportedMediaType" in refused.stderr or "is not supported by" in refused.stderr


@pytest.mark.parametrize(
    ("cascade", "finalizers"),
    [("orphan", ["orphan"]), ("foreground", ["foregroundDeletion"]), ("background", None)],
)
def test_delete_cascade_options_reach_the_store(
    kubectl: Kubectl, server: KubeAPIServer, store: InMemoryStore, cascade: str, finalizers: Any
) -> None:
    kubectl.run("create", "-f", kubectl.manifest("o.yaml", CONFIGMAP.format(name="owner")))
    out = kubectl.run("delete", "configmap", "owner", f"--cascade={cascade}", "--wait=false")
    assert 'configmap "owner" deleted' in out.stdout
    left = store.get_object("v1", "ConfigMap", "owner", "default")
    if finalizers is None:
        assert left is None
    else:
        assert left["metadata"]["finalizers"] == finalizers
        assert left["metadata"]["deletionTimestamp"]
    assert ("DELETE", "/api/v1/namespaces/default/configmaps/owner", 200) in server.requests


def test_foreground_delete_waits_for_the_garbage_collector(
    kubectl: Kubectl, server: KubeAPIServer, store: InMemoryStore
) -> None:
    """kubectl waits (watching by metadata.name) while the GC removes the dependent first."""
    owner = request(server, "POST", "/api/v1/namespaces/default/configmaps", configmap("boss"))
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "boss",
        "uid": owner.json()["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }
    dependent = configmap("worker", ownerReferences=[ref])
    assert request(server, "POST", "/api/v1/namespaces/default/configmaps", dependent).status == 201

    async def make_gc() -> GarbageCollector:
        return GarbageCollector(store, workers=2, discovery_period=0.5, record_events=False)

    gc: GarbageCollector = server.call(make_gc)
    server.spawn(gc.run)

    async def synced() -> None:
        with anyio.fail_after(10):
            await gc.wait_synced()

    server.call(synced)
    started = time.monotonic()
    out = kubectl.run("delete", "configmap", "boss", "--cascade=foreground", "--timeout=20s")
    assert 'configmap "boss" deleted' in out.stdout
    assert time.monotonic() - started < 20
    assert store.get_object("v1", "ConfigMap", "boss", "default") is None
    assert store.get_object("v1", "ConfigMap", "worker", "default") is None


def test_get_watch_streams_table_rows(kubectl: Kubectl, server: KubeAPIServer) -> None:
    command = [
        kubectl.binary,
        "--kubeconfig",
        str(kubectl.kubeconfig),
        "--cache-dir",
        str(kubectl.cache),
        "get",
        "configmaps",
        "--watch",
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            deadline = time.monotonic() + 10
            while server.open_watches == 0:
                assert time.monotonic() < deadline, "kubectl did not start watching"
                assert proc.poll() is None, "kubectl exited"
                time.sleep(0.05)
            request(server, "POST", "/api/v1/namespaces/default/configmaps", configmap("seen"))
            assert proc.stdout is not None
            lines = [proc.stdout.readline(), proc.stdout.readline()]
        finally:
            proc.kill()
    assert lines[0].split() == ["NAME", "DATA", "AGE"]
    assert lines[1].split()[0] == "seen"
