"""What each finalizer waits for, and who removes it.

The finalizers of the garbage collector (``foregroundDeletion``, ``orphan``)
and of Kubernetes' own controllers are known by name; any other one is
attributed to the field manager that set it, as far as managedFields show.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ownergc import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    JSONDict,
)
from ownergc.why._snapshot import (
    Snapshot,
    classify_owners,
    group_of,
    meta_of,
    ref_label,
)
from ownergc.why._tree import NextStep, ObjectRef, Reason

FINALIZER_PVC_PROTECTION = "kubernetes.io/pvc-protection"
FINALIZER_PV_PROTECTION = "kubernetes.io/pv-protection"
FINALIZER_CRD_CLEANUP = "customresourcecleanup.apiextensions.k8s.io"
FINALIZER_LB_CLEANUP = "service.kubernetes.io/load-balancer-cleanup"
FINALIZER_JOB_TRACKING = "batch.kubernetes.io/job-tracking"
FINALIZER_PV_CONTROLLER = "kubernetes.io/pv-controller"
FINALIZER_EXTERNAL_PROVISIONER = "external-provisioner.volume.kubernetes.io/finalizer"
PREFIX_EXTERNAL_ATTACHER = "external-attacher/"

MAX_ITEMS_SHOWN = 10


def managers_of_finalizer(obj: Mapping[str, Any], finalizer: str) -> list[str]:
    """Field managers whose managedFields own ``finalizer`` in metadata.finalizers."""
    key = "v:" + json.dumps(finalizer)
    owners: list[str] = []
    for entry in meta_of(obj).get("managedFields") or ():
        if not isinstance(entry, Mapping):
            continue
        fields = entry.get("fieldsV1") or {}
        fins = (fields.get("f:metadata") or {}).get("f:finalizers") or {}
        if key in fins:
            manager = str(entry.get("manager") or "?")
            op = entry.get("operation")
            owners.append(f"{manager} ({op})" if op else manager)
    return owners


def remove_finalizer_step(
    snap: Snapshot, obj: Mapping[str, Any], finalizer: str, consequence: str
) -> NextStep:
    fins = list(meta_of(obj).get("finalizers") or ())
    i = fins.index(finalizer) if finalizer in fins else 0
    path = f"/metadata/finalizers/{i}"
    return NextStep(
        f"kubectl patch {snap.kubectl_target(obj)} --type=json "
        f'-p \'[{{"op":"test","path":"{path}","value":"{finalizer}"}},'
        f'{{"op":"remove","path":"{path}"}}]\'',
        consequence,
    )


@dataclass
class Walk:
    """Shared state of one explanation: what was explained, how deep we may go.

    ``explain_object`` explains a held object in turn (the tree recurses
    through it); it is passed in so that finalizers need not import objects.
    """

    snap: Snapshot
    max_depth: int
    explain_object: Callable[[Walk, JSONDict, int], Reason]
    seen: set[str] = field(default_factory=set)

    def explain(self, obj: JSONDict, depth: int) -> Reason:
        return self.explain_object(self, obj, depth)


def explain_finalizer(w: Walk, obj: JSONDict, finalizer: str, depth: int) -> Reason:
    snap = w.snap
    kind = obj.get("kind")
    me = ObjectRef.of(obj)
    if finalizer == FINALIZER_DELETE_DEPENDENTS:
        return _foreground(w, obj, depth)
    if finalizer == FINALIZER_ORPHAN_DEPENDENTS:
        return _orphan(w, obj, depth)
    if finalizer == FINALIZER_PVC_PROTECTION and kind == "PersistentVolumeClaim":
        return _pvc_protection(w, obj, depth)
    if finalizer == FINALIZER_PV_PROTECTION and kind == "PersistentVolume":
        return _pv_protection(w, obj, depth)
    if finalizer == FINALIZER_CRD_CLEANUP and kind == "CustomResourceDefinition":
        return _crd_cleanup(w, obj, depth)
    if finalizer == FINALIZER_LB_CLEANUP:
        lb = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        addrs = ", ".join(str(i.get("ip") or i.get("hostname")) for i in lb if isinstance(i, dict))
        return Reason(
            "finalizer.loadBalancerCleanup",
            f"finalizer {finalizer}: the service controller deletes the cloud load balancer first",
            None,
            (
                "removed by the service controller of the cloud-controller-manager (or "
                "kube-controller-manager with an in-tree cloud provider) once the cloud "
                "provider has deleted this Service's load balancer"
                + (f" ({addrs})" if addrs else ""),
                "stays when no cloud controller runs (kind, bare metal without a load-balancer "
                "implementation) or when the cloud API refuses the deletion: look at this "
                "Service's events",
            ),
            (
                NextStep(
                    f"kubectl get events {'-n ' + me.namespace if me.namespace else ''} "
                    f"--field-selector involvedObject.name={me.name}".replace("  ", " "),
                    "read-only: shows the cloud controller's errors",
                ),
                remove_finalizer_step(
                    snap,
                    obj,
                    finalizer,
                    "removing it skips the cleanup: the cloud load balancer (and its address "
                    "and cost) may be left behind",
                ),
            ),
        )
    if finalizer == FINALIZER_JOB_TRACKING and kind == "Pod":
        return _job_tracking(w, obj, finalizer)
    if finalizer == FINALIZER_PV_CONTROLLER:
        return Reason(
            "finalizer.pvController",
            f"finalizer {finalizer}: the persistent-volume controller deletes the storage "
            "asset first",
            None,
            (
                "removed by kube-controller-manager's persistentvolume-binder once the in-tree "
                "volume plugin has deleted the volume (reclaimPolicy Delete)",
            ),
            (
                remove_finalizer_step(
                    snap,
                    obj,
                    finalizer,
                    "removing it skips the reclaim: the storage asset may be left behind",
                ),
            ),
        )
    if finalizer == FINALIZER_EXTERNAL_PROVISIONER:
        driver = ((obj.get("spec") or {}).get("csi") or {}).get("driver")
        return Reason(
            "finalizer.externalProvisioner",
            f"finalizer {finalizer}: the CSI external-provisioner deletes the volume first",
            None,
            (
                "removed by the external-provisioner sidecar of the CSI driver"
                + (f" {driver}" if driver else "")
                + " once the driver has deleted the volume (reclaimPolicy Delete); the driver's "
                "controller pods must be running",
            ),
            (
                remove_finalizer_step(
                    snap,
                    obj,
                    finalizer,
                    "removing it skips the reclaim: the volume may be left in the storage system",
                ),
            ),
        )
    if finalizer.startswith(PREFIX_EXTERNAL_ATTACHER):
        return Reason(
            "finalizer.externalAttacher",
            f"finalizer {finalizer}: the CSI external-attacher detaches the volume first",
            None,
            (
                f"removed by the external-attacher sidecar of CSI driver "
                f"{finalizer[len(PREFIX_EXTERNAL_ATTACHER) :]} once the volume is detached; the "
                "driver's controller pods must be running",
            ),
            (
                remove_finalizer_step(
                    snap,
                    obj,
                    finalizer,
                    "removing it skips the detach: the volume may stay attached to its node",
                ),
            ),
        )
    return custom_finalizer(w, obj, finalizer)


def custom_finalizer(w: Walk, obj: JSONDict, finalizer: str) -> Reason:
    managers = managers_of_finalizer(obj, finalizer)
    domain = finalizer.split("/", 1)[0] if "/" in finalizer else ""
    details = []
    if managers:
        details.append("put there by field manager " + ", ".join(managers) + " (managedFields)")
    else:
        details.append("managedFields do not say who put it there")
    details.append(
        "not a finalizer of Kubernetes' own controllers: the controller that added it"
        + (f" (domain {domain})" if domain else "")
        + " must be running to do its cleanup and remove it"
    )
    return Reason(
        "finalizer.custom",
        f"finalizer {finalizer}: waits for its controller",
        None,
        tuple(details),
        (
            remove_finalizer_step(
                w.snap,
                obj,
                finalizer,
                "last resort, when that controller is gone for good: removing it skips its "
                "cleanup (whatever it manages outside this object may be left behind)",
            ),
        ),
    )


def _foreground(w: Walk, obj: JSONDict, depth: int) -> Reason:
    uid = str(meta_of(obj).get("uid") or "")
    blocking: list[JSONDict] = []
    others = 0
    for dep in w.snap.dependents.get(uid, ()):
        refs = [r for r in meta_of(dep).get("ownerReferences") or () if isinstance(r, Mapping)]
        if any(r.get("uid") == uid and r.get("blockOwnerDeletion") is True for r in refs):
            blocking.append(dep)
        else:
            others += 1
    details = [
        "removed by the garbage collector (kube-controller-manager) once no dependent with "
        "blockOwnerDeletion: true remains"
    ]
    if others:
        details.append(
            f"{others} other dependent(s) without blockOwnerDeletion are deleted too but do "
            "not hold it"
        )
    children = tuple(_dependent(w, dep, obj, depth) for dep in blocking)
    if not blocking:
        details.append(
            "nothing blocks it any more: the collector removes the finalizer on its next pass; "
            "if it stays, the garbage collector is not running"
        )
    return Reason(
        "finalizer.foregroundDeletion",
        f"finalizer {FINALIZER_DELETE_DEPENDENTS}: waits for {len(blocking)} blocking dependent(s)",
        None,
        tuple(details),
        (
            remove_finalizer_step(
                w.snap,
                obj,
                FINALIZER_DELETE_DEPENDENTS,
                "the owner goes before its dependents; the collector then deletes them in the "
                "background (they dangle)",
            ),
        )
        if blocking
        else (),
        children,
    )


def _dependent(w: Walk, dep: JSONDict, owner: JSONDict, depth: int) -> Reason:
    """A blocking dependent of a foreground owner, with what holds it."""
    node = w.explain(dep, depth + 1)
    if meta_of(dep).get("deletionTimestamp"):
        return node
    solid = [
        v
        for v in classify_owners(w.snap, dep)
        if v.state == "solid" and v.ref.uid != meta_of(owner).get("uid")
    ]
    if solid:
        note = (
            f"it has another solid owner ({ref_label(solid[0].ref)}): the collector removes "
            "its reference to the owner being deleted instead of deleting it"
        )
    else:
        note = "not deleted yet: the collector deletes it as part of the foreground cascade"
    return Reason(
        node.code, node.summary, node.subject, (note, *node.details), node.steps, node.children
    )


def _orphan(w: Walk, obj: JSONDict, depth: int) -> Reason:
    uid = str(meta_of(obj).get("uid") or "")
    pending = list(w.snap.dependents.get(uid, ()))
    children = tuple(
        Reason(
            "orphan.pendingDependent",
            f"{ObjectRef.of(d)}: still references it",
            ObjectRef.of(d),
            ("the collector removes this reference, then the object stays without it",),
        )
        for d in pending
    )
    details = [
        "removed by the garbage collector once every dependent's reference to this object is "
        "removed (the dependents are kept: orphaned)"
    ]
    if not pending:
        details.append(
            "no dependent references it any more: the collector removes the finalizer on its "
            "next pass; if it stays, the garbage collector is not running"
        )
    steps = (
        (
            remove_finalizer_step(
                w.snap,
                obj,
                FINALIZER_ORPHAN_DEPENDENTS,
                "the dependents that still reference it then dangle and are DELETED by the "
                "collector instead of orphaned",
            ),
        )
        if pending
        else ()
    )
    return Reason(
        "finalizer.orphan",
        f"finalizer {FINALIZER_ORPHAN_DEPENDENTS}: {len(pending)} dependent(s) still to orphan",
        None,
        tuple(details),
        steps,
        children,
    )


def pod_terminated(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _pods_using_claim(snap: Snapshot, pvc: Mapping[str, Any]) -> tuple[list[JSONDict], bool]:
    """Pods using the claim that are not terminated; and whether every pod's spec was known."""
    meta = meta_of(pvc)
    ns, name = meta.get("namespace"), meta.get("name")
    users: list[JSONDict] = []
    complete = True
    for pod in snap.content_of(str(ns)):
        if pod.get("kind") != "Pod" or pod.get("apiVersion") != "v1":
            continue
        spec = pod.get("spec")
        if not isinstance(spec, Mapping):
            complete = False
            continue
        pod_name = meta_of(pod).get("name")
        for vol in spec.get("volumes") or ():
            if not isinstance(vol, Mapping):
                continue
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if claim is None and vol.get("ephemeral") is not None:
                claim = f"{pod_name}-{vol.get('name')}"
            if claim == name and not pod_terminated(pod):
                users.append(pod)
                break
    return users, complete


def _pvc_protection(w: Walk, obj: JSONDict, depth: int) -> Reason:
    users, complete = _pods_using_claim(w.snap, obj)
    details = [
        "removed by kube-controller-manager's pvc-protection controller once no pod that is "
        "not yet terminated uses the claim (spec.volumes[].persistentVolumeClaim.claimName)"
    ]
    if not complete:
        details.append("some pods were read without their spec: their volumes are unknown")
    if not users:
        details.append(
            "no pod uses it any more: the controller removes the finalizer on its next pass; if "
            "it stays, kube-controller-manager (pvc-protection) is not running"
        )
    children = []
    for pod in users:
        node = w.explain(pod, depth + 1)
        phase = (pod.get("status") or {}).get("phase")
        children.append(
            Reason(
                "pvc.usedByPod",
                f"used by {ObjectRef.of(pod)}" + (f" ({phase})" if phase else ""),
                ObjectRef.of(pod),
                ("the claim goes once this pod is deleted or has terminated",),
                (
                    NextStep(
                        f"kubectl delete {w.snap.kubectl_target(pod)}",
                        "stops the pod; the claim is then released and deleted",
                    ),
                )
                if not meta_of(pod).get("deletionTimestamp")
                else (),
                (node,) if meta_of(pod).get("deletionTimestamp") else (),
            )
        )
    return Reason(
        "finalizer.pvcProtection",
        f"finalizer {FINALIZER_PVC_PROTECTION}: in use by {len(users)} pod(s)",
        None,
        tuple(details),
        (
            remove_finalizer_step(
                w.snap,
                obj,
                FINALIZER_PVC_PROTECTION,
                "removing it deletes the claim under running pods: with reclaimPolicy Delete "
                "their volume is destroyed (data loss)",
            ),
        )
        if users
        else (),
        tuple(children),
    )


def _pv_protection(w: Walk, obj: JSONDict, depth: int) -> Reason:
    phase = (obj.get("status") or {}).get("phase")
    claim_ref = (obj.get("spec") or {}).get("claimRef") or {}
    details = [
        "removed by kube-controller-manager's pv-protection controller once the volume is no "
        "longer bound to a claim (status.phase is not Bound)"
    ]
    children: list[Reason] = []
    steps: list[NextStep] = []
    if phase == "Bound":
        claim = w.snap.by_name.get(
            (
                "",
                "PersistentVolumeClaim",
                str(claim_ref.get("namespace") or ""),
                str(claim_ref.get("name") or ""),
            )
        )
        label = f"{claim_ref.get('namespace')}/{claim_ref.get('name')}"
        if claim is not None:
            children.append(w.explain(claim, depth + 1))
            if not meta_of(claim).get("deletionTimestamp"):
                steps.append(
                    NextStep(
                        f"kubectl delete {w.snap.kubectl_target(claim)}",
                        "deletes the claim; the volume is then reclaimed per its "
                        "persistentVolumeReclaimPolicy",
                    )
                )
        else:
            details.append(f"bound to claim {label}, which is not in the snapshot")
        summary = f"finalizer {FINALIZER_PV_PROTECTION}: bound to claim {label}"
    else:
        details.append(
            f"phase is {phase or 'unknown'}: the controller removes the finalizer on its next "
            "pass; if it stays, kube-controller-manager (pv-protection) is not running"
        )
        summary = f"finalizer {FINALIZER_PV_PROTECTION}: not bound"
    steps.append(
        remove_finalizer_step(
            w.snap,
            obj,
            FINALIZER_PV_PROTECTION,
            "removing it deletes a volume a claim still uses (its pods lose their storage)",
        )
    )
    return Reason(
        "finalizer.pvProtection", summary, None, tuple(details), tuple(steps), tuple(children)
    )


def _crd_cleanup(w: Walk, obj: JSONDict, depth: int) -> Reason:
    spec = obj.get("spec") or {}
    group = str(spec.get("group") or "")
    kind = str((spec.get("names") or {}).get("kind") or "")
    plural = str((spec.get("names") or {}).get("plural") or kind.lower())
    items = [
        o
        for o in w.snap.objects
        if o.get("kind") == kind and group_of(str(o.get("apiVersion") or "")) == group
    ]
    deleting = sum(1 for o in items if meta_of(o).get("deletionTimestamp"))
    details = [
        "removed by kube-apiserver's CRD finalizer controller (apiextensions) once every "
        f"{kind} object is gone: it deletes them all, then waits for their own finalizers"
    ]
    if not items:
        details.append(
            "no custom object remains: the apiserver removes the finalizer on its next pass"
        )
    children = tuple(w.explain(o, depth + 1) for o in items[:MAX_ITEMS_SHOWN])
    if len(items) > MAX_ITEMS_SHOWN:
        details.append(f"... and {len(items) - MAX_ITEMS_SHOWN} more {plural}")
    return Reason(
        "finalizer.customResourceCleanup",
        f"finalizer {FINALIZER_CRD_CLEANUP}: {len(items)} {plural}.{group} remaining"
        + (f" ({deleting} being deleted)" if deleting else ""),
        None,
        tuple(details),
        (
            NextStep(
                f"kubectl get {plural}.{group} -A",
                "read-only: the remaining objects; resolve what holds each (see below)",
            ),
            remove_finalizer_step(
                w.snap,
                obj,
                FINALIZER_CRD_CLEANUP,
                "removing it leaves the custom objects in etcd: they come back if the CRD is "
                "created again",
            ),
        )
        if items
        else (),
        children,
    )


def _job_tracking(w: Walk, pod: JSONDict, finalizer: str) -> Reason:
    job = None
    for v in classify_owners(w.snap, pod):
        if v.ref.kind == "Job" and v.owner is not None:
            job = v.owner
    terminated = pod_terminated(pod)
    details = [
        "removed by kube-controller-manager's job controller once it has counted this pod's "
        "outcome in the Job's status (or the Job is gone)"
    ]
    if not terminated:
        details.append("the pod has not terminated yet: the kubelet must stop its containers first")
    details.append(f"owning Job: {ObjectRef.of(job)}" if job is not None else "its Job is gone")
    return Reason(
        "finalizer.jobTracking",
        f"finalizer {finalizer}: the job controller has not accounted for this pod yet",
        None,
        tuple(details),
        (
            remove_finalizer_step(
                w.snap,
                pod,
                finalizer,
                "the Job may not count this pod (it may start a replacement or miscount "
                "completions)",
            ),
        ),
    )
