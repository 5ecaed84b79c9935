"""A monitor's list decoded as it arrives (``ownergc_backends.kube._liststream``).

Whatever pieces the answer arrives in, the items are those of the whole
answer decoded at once; an answer that cannot be cut between items (a cut
that falls inside an item, a pretty-printed answer) is reported, and
KubeStore then reads it again whole.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import msgspec
import pytest

from ownergc.protocols import BatchLister
from ownergc.testing.faults import FaultyStore
from ownergc_backends.kube import KubeStore, _liststream
from ownergc_backends.kube._liststream import ListItemStream, graph_page
from ownergc_backends.memory import InMemoryStore
from tests.e2e.e2e_helpers import make, ref
from tests.kube.kube_helpers import served
from tests.kube.list_proxy import ListProxy, kubeconfig_for


def item(i: int, *, owner: str | None = None, extra: dict[str, Any] | None = None) -> Any:
    """One PartialObjectMetadata in kube-apiserver's field order, managedFields and all."""
    meta: dict[str, Any] = {
        "name": f"cm-{i}",
        "namespace": "default",
        "uid": str(uuid.UUID(int=i + 1)),
        "resourceVersion": str(1000 + i),
        "creationTimestamp": "2026-11-26T19:04:58Z",
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": "owner",
                "uid": owner,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    meta["managedFields"] = [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-26T19:04:58Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:ownerReferences": {f'k:{{"uid":"{owner}"}}': {}}}},
        }
    ]
    if extra:
        meta.update(extra)
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}


def answer(items: list[Any], *, indent: int | None = None, meta_last: bool = False) -> bytes:
    listing: dict[str, Any] = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1"}
    if not meta_last:
        listing["metadata"] = {"resourceVersion": "4242"}
    listing["items"] = items
    if meta_last:
        listing["metadata"] = {"resourceVersion": "4242"}
    if indent is None:
        return json.dumps(listing, separators=(",", ":")).encode()
    return json.dumps(listing, indent=indent).encode()


def streamed(body: bytes, piece: int) -> tuple[ListItemStream, tuple[Any, Any, list[Any]]]:
    stream = ListItemStream()
    for at in range(0, len(body), piece):
        stream.feed(memoryview(body)[at : at + piece])
    assert not stream.failed
    return stream, stream.finish_decoding()


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 2 KB, so that a test-sized answer is cut many times."""
    monkeypatch.setattr(_liststream, "_BATCH", 2048)


OWNER = str(uuid.UUID(int=10**6))
BODY = answer(
    [item(i, owner=OWNER if i % 3 else None) for i in range(300)]
    # A string holding the cut's bytes, escaped as JSON escapes them.
    + [item(300, extra={"annotations": {"a": '},{"kind":"PartialObjectMetadata",'}})]
)


@pytest.mark.parametrize("piece", [1, 7, 100, 4096, 65536, len(BODY)])
def test_any_pieces_give_the_items_of_the_whole_answer(small_batches: None, piece: int) -> None:
    whole = graph_page(BODY)
    stream, got = streamed(BODY, piece)
    assert got == whole
    assert got[0] == "4242" and len(got[2]) == 301
    # Only the graph's fields are built; managedFields and the rest are not.
    assert set(got[2][1]["metadata"]) == {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "ownerReferences",
    }
    assert got[2][300]["metadata"]["name"] == "cm-300"
    if piece < len(BODY):
        assert stream.batches > 1  # decoded while arriving, not at the end


def test_the_lists_metadata_after_its_items_is_read(small_batches: None) -> None:
    body = answer([item(i) for i in range(100)], meta_last=True)
    stream, got = streamed(body, 512)
    assert got == graph_page(body)
    assert got[0] == "4242" and len(got[2]) == 100 and stream.batches > 0


@pytest.mark.parametrize("items", [[], None])
def test_an_empty_list(items: list[Any] | None) -> None:
    listing: dict[str, Any] = {"metadata": {"resourceVersion": "7"}, "items": items}
    body = json.dumps(listing, separators=(",", ":")).encode()
    _, got = streamed(body, 3)
    assert got == ("7", None, [])


def test_a_pretty_printed_answer_is_decoded_whole(small_batches: None) -> None:
    body = answer([item(i) for i in range(50)], indent=2)
    stream, got = streamed(body, 1000)
    assert stream.batches == 0
    assert got == graph_page(body) and len(got[2]) == 50


def test_a_cut_inside_an_item_is_noticed(small_batches: None) -> None:
    """Items whose first key is ``metadata`` holding an array of objects whose first
    key is ``metadata`` too: the last cut in the buffer falls inside the last item,
    the batch does not decode, and the stream says so (never wrong items)."""
    nested = [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]
    items = [{"metadata": {"name": f"x{i}", "uid": f"u{i}"}} for i in range(200)]
    items.append({"metadata": {"name": "last", "uid": "ul", "finalizers": []}, "x": nested})
    listing = {"metadata": {"resourceVersion": "1"}, "items": items}
    body = json.dumps(listing, separators=(",", ":")).encode()
    stream = ListItemStream()
    stream.feed(body)
    assert stream.failed
    assert stream.items == []
    # Read whole, the same answer decodes.
    assert len(graph_page(body)[2]) == 201


def test_an_undecodable_answer_raises_at_the_end() -> None:
    stream = ListItemStream()
    stream.feed(b'{"items":[{"metadata":{"name":"a"}},{"metadata":')
    assert not stream.failed
    with pytest.raises(msgspec.DecodeError, match="truncated"):
        stream.finish_decoding()


@pytest.mark.anyio
async def test_kubestore_lists_as_the_answer_arrives(small_batches: None) -> None:
    mem = InMemoryStore()
    owner = await make(mem, "ConfigMap", "owner")
    for i in range(60):
        await make(mem, "ConfigMap", f"dep-{i}", owners=[ref(owner, block=True)])
    res = mem.resource_for("v1", "ConfigMap")
    seen: list[ListItemStream] = []
    real_init = ListItemStream.__init__

    def spying_init(self: ListItemStream, on_items: Any = None) -> None:
        real_init(self, on_items)
        seen.append(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ListItemStream, "__init__", spying_init)
        async with served(mem) as server:
            config = kubeconfig_for(f"http://127.0.0.1:{server.port}")
            async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
                cached = await kube.list(res, consistent=False)
                current = await kube.list(res)
    assert seen and seen[0].batches > 0
    assert len(cached.items) == len(current.items) == 61
    for a, b in zip(
        sorted(cached.items, key=lambda o: o["metadata"]["name"]),
        sorted(current.items, key=lambda o: o["metadata"]["name"]),
        strict=True,
    ):
        assert a["metadata"]["uid"] == b["metadata"]["uid"]
        assert a["metadata"].get("ownerReferences") == b["metadata"].get("ownerReferences")


@pytest.mark.anyio
async def test_kubestore_reads_an_answer_it_cannot_cut_again_whole(small_batches: None) -> None:
    """A server whose list answer cannot be cut between items: the list is asked for
    a second time and decoded whole, with the same items as the server's."""
    nested = [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]
    items: list[Any] = [
        {"metadata": {"name": f"x{i}", "namespace": "default", "uid": f"u{i}"}} for i in range(200)
    ]
    items.append({"metadata": {"name": "last", "namespace": "default", "uid": "ul"}, "x": nested})
    body = json.dumps(
        {"metadata": {"resourceVersion": "9"}, "items": items}, separators=(",", ":")
    ).encode()
    raw = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )

    def rule(method: str, path: str, query: dict[str, str]) -> bytes | None:
        return raw if path.endswith("/configmaps") and "watch" not in query else None

    mem = InMemoryStore()
    res = mem.resource_for("v1", "ConfigMap")
    async with served(mem) as server:
        proxy = ListProxy(server.port, rule)
        async with (
            proxy.running(),
            await KubeStore.from_kubeconfig_dict(kubeconfig_for(proxy.url), qps=0) as kube,
        ):
            listed = await kube.list(res, consistent=False)
    assert len(proxy.queries("/configmaps")) == 2
    assert listed.resource_version == "9"
    assert [o["metadata"]["uid"] for o in listed.items] == [f"u{i}" for i in range(200)] + ["ul"]


@pytest.mark.anyio
async def test_list_in_batches_hands_every_item_over_in_several_batches(
    small_batches: None,
) -> None:
    mem = InMemoryStore()
    owner = await make(mem, "ConfigMap", "owner")
    for i in range(60):
        await make(mem, "ConfigMap", f"dep-{i}", owners=[ref(owner, block=True)])
    res = mem.resource_for("v1", "ConfigMap")
    batches: list[list[Any]] = []
    async with served(mem) as server:
        config = kubeconfig_for(f"http://127.0.0.1:{server.port}")
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            assert isinstance(kube, BatchLister)
            version = await kube.list_in_batches(res, batches.append)
            whole = await kube.list(res, consistent=False)
    assert len(batches) > 1
    handed = [o["metadata"]["uid"] for batch in batches for o in batch]
    assert sorted(handed) == sorted(o["metadata"]["uid"] for o in whole.items)
    assert len(handed) == 61
    assert version == whole.resource_version


@pytest.mark.anyio
async def test_a_failing_consumer_ends_the_list_with_its_error(small_batches: None) -> None:
    mem = InMemoryStore()
    for i in range(60):
        await make(mem, "ConfigMap", f"cm-{i}")
    res = mem.resource_for("v1", "ConfigMap")

    def refuse(items: list[Any]) -> None:
        raise LookupError("the consumer's own failure")

    async with served(mem) as server:
        config = kubeconfig_for(f"http://127.0.0.1:{server.port}")
        async with await KubeStore.from_kubeconfig_dict(config, qps=0) as kube:
            with pytest.raises(LookupError, match="consumer's own"):
                await kube.list_in_batches(res, refuse)
            # The connection is still good for the next request.
            assert len((await kube.list(res)).items) == 60


def test_a_faulty_store_lists_through_its_faults() -> None:
    """FaultyStore must not pass list_in_batches through, or lists would skip its faults."""
    wrapped = FaultyStore(InMemoryStore())
    assert not isinstance(wrapped, BatchLister)
