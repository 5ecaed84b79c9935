"""A monitor's list, decoded while it arrives.

A list from the watch cache is one answer of tens of megabytes (100k
ConfigMaps: 70 MB of JSON) that kube-apiserver encodes and writes over a
second or more. Read whole and then decoded, the client's decode waits for
the server's last byte and the server's encoding for nothing: on two cores
the two run one after the other. Decoded as it arrives, they overlap, and
what is left when the last byte comes is one small batch.

The items are split off the growing answer at the boundary between two
items, ``},{"<first key>":``, where ``<first key>`` is the first key of the
answer's first item (``kind`` from kube-apiserver, whose encoder writes the
fields in a fixed order). In valid JSON that byte sequence cannot begin
inside a string (its quotes would end the string and leave a bare key) and
``},{`` only stands between two elements of an array, so a cut there either
falls between two items or inside an item's nested array of objects whose
first key is the same; the second is caught, because the batch cut there is
not balanced JSON and does not decode. A batch that does not decode, or an
answer in another shape (pretty-printed, without ``items``), stops the
stream: :attr:`ListItemStream.failed` tells the caller to read the list
again whole.

Only the fields the graph reads are built (``msgspec`` skips the rest,
``managedFields`` among them, without building them), straight into the
dicts the graph core takes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final, TypedDict, cast

import msgspec

from ownergc._kit.gcpause import gc_paused
from ownergc_backends.kube._pbscan import ProtobufError, decode_items

__all__ = ["GRAPH_LIST_DECODER", "ListItemStream", "graph_page"]

log = logging.getLogger("ownergc.kube")


class GraphMeta(TypedDict, total=False):
    """The metadata a graph reads; every other field (managedFields, labels,
    annotations, timestamps) is skipped by the decoder without being built."""

    name: Any
    namespace: Any
    uid: Any
    resourceVersion: Any
    ownerReferences: Any
    finalizers: Any
    deletionTimestamp: Any


class GraphItem(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    metadata: GraphMeta | None


#: A list's own metadata (``continue`` is a Python keyword, hence the functional form).
ListMeta = TypedDict("ListMeta", {"resourceVersion": Any, "continue": Any}, total=False)


class GraphList(TypedDict, total=False):
    metadata: ListMeta | None
    items: list[GraphItem] | None


GRAPH_LIST_DECODER: Final = msgspec.json.Decoder(GraphList)
_ITEMS_DECODER: Final = msgspec.json.Decoder(list[GraphItem])
_ITEMS_KEY: Final = b'"items":['
#: Decode once this much of the answer waits (a batch of about 1,500 ConfigMaps).
_BATCH: Final = 1 << 20
#: How far into the answer ``"items":[`` may be (a list's metadata is short).
_MAX_PREFIX: Final = 1 << 16
#: A protobuf answer starts with this (then a ``runtime.Unknown`` wrapping the list).
PROTOBUF_MAGIC: Final = b"k8s\x00"


#: The items as the graph core takes them: plain dicts (``GraphItem`` describes them).
Items = list[dict[str, Any]]


def graph_page(body: bytes | bytearray) -> tuple[Any, Any, Items]:
    """A whole list answer decoded into the graph's fields: (resourceVersion,
    continue, items). Raises ``msgspec.DecodeError`` / ``ValidationError``."""
    with gc_paused():
        page = GRAPH_LIST_DECODER.decode(body)
    meta = page.get("metadata") or {}
    items = cast(Items, page.get("items") or [])
    return meta.get("resourceVersion"), meta.get("continue"), items


class ListItemStream:
    """Feed it a list answer's body as it arrives (:meth:`feed`), then
    :meth:`finish_decoding`.

    With ``on_items``, each batch goes there as soon as it is decoded (and is not
    kept); an exception it raises ends the stream (:attr:`error`)."""

    __slots__ = (
        "_boundary",
        "_buf",
        "_list_left",
        "_list_meta",
        "_pb_phase",
        "_prefix",
        "batches",
        "error",
        "failed",
        "items",
        "on_items",
        "protobuf",
    )

    def __init__(self, on_items: Callable[[Items], None] | None = None) -> None:
        self.on_items = on_items
        #: What ``on_items`` raised, to be raised again by the reader.
        self.error: BaseException | None = None
        self._buf = bytearray()
        #: The answer up to and including ``"items":[`` once seen.
        self._prefix: bytes | None = None
        #: ``},{"<first key>":`` once the first item's first key is seen; b"" for none.
        self._boundary: bytes | None = None
        self.items: Items = []
        #: True once the answer could not be split: read it again whole.
        self.failed = False
        #: Batches decoded before the answer ended (for tests and benchmarks).
        self.batches = 0
        #: None until the answer's first bytes say: True for protobuf, False for JSON.
        self.protobuf: bool | None = None
        # protobuf: 0 before the list message, 1 inside it, 2 after it
        self._pb_phase = 0
        self._list_left = 0
        self._list_meta: tuple[Any, Any] = (None, None)

    def feed(self, data: bytes | memoryview) -> None:
        """Take the next bytes of the body; never raises (a failure sets ``failed``)."""
        if self.failed or self.error is not None:
            return
        buf = self._buf
        buf += data
        # The view is into the HTTP client's buffer, which must be free to resize once
        # this returns: nothing here may keep it (not even an exception's frame).
        del data
        try:
            if self.protobuf is None:
                if len(buf) < len(PROTOBUF_MAGIC):
                    return
                self.protobuf = buf.startswith(PROTOBUF_MAGIC)
                if self.protobuf:
                    del buf[: len(PROTOBUF_MAGIC)]
            if self.protobuf:
                self._protobuf_step(final=False)
                return
            if self._boundary is None and not self._find_boundary():
                return
            if self._boundary and len(buf) >= _BATCH:
                self._decode_batch()
        except Exception as exc:  # a cut that did not fall between items, or worse
            self._fail(f"{type(exc).__name__}: {exc}")

    # -- protobuf ------------------------------------------------------------------

    def _protobuf_step(self, *, final: bool) -> None:
        """Consume what can be consumed of a protobuf answer: the ``runtime.Unknown``
        envelope's fields up to ``raw`` (the list message), then the list's fields,
        its items in batches (``_pbscan``), then nothing (the envelope's last fields)."""
        buf = self._buf
        while True:
            if self._pb_phase == 0:
                head = _field_head(buf)
                if head is None:
                    return
                key, length, size = head
                if key == 0x12:  # raw: the list message follows, ``length`` bytes
                    del buf[:size]
                    self._list_left = length
                    self._pb_phase = 1
                    continue
                if key & 7 != 2:
                    raise ProtobufError(f"unexpected field {key >> 3} in the envelope")
                if len(buf) < size + length:
                    return
                del buf[: size + length]
            elif self._pb_phase == 1:
                if self._list_left == 0:
                    self._pb_phase = 2
                    continue
                if not buf:
                    return
                if buf[0] == 0x12:  # items
                    available = min(len(buf), self._list_left)
                    if available < _BATCH and not (final or available == self._list_left):
                        return
                    self._protobuf_items(available)
                    if buf and buf[0] == 0x12 and self._list_left and not final:
                        return  # the next item is not all here yet
                    if final and buf and buf[0] == 0x12 and self._list_left:
                        raise ProtobufError("the list ends inside an item")
                    continue
                head = _field_head(buf)
                if head is None:
                    return
                key, length, size = head
                if len(buf) < size + length:
                    return
                if key == 0x0A:  # the list's metadata
                    self._list_meta = _list_meta(bytes(buf[size : size + length]))
                elif key & 7 != 2:
                    raise ProtobufError(f"unexpected field {key >> 3} in the list")
                del buf[: size + length]
                self._list_left -= size + length
                if self._list_left < 0:
                    raise ProtobufError("a field runs past the list")
            else:
                buf.clear()  # the envelope's contentEncoding and contentType (empty)
                return

    def _protobuf_items(self, available: int) -> None:
        buf = self._buf
        with memoryview(buf) as view:
            chunk = bytes(view[:available])
        with gc_paused():
            items: Items = []
            used = decode_items(chunk, 0, available, items)
            del chunk
            if not used:
                return
            del buf[:used]
            self._list_left -= used
            self._hand_over(items)

    def _find_boundary(self) -> bool:
        buf = self._buf
        if self._prefix is None:
            at = buf.find(_ITEMS_KEY)
            if at < 0:
                if len(buf) > _MAX_PREFIX:
                    self._boundary = b""  # not the expected shape: decoded whole at the end
                return False
            end = at + len(_ITEMS_KEY)
            self._prefix = bytes(buf[:end])
            del buf[:end]
        if len(buf) < 2:
            return False
        if buf[:2] != b'{"':
            self._boundary = b""  # an empty list, or whitespace: nothing to split
            return False
        key_end = buf.find(b'":', 2)
        if key_end < 0:
            if len(buf) > _MAX_PREFIX:
                self._boundary = b""
            return False
        self._boundary = b"}," + bytes(buf[: key_end + 2])
        return True

    def _decode_batch(self) -> None:
        buf = self._buf
        assert self._boundary
        cut = buf.rfind(self._boundary)
        if cut < 0:
            return
        with memoryview(buf) as view:
            batch = b"".join((b"[", view[: cut + 1], b"]"))
        # The collector stays paused while the batch is applied: resumed in between,
        # its next young collection would walk every container of the batch.
        with gc_paused():
            items = cast(Items, _ITEMS_DECODER.decode(batch))
            del batch
            del buf[: cut + 2]  # the items and the comma after the last one
            self._hand_over(items)

    def _hand_over(self, items: Items) -> None:
        """A decoded batch to ``on_items`` (or kept); called with the collector paused."""
        self.batches += 1
        if self.on_items is None:
            self.items.extend(items)
            return
        try:
            self.on_items(items)
        except Exception as exc:  # the consumer's failure, not the answer's
            self.error = exc
            self._buf = bytearray()

    def _fail(self, why: str) -> None:
        log.info("a list answer could not be decoded as it arrived (%s); reading it whole", why)
        self.failed = True
        self._buf = bytearray()
        self.items = []

    def finish_decoding(self) -> tuple[Any, Any, Items]:
        """(resourceVersion, continue, the items not yet handed to ``on_items``) once
        the whole body was fed; raises ``msgspec.DecodeError`` / ``ValidationError``
        for an undecodable answer (never called once ``failed`` or ``error``)."""
        assert not self.failed and self.error is None
        if self.protobuf:
            self._protobuf_step(final=True)
            if self.error is not None:
                raise self.error
            if self._pb_phase != 2:
                raise ProtobufError("the answer ends before its list does")
            items = self.items
            self.items = []
            return self._list_meta[0], self._list_meta[1], items
        rest = self._buf
        self._buf = bytearray()
        body = rest if self._prefix is None else self._prefix + rest
        del rest
        version, cont, items = graph_page(body)
        del body
        if self.items:
            self.items.extend(items)
            items = self.items
        self.items = []
        return version, cont, items


def _varint(buf: bytes | bytearray, pos: int) -> tuple[int, int] | None:
    """(value, position after it), or None when the varint is not all here."""
    value = 0
    shift = 0
    while pos < len(buf):
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("a varint longer than 64 bits")
    return None


def _field_head(buf: bytes | bytearray, start: int = 0) -> tuple[int, int, int] | None:
    """The field at ``start``: (key, length when length-delimited else 0, size of key
    and length), or None when its head is not all here."""
    key_end = _varint(buf, start)
    if key_end is None:
        return None
    key, pos = key_end
    if key & 7 != 2:
        return key, 0, pos - start
    length_end = _varint(buf, pos)
    if length_end is None:
        return None
    length, pos = length_end
    return key, length, pos - start


def _list_meta(data: bytes) -> tuple[Any, Any]:
    """(resourceVersion, continue) of a ``ListMeta``."""
    version: Any = None
    cont: Any = None
    pos = 0
    while pos < len(data):
        head = _field_head(data, pos)
        if head is None:
            raise ProtobufError("a truncated ListMeta")
        key, length, size = head
        if key & 7 != 2:
            raise ProtobufError(f"unexpected field {key >> 3} in ListMeta")
        value = data[pos + size : pos + size + length]
        if key == 0x12:
            version = value.decode()
        elif key == 0x1A:
            cont = value.decode() or None
        pos += size + length
    return version, cont
