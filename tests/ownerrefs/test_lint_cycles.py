"""lint's ownership-cycle rule on random owner graphs: exactly the objects on a cycle,
each finding naming its whole component, whatever hangs off or leads into it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ownergc._core.ownerref_rules import builtin_kinds
from ownergc.lint import lint_objects


def _objects(rng: random.Random, n: int) -> list[dict[str, Any]]:
    objects = []
    for i in range(n):
        owners = [rng.randrange(n + 2) for _ in range(rng.choice([0, 0, 1, 1, 2, 3]))]
        refs = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": f"c{j}", "uid": f"u{j}"}
            for j in owners
        ]
        meta = {"name": f"c{i}", "namespace": "ns", "uid": f"u{i}", "ownerReferences": refs}
        objects.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
    return objects


def _components(objects: list[dict[str, Any]]) -> dict[str, frozenset[str]]:
    """uid -> the uids on a cycle with it (by reachability, the slow obvious way)."""
    owners = {
        o["metadata"]["uid"]: {r["uid"] for r in o["metadata"]["ownerReferences"]} for o in objects
    }

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(owners.get(start, ()))
        while todo:
            uid = todo.pop()
            if uid in owners and uid not in seen:
                seen.add(uid)
                todo.extend(owners[uid])
        return seen

    reaches = {uid: reach(uid) for uid in owners}
    return {
        uid: frozenset(v for v in reaches[uid] if uid in reaches[v])
        for uid in owners
        if uid in reaches[uid]
    }


@pytest.mark.parametrize("seed", range(20))
def test_cycles_are_the_strongly_connected_components(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        objects = _objects(rng, rng.randint(1, 12))
        expected = _components(objects)
        findings = [
            f
            for f in lint_objects(objects, kinds=builtin_kinds(), complete=True)
            if f.rule == "ownership-cycle"
        ]
        assert {f.uid for f in findings} == set(expected)
        for f in findings:
            names = sorted(f"ConfigMap ns/c{uid[1:]}" for uid in expected[str(f.uid)])
            assert "(" + " -> ".join(names) + ")" in f.message
