"""Namespaces carry ``kubernetes.io/metadata.name`` = their name, as kube-apiserver defaults
it on every create and update (the recorded 1.24 namespace has it, owned by its creator)."""

from __future__ import annotations

import anyio

from ownergc_backends.memory import InMemoryStore

LABEL = "kubernetes.io/metadata.name"


def test_create_and_update_default_the_name_label_and_load_keeps_objects_as_given() -> None:
    store = InMemoryStore()
    namespaces = store.resource_for("v1", "Namespace")

    async def main() -> None:
        created = await store.create(
            namespaces,
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "a", "labels": {"x": "1"}},
            },
        )
        assert created["metadata"]["labels"] == {"x": "1", LABEL: "a"}
        # A writer cannot change or drop it: the next update defaults it again.
        created["metadata"]["labels"] = {LABEL: "other"}
        updated = await store.update(namespaces, created)
        assert updated["metadata"]["labels"] == {LABEL: "a"}

    anyio.run(main)
    # load_objects copies objects from elsewhere as they are.
    store.load_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}])
    loaded = store.get_object("v1", "Namespace", "b")
    assert loaded is not None and "labels" not in loaded["metadata"]
