"""Engine properties the replays rely on, checked directly."""

from __future__ import annotations

import copy

from ownergc_backends.memory._fieldmanager import (
    ApplyConflict,
    ApplyResult,
    EntryKey,
    apply,
    builtin_schema,
    update_managed_fields,
)
from ownergc_backends.memory._fieldmanager.conflicts import reported_paths
from tests.ssa.replay import gadget_schema, load_sequences

NOW = "2026-11-24T20:19:18Z"
GADGET = gadget_schema(load_sequences()["crd"])


def _gadget(spec: dict[str, object]) -> dict[str, object]:
    return {
        "apiVersion": "ssa.example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "obj"},
        "spec": spec,
    }


def test_inputs_are_not_mutated() -> None:
    first = apply(
        None,
        _gadget({"ports": [{"name": "a", "port": 1}]}),
        manager="m",
        force=False,
        schema=GADGET,
        now=NOW,
    )
    assert isinstance(first, ApplyResult)
    live = copy.deepcopy(first.object)
    applied = _gadget({"tags": ["x"]})
    applied_before = copy.deepcopy(applied)
    apply(live, applied, manager="m", force=False, schema=GADGET, now=NOW)
    assert live == first.object
    assert applied == applied_before


def test_sibling_conflicts_print_as_the_last_one_like_the_server() -> None:
    # Recorded in sequence 100011: two conflicts under one map-list item both
    # print as the last field, an artefact of how the server builds the paths.
    item = ("f:spec", "f:ports", 'k:{"name":"https"}')
    paths = reported_paths(frozenset({(*item, "f:port"), (*item, "f:proto")}))
    assert paths == [(*item, "f:proto"), (*item, "f:proto")]
    # Shallow paths have their own arrays and print as they are.
    shallow = reported_paths(frozenset({("f:spec", "f:args"), ("f:spec", "f:size")}))
    assert shallow == [("f:spec", "f:args"), ("f:spec", "f:size")]


def test_an_update_takes_changed_fields_and_keeps_equal_ones_shared() -> None:
    cm = builtin_schema("", "v1", "ConfigMap")
    assert cm is not None
    base = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"a": "1", "b": "1"},
    }
    created = apply(None, base, manager="app", force=False, schema=cm, now=NOW)
    assert isinstance(created, ApplyResult)
    live = created.object
    new = copy.deepcopy(live)
    new["data"]["b"] = "2"
    updated = update_managed_fields(live, new, manager="editor", schema=cm, now=NOW)
    owners = {e["manager"]: e["fieldsV1"] for e in updated["metadata"]["managedFields"]}
    assert owners == {"app": {"f:data": {"f:a": {}}}, "editor": {"f:data": {"f:b": {}}}}
    again = apply(updated, base, manager="app", force=False, schema=cm, now=NOW)
    assert isinstance(again, ApplyConflict)
    assert list(again.conflicts) == [EntryKey("editor", "Update", "v1")]
    assert again.status()["message"] == (
        'Apply failed with 1 conflict: conflict with "editor" using v1: .data.b'
    )


def test_more_than_ten_update_managers_fold_the_oldest_into_ancient_changes() -> None:
    cm = builtin_schema("", "v1", "ConfigMap")
    assert cm is not None
    obj: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {},
    }
    obj = update_managed_fields(None, obj, manager="creator", schema=cm, now="2026-01-01T00:00:00Z")
    for n in range(12):
        new = copy.deepcopy(obj)
        new["data"] = {**new.get("data", {}), f"k{n}": "v"}  # type: ignore[dict-item]
        obj = update_managed_fields(
            obj, new, manager=f"writer-{n:02d}", schema=cm, now=f"2026-01-01T00:00:{n + 1:02d}Z"
        )
    entries = obj["metadata"]["managedFields"]  # type: ignore[index]
    assert len(entries) == 10
    managers = [e["manager"] for e in entries]
    assert "ancient-changes" in managers
    assert "creator" not in managers and "writer-00" not in managers
    # Nothing owned is lost: the bucket holds what the folded entries held.
    owned = {k for e in entries for k in e["fieldsV1"].get("f:data", {})}
    assert owned == {".", *(f"f:k{n}" for n in range(12))}


def test_every_recorded_successful_apply_is_idempotent() -> None:
    """Re-applying what was just applied changes nothing (no write, no new resourceVersion)."""
    import yaml

    from tests.ssa.replay import Store

    data = load_sequences()
    checked = 0
    for sequence in data["sequences"]:
        store = Store(sequence["kind"], data["crd"])
        for step in sequence["steps"]:
            status, _ = store.request(step)
            if (
                step["content_type"] == "application/apply-patch+yaml"
                and status in (200, 201)
                and "dryRun" not in step["path"]
            ):
                manager = step["path"].split("fieldManager=")[1].split("&")[0]
                live = store.after()
                again = apply(
                    live,
                    yaml.safe_load(step["body"]),
                    manager=manager,
                    force=False,
                    schema=store.schema,
                    now="<time>",
                )
                assert isinstance(again, ApplyResult)
                assert again.changed is False
                assert again.object == live
                checked += 1
    assert checked > 500
