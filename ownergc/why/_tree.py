"""The explanation tree: frozen values, JSON and the text renderer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ownergc.protocols import JSONDict

__all__ = ["Explanation", "JSONDict", "NextStep", "ObjectRef", "Reason"]


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
        """The tree as text: the object, then what holds it, indented."""
        lines: list[str] = []
        _render(self.root, "", "", lines)
        return "\n".join(lines) + "\n"


def _render(node: Reason, first: str, rest: str, lines: list[str]) -> None:
    lines.append(first + node.summary)
    bar = "│  " if node.children else "   "
    for detail in node.details:
        lines.append(rest + bar + detail)
    for step in node.steps:
        lines.append(rest + bar + "next: " + step.command)
        lines.append(rest + bar + "      " + step.consequence)
    for i, child in enumerate(node.children):
        last = i == len(node.children) - 1
        _render(child, rest + ("└─ " if last else "├─ "), rest + ("   " if last else "│  "), lines)
