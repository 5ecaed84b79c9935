"""`ownergc serve` through kubectl and the official client: objects really cascade."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cli.cli_helpers import ROOT, Kubectl, Served, ownergc, start_serve, stop_serve, wait_for

DEPLOYMENT = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
"""

REPLICASET = """\
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-1
  namespace: shop
  ownerReferences:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
    uid: {uid}
    controller: true
    blockOwnerDeletion: true
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: shop
  ownerReferences:
  - {{apiVersion: apps/v1, kind: Deployment, name: web, uid: {uid}}}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web-1-a
  namespace: shop
  ownerReferences:
  - apiVersion: apps/v1
    kind: ReplicaSet
    name: web-1
    uid: {uid}
    controller: true
    blockOwnerDeletion: true
spec: {{containers: [{{name: web, image: nginx}}]}}
"""

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


def _tree(kubectl: Kubectl) -> tuple[str, str]:
    kubectl.apply("deploy.yaml", DEPLOYMENT)
    deploy = kubectl.uid("deployment", "web", "-n", "shop")
    kubectl.apply("rs.yaml", REPLICASET.format(uid=deploy))
    rs = kubectl.uid("replicaset", "web-1", "-n", "shop")
    kubectl.apply("pod.yaml", POD.format(uid=rs))
    return deploy, rs


def test_banner_and_kubeconfig_file(served: Served) -> None:
    assert served.banner[0].startswith("ownergc serve: Kubernetes API at http://127.0.0.1:")
    config = yaml.safe_load(served.kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"] == served.url


def test_apply_and_get(kubectl: Kubectl) -> None:
    out = kubectl.apply("deploy.yaml", DEPLOYMENT)
    assert "namespace/shop created" in out and "deployment.apps/web created" in out
    names = kubectl.run("get", "deployments", "-n", "shop", "-o", "name").stdout.split()
    assert names == ["deployment.apps/web"]
    assert "web" in kubectl.run("get", "deploy", "-n", "shop").stdout


def test_delete_cascade_background(kubectl: Kubectl) -> None:
    _tree(kubectl)
    kubectl.run("delete", "deployment", "web", "-n", "shop", "--cascade=background")
    wait_for(lambda: not kubectl.exists("pods", "-n", "shop"), what="pods collected")
    assert not kubectl.exists("replicasets", "-n", "shop")
    assert not kubectl.exists("configmap", "web-config", "-n", "shop")


def test_delete_cascade_foreground(kubectl: Kubectl) -> None:
    _tree(kubectl)
    kubectl.run("delete", "deployment", "web", "-n", "shop", "--cascade=foreground", "--wait=true")
    wait_for(lambda: not kubectl.exists("deployments", "-n", "shop"), what="owner removed last")
    assert not kubectl.exists("replicasets", "-n", "shop")
    assert not kubectl.exists("pods", "-n", "shop")


def test_delete_cascade_orphan(kubectl: Kubectl) -> None:
    _tree(kubectl)
    kubectl.run("delete", "deployment", "web", "-n", "shop", "--cascade=orphan")
    wait_for(lambda: not kubectl.exists("deployments", "-n", "shop"), what="owner removed")

    def orphaned() -> bool:
        rs = kubectl.json("get", "replicaset", "web-1", "-n", "shop")
        return not rs["metadata"].get("ownerReferences")

    wait_for(orphaned, what="ownerReferences removed")
    assert kubectl.exists("pod", "web-1-a", "-n", "shop")
    assert kubectl.exists("configmap", "web-config", "-n", "shop")


def test_crd_then_custom_resource_cascades(kubectl: Kubectl) -> None:
    kubectl.apply("crd.yaml", CRD)
    crd = kubectl.json("get", "crd", "widgets.example.com")
    established = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert established["Established"] == "True"
    kubectl.apply(
        "w.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\n",
    )
    uid = kubectl.uid("widget", "w1")
    kubectl.apply(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w1-config\n  ownerReferences:\n"
        f"  - {{apiVersion: example.com/v1, kind: Widget, name: w1, uid: {uid}}}\n",
    )
    kubectl.run("delete", "widget", "w1")
    wait_for(lambda: not kubectl.exists("configmap", "w1-config"), what="CR dependent collected")
    kubectl.run("delete", "crd", "widgets.example.com")
    result = kubectl.run("get", "widgets", check=False)
    assert result.returncode != 0


def test_namespace_deletion_deletes_contents(kubectl: Kubectl) -> None:
    _tree(kubectl)
    kubectl.apply(
        "held.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: held\n  namespace: shop\n"
        "  finalizers: [example.com/hold]\n",
    )
    kubectl.run("delete", "namespace", "shop", "--wait=false")
    ns = kubectl.json("get", "namespace", "shop")
    assert ns["status"]["phase"] == "Terminating"
    wait_for(lambda: not kubectl.exists("deployments,replicasets,pods,configmaps", "-n", "shop"))
    refused = kubectl.run(
        "create", "-f", str(kubectl.workdir / "held.yaml"), "-n", "shop", check=False
    )
    assert refused.returncode != 0 and "being terminated" in refused.stderr
    assert kubectl.exists("namespace", "shop")  # the Secret's finalizer holds it
    kubectl.run(
        "patch",
        "secret",
        "held",
        "-n",
        "shop",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
    )
    wait_for(lambda: not kubectl.exists("namespace", "shop"), what="namespace removed")


def test_namespaces_get_their_service_account_and_root_ca(kubectl: Kubectl) -> None:
    """The serviceaccount controller's and root-ca-cert-publisher's objects, in the
    initial namespaces and in a new one, and back when deleted."""
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert kubectl.exists("serviceaccount", "default", "-n", ns)
        cm = kubectl.json("get", "configmap", "kube-root-ca.crt", "-n", ns)
        assert cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----\n")
    kubectl.run("create", "namespace", "shop")
    wait_for(lambda: kubectl.exists("serviceaccount", "default", "-n", "shop"))
    wait_for(lambda: kubectl.exists("configmap", "kube-root-ca.crt", "-n", "shop"))
    kubectl.run("delete", "serviceaccount", "default", "-n", "shop")
    kubectl.run("delete", "configmap", "kube-root-ca.crt", "-n", "shop")
    wait_for(lambda: kubectl.exists("serviceaccount", "default", "-n", "shop"), what="SA back")
    wait_for(lambda: kubectl.exists("configmap", "kube-root-ca.crt", "-n", "shop"), what="CM back")


def test_pods_are_admitted_by_the_whole_service_account_plugin(kubectl: Kubectl) -> None:
    # A Pod right after its namespace: the plugin waits for the default ServiceAccount.
    kubectl.apply(
        "pod.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\n"
        "spec: {containers: [{name: web, image: nginx}]}\n",
    )
    pod = kubectl.json("get", "pod", "web", "-n", "shop")
    [volume] = pod["spec"]["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == 21
    assert [next(iter(s)) for s in volume["projected"]["sources"]] == [
        "serviceAccountToken",
        "configMap",
        "downwardAPI",
    ]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {
            "name": volume["name"],
            "readOnly": True,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        }
    ]
    refused = kubectl.run(
        "run",
        "ghostly",
        "--image=nginx",
        "--overrides",
        '{"spec": {"serviceAccountName": "ghost"}}',
        check=False,
    )
    assert refused.returncode != 0
    assert (
        'pods "ghostly" is forbidden: error looking up service account default/ghost: '
        'serviceaccount "ghost" not found'
    ) in refused.stderr


def test_official_client_foreground(served: Served) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    api = kubernetes.config.new_client_from_config(str(served.kubeconfig))
    core = kubernetes.client.CoreV1Api(api)
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": True,
    }
    core.create_namespaced_secret(
        "default", {"metadata": {"name": "dep", "ownerReferences": [ref]}}
    )
    core.delete_namespaced_config_map(
        "owner", "default", body=kubernetes.client.V1DeleteOptions(propagation_policy="Foreground")
    )

    def gone() -> bool:
        names = {c.metadata.name for c in core.list_namespaced_config_map("default").items}
        return "owner" not in names

    wait_for(gone, what="foreground owner removed")
    assert "dep" not in {s.metadata.name for s in core.list_namespaced_secret("default").items}
    api.close()


def test_load_seeds_from_a_directory(tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "b-widgets.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Widget\n"
        "metadata: {name: w1, namespace: shop, uid: w-uid}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: shop\n"
        "  ownerReferences: [{apiVersion: example.com/v1, kind: Widget, name: w1, uid: w-uid}]\n"
    )
    (seed / "a-crd.yaml").write_text(
        CRD + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n"
    )
    srv = start_serve(tmp_path, "--load", str(seed))
    try:
        assert any("loaded 4 objects" in line for line in srv.banner)
        import os
        import shutil

        binary = os.environ.get("OWNERGC_KUBECTL") or shutil.which("kubectl")
        if binary is None:
            pytest.skip("no kubectl")
        k = Kubectl(binary, srv.kubeconfig, tmp_path)
        assert k.uid("widget", "w1", "-n", "shop") == "w-uid"
        k.run("delete", "widget", "w1", "-n", "shop")
        wait_for(
            lambda: not k.exists("configmap", "c", "-n", "shop"), what="loaded dependent collected"
        )
    finally:
        assert stop_serve(srv, signal.SIGINT)[0] == 0


def test_prints_kubeconfig_without_out_flag() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ownergc", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Ctrl-C"):
            break
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=20)
    assert proc.returncode == 0
    text = "".join(lines)
    doc = text.split("---\n")[1]
    config = yaml.safe_load(doc)
    assert config["current-context"] == "ownergc"
    assert config["clusters"][0]["cluster"]["server"].startswith("http://127.0.0.1:")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "abc"], "not a port number"),
        (["--port", "70000"], "not a port number"),
        (["--load", "/nonexistent/x.yaml"], "no such file or directory"),
    ],
)
def test_bad_flags_are_one_line_errors(args: list[str], message: str) -> None:
    result = ownergc("serve", *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_bad_manifest_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n---\nkind: [\n"
    )
    result = ownergc("serve", "--port", "0", "--load", str(bad))
    assert result.returncode == 2 and "not valid YAML" in result.stderr
    bad.write_text(
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\n"
    )
    result = ownergc("serve", "--port", "0", "--load", str(bad))
    assert result.returncode == 2 and "Gadget in example.com/v1 is not served" in result.stderr
    assert "Traceback" not in result.stderr
