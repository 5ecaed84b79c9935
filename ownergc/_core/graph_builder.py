"""The graph builder (upstream's graph_builder.go): event rules and transitions.

Rule 1 — one node per UID. Owners are found by the UID in an ownerReference;
the other coordinates (apiVersion, kind, name) and the namespace are checked
separately, because a reference may carry the right UID and wrong coordinates.

Rule 2 — a node's ``owners`` is the object's ownerReferences as last
observed (an update that only reorders them or drops a same-valued duplicate
keeps the stored list, as Kubernetes does); ``dependents`` is the set of
nodes whose owners name this UID. Both directions are kept consistent after
every event (``check_invariants``).

Rule 3 — an owner that is referenced but not yet observed gets a *virtual*
node carrying the coordinates of the first reference and the namespace of
that dependent. The delete worker polls it until it is observed (an informer
event arrives for its UID) or verified absent (a *virtual delete event*).

Rule 4 — ``beingDeleted`` and ``deletingDependents`` only ever go from false
to true.

Rule 5 — only the graph builder mutates the graph, one event at a time. It
does no I/O: processing an event appends what should happen next to the
builder's outboxes (``attempt_to_delete``, ``attempt_to_delete_rate_limited``,
``attempt_to_orphan``, ``events``), which the controller drains.

Invalid references (Kubernetes 1.20+): a namespaced owner is looked up only in
the dependent's namespace, so an owner observed in another namespace is
reported (``OwnerRefInvalidNamespace``) and the dependent re-checked, without
the real owner ever being marked absent for its valid dependents.
"""

from __future__ import annotations

import gc
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ownergc._core.graph import NO_DEPENDENTS, Node, UIDToNode, new_identity, new_node
from ownergc._core.refs import (
    FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
    ObjectReference,
    OwnerReference,
    metadata_of,
)
from ownergc.errors import InvalidObject, InvalidOwnerReference

if TYPE_CHECKING:
    from ownergc._core import _cython as cython
else:
    try:
        import cython  # compiled: the compiler's directives; else Cython's shadow module
    except ImportError:
        from ownergc._core import _cython as cython

__all__ = [
    "AbsentOwnerCache",
    "GraphBuilder",
    "InvalidNamespaceEvent",
    "ReferencesDiff",
    "get_alternate_owner_identity",
    "partition_dependents",
    "references_diffs",
    "starts_waiting_for_dependents_deleted",
    "starts_waiting_for_dependents_orphaned",
]

_NO_OWNERS: tuple[OwnerReference, ...] = ()
#: Parsed owner references kept for reuse by siblings (cleared when full).
_REF_CACHE_SIZE = 65536


@cython.no_gc
@cython.cclass
class _Parsed:
    """An ownerReferences entry parsed once, kept for its siblings (the builder's cache).

    Besides the parse (``ref``) and that parse alone in a tuple (``owners``: a
    single-entry list, the common case, shares it), it holds the six fields the
    parse read, which a sibling's entry is compared with (an entry equal in
    those parses to an equal reference; other keys are not read), and which a
    sibling's add compares with its owner's without reading the reference.

    Compiled, an extension type the cyclic garbage collector does not track,
    and neither the reference nor its tuple: they hold only strings and flags.
    Made by :func:`_new_parsed`.
    """

    __slots__ = ("api_version", "block", "controller", "kind", "name", "owners", "ref", "uid")

    ref: OwnerReference
    owners: tuple[OwnerReference]
    controller: bool | None
    block: bool | None
    uid: str
    name: str
    kind: str
    api_version: str


_new_object = object.__new__
#: OwnerReference's slots, set as its frozen dataclass __init__ sets them (pure).
_set_owner_fields = tuple(
    vars(OwnerReference)[f].__set__
    for f in ("api_version", "kind", "name", "uid", "controller", "block_owner_deletion")
)


def _new_owner_reference(
    api_version: str, kind: str, name: str, uid: str, controller: Any, block: Any
) -> OwnerReference:
    """``OwnerReference(...)`` of values already checked, without the frozen dataclass's
    ``__init__`` (a Python call setting each field through ``object.__setattr__``:
    most of the cost of an owner's first dependent)."""
    ref: OwnerReference = _new_object(OwnerReference)
    if cython.compiled:  # (the slots set in C, as object.__setattr__ sets them)
        PyObject_GenericSetAttr(ref, "api_version", api_version)  # type: ignore[name-defined]  # noqa: F821
        PyObject_GenericSetAttr(ref, "kind", kind)  # type: ignore[name-defined]  # noqa: F821
        PyObject_GenericSetAttr(ref, "name", name)  # type: ignore[name-defined]  # noqa: F821
        PyObject_GenericSetAttr(ref, "uid", uid)  # type: ignore[name-defined]  # noqa: F821
        PyObject_GenericSetAttr(ref, "controller", controller)  # type: ignore[name-defined]  # noqa: F821
        PyObject_GenericSetAttr(ref, "block_owner_deletion", block)  # type: ignore[name-defined]  # noqa: F821
    else:
        s_av, s_kind, s_name, s_uid, s_controller, s_block = _set_owner_fields
        s_av(ref, api_version)
        s_kind(ref, kind)
        s_name(ref, name)
        s_uid(ref, uid)
        s_controller(ref, controller)
        s_block(ref, block)
    return ref


@cython.locals(parsed=_Parsed)
def _new_parsed(ref: OwnerReference) -> _Parsed:
    """``_Parsed(ref)`` without a call to ``__init__`` (compiled: the struct filled in)."""
    parsed = _Parsed.__new__(_Parsed)
    owners = (ref,)
    if cython.compiled:
        PyObject_GC_UnTrack(ref)  # type: ignore[name-defined]  # noqa: F821
        PyObject_GC_UnTrack(owners)  # type: ignore[name-defined]  # noqa: F821
    uid, name, kind, api_version = ref.uid, ref.name, ref.kind, ref.api_version
    if cython.compiled and not (
        type(uid) is str and type(name) is str and type(kind) is str and type(api_version) is str
    ):
        # Compiled, these four are typed str: a str subclass, which from_dict takes, is
        # kept by its value (they are only compared, and the uid looked up).
        uid, name, kind, api_version = (
            str.__str__(uid),
            str.__str__(name),
            str.__str__(kind),
            str.__str__(api_version),
        )
    parsed.ref = ref
    parsed.owners = owners
    parsed.controller = ref.controller
    parsed.block = ref.block_owner_deletion
    parsed.uid = uid
    parsed.name = name
    parsed.kind = kind
    parsed.api_version = api_version
    return parsed


#: An identity as the absent-owner cache keys it: (apiVersion, kind, name, uid,
#: namespace), a plain tuple, hashed in C (an ObjectReference hashes in Python).
_IdentityKey = tuple[str, str, str, str, str | None]


def _dependents_of_one(node: Node) -> set[Node]:
    """``{node}``, a new set of dependents (compiled, not tracked by the cyclic GC: it
    holds only nodes, which are not tracked either)."""
    deps = {node}
    if cython.compiled:
        PyObject_GC_UnTrack(deps)  # type: ignore[name-defined]  # noqa: F821
    return deps


def _key(identity: ObjectReference) -> _IdentityKey:
    return (identity.api_version, identity.kind, identity.name, identity.uid, identity.namespace)


class _FromGraph:
    """Marker: take the previous state of an object from the graph."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "FROM_GRAPH"


FROM_GRAPH = _FromGraph()


@dataclass(frozen=True, slots=True)
class ReferencesDiff:
    """What changed between two ownerReferences lists (keyed by UID)."""

    added: list[OwnerReference]
    removed: list[OwnerReference]
    changed: list[tuple[OwnerReference, OwnerReference]]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def references_diffs(
    old: Iterable[OwnerReference] | None, new: Iterable[OwnerReference] | None
) -> ReferencesDiff:
    """Diff two ownerReferences lists by UID.

    A UID present in both with any field different (``None`` vs ``False``
    included) is ``changed``; with duplicate UIDs the last old entry wins, and
    a second new entry with an already matched UID counts as ``added``.
    """
    unmatched = {ref.uid: ref for ref in old or ()}
    added: list[OwnerReference] = []
    changed: list[tuple[OwnerReference, OwnerReference]] = []
    for ref in new or ():
        prev = unmatched.pop(ref.uid, None)
        if prev is None:
            added.append(ref)
        elif prev != ref:
            changed.append((prev, ref))
    return ReferencesDiff(added, list(unmatched.values()), changed)


def _has_duplicate_uid(refs: tuple[OwnerReference, ...]) -> bool:
    return len({ref.uid for ref in refs}) != len(refs)


def _state_of(obj: Mapping[str, Any] | None) -> tuple[bool, Any] | None:
    if obj is None:
        return None
    meta = metadata_of(obj)
    finalizers = meta.get("finalizers") or ()
    if type(finalizers) is not list and type(finalizers) is not tuple:
        raise InvalidObject(f"metadata.finalizers must be a list, got {finalizers!r}")
    return (meta.get("deletionTimestamp") is not None, finalizers)


def _deletion_starts_with_finalizer(
    old_state: tuple[bool, Any] | None, new_state: tuple[bool, Any], finalizer: str
) -> bool:
    """True when ``new`` is being deleted with ``finalizer`` and ``old`` was not."""
    deleting, finalizers = new_state
    if not deleting or finalizer not in finalizers:
        return False
    if old_state is None:
        return True
    old_deleting, old_finalizers = old_state
    return not old_deleting or finalizer not in old_finalizers


def starts_waiting_for_dependents_orphaned(
    old_obj: Mapping[str, Any] | None, new_obj: Mapping[str, Any]
) -> bool:
    """True when this update is the one that starts an Orphan deletion."""
    new_state = _state_of(new_obj)
    assert new_state is not None
    return _deletion_starts_with_finalizer(
        _state_of(old_obj), new_state, FINALIZER_ORPHAN_DEPENDENTS
    )


def starts_waiting_for_dependents_deleted(
    old_obj: Mapping[str, Any] | None, new_obj: Mapping[str, Any]
) -> bool:
    """True when this update is the one that starts a Foreground deletion."""
    new_state = _state_of(new_obj)
    assert new_state is not None
    return _deletion_starts_with_finalizer(
        _state_of(old_obj), new_state, FINALIZER_DELETE_DEPENDENTS
    )


class AbsentOwnerCache:
    """LRU of owner identities verified absent (size 500 upstream).

    Keyed by the full identity (coordinates + namespace), so a reference with
    the same UID but another kind or name is a different key. ``has``
    promotes the entry, as upstream's lookup does. Entries are kept as plain
    tuples of the identity's fields (see :data:`_IdentityKey`): the builder
    adds one for every removed owner, and a tuple hashes without a Python call.
    """

    __slots__ = ("_entries", "max_size")

    def __init__(self, max_size: int = 500) -> None:
        if max_size < 1:
            raise ValueError("absent owner cache size must be positive")
        self.max_size = max_size
        self._entries: OrderedDict[_IdentityKey, None] = OrderedDict()

    def add(self, identity: ObjectReference) -> None:
        self._add_key(_key(identity))

    def _add_key(self, key: _IdentityKey) -> None:
        entries = self._entries
        if key in entries:
            entries.move_to_end(key)
            return
        entries[key] = None
        if len(entries) > self.max_size:
            entries.popitem(last=False)

    def has(self, identity: ObjectReference) -> bool:
        key = _key(identity)
        if key in self._entries:
            self._entries.move_to_end(key)
            return True
        return False

    def __contains__(self, identity: object) -> bool:
        return type(identity) is ObjectReference and _key(identity) in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Any:
        return iter([ObjectReference(*key) for key in self._entries])


@dataclass(frozen=True, slots=True)
class InvalidNamespaceEvent:
    """An ``OwnerRefInvalidNamespace`` warning to record on ``dependent``."""

    dependent: ObjectReference
    owner: OwnerReference

    reason = "OwnerRefInvalidNamespace"
    type = "Warning"

    @property
    def message(self) -> str:
        ns = self.dependent.namespace or ""
        return (
            f"ownerRef [{self.owner.api_version}/{self.owner.kind}, namespace: {ns}, "
            f"name: {self.owner.name}, uid: {self.owner.uid}] does not exist in namespace "
            f'"{ns}"'
        )


def _invalid_namespace_event(dependent: Node, owner_uid: str) -> InvalidNamespaceEvent:
    """The warning for ``dependent``, naming its first ref with ``owner_uid`` (as upstream)."""
    ref = next(r for r in dependent.owners if r.uid == owner_uid)
    return InvalidNamespaceEvent(dependent.identity, ref)


def partition_dependents(
    dependents: Iterable[Node], identity: ObjectReference
) -> tuple[list[Node], list[Node]]:
    """Split dependents into those whose refs match ``identity`` and those that don't.

    A namespaced identity never matches a dependent in another namespace. A
    dependent with two refs to the UID (different coordinates) lands in both.
    """
    matching: list[Node] = []
    non_matching: list[Node] = []
    uid = identity.uid
    coords = identity.coordinates
    namespaced = identity.namespace is not None
    for dep in dependents:
        if namespaced and dep.namespace != identity.namespace:
            non_matching.append(dep)
            continue
        is_match = is_non_match = False
        for ref in dep.owners:
            if ref.uid != uid:
                continue
            if ref.coordinates == coords:
                is_match = True
            else:
                is_non_match = True
        if is_match:
            matching.append(dep)
        if is_non_match:
            non_matching.append(dep)
    return matching, non_matching


def _identity_sort_key(ident: ObjectReference) -> tuple[str, str, str, str, str]:
    return (ident.kind, ident.api_version, ident.namespace or "", ident.name, ident.uid)


def get_alternate_owner_identity(
    dependents: Iterable[Node], verified_absent: ObjectReference
) -> ObjectReference | None:
    """Another identity the dependents claim for the absent UID, to verify next.

    Candidates come from refs with the absent UID (refs equal to the absent
    identity are skipped where they would look up the same place). They are
    ordered by (kind, apiVersion, namespace, name, uid); the first one after
    the absent identity is returned, wrapping to the smallest.
    """
    absent_cluster_scoped = verified_absent.namespace is None
    candidates: set[ObjectReference] = set()
    for dep in dependents:
        dep_ns = dep.namespace
        for ref in dep.owners:
            if ref.uid != verified_absent.uid:
                continue
            if ref.coordinates == verified_absent.coordinates and (
                absent_cluster_scoped or dep_ns == verified_absent.namespace
            ):
                continue
            candidate = ObjectReference.from_owner_reference(ref, dep_ns)
            if (
                absent_cluster_scoped
                and candidate.api_version == verified_absent.api_version
                and candidate.kind == verified_absent.kind
            ):
                candidate = ObjectReference.from_owner_reference(ref, None)
            candidates.add(candidate)
    if not candidates:
        return None
    ordered = sorted(candidates, key=_identity_sort_key)
    absent_key = _identity_sort_key(verified_absent)
    for candidate in ordered:
        if _identity_sort_key(candidate) > absent_key:
            return candidate
    return ordered[0]


@cython.cclass
class GraphBuilder:
    """Applies watch events to the graph, one at a time, and says what to do next.

    ``process(...)`` mutates :attr:`uid_to_node` and :attr:`absent_owner_cache`
    and appends to the outboxes; the caller drains them (``drain``) into its
    work queues. Nothing here blocks, sleeps or talks to a server.

    Compiled (docs/performance.md), the builder is an extension type whose
    fields ``graph_builder.pxd`` declares, so its methods reach the graph, the
    caches and each node's fields without an attribute lookup.
    """

    __slots__ = (
        "_graph",
        "_last_owner",
        "_last_parsed",
        "_namespaces",
        "_ref_cache",
        "absent_owner_cache",
        "attempt_to_delete",
        "attempt_to_delete_rate_limited",
        "attempt_to_orphan",
        "events",
    )

    absent_owner_cache: AbsentOwnerCache
    attempt_to_delete: list[Node]
    attempt_to_delete_rate_limited: list[Node]
    attempt_to_orphan: list[Node]
    events: list[InvalidNamespaceEvent]

    def __init__(self, absent_owner_cache_size: int = 500) -> None:
        graph = UIDToNode()
        # the graph, read as a plain dict (compiled: direct dict calls; UIDToNode
        # overrides no dict method)
        self._graph = cython.cast(dict, graph)
        if cython.compiled:  # (it holds strings and untracked nodes only)
            PyObject_GC_UnTrack(graph)  # type: ignore[name-defined]  # noqa: F821
        self.absent_owner_cache = AbsentOwnerCache(absent_owner_cache_size)
        self._ref_cache: dict[str, _Parsed] = {}
        #: The entry parsed or found last: siblings come one after another (a list is
        #: sorted by name, and a ReplicaSet's pods share its name), so the next one is
        #: most likely the same owner's, found without a lookup in the (large) cache.
        self._last_parsed: _Parsed | None = None
        #: The owner last looked up for a sibling, for the same reason; forgotten
        #: whenever a uid's node is removed or replaced, so it is always the graph's.
        self._last_owner: Node | None = None
        self._namespaces: dict[str, str] = {}
        self.attempt_to_delete = []
        self.attempt_to_delete_rate_limited = []
        self.attempt_to_orphan = []
        self.events = []

    @property
    def uid_to_node(self) -> UIDToNode:
        """The graph (read-only: the builder is its only writer)."""
        return self._graph  # type: ignore[return-value]

    # -- informer events -------------------------------------------------

    @cython.locals(
        plain=dict,
        meta=dict,
        refs=list,
        entry=dict,
        hit=_Parsed,
        node=Node,
        owner=Node,
        graph=dict,
        grown=set,
    )
    def process_upsert(
        self,
        obj: Mapping[str, Any],
        api_version: str,
        kind: str,
        old_obj: Mapping[str, Any] | _FromGraph | None = FROM_GRAPH,
    ) -> Node:
        """An Add or Update from a monitor.

        ``old_obj`` is the previous state (``None`` for an Add). By default it
        is what the graph last observed for this uid (deletion state and
        finalizers), so monitors need not keep object bodies and a replayed
        event (relist) does not restart an orphan or foreground deletion.
        """
        if type(obj) is dict:  # what decoders hand over (compiled: a direct dict call)
            plain = obj
            raw_meta = plain.get("metadata")
        else:
            try:
                raw_meta = obj.get("metadata")
            except AttributeError:
                raise InvalidObject(f"{kind} object must be a JSON object, got {obj!r}") from None
        meta: dict[str, Any]
        if type(raw_meta) is dict:
            meta = raw_meta
        elif isinstance(raw_meta, Mapping):
            meta = dict(raw_meta)  # read as a dict: one path, and direct dict calls compiled
        else:
            raise InvalidObject(f"{kind} object without metadata: {obj!r}")
        uid = meta.get("uid")
        name = meta.get("name")
        if type(uid) is not str or not uid or type(name) is not str or not name:
            raise InvalidObject(f"{kind} object without usable metadata.uid/name: {dict(meta)!r}")
        raw_refs = meta.get("ownerReferences")
        owners: tuple[OwnerReference, ...]
        hit: _Parsed | None = None
        if raw_refs is None:
            owners = _NO_OWNERS
        else:
            if type(raw_refs) is list:
                refs = raw_refs  # (compiled: read as a list, without a generic call)
                first = refs[0] if len(refs) == 1 else None
                if type(first) is dict:
                    # _parsed's cache hit, inlined for the common single entry (a sibling's)
                    entry = first
                    ref_uid = entry.get("uid")
                    hit = self._last_parsed
                    if hit is None or hit.uid != ref_uid:
                        hit = self._ref_cache.get(ref_uid)  # type: ignore[arg-type]
                    if hit is not None and not (
                        # == takes True for 1; the parse would not (booleans only): `is`
                        entry.get("controller") is hit.controller
                        and entry.get("blockOwnerDeletion") is hit.block
                        and entry.get("name") == hit.name
                        and entry.get("kind") == hit.kind
                        and entry.get("apiVersion") == hit.api_version
                    ):
                        hit = None
            if hit is not None:
                owners = hit.owners
                self._last_parsed = hit
            else:
                owners = self._parse_owner_references(raw_refs)
        graph = self._graph
        owner = None
        if hit is not None:
            owner = self._last_owner
            if owner is None or owner.uid != hit.uid:
                owner = graph.get(hit.uid)
                self._last_owner = owner
        namespace = meta.get("namespace") or None
        if namespace is not None:
            if type(namespace) is not str:
                raise InvalidObject(f"metadata.namespace must be a string, got {namespace!r}")
            if owner is not None and owner.namespace == namespace:
                # a sibling in its owner's namespace: the owner's string
                namespace = owner.namespace
            else:
                # A cluster has few namespaces and every decoded body its own copy of
                # the name: keep one string per namespace.
                namespace = self._namespaces.setdefault(namespace, namespace)
        being_deleted = meta.get("deletionTimestamp") is not None
        raw_finalizers = meta.get("finalizers")
        if raw_finalizers:
            if type(raw_finalizers) is not list:
                raise InvalidObject(f"metadata.finalizers must be a list, got {raw_finalizers!r}")
            finalizers: tuple[str, ...] = tuple(raw_finalizers)
        else:
            finalizers = ()
        rv = meta.get("resourceVersion")

        node = graph.get(uid)
        if node is None and old_obj is FROM_GRAPH and not being_deleted:
            # The common case, an object first seen alive: no transition to check
            # (new_node, inlined).
            node = Node.__new__(Node)
            node.owners = owners
            node.dependents = NO_DEPENDENTS
            node.being_deleted = False
            node.deleting_dependents = False
            node.virtual = False
            node.resource_version = rv
            node.finalizers = finalizers
            node.api_version = api_version
            node.kind = kind
            node.name = name
            node.uid = uid
            node.namespace = namespace
            graph[uid] = node
            if owners:
                if hit is not None:
                    # _add_dependent_to_owners, inlined for one owner already observed in
                    # this namespace under these coordinates and not deleting dependents
                    # (nothing to flag or enqueue: the set just gains the node).
                    if owner is None:  # (looked up again: the object may own itself)
                        owner = graph.get(hit.uid)
                    if (
                        owner is not None
                        and owner.namespace == namespace
                        and not owner.deleting_dependents
                        and hit.name == owner.name
                        and hit.kind == owner.kind
                        and hit.api_version == owner.api_version
                    ):
                        deps = owner.dependents
                        if type(deps) is set:
                            grown = deps  # (compiled: a set, so a direct PySet_Add)
                            grown.add(node)
                        else:
                            grown = {node}
                            if cython.compiled:  # (it holds untracked nodes only)
                                PyObject_GC_UnTrack(grown)  # type: ignore[name-defined]  # noqa: F821
                            owner.dependents = grown
                        return node
                self._add_dependent_to_owners(node, owners)
            return node
        return self._upsert_known(
            node, old_obj, api_version, kind, name, uid, namespace, owners, being_deleted,
            finalizers, rv,
        )  # fmt: skip

    def process_list(
        self, objs: Iterable[Mapping[str, Any]], api_version: str, kind: str
    ) -> tuple[set[str], list[tuple[Mapping[str, Any], Exception]]]:
        """A list result (a monitor's first list or a relist), applied in one call.

        Each object is upserted as ``process_upsert(obj, api_version, kind)``
        would, in order, into the same outboxes. Returns the uids listed (to
        find what vanished, see :meth:`vanished`) and the objects refused
        with their errors (an object refused does not stop the list, as a
        monitor logs and goes on).

        The cyclic garbage collector is paused while the list is applied (and
        resumed after, if it ran before): the graph holds no garbage cycle for
        it to find, and with the pure core every node is an object it tracks,
        so a list of 100,000 objects otherwise costs hundreds of collections,
        each over the nodes already made (docs/performance.md). Its thresholds
        are not touched; the collection the list's allocations call for runs at
        the next allocation after it.
        """
        seen: set[str] = set()
        refused: list[tuple[Mapping[str, Any], Exception]] = []
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            for obj in objs:
                try:
                    seen.add(self.process_upsert(obj, api_version, kind).uid)
                except Exception as exc:
                    refused.append((obj, exc))
                    try:
                        uid = metadata_of(obj).get("uid")
                    except InvalidObject:
                        uid = None
                    if isinstance(uid, str):
                        seen.add(uid)
        finally:
            if paused:
                gc.enable()
        return seen, refused

    def vanished(self, api_version: str, kind: str, seen: set[str]) -> list[ObjectReference]:
        """Observed nodes of this resource whose uid a list did not show (``seen``): the
        objects deleted while no watch ran, in graph order (the informer's relist diff)."""
        return [
            node.identity
            for node in self._graph.values()
            if node.kind == kind
            and node.api_version == api_version
            and not node.virtual
            and node.uid not in seen
        ]

    def _upsert_known(
        self,
        node: Node | None,
        old_obj: Mapping[str, Any] | _FromGraph | None,
        api_version: str,
        kind: str,
        name: str,
        uid: str,
        namespace: str | None,
        owners: tuple[OwnerReference, ...],
        being_deleted: bool,
        finalizers: tuple[str, ...],
        rv: Any,
    ) -> Node:
        """``process_upsert`` past its common case: an update, a deleting object, an
        explicit previous state, or the first event of a virtual node."""
        graph = self._graph
        old_state: tuple[bool, Any] | None
        if old_obj is FROM_GRAPH:
            old_state = (
                (node.being_deleted, node.finalizers)
                if node is not None and not node.virtual
                else None
            )
        else:
            old_state = _state_of(old_obj)  # type: ignore[arg-type]
        if node is not None and node.virtual:
            node = self._observe(node, ObjectReference(api_version, kind, name, uid, namespace))

        if node is None:
            node = new_node(
                api_version,
                kind,
                name,
                uid,
                namespace,
                owners,
                being_deleted,
                being_deleted and FINALIZER_DELETE_DEPENDENTS in finalizers,
                rv,
                finalizers,
            )
            graph[uid] = node
            if owners:
                self._add_dependent_to_owners(node, owners)
        else:
            if node.owners != owners or (len(owners) > 1 and _has_duplicate_uid(owners)):
                # (referencesDiffs reports a repeated uid as added even in an unchanged list)
                diff = references_diffs(node.owners, owners)
                if diff:
                    self._add_unblocked_owners_to_delete_queue(diff.removed, diff.changed)
                    node.owners = owners
                    if diff.added:
                        self._add_dependent_to_owners(node, diff.added)
                    for ref in diff.removed:
                        owner: Node | None = graph.get(ref.uid)
                        if owner is not None:
                            owner.remove_dependent(node)
                # else: only the order or a duplicate changed; Kubernetes keeps the stored
                # list then (the unblock JSON merge patch writes that list back).
            if being_deleted:
                node.being_deleted = True
            node.resource_version = rv
            node.finalizers = finalizers
        if being_deleted:
            self._process_transitions(old_state, (True, finalizers), node)
        return node

    @cython.locals(parsed=_Parsed)
    def _parse_owner_references(self, raw: Any) -> tuple[OwnerReference, ...]:
        """Parse ownerReferences, reusing what an equal earlier entry parsed to.

        Siblings share their owner's reference (a ReplicaSet's pods all carry
        the same one): the fields the parse reads are compared with those of
        the first entry seen for that owner uid, and a match reuses its
        OwnerReference, and for a single-entry list (the common case) the very
        same tuple, so siblings cost no parse and no memory of their own.
        """
        if type(raw) is not list:
            raise InvalidOwnerReference(
                f"metadata.ownerReferences must be a list, got {type(raw).__name__}"
            )
        if len(raw) == 1:
            parsed = self._parsed(raw[0])
            self._last_parsed = parsed
            return parsed.owners
        return tuple([self._parsed(entry).ref for entry in raw])

    @cython.locals(plain=dict, hit=_Parsed)
    def _parsed(self, entry: Any) -> _Parsed:
        cache = self._ref_cache
        ref: OwnerReference | None = None
        if type(entry) is dict:
            plain = entry
            uid = plain.get("uid")
            controller = plain.get("controller")
            block = plain.get("blockOwnerDeletion")
            name = plain.get("name")
            kind = plain.get("kind")
            api_version = plain.get("apiVersion")
            found = cache.get(uid)  # type: ignore[arg-type]
            if found is not None:
                hit = found
                if (
                    # == takes True for 1; the parse would not (booleans only): `is`
                    controller is hit.controller
                    and block is hit.block
                    and name == hit.name
                    and kind == hit.kind
                    and api_version == hit.api_version
                ):
                    return hit
            if (
                # OwnerReference.from_dict's checks, passed (else it raises its error)
                type(api_version) is str
                and type(kind) is str
                and type(name) is str
                and type(uid) is str
                and api_version
                and kind
                and name
                and uid
                and (controller is None or type(controller) is bool)
                and (block is None or type(block) is bool)
            ):
                ref = _new_owner_reference(api_version, kind, name, uid, controller, block)
        if ref is None:
            ref = OwnerReference.from_dict(entry)
        hit = _new_parsed(ref)
        if len(cache) >= _REF_CACHE_SIZE:
            cache.clear()
        cache[hit.uid] = hit
        return hit

    @cython.locals(plain=dict, meta=dict, node=Node)
    def process_delete(self, obj: Mapping[str, Any], api_version: str, kind: str) -> None:
        """A Delete from a monitor (tombstones already unwrapped)."""
        raw_meta = None
        if type(obj) is dict:  # (compiled: direct dict calls, as in process_upsert)
            plain = obj
            raw_meta = plain.get("metadata")
        uid = None
        if type(raw_meta) is dict:
            meta = raw_meta
            uid = meta.get("uid")
        if type(uid) is str:
            node = self._graph.get(uid)
            if node is None:
                return  # nothing to do for an object the graph does not hold
            name = meta.get("name")
            namespace = meta.get("namespace") or None
            if (
                not node.virtual
                and type(name) is str
                and name
                and (namespace is None or type(namespace) is str)
                and type(api_version) is str
                and api_version
                and type(kind) is str
                and kind
            ):
                # ObjectReference.from_object's checks, passed: the identity is only
                # needed as the absent-owner cache's key, and only if the node has
                # dependents.
                self._remove_node(node, (api_version, kind, name, uid, namespace))
                return
        identity = ObjectReference.from_object(obj, api_version=api_version, kind=kind)
        node = self._graph.get(identity.uid)
        if node is None:
            return
        if node.virtual:
            node = self._observe(node, identity)
        self._remove_node(node, _key(identity))

    def process_virtual_delete(self, identity: ObjectReference) -> None:
        """A delete worker verified that ``identity`` does not exist on the server."""
        node: Node | None = self._graph.get(identity.uid)
        if node is None:
            return
        if node.virtual:
            matching, non_matching = partition_dependents(node.dependents, identity)
            if not non_matching:
                self._remove_node(node, _key(identity))
                return
            if matching:
                self.absent_owner_cache.add(identity)
                self.attempt_to_delete.extend(matching)
            if node.identity == identity:
                alternate = get_alternate_owner_identity(node.dependents, identity)
                if alternate is not None:
                    replacement = node.copy_with_identity(alternate)
                    self._graph[identity.uid] = replacement
                    self._last_owner = None
                    self.attempt_to_delete_rate_limited.append(replacement)
            return
        if node.identity != identity:
            matching, _ = partition_dependents(node.dependents, identity)
            if matching:
                self.absent_owner_cache.add(identity)
                self.attempt_to_delete.extend(matching)
            return
        self._remove_node(node, _key(identity))

    def drain(
        self,
    ) -> tuple[list[Node], list[Node], list[Node], list[InvalidNamespaceEvent]]:
        """Take and reset the outboxes: (delete, delete rate-limited, orphan, events)."""
        out = (
            self.attempt_to_delete,
            self.attempt_to_delete_rate_limited,
            self.attempt_to_orphan,
            self.events,
        )
        self.attempt_to_delete = []
        self.attempt_to_delete_rate_limited = []
        self.attempt_to_orphan = []
        self.events = []
        return out

    # -- rules -----------------------------------------------------------

    def _observe(self, node: Node, observed: ObjectReference) -> Node:
        """A real event arrived for a virtual node: fix its identity, mark it observed."""
        if observed != node.identity:
            _, non_matching = partition_dependents(node.dependents, observed)
            for dep in non_matching:
                if observed.namespace is not None and dep.namespace != observed.namespace:
                    self.events.append(_invalid_namespace_event(dep, observed.uid))
                self.attempt_to_delete.append(dep)
            node = node.copy_with_identity(observed)
            self._graph[observed.uid] = node
            self._last_owner = None
        node.virtual = False
        return node

    def _add_dependent_to_owners(self, node: Node, owners: Iterable[OwnerReference]) -> None:
        graph = self._graph
        ns = node.namespace
        flagged = late = False
        owner: Node | None
        for ref in owners:
            owner = graph.get(ref.uid)
            if owner is None:
                owner = Node(
                    new_identity(ref.api_version, ref.kind, ref.name, ref.uid, ns),
                    virtual=True,
                )
                owner.dependents = _dependents_of_one(node)
                graph[ref.uid] = owner
                self.attempt_to_delete.append(owner)
                continue
            deps = owner.dependents  # Node.add_dependent, inlined: once per observed object
            if type(deps) is set:
                deps.add(node)
            else:
                owner.dependents = _dependents_of_one(node)
            if owner.deleting_dependents:
                # Deliberate deviation (docs/reliability.md): the owner's foreground
                # transition enqueued the dependents it had then; one observed later
                # (a restarted collector lists the owner first, or the dependent's
                # resource syncs later) would otherwise never be processed while the
                # owner waits, since only blocking dependents are re-enqueued.
                late = True
            if flagged:
                continue
            owner_ns = owner.namespace
            if owner_ns is not None and owner_ns != ns:
                flagged = True
                if not owner.virtual:
                    self.events.append(_invalid_namespace_event(node, ref.uid))
            elif (  # (the uid matches: the owner was looked up by it)
                ref.name != owner.name
                or ref.kind != owner.kind
                or ref.api_version != owner.api_version
            ):
                flagged = True
            elif owner_ns is None and ns is not None and owner.virtual:
                flagged = True
        if flagged or late:
            self.attempt_to_delete.append(node)

    def _add_unblocked_owners_to_delete_queue(
        self,
        removed: list[OwnerReference],
        changed: list[tuple[OwnerReference, OwnerReference]],
    ) -> None:
        graph = self._graph
        for ref in removed:
            if ref.block_owner_deletion is True:
                owner = graph.get(ref.uid)
                if owner is not None:
                    self.attempt_to_delete.append(owner)
        for old_ref, new_ref in changed:
            if old_ref.block_owner_deletion is True and not new_ref.block_owner_deletion:
                owner = graph.get(new_ref.uid)
                if owner is not None:
                    self.attempt_to_delete.append(owner)

    def _process_transitions(
        self, old_state: tuple[bool, Any] | None, new_state: tuple[bool, Any], node: Node
    ) -> None:
        if _deletion_starts_with_finalizer(old_state, new_state, FINALIZER_ORPHAN_DEPENDENTS):
            self.attempt_to_orphan.append(node)
            return
        if _deletion_starts_with_finalizer(old_state, new_state, FINALIZER_DELETE_DEPENDENTS):
            node.deleting_dependents = True
            self.attempt_to_delete.extend(node.dependents)
            self.attempt_to_delete.append(node)

    def _remove_node(self, node: Node, key: _IdentityKey) -> None:
        """Remove ``node`` (identity ``key``, as the event or the verification saw it)."""
        graph = self._graph
        uid = node.uid
        if graph.get(uid) is node:
            del graph[uid]
            self._last_owner = None
        waiting: list[Node] | None = None  # owners deleting their dependents
        owner: Node | None
        for ref in node.owners:
            owner = graph.get(ref.uid)
            if owner is not None:
                deps = owner.dependents  # Node.remove_dependent, inlined
                if type(deps) is set:
                    deps.discard(node)
                if owner.deleting_dependents:
                    if waiting is None:
                        waiting = [owner]
                    else:
                        waiting.append(owner)
        dependents = node.dependents
        if dependents:
            # AbsentOwnerCache._add_key, inlined: once per owner removed
            cache = self.absent_owner_cache
            entries = cache._entries
            if key in entries:
                entries.move_to_end(key)
            else:
                entries[key] = None
                if len(entries) > cache.max_size:
                    entries.popitem(last=False)
            self.attempt_to_delete.extend(dependents)
            if node in dependents:
                # An object that owned itself: the one reference cycle a removal leaves
                # (the owners above no longer hold it). Broken, so that a compiled node,
                # which the cyclic GC does not track, is freed like any other.
                dependents.discard(node)  # type: ignore[union-attr]
        if waiting is not None:
            self.attempt_to_delete.extend(waiting)
