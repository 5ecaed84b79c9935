"""ownergc.why as a library: data in, explanation out (no server)."""

from __future__ import annotations

from typing import Any

import pytest

from ownergc.protocols import APIResource
from ownergc.why import Explanation, Reason, TargetNotResolved, explain

VERBS = frozenset({"get", "list", "watch", "delete", "patch"})
RESOURCES = [
    APIResource("", "v1", "configmaps", "ConfigMap", True, VERBS),
    APIResource("", "v1", "pods", "Pod", True, VERBS),
    APIResource("", "v1", "namespaces", "Namespace", False, VERBS),
    APIResource("", "v1", "services", "Service", True, VERBS),
    APIResource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, VERBS),
    APIResource("", "v1", "persistentvolumes", "PersistentVolume", False, VERBS),
    APIResource("apps", "v1", "deployments", "Deployment", True, VERBS),
    APIResource("apps", "v1", "replicasets", "ReplicaSet", True, VERBS),
    APIResource("batch", "v1", "jobs", "Job", True, VERBS),
    APIResource("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False, VERBS),
    APIResource("example.com", "v1", "widgets", "Widget", True, VERBS),
]
DELETED = "2026-11-20T10:00:00Z"


def obj(
    kind: str,
    name: str,
    namespace: str | None = "default",
    *,
    api_version: str = "v1",
    uid: str | None = None,
    owners: list[dict[str, Any]] | None = None,
    finalizers: list[str] | None = None,
    deleting: bool = False,
    **rest: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{kind.lower()}-{name}"}
    if namespace:
        meta["namespace"] = namespace
    if owners:
        meta["ownerReferences"] = owners
    if finalizers:
        meta["finalizers"] = finalizers
    if deleting:
        meta["deletionTimestamp"] = DELETED
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **rest}


def ref(owner: dict[str, Any], *, block: bool | None = None) -> dict[str, Any]:
    out = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if block is not None:
        out["blockOwnerDeletion"] = block
    return out


def run(
    objects: list[dict[str, Any]], kind: str, name: str, ns: str | None = None, **kw: Any
) -> Explanation:
    return explain(objects, RESOURCES, kind=kind, name=name, namespace=ns, **kw)


def only(answer: Explanation, code: str) -> Reason:
    [node] = answer.root.find(code)
    return node


# -- not being deleted ----------------------------------------------------------


def test_no_owners() -> None:
    answer = run([obj("ConfigMap", "a")], "cm", "a")
    assert answer.verdict == "kept"
    assert answer.root.code == "object.noOwners"
    assert answer.root.children == ()


def test_orphaned_object_shows_the_evidence() -> None:
    pod = obj("Pod", "web-7d9f-abcde")
    pod["metadata"]["generateName"] = "web-7d9f-"
    pod["metadata"]["labels"] = {"pod-template-hash": "7d9f"}
    answer = run([pod], "po", "web-7d9f-abcde")
    assert answer.root.code == "object.orphaned"
    assert "metadata.generateName 'web-7d9f-', label pod-template-hash" in answer.root.details[1]
    assert "propagationPolicy=Orphan" in answer.root.details[2]


def test_solid_owner() -> None:
    rs = obj("ReplicaSet", "web", api_version="apps/v1")
    pod = obj("Pod", "web-1", owners=[ref(rs)])
    answer = run([rs, pod], "pod", "web-1")
    assert answer.root.code == "object.heldByOwner"
    assert only(answer, "owner.solid").subject is not None


def test_owner_with_the_same_name_but_another_uid_is_dangling() -> None:
    old = obj("ConfigMap", "boss", uid="old")
    new = obj("ConfigMap", "boss", uid="new")
    dep = obj("ConfigMap", "dep", owners=[ref(old)])
    answer = run([new, dep], "configmap", "dep")
    assert answer.verdict == "collectable"
    dangling = only(answer, "owner.dangling")
    assert "an object named boss exists with another uid (new)" in dangling.details


def test_owner_deleted_in_the_foreground_is_waiting() -> None:
    owner = obj("ConfigMap", "o", finalizers=["foregroundDeletion"], deleting=True)
    dep = obj("ConfigMap", "d", owners=[ref(owner, block=True)])
    answer = run([owner, dep], "cm", "d")
    assert answer.verdict == "collectable"
    assert only(answer, "owner.waitingForDependentsDeletion")


def test_owner_deleting_with_a_custom_finalizer_is_still_solid() -> None:
    owner = obj("ConfigMap", "o", finalizers=["example.com/x"], deleting=True)
    dep = obj("ConfigMap", "d", owners=[ref(owner)])
    answer = run([owner, dep], "cm", "d")
    assert answer.verdict == "kept"
    assert "not in the foreground" in only(answer, "owner.solid").summary


def test_cross_namespace_owner_is_invalid() -> None:
    owner = obj("ConfigMap", "boss", "there")
    dep = obj("ConfigMap", "w", "here", owners=[ref(owner)])
    answer = run([owner, dep], "cm", "w", "here")
    invalid = only(answer, "owner.invalidNamespace")
    assert (
        invalid.summary == "owner ConfigMap boss: invalid — it lives in namespace there, not here"
    )
    assert answer.verdict == "collectable"


def test_namespaced_owner_of_a_cluster_scoped_object() -> None:
    owner = obj("ConfigMap", "cfg")
    pv = obj("PersistentVolume", "pv1", None, owners=[ref(owner)])
    answer = run([owner, pv], "pv", "pv1")
    assert answer.root.code == "object.neverCollected"
    assert only(answer, "owner.namespacedOwnerOfClusterScoped")


def test_owner_kind_not_served() -> None:
    ghost = {"apiVersion": "gone.example.com/v1", "kind": "Ghost", "name": "g", "uid": "g1"}
    answer = run([obj("ConfigMap", "d", owners=[ghost])], "cm", "d")
    assert answer.root.code == "object.neverCollected"
    assert "retries with backoff forever" in only(answer, "owner.unknownKind").details[0]


def test_cluster_scoped_owner_is_found_from_any_namespace() -> None:
    ns_owner = obj("Namespace", "team", None)
    dep = obj("ConfigMap", "d", "other", owners=[ref(ns_owner)])
    answer = run([ns_owner, dep], "cm", "d", "other")
    assert answer.root.code == "object.heldByOwner"


# -- being deleted ------------------------------------------------------------------


def test_custom_finalizer_names_its_field_manager() -> None:
    cm = obj("ConfigMap", "a", finalizers=["example.com/cleanup"], deleting=True)
    cm["metadata"]["managedFields"] = [
        {
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "fieldsV1": {"f:metadata": {"f:labels": {}}},
        },
        {
            "manager": "cleanup-operator",
            "operation": "Update",
            "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}, 'v:"example.com/cleanup"': {}}}},
        },
    ]
    answer = run([cm], "cm", "a")
    node = only(answer, "finalizer.custom")
    assert node.details[0] == "put there by field manager cleanup-operator (Update) (managedFields)"
    assert "(domain example.com)" in node.details[1]
    [step] = node.steps
    assert step.command == (
        "kubectl patch configmaps a -n default --type=json -p "
        '\'[{"op":"test","path":"/metadata/finalizers/0","value":"example.com/cleanup"},'
        '{"op":"remove","path":"/metadata/finalizers/0"}]\''
    )


def test_foreground_recurses_and_counts_non_blocking_dependents() -> None:
    top = obj(
        "Deployment", "web", api_version="apps/v1", finalizers=["foregroundDeletion"], deleting=True
    )
    rs = obj(
        "ReplicaSet",
        "web-1",
        api_version="apps/v1",
        owners=[ref(top, block=True)],
        finalizers=["foregroundDeletion"],
        deleting=True,
    )
    pod = obj(
        "Pod",
        "web-1-a",
        owners=[ref(rs, block=True)],
        finalizers=["example.com/drain"],
        deleting=True,
    )
    loose = obj("ConfigMap", "loose", owners=[ref(top)])
    answer = run([top, rs, pod, loose], "deploy", "web")
    fgs = answer.root.find("finalizer.foregroundDeletion")
    assert [f.summary for f in fgs] == [
        "finalizer foregroundDeletion: waits for 1 blocking dependent(s)",
        "finalizer foregroundDeletion: waits for 1 blocking dependent(s)",
    ]
    assert "1 other dependent(s) without blockOwnerDeletion" in fgs[0].details[1]
    assert "example.com/drain" in only(answer, "finalizer.custom").summary


def test_foreground_dependent_with_another_solid_owner_is_released() -> None:
    owner = obj("ConfigMap", "o", finalizers=["foregroundDeletion"], deleting=True)
    other = obj("ConfigMap", "other")
    dep = obj("ConfigMap", "d", owners=[ref(owner, block=True), ref(other)])
    answer = run([owner, other, dep], "cm", "o")
    [child] = only(answer, "finalizer.foregroundDeletion").children
    assert child.details[0].startswith("it has another solid owner (ConfigMap other)")


def test_foreground_with_nothing_left_says_the_collector_is_not_running() -> None:
    owner = obj("ConfigMap", "o", finalizers=["foregroundDeletion"], deleting=True)
    node = only(run([owner], "cm", "o"), "finalizer.foregroundDeletion")
    assert "the garbage collector is not running" in node.details[-1]
    assert node.steps == ()


def test_ownership_cycle_is_cut() -> None:
    a = obj("ConfigMap", "a", finalizers=["foregroundDeletion"], deleting=True)
    b = obj(
        "ConfigMap",
        "b",
        finalizers=["foregroundDeletion"],
        deleting=True,
        owners=[ref(a, block=True)],
    )
    a["metadata"]["ownerReferences"] = [ref(b, block=True)]
    answer = run([a, b], "cm", "a")
    assert [r.summary for r in answer.root.find("object.cycle")] == [
        "ConfigMap default/a: already explained above"
    ]


def test_depth_limit() -> None:
    chain = [obj("ConfigMap", "c0", finalizers=["foregroundDeletion"], deleting=True)]
    for i in range(1, 5):
        chain.append(
            obj(
                "ConfigMap",
                f"c{i}",
                finalizers=["foregroundDeletion"],
                deleting=True,
                owners=[ref(chain[-1], block=True)],
            )
        )
    answer = run(chain, "cm", "c0", max_depth=2)
    [cut] = answer.root.find("object.depthLimit")
    assert cut.subject is not None and cut.subject.name == "c3"


def test_pvc_protection_counts_running_pods_and_ephemeral_claims() -> None:
    pvc = obj(
        "PersistentVolumeClaim",
        "app-cache",
        finalizers=["kubernetes.io/pvc-protection"],
        deleting=True,
    )
    running = obj(
        "Pod",
        "app",
        spec={"volumes": [{"name": "cache", "ephemeral": {}}]},
        status={"phase": "Running"},
    )
    done = obj(
        "Pod",
        "old",
        spec={"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "app-cache"}}]},
        status={"phase": "Succeeded"},
    )
    answer = run([pvc, running, done], "pvc", "app-cache")
    node = only(answer, "finalizer.pvcProtection")
    assert node.summary == "finalizer kubernetes.io/pvc-protection: in use by 1 pod(s)"
    assert [c.subject.name for c in node.children if c.subject] == ["app"]


def test_pvc_protection_without_pod_specs_says_so() -> None:
    pvc = obj(
        "PersistentVolumeClaim", "d", finalizers=["kubernetes.io/pvc-protection"], deleting=True
    )
    answer = run([pvc, obj("Pod", "metadata-only")], "pvc", "d")
    node = only(answer, "finalizer.pvcProtection")
    assert "read without their spec" in node.details[1]


def test_pv_protection_names_the_bound_claim() -> None:
    pv = obj(
        "PersistentVolume",
        "pv1",
        None,
        finalizers=["kubernetes.io/pv-protection"],
        deleting=True,
        spec={"claimRef": {"namespace": "default", "name": "data"}},
        status={"phase": "Bound"},
    )
    claim = obj("PersistentVolumeClaim", "data")
    answer = run([pv, claim], "pv", "pv1")
    node = only(answer, "finalizer.pvProtection")
    assert node.summary == "finalizer kubernetes.io/pv-protection: bound to claim default/data"
    assert node.children[0].subject is not None
    assert node.steps[0].command == "kubectl delete persistentvolumeclaims data -n default"


def test_pv_protection_released_volume() -> None:
    pv = obj(
        "PersistentVolume",
        "pv1",
        None,
        finalizers=["kubernetes.io/pv-protection"],
        deleting=True,
        status={"phase": "Released"},
    )
    node = only(run([pv], "pv", "pv1"), "finalizer.pvProtection")
    assert node.summary == "finalizer kubernetes.io/pv-protection: not bound"


@pytest.mark.parametrize(
    ("kind", "finalizer", "code", "words"),
    [
        (
            "Service",
            "service.kubernetes.io/load-balancer-cleanup",
            "finalizer.loadBalancerCleanup",
            "cloud-controller-manager",
        ),
        ("Pod", "batch.kubernetes.io/job-tracking", "finalizer.jobTracking", "job controller"),
        (
            "PersistentVolume",
            "kubernetes.io/pv-controller",
            "finalizer.pvController",
            "persistentvolume-binder",
        ),
        (
            "PersistentVolume",
            "external-provisioner.volume.kubernetes.io/finalizer",
            "finalizer.externalProvisioner",
            "external-provisioner",
        ),
        (
            "VolumeAttachment",
            "external-attacher/ebs-csi-aws-com",
            "finalizer.externalAttacher",
            "ebs-csi-aws-com",
        ),
    ],
)
def test_well_known_finalizers_name_their_controller(
    kind: str, finalizer: str, code: str, words: str
) -> None:
    namespaced = kind in ("Service", "Pod")
    api = "storage.k8s.io/v1" if kind == "VolumeAttachment" else "v1"
    target = obj(
        kind,
        "x",
        "default" if namespaced else None,
        api_version=api,
        finalizers=[finalizer],
        deleting=True,
    )
    node = only(run([target], kind.lower(), "x"), code)
    assert words in node.details[0]
    assert node.steps and node.steps[-1].consequence


def test_job_tracking_names_the_job() -> None:
    job = obj("Job", "batch-1", api_version="batch/v1")
    pod = obj(
        "Pod",
        "batch-1-x",
        owners=[ref(job)],
        finalizers=["batch.kubernetes.io/job-tracking"],
        deleting=True,
        status={"phase": "Running"},
    )
    node = only(run([job, pod], "pod", "batch-1-x"), "finalizer.jobTracking")
    assert "the pod has not terminated yet" in node.details[1]
    assert node.details[2] == "owning Job: Job default/batch-1"


def test_deleting_object_shows_why_its_owner_let_it_go() -> None:
    owner = obj("ConfigMap", "boss", "there")
    dep = obj(
        "ConfigMap", "w", "here", owners=[ref(owner)], finalizers=["example.com/x"], deleting=True
    )
    answer = run([owner, dep], "cm", "w", "here")
    assert answer.root.summary.endswith("held by 1 finalizer(s)")
    assert only(answer, "owner.invalidNamespace")


def test_graceful_pod_termination() -> None:
    pod = obj("Pod", "p", deleting=True, spec={"nodeName": "node-1"})
    pod["metadata"]["deletionGracePeriodSeconds"] = 30
    answer = run([pod], "pod", "p")
    assert "the kubelet on node-1 stops its containers (grace period 30s)" in answer.root.details[0]
    assert (
        answer.root.steps[0].command == "kubectl delete pods p -n default --grace-period=0 --force"
    )


def test_namespace_content_by_resource() -> None:
    ns = obj(
        "Namespace",
        "shop",
        None,
        deleting=True,
        spec={"finalizers": ["kubernetes"]},
        status={
            "phase": "Terminating",
            "conditions": [
                {
                    "type": "NamespaceContentRemaining",
                    "status": "True",
                    "reason": "SomeResourcesRemain",
                    "message": "Some resources are remaining: configmaps. has 2 resource instances",
                },
                {
                    "type": "NamespaceDeletionContentFailure",
                    "status": "False",
                    "reason": "ContentDeleted",
                    "message": "All content successfully deleted",
                },
            ],
        },
    )
    held = [
        obj("ConfigMap", f"c{i}", "shop", finalizers=["example.com/x"], deleting=True)
        for i in range(12)
    ]
    widget = obj("Widget", "w", "shop", api_version="example.com/v1")
    answer = run([ns, *held, widget], "namespace", "shop")
    contents = answer.root.find("namespace.contentRemaining")
    assert [c.summary for c in contents] == [
        "configmaps: 12 remaining (12 being deleted)",
        "widgets.example.com: 1 remaining",
    ]
    assert len(contents[0].children) == 10 and contents[0].details == ("... and 2 more",)
    [cond] = answer.root.find("namespace.condition")
    assert cond.summary == "condition NamespaceContentRemaining: SomeResourcesRemain"


def test_discovery_failures_are_named_as_a_cause() -> None:
    ns = obj("Namespace", "shop", None, deleting=True, spec={"finalizers": ["kubernetes"]})
    answer = run(
        [ns], "ns", "shop", discovery_failures={"metrics.k8s.io/v1beta1": "503 service unavailable"}
    )
    node = only(answer, "namespace.discoveryFailed")
    assert node.summary == "cause: discovery of metrics.k8s.io/v1beta1 failed"


def test_crd_cleanup_counts_remaining_objects() -> None:
    crd = obj(
        "CustomResourceDefinition",
        "widgets.example.com",
        None,
        api_version="apiextensions.k8s.io/v1",
        finalizers=["customresourcecleanup.apiextensions.k8s.io"],
        deleting=True,
        spec={"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}},
    )
    widgets = [
        obj("Widget", "a", api_version="example.com/v1"),
        obj("Widget", "b", api_version="example.com/v1", finalizers=["x.io/y"], deleting=True),
    ]
    answer = explain(
        [crd, *widgets],
        [
            *RESOURCES,
            APIResource(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "CustomResourceDefinition",
                False,
                VERBS,
            ),
        ],
        kind="crd",
        name="widgets.example.com",
    )
    node = only(answer, "finalizer.customResourceCleanup")
    assert node.summary == (
        "finalizer customresourcecleanup.apiextensions.k8s.io: 2 widgets.example.com remaining "
        "(1 being deleted)"
    )
    assert len(node.children) == 2


# -- targets, output ------------------------------------------------------------------


def test_absent_target_lists_its_dangling_dependents() -> None:
    gone = obj("ConfigMap", "gone")
    dep = obj("ConfigMap", "d", owners=[ref(gone)])
    answer = run([dep], "cm", "gone")
    assert answer.verdict == "absent"
    assert [c.summary for c in answer.root.children] == ["ConfigMap default/d still references it"]


def test_kind_spellings_and_groups() -> None:
    objects = [
        obj("Deployment", "web", api_version="apps/v1"),
        obj("Widget", "web", api_version="example.com/v1"),
    ]
    for kind in ("deploy", "deployment", "deployments", "Deployment", "deployments.apps"):
        assert run(objects, kind, "web").target.kind == "Deployment"
    assert run(objects, "widgets.example.com", "web").target.kind == "Widget"
    with pytest.raises(TargetNotResolved):
        run(objects, "gizmo", "web")


def test_render_and_json() -> None:
    owner = obj("ConfigMap", "o", finalizers=["foregroundDeletion"], deleting=True)
    dep = obj(
        "ConfigMap",
        "d",
        owners=[ref(owner, block=True)],
        finalizers=["example.com/x"],
        deleting=True,
    )
    answer = run([owner, dep], "cm", "o")
    text = answer.render().splitlines()
    assert text[0] == (
        "root cause: held by finalizer example.com/x on ConfigMap default/d; "
        "its controller is not running"
    )
    assert text[1] == f"ConfigMap default/o: being deleted since {DELETED}, held by 1 finalizer(s)"
    assert text[2] == "└─ finalizer foregroundDeletion: waits for 1 blocking dependent(s)"
    assert text[3].startswith("   │  removed by the garbage collector")
    assert any(line.startswith("   └─ ConfigMap default/d: being deleted") for line in text)
    body = answer.to_json()
    assert body["verdict"] == "deleting"
    assert body["target"]["name"] == "o"
    fg = body["explanation"]["children"][0]
    assert fg["code"] == "finalizer.foregroundDeletion"
    assert fg["nextSteps"][0]["consequence"].startswith("the owner goes before its dependents")


# -- the root cause, repeated blockers, the chain drawn by -o svg ----------------


def _held_namespace() -> list[dict[str, Any]]:
    """Namespace shop deleted; a foreground owner and its finalizer-held dependent inside."""
    ns = obj("Namespace", "shop", None, deleting=True, spec={"finalizers": ["kubernetes"]})
    owner = obj("ConfigMap", "owner", "shop", finalizers=["foregroundDeletion"], deleting=True)
    child = obj(
        "ConfigMap",
        "child",
        "shop",
        owners=[ref(owner, block=True)],
        finalizers=["example.com/hold"],
        deleting=True,
    )
    return [ns, owner, child]


def test_root_cause_of_a_namespace_held_through_a_foreground_owner() -> None:
    answer = run(_held_namespace(), "ns", "shop")
    cause = answer.root_cause()
    assert cause is not None
    assert cause.line() == (
        "held by finalizer example.com/hold on ConfigMap shop/child; its controller is not running"
    )
    assert cause.subject is not None and cause.subject.uid == "uid-configmap-child"
    assert cause.reason.code == "finalizer.custom"
    assert cause.others == 0  # met twice (under the owner, and as content): one cause


def test_a_blocker_under_several_branches_is_shown_once() -> None:
    text = run(_held_namespace(), "ns", "shop").render().splitlines()
    child = [line for line in text if "ConfigMap shop/child: being deleted" in line]
    assert len(child) == 2
    assert "(see above)" not in child[0] and child[1].endswith("(see above)")
    assert sum("finalizer example.com/hold: waits for its controller" in x for x in text) == 1
    # The JSON keeps every branch in full, for tools.
    body = run(_held_namespace(), "ns", "shop").to_json()
    holds = [n for n in _json_nodes(body["explanation"]) if n["code"] == "finalizer.custom"]
    assert len(holds) == 2


def _json_nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    out = [tree]
    for child in tree.get("children", ()):
        out.extend(_json_nodes(child))
    return out


def test_chain_lists_the_objects_and_who_waits_for_whom() -> None:
    objects, waits = run(_held_namespace(), "ns", "shop").chain()
    assert [o.name for o in objects] == ["shop", "owner", "child"]
    pairs = {(w.holder.name, w.held.name, w.via) for w in waits}
    assert pairs == {
        ("shop", "owner", "kubernetes"),
        ("owner", "child", "foregroundDeletion"),
        ("shop", "child", "kubernetes"),
    }


def test_root_cause_names_a_stalled_collector_and_several_causes() -> None:
    owner = obj("ConfigMap", "o", finalizers=["foregroundDeletion"], deleting=True)
    cause = run([owner], "cm", "o").root_cause()
    assert cause is not None and cause.line() == (
        "held by finalizer foregroundDeletion on ConfigMap default/o; no blocking dependent is "
        "left, so the garbage collector is not running"
    )
    two = obj("ConfigMap", "two", finalizers=["example.com/a", "example.com/b"], deleting=True)
    cause = run([two], "cm", "two").root_cause()
    assert cause is not None and cause.others == 1
    assert cause.line().endswith("(and 1 other cause(s) below)")


def test_no_root_cause_line_when_nothing_is_stuck() -> None:
    answer = run([obj("ConfigMap", "a")], "cm", "a")
    assert answer.root_cause() is None
    assert answer.render().startswith("ConfigMap default/a: kept")
