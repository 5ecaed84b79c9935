"""Property tests: a watch replay always rebuilds what list shows; merge patch laws."""

from __future__ import annotations

from contextlib import aclosing
from datetime import datetime, timezone
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from ownergc.errors import APIError
from ownergc.protocols import PatchType, PropagationPolicy
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._patch import apply_json_merge_patch, check_json, json_equal

NAMES = ["a", "b", "c"]
FINALIZERS = ["x.io/one", "x.io/two", "orphan", "foregroundDeletion"]

operation = st.one_of(
    st.tuples(
        st.just("create"),
        st.sampled_from(NAMES),
        st.lists(st.sampled_from(FINALIZERS[:2]), max_size=2, unique=True),
    ),
    st.tuples(
        st.just("delete"), st.sampled_from(NAMES), st.sampled_from([None, *PropagationPolicy])
    ),
    st.tuples(
        st.just("finalizers"),
        st.sampled_from(NAMES),
        st.lists(st.sampled_from(FINALIZERS), max_size=3, unique=True),
    ),
    st.tuples(st.just("label"), st.sampled_from(NAMES), st.text("xyz", min_size=1, max_size=3)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=25))
def test_watch_replay_matches_list(ops: list[tuple[str, str, Any]]) -> None:
    async def scenario() -> None:
        store = InMemoryStore(clock=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
        resource = store.resource_for("v1", "ConfigMap")
        start = store.resource_version
        for kind, name, arg in ops:
            try:
                if kind == "create":
                    meta = {"name": name, "namespace": "default", "finalizers": arg}
                    await store.create(resource, {"metadata": meta})
                elif kind == "delete":
                    await store.delete(resource, name, namespace="default", propagation_policy=arg)
                elif kind == "finalizers":
                    await store.patch(
                        resource,
                        name,
                        {"metadata": {"finalizers": arg or None}},
                        patch_type=PatchType.MERGE,
                        namespace="default",
                    )
                else:
                    await store.patch(
                        resource,
                        name,
                        {"metadata": {"labels": {"l": arg}}},
                        patch_type=PatchType.STRATEGIC_MERGE,
                        namespace="default",
                    )
            except APIError:
                pass  # conflicts, 404s and validation failures must change nothing
        listed = await store.list(resource, metadata_only=False)
        state: dict[str, dict[str, Any]] = {}
        last_rv = int(start)
        stream = store.watch(
            resource, resource_version=start, metadata_only=False, timeout_seconds=0
        )
        async with aclosing(stream):
            async for event in stream:
                rv = int(event.object["metadata"]["resourceVersion"])
                assert rv > last_rv
                last_rv = rv
                if event.type == "DELETED":
                    del state[event.object["metadata"]["name"]]
                else:
                    state[event.object["metadata"]["name"]] = event.object
        assert state == {o["metadata"]["name"]: o for o in listed.items}
        for obj in listed.items:
            meta = obj["metadata"]
            fins = meta.get("finalizers", [])
            assert not ("orphan" in fins and "foregroundDeletion" in fins)
            if "deletionTimestamp" in meta:
                assert fins, "a deleting object without finalizers must be gone"

    anyio.run(scenario)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text("abc", max_size=2), children, max_size=3)
    ),
    max_leaves=10,
)


@given(json_values, json_values)
def test_merge_patch_is_idempotent(target: Any, patch: Any) -> None:
    once = apply_json_merge_patch(target, patch)
    assert json_equal(apply_json_merge_patch(once, patch), once)


@given(json_values)
def test_check_json_copies_exactly(value: Any) -> None:
    copied = check_json(value)
    assert json_equal(copied, value)
    assert copied == value
