"""Label and field selectors, parsed and matched as kube-apiserver does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ownergc._kit.http import (
    Request,
)
from ownergc.errors import (
    BadRequest,
)
from ownergc.protocols import JSONDict

__all__ = [
    "_CMP_RE",
    "_EXISTS_RE",
    "_LABEL_KEY",
    "_LABEL_VALUE",
    "_SET_RE",
    "_Filter",
    "_Requirement",
    "_filter_from",
    "_split_selector",
    "parse_field_selector",
    "parse_label_selector",
    "selector_string",
]


@dataclass(frozen=True, slots=True)
class _Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, Any]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("=", "in"):
            return has and value in self.values
        return not has or value not in self.values  # "!=" and "notin"


_LABEL_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"


_LABEL_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"


_SET_RE = re.compile(rf"^({_LABEL_KEY})\s+(in|notin)\s+\(([^()]*)\)$")


_CMP_RE = re.compile(rf"^({_LABEL_KEY})\s*(==|=|!=)\s*({_LABEL_VALUE})$")


_EXISTS_RE = re.compile(rf"^(!?)\s*({_LABEL_KEY})$")


def _split_selector(text: str) -> list[str]:
    """Split on commas outside parentheses (``a in (x,y),b`` has two requirements)."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(text: str) -> list[_Requirement]:
    """Parse a labelSelector; 400 for what kube-apiserver would also reject (or ``<``/``>``)."""
    out: list[_Requirement] = []
    for part in _split_selector(text):
        if m := _SET_RE.match(part):
            values = frozenset(v.strip() for v in m.group(4).split(",") if v.strip())
            out.append(_Requirement(m.group(1), m.group(3), values))
        elif m := _CMP_RE.match(part):
            op = "=" if m.group(3) in ("=", "==") else "!="
            out.append(_Requirement(m.group(1), op, frozenset({m.group(4)})))
        elif m := _EXISTS_RE.match(part):
            out.append(_Requirement(m.group(2), "!" if m.group(1) else "exists"))
        else:
            raise BadRequest(
                f"unable to parse requirement: {part!r} (labelSelector {text!r})",
                reason="BadRequest",
            )
    return out


def parse_field_selector(text: str) -> list[tuple[str, bool, str]]:
    """``metadata.name`` / ``metadata.namespace`` with ``=``, ``==`` or ``!=``."""
    out: list[tuple[str, bool, str]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if "!=" in part:
            key, value = part.split("!=", 1)
            equal = False
        elif "=" in part:
            key, value = part.replace("==", "=", 1).split("=", 1)
            equal = True
        else:
            raise BadRequest(f"invalid field selector: {part!r}", reason="BadRequest")
        key = key.strip()
        if key not in ("metadata.name", "metadata.namespace"):
            raise BadRequest(
                f'"{key}" is not a known field selector: only "metadata.name", '
                '"metadata.namespace"',
                reason="BadRequest",
            )
        out.append((key, equal, value.strip()))
    return out


@dataclass(frozen=True, slots=True)
class _Filter:
    labels: tuple[_Requirement, ...] = ()
    fields: tuple[tuple[str, bool, str], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields

    def matches(self, obj: JSONDict) -> bool:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        if not all(r.matches(labels) for r in self.labels):
            return False
        for key, equal, value in self.fields:
            actual = meta.get("name" if key == "metadata.name" else "namespace") or ""
            if (actual == value) != equal:
                return False
        return True


def _filter_from(request: Request) -> _Filter:
    labels = request.param("labelSelector")
    fields = request.param("fieldSelector")
    return _Filter(
        labels=tuple(parse_label_selector(labels)) if labels else (),
        fields=tuple(parse_field_selector(fields)) if fields else (),
    )


def selector_string(selector: Any) -> str:
    """A workload's ``spec.selector`` as a label selector string (a Scale's
    ``status.selector``, the SELECTOR column of ``kubectl get -o wide``): a LabelSelector
    (``matchLabels`` / ``matchExpressions``), or a ReplicationController's plain map.
    Requirements are sorted by key and each value set sorted, as Kubernetes prints
    them; an empty or malformed selector is the empty string."""
    if not isinstance(selector, dict):
        return ""
    if "matchLabels" in selector or "matchExpressions" in selector:
        labels = selector.get("matchLabels") or {}
        expressions = selector.get("matchExpressions") or []
    else:
        labels, expressions = selector, []
    requirements: list[tuple[str, str]] = []
    if isinstance(labels, dict):
        requirements += [(str(k), f"{k}={v}") for k, v in labels.items()]
    for expression in expressions if isinstance(expressions, list) else []:
        if not isinstance(expression, dict):
            continue
        key, operator = str(expression.get("key", "")), expression.get("operator")
        values = ",".join(sorted(str(v) for v in expression.get("values") or []))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(operator))
        if text is not None:
            requirements.append((key, text))
    return ",".join(text for _, text in sorted(requirements, key=lambda r: r[0]))
