"""The namespace controller's ``kubernetes`` finalizer: content, conditions, causes."""

from __future__ import annotations

from ownergc import FINALIZER_KUBERNETES
from ownergc.protocols import JSONDict
from ownergc.why._finalizers import MAX_ITEMS_SHOWN, Walk
from ownergc.why._snapshot import Snapshot, conditions_of, group_of, meta_of
from ownergc.why._tree import NextStep, ObjectRef, Reason

__all__ = ["namespace_finalizer"]

_NAMESPACE_CONDITIONS = {
    "NamespaceDeletionDiscoveryFailure": (
        "discovery of some API groups failed, so the namespace controller cannot list "
        "everything in the namespace and will not finish (usually an unavailable aggregated "
        "API)"
    ),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "some API group versions could not be parsed, so their resources cannot be emptied"
    ),
    "NamespaceDeletionContentFailure": (
        "deleting some of the content failed (an error from the apiserver or a webhook)"
    ),
    "NamespaceContentRemaining": ("objects are still in the namespace: deleted, but not gone yet"),
    "NamespaceFinalizersRemaining": (
        "objects in the namespace are held by finalizers that their controllers must remove"
    ),
}


def _unavailable_apiservices(snap: Snapshot) -> list[JSONDict]:
    out = []
    for o in snap.objects:
        if o.get("kind") != "APIService" or group_of(str(o.get("apiVersion"))) != (
            "apiregistration.k8s.io"
        ):
            continue
        if not (o.get("spec") or {}).get("service"):
            continue  # a local APIService is always available
        available = [c for c in conditions_of(o) if c.get("type") == "Available"]
        if available and available[0].get("status") != "True":
            out.append(o)
    return out


def namespace_finalizer(w: Walk, ns_obj: JSONDict, depth: int) -> Reason:
    snap = w.snap
    name = str(meta_of(ns_obj).get("name"))
    children: list[Reason] = []
    for api in _unavailable_apiservices(snap):
        spec = api.get("spec") or {}
        svc = spec.get("service") or {}
        cond = next(c for c in conditions_of(api) if c.get("type") == "Available")
        gv = f"{spec.get('group')}/{spec.get('version')}"
        children.append(
            Reason(
                "namespace.apiServiceUnavailable",
                f"cause: aggregated API {gv} is unavailable (APIService "
                f"{meta_of(api).get('name')}: {cond.get('reason')})",
                ObjectRef.of(api),
                (
                    f"served by Service {svc.get('namespace')}/{svc.get('name')}: "
                    f"{cond.get('message') or 'no message'}",
                    "discovery of that group fails, so the namespace controller cannot list "
                    "(and delete) its resources in this namespace and never removes its "
                    "finalizer",
                ),
                (
                    NextStep(
                        f"kubectl get {snap.kubectl_target(api)} -o yaml; kubectl get pods,"
                        f"endpoints -n {svc.get('namespace')}",
                        "read-only: why the extension API server is down; fixing it lets the "
                        "namespace finish",
                    ),
                    NextStep(
                        f"kubectl delete apiservice {meta_of(api).get('name')}",
                        "only if that extension API is no longer wanted: its objects in this "
                        "namespace are then never deleted by the namespace controller",
                    ),
                ),
            )
        )
    for gv, err in sorted(snap.discovery_failures.items()):
        children.append(
            Reason(
                "namespace.discoveryFailed",
                f"cause: discovery of {gv} failed",
                None,
                (err, "the namespace controller cannot list that group's resources"),
            )
        )
    for cond in conditions_of(ns_obj):
        ctype = str(cond.get("type"))
        if cond.get("status") != "True":
            continue
        meaning = _NAMESPACE_CONDITIONS.get(ctype, "a condition of the namespace")
        children.append(
            Reason(
                "namespace.condition",
                f"condition {ctype}: {cond.get('reason')}",
                None,
                (str(cond.get("message") or ""), meaning),
            )
        )
    content = [o for o in snap.content_of(name)]
    groups: dict[str, list[JSONDict]] = {}
    for o in content:
        groups.setdefault(snap.kubectl_resource(o), []).append(o)
    for resource, items in sorted(groups.items()):
        deleting = sum(1 for o in items if meta_of(o).get("deletionTimestamp"))
        items_sorted = sorted(items, key=lambda o: not meta_of(o).get("deletionTimestamp"))
        nodes = [w.explain(o, depth + 1) for o in items_sorted[:MAX_ITEMS_SHOWN]]
        more: tuple[str, ...] = ()
        if len(items) > MAX_ITEMS_SHOWN:
            more = (f"... and {len(items) - MAX_ITEMS_SHOWN} more",)
        children.append(
            Reason(
                "namespace.contentRemaining",
                f"{resource}: {len(items)} remaining"
                + (f" ({deleting} being deleted)" if deleting else ""),
                None,
                more,
                (),
                tuple(nodes),
            )
        )
    details = [
        "removed by kube-controller-manager's namespace controller once it has deleted "
        "everything in the namespace and every object is gone"
    ]
    if not children:
        details.append(
            "nothing remains: the namespace controller removes it on its next pass; if it "
            "stays, the namespace controller is not running"
        )
    return Reason(
        "finalizer.kubernetes",
        f"finalizer {FINALIZER_KUBERNETES} (spec.finalizers): {len(content)} object(s) remain "
        f"in {len(groups)} resource(s)",
        None,
        tuple(details),
        (
            NextStep(
                f"kubectl get namespace {name} -o json | jq '.spec.finalizers=[]' | "
                f"kubectl replace --raw /api/v1/namespaces/{name}/finalize -f -",
                "last resort: the remaining content is NOT deleted; it stays in etcd, hidden, "
                "and reappears if a namespace with this name is created again",
            ),
        )
        if children
        else (),
        tuple(children),
    )
