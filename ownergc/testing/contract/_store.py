"""``ObjectStoreContract``: every guarantee :class:`~ownergc.protocols.ObjectStore` documents.

A backend proves itself by subclassing the suite (fsspec's abstract tests do
the same for filesystems)::

    class TestMyStore(ObjectStoreContract):
        @pytest.fixture
        async def store(self):
            async with MyStore(...) as s:
                yield s

Each test works in a namespace of its own, created through the store, so the
suite also runs against a shared, long-lived server. What it checks, and
where the Protocol promises it:

=====================================================  ===================================
guarantee                                              test
=====================================================  ===================================
discovery lists served resources with verbs, no        ``test_discovery_*``
subresources, ``api_version`` of group/version
create returns the stored object (uid,                 ``test_create_then_get``
resourceVersion); get returns it; metadata_only
keeps apiVersion/kind/metadata
get of a missing object raises ``NotFound``;           ``test_errors_*``
create of an existing name ``AlreadyExists``
(a ``Conflict``); delete of a missing object
``NotFound`` (callers treat it as success)
list returns the objects and a resourceVersion to      ``test_list_*``
watch from; ``namespace`` filters
watch delivers every change after the version,         ``test_watch_*``
once, in order (ADDED, MODIFIED, DELETED)
watch from a version older than the history            ``test_watch_from_a_compacted_
raises ``ResourceExpired`` (possibly at the first      version_is_expired``
iteration)
strategic merge, JSON merge and JSON patch apply;      ``test_patch_*``
strategic merge on a custom resource raises
``UnsupportedPatchType`` (415)
a merge patch with a stale                              ``test_patch_with_a_stale_
``metadata.resourceVersion`` raises ``Conflict``        resource_version_conflicts``
and changes nothing; a patch changing the uid
fails (``Conflict`` or ``Invalid``) and changes
nothing
delete honours uid / resourceVersion                   ``test_delete_preconditions_*``
preconditions atomically (``Conflict``, nothing
changed)
delete with no finalizers removes the object and       ``test_delete_*``
returns ``None``; a finalizer keeps it with a
deletionTimestamp and returns it; Foreground adds
``foregroundDeletion``, Orphan adds ``orphan``;
emptying the finalizers of an object being
deleted removes it and returns its last state
=====================================================  ===================================

Capabilities a backend may lack are class attributes; a test needing one the
backend lacks is skipped with the capability's name, visibly (never a pass).
"""

from __future__ import annotations

import builtins
import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import anyio
import pytest

from ownergc.errors import (
    AlreadyExists,
    Conflict,
    Invalid,
    NotFound,
    ResourceExpired,
    UnsupportedPatchType,
)
from ownergc.protocols import (
    APIResource,
    JSONDict,
    ObjectStore,
    PatchType,
    Preconditions,
    PropagationPolicy,
    WatchEvent,
)

__all__ = ["ObjectStoreContract"]

_CRD_GROUP = "contract.ownergc.dev"


class ObjectStoreContract:
    """The ObjectStore contract as a pytest class; subclass it as ``Test...``.

    Provide a ``store`` fixture (sync or async, function-scoped or wider)
    yielding an :class:`~ownergc.protocols.ObjectStore`.
    """

    #: Writes to one resource after which an old resourceVersion is compacted
    #: away (``None``: the backend's history cannot be outrun from a test).
    watch_history: ClassVar[int | None] = None
    #: Custom resources can be served by creating a CustomResourceDefinition.
    supports_custom_resources: ClassVar[bool] = True
    #: Seconds to wait for a watch event or a CRD to be served.
    timeout: ClassVar[float] = 10.0

    _names: ClassVar[itertools.count[int]] = itertools.count()

    # -- helpers -------------------------------------------------------------

    @staticmethod
    async def _resource(store: ObjectStore, group: str, kind: str) -> APIResource:
        for res in (await store.discover()).resources:
            if res.group == group and res.kind == kind and res.preferred:
                return res
        raise AssertionError(f"{kind} ({group or 'core'}) is not served")

    @pytest.fixture
    async def namespace(self, store: ObjectStore) -> str:
        name = f"contract-{uuid.uuid4().hex[:10]}"
        namespaces = await self._resource(store, "", "Namespace")
        await store.create(
            namespaces, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
        return name

    @pytest.fixture
    async def configmaps(self, store: ObjectStore) -> APIResource:
        return await self._resource(store, "", "ConfigMap")

    async def _configmap(
        self, store: ObjectStore, res: APIResource, ns: str, **meta: Any
    ) -> JSONDict:
        name = meta.pop("name", f"cm-{next(self._names)}")
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, **meta},
            "data": {"a": "1"},
        }
        return await store.create(res, body, namespace=ns)

    @staticmethod
    async def _merge(
        store: ObjectStore, resource: APIResource, namespace: str, name: str, patch: JSONDict
    ) -> JSONDict:
        """A JSON merge patch (what the collector sends): accepted by every kind."""
        return await store.patch(
            resource, name, patch, patch_type=PatchType.MERGE, namespace=namespace
        )

    @staticmethod
    def _meta(obj: JSONDict) -> JSONDict:
        meta: JSONDict = obj["metadata"]
        return meta

    @staticmethod
    async def _next_events(stream: AsyncIterator[WatchEvent], count: int) -> list[WatchEvent]:
        out: list[WatchEvent] = []
        async for event in stream:
            if event.type != "BOOKMARK":
                out.append(event)
            if len(out) == count:
                break
        return out

    async def _events(
        self, store: ObjectStore, res: APIResource, ns: str, rv: str, count: int
    ) -> tuple[AsyncIterator[WatchEvent], list[WatchEvent]]:
        stream = store.watch(res, resource_version=rv, namespace=ns, timeout_seconds=30)
        with anyio.fail_after(self.timeout):
            return stream, await self._next_events(stream, count)

    @staticmethod
    async def _close(stream: AsyncIterator[WatchEvent]) -> None:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()

    # -- discovery -----------------------------------------------------------

    @pytest.mark.anyio
    async def test_discovery_lists_core_resources_with_verbs(self, store: ObjectStore) -> None:
        found = (await store.discover()).resources
        by_kind = {(r.group, r.kind): r for r in found if r.preferred}
        cm = by_kind[("", "ConfigMap")]
        assert cm.namespaced and cm.resource == "configmaps" and cm.api_version == "v1"
        assert {"get", "list", "watch", "create", "patch", "delete"} <= cm.verbs
        ns = by_kind[("", "Namespace")]
        assert not ns.namespaced

    @pytest.mark.anyio
    async def test_discovery_excludes_subresources(self, store: ObjectStore) -> None:
        found = (await store.discover()).resources
        assert found and all("/" not in r.resource for r in found)

    # -- create, get, errors ---------------------------------------------------

    @pytest.mark.anyio
    async def test_create_then_get(
        self, store: ObjectStore, configmaps: APIResource, namespace: str
    ) -> None:
        created = await self._configmap(store, configmaps, namespace, labels={"x": "y"})
        meta = self._meta(created)
        assert meta["uid"] and meta["resourceVersion"] and meta["namespace"] == namespace
        got = await store.get(configmaps, meta["name"], namespace=namespace, metadata_only=False)
        assert self._meta(got)["uid"] == meta["uid"] and got["data"] == {"a": "1"}
        partial = await store.get(configmaps, meta["name"], namespace=namespace)
        assert self._meta(partial)["labels"] == {"x": "y"}
        assert partial["kind"] in ("ConfigMap", "PartialObjectMetadata")

    @pytest.mark.anyio
    async def test_errors_not_found_and_already_exists(
        self, store: ObjectStore, configmaps: APIResource, namespace: str
    ) -> None:
        with pytest.raises(NotFound):
            await store.get(configmaps, "absent", namespace=namespace)
        with pytest.raises(NotFound):
            await store.delete(configmaps, "absent", namespace=namespace)
        created = await self._configmap(store, configmaps, namespace)
        with pytest.raises(AlreadyExists) as info:
            await self._configmap(store, configmaps, namespace, name=self._meta(created)["name"])
        assert isinstance(info.value, Conflict)

    # -- list and watch --------------------------------------------------------

    @pytest.mark.anyio
    async def test_list_returns_items_and_a_version(
        self, store: ObjectStore, configmaps: APIResource, namespace: str
    ) -> None:
        names = {self._meta(await self._configmap(store, configmaps, namespace))["name"]}
        names.add(self._meta(await self._configmap(store, configmaps, namespace))["name"])
        listed = await store.list(configmaps, namespace=namespace)
        assert {self._meta(o)["name"] for o in listed.items} == names
        assert isinstance(listed.resource_version, str) and listed.resource_version
        everywhere = await store.list(configmaps)
        assert names <= {self._meta(o)["name"] for o in everywhere.items}

    @pytest.mark.anyio
    async def test_a_list_that_may_lag_is_never_older_than_one_already_returned(
        self, store: ObjectStore, configmaps: APIResource, namespace: str
    ) -> None:
        """``consistent=False`` (a watch cache may serve it) still shows every object
        an earlier list showed, and its version can be watched from."""
        first = self._meta(await self._configmap(store, configmaps, namespace))["name"]
        current = await store.list(configmaps, namespace=namespace)
        cached = await store.list(configmaps, namespace=namespace, consistent=False)
        assert {self._meta(o)["name"] for o in current.items} <= {
            self._meta(o)["name"] for o in cached.items
        }
        assert first in {self._meta(o)["name"] for o in cached.items}
        obj = await self._configmap(store, configmaps, namespace)
        stream, events = await self._events(
            store, configmaps, namespace, cached.resource_version, 1
        )
        await self._close(stream)
        assert [(e.type, self._meta(e.object)["name"]) for e in events] == [
            ("ADDED", self._meta(obj)["name"])
        ]

    @pytest.mark.anyio
    async def test_watch_delivers_changes_after_the_version_in_order(
        self, store: ObjectStore, configmaps: APIResource, namespace: str
    ) -> None:
        before = await self._configmap(store, configmaps, namespace)
        rv = (await store.list(configmaps, namespace=namespace)).resource_version
        obj = await self._configmap(store, configmaps, namespace)
        name = self._meta(obj)["name"]
        await self._merge(store, configmaps, namespace, name, {"data": {"a": "2"}})
        await store.delete(configmaps, name, namespace=namespace)
        stream, events = await self._events(store, configmaps, namespace, rv, 3)
        await self._close(stream)
        assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
        assert {self._meta(e.object)["name"] for e in events} == {name}
        assert self._meta(before)["name"] != name  # the earlier object is not replayed

    @pytest.mark.anyio
    async def test_watch_from_a_compacted_version_is_expired(
        self, store: ObjectStore, configmaps: APIResource, namespace: str
    ) -> None:
        if self.watch_history is None:
            pytest.skip("capability watch_history: the backend's history cannot be outrun")
        first = await self._configmap(store, configmaps, namespace)
        for _ in range(self.watch_history + 2):
            await self._configmap(store, configmaps, namespace)
        with pytest.raises(ResourceExpired) as info:
            stream = store.watch(
                configmaps,
                resource_version=self._meta(first)["resourceVersion"],
                namespace=namespace,
            )
            with anyio.fail_after(self.timeout):
                await self._next_events(stream, 1)
        assert info.value.status == 410

    # -- patch -------------------------------------------------------------------

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("patch_type", "patch"),
        [
            (PatchType.STRATEGIC_MERGE, {"data": {"b": "2"}}),
            (PatchType.MERGE, {"data": {"b": "2"}}),
            (PatchType.JSON, [{"op": "add", "path": "/data/b", "value": "2"}]),
        ],
        ids=["strategic-merge", "json-merge", "json-patch"],
    )
    async def test_patch_types_apply(
        self,
        store: ObjectStore,
        configmaps: APIResource,
        namespace: str,
        patch_type: PatchType,
        patch: JSONDict | builtins.list[JSONDict],
    ) -> None:
        obj = await self._configmap(store, configmaps, namespace)
        name = self._meta(obj)["name"]
        patched = await store.patch(
            configmaps, name, patch, patch_type=patch_type, namespace=namespace
        )
        live = await store.get(configmaps, name, namespace=namespace, metadata_only=False)
        assert live["data"] == {"a": "1", "b": "2"}
        assert self._meta(patched)["resourceVersion"] != self._meta(obj)["resourceVersion"]

    @pytest.mark.anyio
    async def test_patch_strategic_merge_of_a_custom_resource_is_unsupported(
        self, store: ObjectStore, namespace: str
    ) -> None:
        if not self.supports_custom_resources:
            pytest.skip("capability supports_custom_resources")
        widgets = await self._custom_resource(store)
        body = {
            "apiVersion": widgets.api_version,
            "kind": widgets.kind,
            "metadata": {"name": "w", "namespace": namespace},
            "spec": {"size": 1},
        }
        await store.create(widgets, body, namespace=namespace)
        with pytest.raises(UnsupportedPatchType) as info:
            await store.patch(
                widgets,
                "w",
                {"spec": {"size": 2}},
                patch_type=PatchType.STRATEGIC_MERGE,
                namespace=namespace,
            )
        assert info.value.status == 415
        merged = await store.patch(
            widgets, "w", {"spec": {"size": 2}}, patch_type=PatchType.MERGE, namespace=namespace
        )
        assert merged["spec"] == {"size": 2}

    async def _custom_resource(self, store: ObjectStore) -> APIResource:
        crds = await self._resource(store, "apiextensions.k8s.io", "CustomResourceDefinition")
        plural = "widgets"
        crd = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{_CRD_GROUP}"},
            "spec": {
                "group": _CRD_GROUP,
                "scope": "Namespaced",
                "names": {"plural": plural, "singular": "widget", "kind": "Widget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        }
        with contextlib.suppress(AlreadyExists):
            await store.create(crds, crd)
        with anyio.fail_after(self.timeout):
            while True:
                try:
                    return await self._resource(store, _CRD_GROUP, "Widget")
                except AssertionError:
                    await anyio.sleep(0.05)

    @pytest.mark.anyio
    async def test_patch_with_a_stale_resource_version_conflicts(
        self, store: ObjectStore, configmaps: APIResource, namespace: str
    ) -> None:
        obj = await self._configmap(store, configmaps, namespace)
        meta = self._meta(obj)
        await self._merge(store, configmaps, namespace, meta["name"], {"data": {"a": "2"}})
        with pytest.raises(Conflict):
            await self._merge(
                store,
                configmaps,
                namespace,
                meta["name"],
                {"metadata": {"resourceVersion": meta["resourceVersion"]}, "data": {"a": "3"}},
            )
        with pytest.raises((Conflict, Invalid)):
            await self._merge(
                store,
                configmaps,
                namespace,
                meta["name"],
                {"metadata": {"uid": "not-" + meta["uid"]}, "data": {"a": "4"}},
            )
        live = await store.get(configmaps, meta["name"], namespace=namespace, metadata_only=False)
        assert live["data"] == {"a": "2"} and self._meta(live)["uid"] == meta["uid"]

    # -- delete -----------------------------------------------------------------

    @pytest.mark.anyio
    async def test_delete_preconditions_are_atomic(
        self, store: ObjectStore, configmaps: APIResource, namespace: str
    ) -> None:
        obj = await self._configmap(store, configmaps, namespace)
        meta = self._meta(obj)
        with pytest.raises(Conflict):
            await store.delete(
                configmaps,
                meta["name"],
                namespace=namespace,
                preconditions=Preconditions(uid="not-" + meta["uid"]),
            )
        await self._merge(store, configmaps, namespace, meta["name"], {"data": {"a": "2"}})
        with pytest.raises(Conflict):
            await store.delete(
                configmaps,
                meta["name"],
                namespace=namespace,
                preconditions=Preconditions(resource_version=meta["resourceVersion"]),
            )
        live = await store.get(configmaps, meta["name"], namespace=namespace)
        assert "deletionTimestamp" not in self._meta(live)
        gone = await store.delete(
            configmaps,
            meta["name"],
            namespace=namespace,
            preconditions=Preconditions(uid=meta["uid"]),
        )
        assert gone is None
        with pytest.raises(NotFound):
            await store.get(configmaps, meta["name"], namespace=namespace)

    @pytest.mark.anyio
    async def test_delete_keeps_a_finalized_object_until_its_finalizers_are_gone(
        self, store: ObjectStore, configmaps: APIResource, namespace: str
    ) -> None:
        obj = await self._configmap(store, configmaps, namespace, finalizers=["example.com/hold"])
        name = self._meta(obj)["name"]
        kept = await store.delete(configmaps, name, namespace=namespace)
        assert kept is not None and self._meta(kept).get("deletionTimestamp")
        live = await store.get(configmaps, name, namespace=namespace)
        assert self._meta(live)["finalizers"] == ["example.com/hold"]
        last = await self._merge(
            store, configmaps, namespace, name, {"metadata": {"finalizers": None}}
        )
        assert self._meta(last)["name"] == name
        with anyio.fail_after(self.timeout):
            while True:
                try:
                    await store.get(configmaps, name, namespace=namespace)
                except NotFound:
                    break
                await anyio.sleep(0.05)

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("policy", "finalizer"),
        [
            (PropagationPolicy.FOREGROUND, "foregroundDeletion"),
            (PropagationPolicy.ORPHAN, "orphan"),
        ],
        ids=["foreground", "orphan"],
    )
    async def test_delete_with_a_policy_adds_its_finalizer(
        self,
        store: ObjectStore,
        configmaps: APIResource,
        namespace: str,
        policy: PropagationPolicy,
        finalizer: str,
    ) -> None:
        obj = await self._configmap(store, configmaps, namespace)
        name = self._meta(obj)["name"]
        kept = await store.delete(configmaps, name, namespace=namespace, propagation_policy=policy)
        assert kept is not None
        meta = self._meta(await store.get(configmaps, name, namespace=namespace))
        assert meta.get("deletionTimestamp") and finalizer in meta["finalizers"]

    @pytest.mark.anyio
    async def test_delete_in_the_background_removes_at_once(
        self, store: ObjectStore, configmaps: APIResource, namespace: str
    ) -> None:
        obj = await self._configmap(store, configmaps, namespace)
        name = self._meta(obj)["name"]
        assert (
            await store.delete(
                configmaps,
                name,
                namespace=namespace,
                propagation_policy=PropagationPolicy.BACKGROUND,
            )
            is None
        )
        with pytest.raises(NotFound):
            await store.get(configmaps, name, namespace=namespace)
