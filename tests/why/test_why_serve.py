"""`ownergc why` against `ownergc serve`: each cause reproduced with kubectl, then named.

The server runs the garbage collector and the namespace controller, so the
states here are the ones they leave behind (a namespace stuck Terminating, a
foreground owner waiting, ...), not hand-written snapshots.
"""

from __future__ import annotations

import json

from tests.cli.cli_helpers import Kubectl, Served, ownergc, wait_for
from tests.why.why_helpers import why, with_code


def _configmap(kubectl: Kubectl, name: str, namespace: str) -> str:
    """Create an empty ConfigMap; its uid."""
    kubectl.run("create", "configmap", name, "-n", namespace)
    return kubectl.uid("configmap", name, "-n", namespace)


def _true_conditions(kubectl: Kubectl, namespace: str) -> set[str]:
    ns = kubectl.json("get", "namespace", namespace)
    return {c["type"] for c in ns.get("status", {}).get("conditions", []) if c["status"] == "True"}


def _deleting(kubectl: Kubectl, *args: str) -> bool:
    obj = kubectl.json("get", *args)
    return bool(obj["metadata"].get("deletionTimestamp"))


def test_namespace_held_by_a_custom_finalized_object(kubectl: Kubectl, served: Served) -> None:
    kubectl.run("create", "namespace", "shop")
    kubectl.apply(
        "held.yaml",
        """
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: shop, finalizers: [example.com/cleanup]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: plain, namespace: shop}
""",
    )
    kubectl.run("delete", "namespace", "shop", "--wait=false")
    wait_for(lambda: not kubectl.exists("configmap", "plain", "-n", "shop"), what="plain gone")
    wait_for(lambda: _deleting(kubectl, "configmap", "held", "-n", "shop"), what="held deleting")
    wait_for(
        lambda: "NamespaceFinalizersRemaining" in _true_conditions(kubectl, "shop"),
        what="the namespace controller's conditions",
    )

    answer = why("namespace/shop", kubeconfig=served.kubeconfig)

    assert answer["verdict"] == "deleting"
    [ns_fin] = with_code(answer, "finalizer.kubernetes")
    assert "1 object(s) remain" in ns_fin["summary"]
    [content] = with_code(answer, "namespace.contentRemaining")
    assert content["summary"] == "configmaps: 1 remaining (1 being deleted)"
    [held] = with_code(answer, "finalizer.custom")
    assert "example.com/cleanup" in held["summary"]
    assert any("must be running" in d for d in held["details"])
    [step] = held["nextSteps"]
    assert step["command"].startswith("kubectl patch configmaps held -n shop --type=json")
    assert "skips its cleanup" in step["consequence"]
    conditions = {n["summary"]: n["details"] for n in with_code(answer, "namespace.condition")}
    assert conditions == {
        "condition NamespaceContentRemaining: SomeResourcesRemain": [
            "Some resources are remaining: configmaps. has 1 resource instances",
            "objects are still in the namespace: deleted, but not gone yet",
        ],
        "condition NamespaceFinalizersRemaining: SomeFinalizersRemain": [
            "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 "
            "resource instances",
            "objects in the namespace are held by finalizers that their controllers must remove",
        ],
    }


def test_text_output_is_a_tree(kubectl: Kubectl, served: Served) -> None:
    kubectl.run("create", "namespace", "tree")
    kubectl.apply(
        "tree.yaml",
        """
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: tree, finalizers: [example.com/cleanup]}
""",
    )
    kubectl.run("delete", "namespace", "tree", "--wait=false")
    wait_for(lambda: _deleting(kubectl, "configmap", "held", "-n", "tree"), what="held deleting")

    result = ownergc("why", "ns", "tree", "--kubeconfig", str(served.kubeconfig))

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "root cause: held by finalizer example.com/cleanup on ConfigMap tree/held; "
        "its controller is not running"
    )
    assert lines[1].startswith("Namespace tree: being deleted since ")
    assert lines[2].startswith("└─ finalizer kubernetes (spec.finalizers): 1 object(s) remain")
    held = [x for x in lines if "└─ ConfigMap tree/held: being deleted" in x]
    assert held, result.stdout
    assert any("└─ finalizer example.com/cleanup: waits for its controller" in x for x in lines)


def test_foreground_owner_waiting_on_a_finalizer_held_dependent(
    kubectl: Kubectl, served: Served
) -> None:
    kubectl.run("create", "namespace", "fg")
    uid = _configmap(kubectl, "owner", "fg")
    kubectl.apply(
        "dep.yaml",
        f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: dep
  namespace: fg
  finalizers: [example.com/hold]
  ownerReferences:
  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}, blockOwnerDeletion: true}}
""",
    )
    kubectl.run("delete", "configmap", "owner", "-n", "fg", "--cascade=foreground", "--wait=false")
    wait_for(lambda: _deleting(kubectl, "configmap", "dep", "-n", "fg"), what="dep deleting")

    answer = why("cm/owner", "-n", "fg", kubeconfig=served.kubeconfig)

    [fg] = with_code(answer, "finalizer.foregroundDeletion")
    assert fg["summary"] == "finalizer foregroundDeletion: waits for 1 blocking dependent(s)"
    [dep] = fg["children"]
    assert dep["code"] == "object.deleting"
    assert dep["object"]["name"] == "dep"
    [hold] = dep["children"]
    assert hold["code"] == "finalizer.custom" and "example.com/hold" in hold["summary"]

    # The namespace, deleted now, is held by the same chain.
    kubectl.run("delete", "namespace", "fg", "--wait=false")
    answer = why("namespace/fg", kubeconfig=served.kubeconfig)
    [content] = with_code(answer, "namespace.contentRemaining")
    assert content["summary"] == "configmaps: 2 remaining (2 being deleted)"
    assert with_code(answer, "finalizer.foregroundDeletion")
    assert {n["summary"].split(":")[0] for n in with_code(answer, "finalizer.custom")} == {
        "finalizer example.com/hold"
    }


def test_pvc_held_by_a_pod(kubectl: Kubectl, served: Served) -> None:
    kubectl.run("create", "namespace", "vol")
    kubectl.apply(
        "pvc.yaml",
        """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: vol, finalizers: [kubernetes.io/pvc-protection]}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: app, namespace: vol}
spec:
  containers: [{name: app, image: busybox}]
  volumes:
  - {name: data, persistentVolumeClaim: {claimName: data}}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: vol}
spec:
  containers: [{name: other, image: busybox}]
  volumes:
  - {name: scratch, emptyDir: {}}
""",
    )
    kubectl.run("delete", "pvc", "data", "-n", "vol", "--wait=false")

    answer = why("pvc/data", "-n", "vol", kubeconfig=served.kubeconfig)

    assert answer["verdict"] == "deleting"
    [fin] = with_code(answer, "finalizer.pvcProtection")
    assert fin["summary"] == "finalizer kubernetes.io/pvc-protection: in use by 1 pod(s)"
    [used] = with_code(answer, "pvc.usedByPod")
    assert used["object"]["name"] == "app"
    assert used["nextSteps"][0]["command"] == "kubectl delete pods app -n vol"


def test_crd_held_by_its_remaining_custom_objects(kubectl: Kubectl, served: Served) -> None:
    # The store adds the customresourcecleanup finalizer itself, as kube-apiserver does.
    kubectl.apply(
        "crd.yaml",
        """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
""",
    )
    wait_for(
        lambda: kubectl.run("get", "widgets", "-A", check=False).returncode == 0,
        what="widgets served",
    )
    kubectl.run("create", "namespace", "crs")
    kubectl.apply(
        "widget.yaml",
        """
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: crs, finalizers: [example.com/teardown]}
""",
    )
    kubectl.run("delete", "crd", "widgets.example.com", "--wait=false")

    answer = why("crd/widgets.example.com", kubeconfig=served.kubeconfig)

    [fin] = with_code(answer, "finalizer.customResourceCleanup")
    assert fin["summary"] == (
        "finalizer customresourcecleanup.apiextensions.k8s.io: 1 widgets.example.com remaining "
        "(1 being deleted)"
    )
    [w1] = fin["children"]
    assert w1["object"]["name"] == "w1"
    assert "example.com/teardown" in w1["children"][0]["summary"]


def test_dependent_kept_by_a_second_solid_owner(kubectl: Kubectl, served: Served) -> None:
    kubectl.run("create", "namespace", "two")
    first = _configmap(kubectl, "first", "two")
    second = _configmap(kubectl, "second", "two")
    kubectl.apply(
        "dep.yaml",
        f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: dep
  namespace: two
  ownerReferences:
  - {{apiVersion: v1, kind: ConfigMap, name: first, uid: {first}}}
  - {{apiVersion: v1, kind: ConfigMap, name: second, uid: {second}}}
""",
    )
    kubectl.run("delete", "configmap", "first", "-n", "two")
    wait_for(
        lambda: (
            len(kubectl.json("get", "cm", "dep", "-n", "two")["metadata"]["ownerReferences"]) == 1
        ),
        what="the collector to drop the dangling reference",
    )

    answer = why("cm/dep", "-n", "two", kubeconfig=served.kubeconfig)

    assert answer["verdict"] == "kept"
    root = answer["explanation"]
    assert root["code"] == "object.heldByOwner"
    assert root["summary"] == "ConfigMap two/dep: kept — 1 solid owner(s): ConfigMap second"
    [owner] = root["children"]
    assert owner["code"] == "owner.solid" and owner["object"]["uid"] == second


def test_invalid_cross_namespace_reference(kubectl: Kubectl, served: Served) -> None:
    kubectl.run("create", "namespace", "here")
    kubectl.run("create", "namespace", "there")
    boss = _configmap(kubectl, "boss", "there")
    # A finalizer keeps the dependent visible after the collector deleted it.
    kubectl.apply(
        "x.yaml",
        f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: worker
  namespace: here
  finalizers: [example.com/keep]
  ownerReferences:
  - {{apiVersion: v1, kind: ConfigMap, name: boss, uid: {boss}}}
""",
    )
    wait_for(lambda: _deleting(kubectl, "configmap", "worker", "-n", "here"), what="collected")

    answer = why("configmap/worker", "-n", "here", kubeconfig=served.kubeconfig)

    [invalid] = with_code(answer, "owner.invalidNamespace")
    assert invalid["summary"] == (
        "owner ConfigMap boss: invalid — it lives in namespace there, not here"
    )
    assert any("OwnerRefInvalidNamespace" in d for d in invalid["details"])
    assert invalid["object"] == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "boss",
        "namespace": "there",
        "uid": boss,
    }


def test_cluster_scoped_dependent_of_a_namespaced_owner_is_never_collected(
    kubectl: Kubectl, served: Served
) -> None:
    kubectl.run("create", "namespace", "scope")
    cfg = _configmap(kubectl, "cfg", "scope")
    kubectl.apply(
        "cr.yaml",
        f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: owned-by-a-configmap
  ownerReferences:
  - {{apiVersion: v1, kind: ConfigMap, name: cfg, uid: {cfg}}}
rules: []
""",
    )
    kubectl.run("delete", "configmap", "cfg", "-n", "scope")

    answer = why("clusterrole/owned-by-a-configmap", kubeconfig=served.kubeconfig)

    assert answer["explanation"]["code"] == "object.neverCollected"
    assert with_code(answer, "owner.namespacedOwnerOfClusterScoped")
    assert kubectl.exists("clusterrole", "owned-by-a-configmap")


def test_absent_object_exits_1(served: Served) -> None:
    result = ownergc("why", "cm/nothing", "--kubeconfig", str(served.kubeconfig), "-o", "json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["verdict"] == "absent"


def test_unknown_kind_exits_2(served: Served) -> None:
    result = ownergc("why", "gizmo/x", "--kubeconfig", str(served.kubeconfig))
    assert result.returncode == 2
    assert "doesn't have a resource type 'gizmo'" in result.stderr


def test_namespace_held_by_an_unavailable_aggregated_api(kubectl: Kubectl, served: Served) -> None:
    # An aggregated APIService whose server is not running: the store's discovery of
    # metrics.k8s.io/v1beta1 fails (503), so ownergc serve's namespace controller cannot
    # list everything in a namespace and keeps it Terminating, as kube-controller-manager.
    kubectl.apply(
        "apiservice.yaml",
        """
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {namespace: kube-system, name: metrics-server, port: 443}
""",
    )
    kubectl.run("create", "namespace", "monitoring")
    kubectl.run("create", "configmap", "settings", "-n", "monitoring")
    kubectl.run("delete", "namespace", "monitoring", "--wait=false")
    wait_for(
        lambda: "NamespaceDeletionDiscoveryFailure" in _true_conditions(kubectl, "monitoring"),
        what="the namespace controller's discovery failure condition",
    )
    # What can be listed is still deleted; the namespace itself stays.
    wait_for(
        lambda: not kubectl.exists("configmap", "settings", "-n", "monitoring"),
        what="the namespace's content deleted",
    )
    assert kubectl.exists("namespace", "monitoring")

    answer = why("namespace/monitoring", kubeconfig=served.kubeconfig)

    assert answer["verdict"] == "deleting"
    [cause] = with_code(answer, "namespace.apiServiceUnavailable")
    assert cause["object"]["name"] == "v1beta1.metrics.k8s.io"
    assert "metrics.k8s.io/v1beta1" in cause["summary"]
    assert "kubectl delete apiservice v1beta1.metrics.k8s.io" in [
        s["command"] for s in cause["nextSteps"]
    ]
