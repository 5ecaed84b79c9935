"""The explanation tree: frozen values, JSON and the text renderer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ownergc.protocols import JSONDict

__all__ = ["Explanation", "JSONDict", "NextStep", "ObjectRef", "Reason", "RootCause", "Wait"]


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """Which object a node is about."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None
    uid: str | None = None

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        meta = obj.get("metadata") or {}
        return cls(
            str(obj.get("apiVersion") or ""),
            str(obj.get("kind") or ""),
            str(meta.get("name") or ""),
            meta.get("namespace") or None,
            meta.get("uid") or None,
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"

    def to_json(self) -> JSONDict:
        out: JSONDict = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        return out


@dataclass(frozen=True, slots=True)
class NextStep:
    """A command for a person to run (ownergc never runs it) and what it costs."""

    command: str
    consequence: str

    def to_json(self) -> JSONDict:
        return {"command": self.command, "consequence": self.consequence}


@dataclass(frozen=True, slots=True)
class Reason:
    """One node of the tree: a state or a cause, and what holds it (``children``)."""

    code: str
    summary: str
    subject: ObjectRef | None = None
    details: tuple[str, ...] = ()
    steps: tuple[NextStep, ...] = ()
    children: tuple[Reason, ...] = ()

    def walk(self) -> Iterator[Reason]:
        """This node and every descendant, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()

    def codes(self) -> set[str]:
        return {r.code for r in self.walk()}

    def find(self, code: str) -> list[Reason]:
        return [r for r in self.walk() if r.code == code]

    def to_json(self) -> JSONDict:
        out: JSONDict = {"code": self.code, "summary": self.summary}
        if self.subject is not None:
            out["object"] = self.subject.to_json()
        if self.details:
            out["details"] = list(self.details)
        if self.steps:
            out["nextSteps"] = [s.to_json() for s in self.steps]
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out


@dataclass(frozen=True, slots=True)
class Explanation:
    """The answer for one object: its verdict and the tree of reasons."""

    target: ObjectRef
    #: ``deleting`` (stuck or on its way), ``kept`` (the collector will not
    #: delete it), ``collectable`` (the collector will delete it), ``absent``.
    verdict: str
    root: Reason

    def to_json(self) -> JSONDict:
        return {
            "target": self.target.to_json(),
            "verdict": self.verdict,
            "explanation": self.root.to_json(),
        }

    def render(self) -> str:
        """The tree as text: the root cause in one line, then the object and what holds it.

        An object that holds several branches (a namespace's content, a foreground
        owner's dependents) is shown in full once and referred to afterwards.
        """
        lines: list[str] = []
        cause = self.root_cause()
        if cause is not None:
            lines.append("root cause: " + cause.line())
        _render(self.root, "", "", lines, set())
        return "\n".join(lines) + "\n"

    def root_cause(self) -> RootCause | None:
        """What holds a stuck deletion at the bottom of the tree (the first such, depth first).

        None when the object is not being deleted, or nothing below it is a cause
        a person can act on (it is on its way).
        """
        if self.verdict != "deleting":
            return None
        causes = list(_causes(self.root, None))
        if not causes:
            return None
        first = causes[0]
        others = len({c.text for c in causes} - {first.text})
        return RootCause(first.text, first.subject, first.reason, others)

    def chain(self) -> tuple[list[ObjectRef], list[Wait]]:
        """The objects of the tree (first appearance order) and who waits for whom.

        ``holder`` waits for ``held`` when ``held``'s node sits below ``holder``'s
        with no other object in between; ``via`` names the finalizer in between.
        """
        objects: dict[ObjectRef, None] = {}
        waits: dict[Wait, None] = {}
        _chain(self.root, None, "", objects, waits)
        return list(objects), list(waits)


@dataclass(frozen=True, slots=True)
class RootCause:
    """The one-line answer: what holds the deletion, on which object."""

    text: str
    #: The object to look at (the one the finalizer is on, the pod using the claim, ...).
    subject: ObjectRef | None
    reason: Reason
    #: How many other distinct causes the tree shows.
    others: int = 0

    def line(self) -> str:
        more = f" (and {self.others} other cause(s) below)" if self.others else ""
        return self.text + more


@dataclass(frozen=True, slots=True)
class Wait:
    """``holder`` cannot go before ``held``; ``via`` is the finalizer that says so."""

    holder: ObjectRef
    held: ObjectRef
    via: str = ""


#: Finalizers whose controller is named in the root-cause line (by reason code).
_STALLED = {
    "finalizer.custom": "its controller is not running",
    "finalizer.foregroundDeletion": "no blocking dependent is left, so the garbage collector "
    "is not running",
    "finalizer.orphan": "no dependent is left to orphan, so the garbage collector is not running",
    "finalizer.kubernetes": "nothing is left in it, so the namespace controller is not running",
    "finalizer.pvcProtection": "no pod uses it, so the pvc-protection controller is not running",
    "finalizer.pvProtection": "the pv-protection controller has not removed it",
    "finalizer.customResourceCleanup": "no custom object is left, so the apiserver's CRD "
    "finalizer has not run",
    "finalizer.loadBalancerCleanup": "the service controller has not deleted the cloud load "
    "balancer",
    "finalizer.pvController": "the persistent-volume controller has not deleted the storage asset",
    "finalizer.externalProvisioner": "the CSI external-provisioner has not deleted the volume",
    "finalizer.externalAttacher": "the CSI external-attacher has not detached the volume",
    "finalizer.jobTracking": "the job controller has not accounted for this pod",
}


def _finalizer_name(node: Reason) -> str:
    head = node.summary.split(": ", 1)[0]
    return head.removeprefix("finalizer ").removesuffix(" (spec.finalizers)")


def _causes(node: Reason, owner: ObjectRef | None) -> Iterator[RootCause]:
    """Leaves of the tree that a person acts on, with the object they are about."""
    if node.code.startswith("object.") and node.subject is not None:
        owner = node.subject
        if (
            node.code == "object.deleting"
            and not node.children
            and node.steps
            and node.subject.kind == "Pod"
        ):
            yield RootCause(f"{node.subject} is terminating: the kubelet stops it", owner, node)
    if node.code in ("namespace.apiServiceUnavailable", "namespace.discoveryFailed"):
        yield RootCause(node.summary.removeprefix("cause: "), node.subject or owner, node)
        return
    if node.code == "pvc.usedByPod" and not node.children and node.subject is not None:
        where = f" on {owner}" if owner is not None else ""
        yield RootCause(
            f"held by finalizer kubernetes.io/pvc-protection{where}; {node.subject} uses it",
            node.subject,
            node,
        )
        return
    if node.code in _STALLED and not any(c.subject for c in node.walk() if c is not node):
        where = f" on {owner}" if owner is not None else ""
        yield RootCause(
            f"held by finalizer {_finalizer_name(node)}{where}; {_STALLED[node.code]}",
            owner,
            node,
        )
        return
    for child in node.children:
        yield from _causes(child, owner)


def _chain(
    node: Reason,
    holder: ObjectRef | None,
    via: str,
    objects: dict[ObjectRef, None],
    waits: dict[Wait, None],
) -> None:
    if node.subject is not None:
        objects.setdefault(node.subject)
        if holder is not None and holder != node.subject and node.code != "owner.solid":
            waits.setdefault(Wait(holder, node.subject, via))
        holder, via = node.subject, ""
    if node.code.startswith("finalizer."):
        via = _finalizer_name(node)
    for child in node.children:
        _chain(child, holder, via, objects, waits)


def _render(node: Reason, first: str, rest: str, lines: list[str], shown: set[ObjectRef]) -> None:
    full = node.code.startswith("object.") and (node.children or node.details or node.steps)
    if full and node.subject is not None:
        if node.subject in shown:
            lines.append(first + node.summary + " (see above)")
            return
        shown.add(node.subject)
    lines.append(first + node.summary)
    bar = "│  " if node.children else "   "
    for detail in node.details:
        lines.append(rest + bar + detail)
    for step in node.steps:
        lines.append(rest + bar + "next: " + step.command)
        lines.append(rest + bar + "      " + step.consequence)
    for i, child in enumerate(node.children):
        last = i == len(node.children) - 1
        _render(
            child,
            rest + ("└─ " if last else "├─ "),
            rest + ("   " if last else "│  "),
            lines,
            shown,
        )
