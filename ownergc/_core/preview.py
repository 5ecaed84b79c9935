"""The cascade preview's report: pure functions from before/after states to outcomes.

The preview runs the real GarbageCollector against an in-memory copy and
records what the store saw (removals in resourceVersion order, the final
state). This module turns that record into per-object outcomes, a tree
rooted at the deleted object, and text or JSON. No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ownergc._core.refs import FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS

__all__ = ["Outcome", "PreviewReport", "build_report", "render_text", "report_to_json"]


Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _uid(obj: Obj) -> str:
    return str(_meta(obj).get("uid", ""))


def _label(obj: Obj) -> str:
    meta = _meta(obj)
    ns = meta.get("namespace")
    return f"{obj.get('kind')} {ns + '/' if ns else ''}{meta.get('name')}"


def _owner_uids(obj: Obj) -> list[str]:
    refs = _meta(obj).get("ownerReferences") or []
    return [str(r.get("uid")) for r in refs if isinstance(r, Mapping)]


@dataclass
class Outcome:
    """What happens to one object."""

    uid: str
    label: str
    api_version: str
    kind: str
    namespace: str | None
    name: str
    #: deleted | deleting | blocked | orphaned | kept | unaffected
    state: str
    #: 1-based position among removals, for deleted objects.
    order: int | None = None
    why: str = ""
    finalizers: list[str] = field(default_factory=list)
    owners_removed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "outcome": self.state,
            "order": self.order,
            "reason": self.why,
            "finalizers": self.finalizers,
            "ownerReferencesRemoved": self.owners_removed,
        }


@dataclass
class TreeNode:
    outcome: Outcome
    children: list[TreeNode]
    #: True when this object was already shown higher up (several owners, cycles).
    repeated: bool = False


@dataclass
class PreviewReport:
    target: Outcome
    cascade: str
    tree: TreeNode
    outcomes: dict[str, Outcome]
    removal_order: list[str]
    #: Outcomes of objects changed but not under the target in the tree.
    elsewhere: list[Outcome]
    #: Objects the collector removed before the delete (owners already absent).
    pre_existing_garbage: list[Outcome]
    actions: list[dict[str, Any]]
    complete: bool = True


def _outcome(
    before: Obj,
    after: Obj | None,
    order: Mapping[str, int],
    by_uid_after: Mapping[str, Obj],
    by_uid_before: Mapping[str, Obj],
) -> Outcome:
    meta = _meta(before)
    uid = _uid(before)
    out = Outcome(
        uid=uid,
        label=_label(before),
        api_version=str(before.get("apiVersion")),
        kind=str(before.get("kind")),
        namespace=meta.get("namespace"),
        name=str(meta.get("name")),
        state="unaffected",
    )
    if after is None:
        out.state = "deleted"
        out.order = order.get(uid)
        return out
    ameta = _meta(after)
    out.finalizers = list(ameta.get("finalizers") or [])
    removed = [u for u in _owner_uids(before) if u not in _owner_uids(after)]
    out.owners_removed = removed
    if ameta.get("deletionTimestamp"):
        custom = [
            f
            for f in out.finalizers
            if f not in (FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS)
        ]
        reasons = [f"finalizer {f}" for f in custom]
        if FINALIZER_DELETE_DEPENDENTS in out.finalizers:
            blocking = _blocking_dependents(uid, by_uid_after)
            if blocking:
                reasons.append(
                    "foregroundDeletion: waiting for "
                    + ", ".join(_label(by_uid_after[b]) for b in blocking)
                )
        if FINALIZER_ORPHAN_DEPENDENTS in out.finalizers:
            reasons.append("orphan finalizer not yet processed")
        spec = after.get("spec")
        if (
            after.get("kind") == "Namespace"
            and isinstance(spec, Mapping)
            and "kubernetes" in (spec.get("finalizers") or [])
        ):
            inside = sorted(
                _label(o) for o in by_uid_after.values() if _meta(o).get("namespace") == out.name
            )
            if inside:
                reasons.append("namespace controller waiting for " + ", ".join(inside))
        out.state = "blocked" if reasons else "deleting"
        out.why = "; ".join(reasons)
        if meta.get("deletionTimestamp") and not removed:
            out.why = (out.why + "; " if out.why else "") + "already being deleted before"
        return out
    if removed:
        left = [u for u in _owner_uids(after)]
        names = [_label(by_uid_before[u]) if u in by_uid_before else u for u in removed]
        if left:
            keepers = [_label(by_uid_after[u]) if u in by_uid_after else u for u in left]
            out.state = "kept"
            out.why = f"ownerReference to {', '.join(names)} removed; still owned by " + ", ".join(
                keepers
            )
        else:
            out.state = "orphaned"
            out.why = f"ownerReference to {', '.join(names)} removed"
        return out
    return out


def _blocking_dependents(uid: str, objects: Mapping[str, Obj]) -> list[str]:
    out = []
    for dep_uid, dep in objects.items():
        for ref in _meta(dep).get("ownerReferences") or []:
            if isinstance(ref, Mapping) and ref.get("uid") == uid and ref.get("blockOwnerDeletion"):
                out.append(dep_uid)
    return sorted(out, key=lambda u: _label(objects[u]))


def build_report(
    *,
    target_uid: str,
    cascade: str,
    before: Sequence[Obj],
    after: Sequence[Obj],
    removal_order: Sequence[str],
    pre_existing: Sequence[Obj] = (),
    actions: Sequence[Mapping[str, Any]] = (),
    complete: bool = True,
) -> PreviewReport:
    """Outcomes for every object in ``before`` given the state ``after`` the delete and
    the uids in the order the store removed them."""
    by_before = {_uid(o): o for o in before}
    by_after = {_uid(o): o for o in after}
    order = {uid: i for i, uid in enumerate(removal_order, 1)}
    outcomes = {
        uid: _outcome(o, by_after.get(uid), order, by_after, by_before)
        for uid, o in by_before.items()
    }
    # Objects changed only in ways the rules above do not name (e.g. an update of
    # a foreground owner) stay "unaffected"; the target is always reported.
    dependents: dict[str, list[str]] = {}
    for uid, o in by_before.items():
        for owner in _owner_uids(o):
            dependents.setdefault(owner, []).append(uid)
    target = by_before[target_uid]
    roots: list[str]
    if target.get("kind") == "Namespace" and target.get("apiVersion") == "v1":
        ns = _meta(target).get("name")
        inside = {u for u, o in by_before.items() if _meta(o).get("namespace") == ns}
        roots = [u for u in inside if not any(x in inside for x in _owner_uids(by_before[u]))]
    else:
        roots = []
    shown: set[str] = set()

    def grow(uid: str, path: frozenset[str]) -> TreeNode:
        node = TreeNode(outcomes[uid], [], repeated=uid in shown)
        if node.repeated:
            return node
        shown.add(uid)
        kids = sorted(dependents.get(uid, []) + (roots if uid == target_uid else []), key=_key)
        for kid in kids:
            if kid in path or kid == uid:
                node.children.append(TreeNode(outcomes[kid], [], repeated=True))
            else:
                node.children.append(grow(kid, path | {uid}))
        return node

    def _key(uid: str) -> tuple[int, str]:
        o = outcomes[uid]
        return (o.order if o.order is not None else 1 << 30, o.label)

    tree = grow(target_uid, frozenset())
    elsewhere = sorted(
        (o for u, o in outcomes.items() if u not in shown and o.state != "unaffected"),
        key=lambda o: _key(o.uid),
    )
    garbage = []
    for o in pre_existing:
        g = _outcome(o, None, {}, {}, {})
        g.why = "owners absent before the delete: the collector removes it anyway"
        garbage.append(g)
    return PreviewReport(
        target=outcomes[target_uid],
        cascade=cascade,
        tree=tree,
        outcomes=outcomes,
        removal_order=[u for u in removal_order if u in outcomes],
        elsewhere=elsewhere,
        pre_existing_garbage=garbage,
        actions=[dict(a) for a in actions],
        complete=complete,
    )


def _describe(o: Outcome) -> str:
    if o.state == "deleted":
        return f"deleted (#{o.order})" if o.order is not None else "deleted"
    if o.state in ("blocked", "deleting", "orphaned", "kept"):
        return f"{o.state} ({o.why})" if o.why else o.state
    return "not affected"


def render_text(report: PreviewReport) -> str:
    lines = [f"Deleting {report.target.label} with --cascade={report.cascade}:", ""]

    def walk(node: TreeNode, prefix: str, last: bool, top: bool) -> None:
        o = node.outcome
        text = f"{o.label}  →  {_describe(o)}"
        if node.repeated:
            text = f"{o.label}  (shown above)"
        if top:
            lines.append(text)
            child_prefix = ""
        else:
            lines.append(prefix + ("└── " if last else "├── ") + text)
            child_prefix = prefix + ("    " if last else "│   ")
        for i, kid in enumerate(node.children):
            walk(kid, child_prefix, i == len(node.children) - 1, False)

    walk(report.tree, "", True, True)
    if report.elsewhere:
        lines += ["", "Also affected:"]
        lines += [f"  {o.label}  →  {_describe(o)}" for o in report.elsewhere]
    lines += ["", "Order of removal:"]
    if report.removal_order:
        lines += [
            f"  {i}. {report.outcomes[u].label}" for i, u in enumerate(report.removal_order, 1)
        ]
    else:
        lines.append("  (nothing is removed)")
    counts: dict[str, int] = {}
    for o in report.outcomes.values():
        counts[o.state] = counts.get(o.state, 0) + 1
    summary = ", ".join(
        f"{counts[s]} {s}"
        for s in ("deleted", "blocked", "deleting", "orphaned", "kept")
        if counts.get(s)
    )
    lines += ["", "Summary: " + (summary or "nothing changes")]
    if report.pre_existing_garbage:
        lines += ["", "Collected anyway (their owners are already absent):"]
        lines += [f"  {o.label}" for o in report.pre_existing_garbage]
    if not report.complete:
        lines += ["", "Note: the collector had not settled when the preview timed out."]
    return "\n".join(lines) + "\n"


def report_to_json(report: PreviewReport) -> dict[str, Any]:
    def tree(node: TreeNode) -> dict[str, Any]:
        return {
            "uid": node.outcome.uid,
            "repeated": node.repeated,
            "children": [tree(k) for k in node.children],
        }

    return {
        "target": report.target.to_json(),
        "cascade": report.cascade,
        "complete": report.complete,
        "objects": [
            o.to_json()
            for o in sorted(report.outcomes.values(), key=lambda o: o.label)
            if o.state != "unaffected" or o.uid == report.target.uid
        ],
        "removalOrder": [report.outcomes[u].to_json() for u in report.removal_order],
        "tree": tree(report.tree),
        "preExistingGarbage": [o.to_json() for o in report.pre_existing_garbage],
        "actions": report.actions,
    }
