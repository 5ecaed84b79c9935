"""A minimal in-test store that replays recorded requests through the apply engine.

It does what the apiserver's store does around field management and no more:
one object per sequence, resourceVersion bumped on every real write,
``generation`` by the memory store's rules (custom resources have one,
ConfigMaps none), dry runs not stored, a JSON/merge patch
applied with the project's patch helpers, and the one validation the
recordings exercise (a list left ``null``). Identifiers are produced already in
the fixtures' normalised form (``<uid-N>``, ``<rv-N>``, ``<time>``,
``{namespace}``) so answers compare directly.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from ownergc_backends.memory._fieldmanager import (
    ApplyConflict,
    Node,
    apply,
    builtin_schema,
    crd_schema,
    manager_from_user_agent,
    update_managed_fields,
)
from ownergc_backends.memory._generation import generation_rule
from ownergc_backends.memory._patch import apply_json_merge_patch, apply_json_patch

#: Copies of ../shared/fixtures/real-apiserver-1.24 (what a real v1.24 server answered).
FIXTURE_DIR = Path(__file__).resolve().parents[1] / "data" / "real-apiserver-1.24"

NOW = "<time>"


def load_sequences() -> dict[str, Any]:
    with gzip.open(FIXTURE_DIR / "ssa-random-sequences.json.gz") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def load_exchanges() -> list[dict[str, Any]]:
    with open(FIXTURE_DIR / "ssa-dryrun-exchanges.json") as fh:
        data: list[dict[str, Any]] = json.load(fh)
    return data


def gadget_schema(crd: dict[str, Any]) -> Node:
    return crd_schema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def _not_found(kind: str, resource: str, group: str) -> dict[str, Any]:
    details = (
        {"name": "obj", "group": group, "kind": kind} if group else {"name": "obj", "kind": kind}
    )
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{resource} "obj" not found',
        "reason": "NotFound",
        "details": details,
        "code": 404,
    }


def _null_lists(obj: dict[str, Any], crd: dict[str, Any]) -> list[str]:
    """Fields of array type left null (the server's CRD validation refuses them)."""
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]
    spec = obj.get("spec") or {}
    return [
        f"spec.{name}"
        for name, prop in props.items()
        if prop.get("type") == "array" and name in spec and spec[name] is None
    ]


def _invalid(fields: list[str]) -> dict[str, Any]:
    causes = [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "null": {f} in body must be of type array: "null"',
            "field": f,
        }
        for f in fields
    ]
    summary = ", ".join(f"{c['field']}: {c['message']}" for c in causes)
    if len(causes) > 1:
        summary = "[" + summary + "]"
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'Gadget.ssa.example.com "obj" is invalid: {summary}',
        "reason": "Invalid",
        "details": {
            "name": "obj",
            "group": "ssa.example.com",
            "kind": "Gadget",
            "causes": causes,
        },
        "code": 422,
    }


class Store:
    """One object, the way the apiserver stores it around field management."""

    def __init__(self, kind: str, crd: dict[str, Any]) -> None:
        self.kind = kind
        self.crd = crd
        self.custom = kind == "Gadget"
        if self.custom:
            self.schema = gadget_schema(crd)
            self.resource = "gadgets.ssa.example.com"
            self.plural = "gadgets"
        else:
            schema = builtin_schema("", "v1", "ConfigMap")
            assert schema is not None
            self.schema = schema
            self.resource = "configmaps"
            self.plural = "configmaps"
        # The memory store's own rule, so the recordings check it: a ConfigMap has
        # no generation, a custom resource's counts changes outside metadata.
        self.generation = generation_rule("ssa.example.com" if self.custom else "", self.plural)
        self.obj: dict[str, Any] | None = None
        self.uids = 0
        self.rvs = 0

    def _uid(self) -> str:
        self.uids += 1
        return f"<uid-{self.uids}>"

    def _rv(self) -> str:
        self.rvs += 1
        return f"<rv-{self.rvs}>"

    def _store(self, old: dict[str, Any] | None, new: dict[str, Any], dry: bool) -> dict[str, Any]:
        new = copy.deepcopy(new)
        meta = new.setdefault("metadata", {})
        if old is None:
            meta["namespace"] = "{namespace}"
            meta["uid"] = self._uid()
            meta["creationTimestamp"] = NOW
            self.generation.create(meta)
        elif self.generation.bumps(old, new):
            meta["generation"] = old["metadata"].get("generation", 0) + 1
        if dry:
            if old is None:
                meta.pop("resourceVersion", None)
            return new
        if old is None or new != old:
            meta["resourceVersion"] = self._rv()
        self.obj = new
        return new

    def request(self, step: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        url = urlsplit(step["path"])
        query = parse_qs(url.query)
        dry = query.get("dryRun") == ["All"]
        force = query.get("force") == ["true"]
        field_manager = query.get("fieldManager", [""])[0]
        method = step["method"]
        if method == "GET":
            if self.obj is None:
                return 404, _not_found(
                    self.plural, self.resource, "ssa.example.com" if self.custom else ""
                )
            return 200, copy.deepcopy(self.obj)
        content_type = step["content_type"]
        body = step["body"]
        if content_type == "application/apply-patch+yaml":
            applied = yaml.safe_load(body)
            live = self.obj
            result = apply(
                live, applied, manager=field_manager, force=force, schema=self.schema, now=NOW
            )
            if isinstance(result, ApplyConflict):
                return 409, result.status()
            new = result.object
            if self.custom:
                bad = _null_lists(new, self.crd)
                if bad:
                    return 422, _invalid(bad)
            if live is not None and not result.changed:
                return 200, copy.deepcopy(live)
            stored = self._store(live, new, dry)
            return (201 if live is None else 200), copy.deepcopy(stored)
        if self.obj is None:
            return 404, _not_found(
                self.plural, self.resource, "ssa.example.com" if self.custom else ""
            )
        if content_type == "application/merge-patch+json":
            patched = apply_json_merge_patch(self.obj, body)
        elif content_type == "application/json-patch+json":
            patched = apply_json_patch(self.obj, body)
        else:
            raise AssertionError(f"unexpected content type {content_type}")
        manager = field_manager or manager_from_user_agent(step.get("user_agent"))
        new = update_managed_fields(self.obj, patched, manager=manager, schema=self.schema, now=NOW)
        if self.custom:
            bad = _null_lists(new, self.crd)
            if bad:
                return 422, _invalid(bad)
        stored = self._store(self.obj, new, dry)
        return 200, copy.deepcopy(stored)

    def after(self) -> dict[str, Any]:
        return copy.deepcopy(self.obj) if self.obj is not None else {"status": 404}


def comparable(body: Any) -> Any:
    """A body with the parts whose order the server does not fix put in order."""
    if isinstance(body, dict) and body.get("kind") == "Status":
        body = copy.deepcopy(body)
        causes = body.get("details", {}).get("causes")
        if isinstance(causes, list):
            causes.sort(key=lambda c: (c.get("field", ""), c.get("message", "")))
    return body


def _by_operation_and_name(body: Any) -> Any:
    """The body with managedFields ordered as if every entry had the same time."""
    if not isinstance(body, dict):
        return body
    entries = (body.get("metadata") or {}).get("managedFields")
    if not entries:
        return body
    body = copy.deepcopy(body)
    body["metadata"]["managedFields"] = sorted(
        entries, key=lambda e: (e["operation"], e["manager"], e["apiVersion"])
    )
    return body


def recorded_across_seconds(body: Any) -> bool:
    """True when a recorded managedFields order shows entries written in different seconds.

    The server sorts entries by operation, then time, then manager name; the
    recordings replace every time by ``<time>``, so an order that is not by
    name within an operation can only come from distinct seconds.
    """
    return isinstance(body, dict) and _by_operation_and_name(body) != body


def same(got: Any, want: Any, *, strict_order: bool) -> bool:
    got, want = comparable(got), comparable(want)
    if got == want:
        return True
    if strict_order or not recorded_across_seconds(want):
        return False
    return _by_operation_and_name(got) == _by_operation_and_name(want)


def replay(
    sequence: dict[str, Any], crd: dict[str, Any], *, strict_order: bool = True
) -> list[str]:
    """Differences between the engine's answers and the recorded ones (empty when all match).

    With ``strict_order=False``, a recorded managedFields order that can
    only come from wall-clock seconds (which the recordings erased) is
    compared without its order; everything else stays exact.
    """
    store = Store(sequence["kind"], crd)
    problems: list[str] = []
    for index, step in enumerate(sequence["steps"]):
        status, response = store.request(step)
        if status != step["status"]:
            problems.append(f"step {index}: status {status} != {step['status']}")
        elif not same(response, step["response"], strict_order=strict_order):
            problems.append(
                f"step {index}: response\n  got  {json.dumps(response, sort_keys=True)}\n"
                f"  want {json.dumps(step['response'], sort_keys=True)}"
            )
        if not same(store.after(), step["after"], strict_order=strict_order):
            problems.append(
                f"step {index}: after\n  got  {json.dumps(store.after(), sort_keys=True)}\n"
                f"  want {json.dumps(step['after'], sort_keys=True)}"
            )
        if problems:
            break
    return problems
