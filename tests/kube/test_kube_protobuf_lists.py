"""A monitor's list in protobuf (``_pbscan``, ``_liststream``), checked against what a
real kube-apiserver 1.20.2 answered (tests/data/real-apiserver-1.20/lists): the
protobuf answer decodes to exactly the items the JSON answer of the same list
decodes to, in whatever pieces it arrives, compiled or not.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ownergc.protocols import APIResource
from ownergc_backends.kube import KubeStore, _liststream, _pbscan
from ownergc_backends.kube._liststream import ListItemStream, graph_page
from tests.kube.test_kube_http1 import Dribbling, config_for

LISTS = Path(__file__).resolve().parents[1] / "data" / "real-apiserver-1.20" / "lists"
RECORDED = ["configmaps-pbtest", "namespaces"]
CONFIGMAPS = APIResource(
    group="", version="v1", resource="configmaps", kind="ConfigMap", namespaced=True
)


def recorded(name: str) -> tuple[bytes, bytes]:
    return (LISTS / f"{name}.pb").read_bytes(), (LISTS / f"{name}.json").read_bytes()


def by_uid(items: list[Any]) -> dict[str, Any]:
    return {item["metadata"]["uid"]: item for item in items}


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_liststream, "_BATCH", 64)


def pure_pbscan() -> ModuleType:
    """``_pbscan.py`` itself, as plain Python, whether or not the compiled one is installed."""
    path = Path(_pbscan.__file__).with_name("_pbscan.py")
    spec = importlib.util.spec_from_file_location("_pbscan_pure", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_pbscan_pure"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["_pbscan_pure"]
    return module


def test_the_recordings_are_what_they_say() -> None:
    pb, js = recorded("configmaps-pbtest")
    assert pb.startswith(b"k8s\x00") and js.startswith(b'{"kind":"PartialObjectMetadataList"')
    names = {item["metadata"]["name"] for item in graph_page(js)[2]}
    assert {"owner", "plain-ref", "controller-ref", "false-flags", "deleting"} <= names


@pytest.mark.parametrize("name", RECORDED)
@pytest.mark.parametrize("piece", [1, 3, 64, 1 << 20])
def test_protobuf_decodes_to_the_items_json_decodes_to(
    small_batches: None, name: str, piece: int
) -> None:
    pb, js = recorded(name)
    version, cont, expected = graph_page(js)
    stream = ListItemStream()
    for at in range(0, len(pb), piece):
        stream.feed(memoryview(pb)[at : at + piece])
    assert stream.protobuf is True and not stream.failed
    got_version, got_cont, items = stream.finish_decoding()
    assert (got_version, got_cont) == (version, cont)
    assert by_uid(items) == by_uid(expected)
    assert len(items) == len(expected) > 0


def test_the_fields_the_graph_reads_come_through(small_batches: None) -> None:
    pb, _ = recorded("configmaps-pbtest")
    stream = ListItemStream()
    stream.feed(pb)
    items = {i["metadata"]["name"]: i["metadata"] for i in stream.finish_decoding()[2]}
    assert items["deleting"]["deletionTimestamp"].endswith("Z")
    assert items["deleting"]["finalizers"] == ["example.com/keep"]
    assert items["finalized"]["finalizers"] == ["example.com/keep", "example.com/also"]
    refs = items["false-flags"]["ownerReferences"]
    assert refs[0]["controller"] is False and refs[0]["blockOwnerDeletion"] is False
    assert "controller" not in refs[1] and refs[1]["kind"] == "Deployment"
    assert items["controller-ref"]["ownerReferences"][0]["controller"] is True
    assert "ownerReferences" not in items["owner"]
    assert set(items["owner"]) == {"name", "namespace", "uid", "resourceVersion"}


def test_a_cluster_scoped_item_has_no_namespace() -> None:
    pb, _ = recorded("namespaces")
    stream = ListItemStream()
    stream.feed(pb)
    items = stream.finish_decoding()[2]
    assert items and all("namespace" not in item["metadata"] for item in items)


@pytest.mark.parametrize("name", RECORDED)
def test_the_pure_reader_and_the_installed_one_agree(name: str) -> None:
    pb, _ = recorded(name)
    pure = pure_pbscan()
    assert pure.COMPILED is False
    start, stop = _items_region(pb)
    compiled_items: list[Any] = []
    pure_items: list[Any] = []
    assert _pbscan.decode_items(pb, start, stop, compiled_items) == stop
    assert pure.decode_items(pb, start, stop, pure_items) == stop
    assert compiled_items == pure_items and compiled_items


def _items_region(pb: bytes) -> tuple[int, int]:
    """Where the list message's items start and where the list ends, read by hand."""

    def varint(pos: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = pb[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value, pos
            shift += 7

    pos = 4
    assert pb[pos] == 0x0A  # typeMeta
    length, pos = varint(pos + 1)
    pos += length
    assert pb[pos] == 0x12  # raw: the list
    length, pos = varint(pos + 1)
    end = pos + length
    assert pb[pos] == 0x0A  # the list's metadata
    length, pos = varint(pos + 1)
    return pos + length, end


@pytest.mark.parametrize(
    "mangle",
    [
        lambda pb: pb[:-20],  # cut short
        lambda pb: pb[:40] + b"\xff" * 12 + pb[52:],  # a varint past 64 bits
    ],
)
def test_a_broken_protobuf_answer_is_an_error_not_wrong_items(mangle: Any) -> None:
    pb, _ = recorded("configmaps-pbtest")
    stream = ListItemStream()
    stream.feed(mangle(pb))
    if not stream.failed:
        with pytest.raises(ValueError):
            stream.finish_decoding()


def chunked_answer(body: bytes, content_type: str) -> bytes:
    return (
        (
            f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
            f"{len(body):x}\r\n"
        ).encode()
        + body
        + b"\r\n0\r\n\r\n"
    )


PROTOBUF = "application/vnd.kubernetes.protobuf"


@pytest.mark.anyio
async def test_kubestore_asks_for_protobuf_and_hands_its_items_over(small_batches: None) -> None:
    pb, js = recorded("configmaps-pbtest")
    server = Dribbling([chunked_answer(pb, PROTOBUF)], 97)
    async with server.running():
        store = await KubeStore.from_kubeconfig_dict(
            config_for(f"http://127.0.0.1:{server.port}"), qps=0, protobuf_lists=True
        )
        async with store:
            batches: list[list[Any]] = []
            version = await store.list_in_batches(CONFIGMAPS, batches.append)
    head = server.requests[0][0].decode()
    assert "Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList" in head
    assert len(batches) > 1
    assert by_uid([i for b in batches for i in b]) == by_uid(graph_page(js)[2])
    assert version == graph_page(js)[0]


@pytest.mark.anyio
async def test_an_undecodable_protobuf_list_is_asked_for_again_in_json() -> None:
    pb, js = recorded("configmaps-pbtest")
    broken = pb[:40] + b"\xff" * 12 + pb[52:]
    server = Dribbling(
        [chunked_answer(broken, PROTOBUF), chunked_answer(js, "application/json")], 4096
    )
    async with server.running():
        store = await KubeStore.from_kubeconfig_dict(
            config_for(f"http://127.0.0.1:{server.port}"), qps=0, protobuf_lists=True
        )
        async with store:
            listed = await store.list(CONFIGMAPS, consistent=False)
    first, second = (request[0].decode() for request in server.requests)
    assert "vnd.kubernetes.protobuf" in first and "vnd.kubernetes.protobuf" not in second
    assert by_uid(listed.items) == by_uid(graph_page(js)[2])


@pytest.mark.anyio
async def test_without_protobuf_lists_only_json_is_asked_for() -> None:
    _, js = recorded("configmaps-pbtest")
    server = Dribbling([chunked_answer(js, "application/json")], 4096)
    async with server.running():
        store = await KubeStore.from_kubeconfig_dict(
            config_for(f"http://127.0.0.1:{server.port}"), qps=0, protobuf_lists=False
        )
        async with store:
            listed = await store.list(CONFIGMAPS, consistent=False)
    assert "protobuf" not in server.requests[0][0].decode()
    assert len(listed.items) == len(graph_page(js)[2])


def test_protobuf_is_asked_for_by_default_only_when_the_reader_is_compiled() -> None:
    async def made() -> bool:
        store = await KubeStore.from_kubeconfig_dict(config_for("http://127.0.0.1:1"), qps=0)
        async with store:
            return store.protobuf_lists

    assert asyncio.run(made()) is _pbscan.COMPILED
