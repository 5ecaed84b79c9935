"""The owner/dependent graph (upstream's ``uidToNode``): one :class:`Node` per UID.

Rule 1 — one node per UID. Owners are found by the UID in an ownerReference;
the other coordinates (apiVersion, kind, name) and the namespace are checked
separately, because a reference may carry the right UID and wrong coordinates.

Rule 2 — a node's ``owners`` is the object's ownerReferences as last
observed; ``dependents`` is the set of nodes whose owners name this UID. Both
directions are kept consistent after every event (``check_invariants``).

Rule 4 — ``beingDeleted`` and ``deletingDependents`` only ever go from false
to true.

Only the graph builder (:mod:`ownergc._core.graph_builder`) mutates the graph.
"""

from __future__ import annotations

from types import FunctionType
from typing import TYPE_CHECKING

from ownergc._core.refs import ObjectReference, OwnerReference

if TYPE_CHECKING:
    from ownergc._core import _cython as cython
else:
    try:
        import cython  # compiled: the compiler's directives; else Cython's shadow module
    except ImportError:
        from ownergc._core import _cython as cython

__all__ = ["NO_DEPENDENTS", "Node", "UIDToNode", "new_identity", "new_node"]

#: Leaf nodes (most of a cluster) share this one empty set of dependents.
NO_DEPENDENTS: frozenset[Node] = frozenset()


@cython.no_gc
@cython.cclass
class Node:
    """One object (or a virtual stand-in for an unobserved owner) in the graph.

    ``dependents`` starts as a shared empty frozenset and becomes a set on the
    first dependent, which keeps leaf nodes (most of a cluster) small. The
    identity's five strings are fields of the node itself (no object of its
    own to allocate, hold and have the cyclic garbage collector visit) and
    are handed out as an :class:`ObjectReference`.

    Compiled (docs/performance.md), a node is an extension type the cyclic
    garbage collector does not track: walking a graph of a million nodes on
    every full collection was a quarter of the graph builder's time. Nodes
    form a reference cycle only through an ownership cycle (a node among its
    own dependents, directly or through others); the graph builder breaks
    the ones a removal leaves, and a whole graph dropped while holding one
    keeps those few nodes until the process ends.
    """

    __slots__ = (
        "api_version",
        "being_deleted",
        "deleting_dependents",
        "dependents",
        "finalizers",
        "kind",
        "name",
        "namespace",
        "owners",
        "resource_version",
        "uid",
        "virtual",
    )

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str | None
    owners: tuple[OwnerReference, ...]
    dependents: set[Node] | frozenset[Node]
    being_deleted: bool
    deleting_dependents: bool
    virtual: bool
    #: Last observed resourceVersion and finalizers (None/() for virtual nodes):
    #: what the watch cache knows, so a worker can act without a GET.
    resource_version: str | None
    finalizers: tuple[str, ...]

    def __init__(
        self,
        identity: ObjectReference,
        owners: tuple[OwnerReference, ...] = (),
        *,
        being_deleted: bool = False,
        deleting_dependents: bool = False,
        virtual: bool = False,
        resource_version: str | None = None,
        finalizers: tuple[str, ...] = (),
    ) -> None:
        self.identity = identity
        self.owners = owners
        self.dependents = NO_DEPENDENTS
        self.being_deleted = being_deleted
        self.deleting_dependents = deleting_dependents
        self.virtual = virtual
        self.resource_version = resource_version
        self.finalizers = finalizers

    @property
    def identity(self) -> ObjectReference:
        """The object's identity (coordinates + namespace)."""
        return new_identity(self.api_version, self.kind, self.name, self.uid, self.namespace)

    @identity.setter
    def identity(self, identity: ObjectReference) -> None:
        self.api_version = identity.api_version
        self.kind = identity.kind
        self.name = identity.name
        self.uid = identity.uid
        self.namespace = identity.namespace

    def add_dependent(self, dependent: Node) -> None:
        deps = self.dependents
        if type(deps) is frozenset:
            grown = {dependent}
            if cython.compiled:  # (nodes are not tracked, nor a set of nodes)
                PyObject_GC_UnTrack(grown)  # type: ignore[name-defined]  # noqa: F821
            self.dependents = grown
        else:
            deps.add(dependent)  # type: ignore[union-attr]

    def remove_dependent(self, dependent: Node) -> None:
        deps = self.dependents
        if type(deps) is set:
            deps.discard(dependent)

    def blocking_dependents(self) -> list[Node]:
        """Dependents holding a ``blockOwnerDeletion: true`` ref to this node.

        A dependent with two blocking refs is listed twice, as upstream does.
        """
        uid = self.uid
        return [
            dep
            for dep in self.dependents
            for ref in dep.owners
            if ref.uid == uid and ref.block_owner_deletion is True
        ]

    def copy_with_identity(self, identity: ObjectReference) -> Node:
        """A new node object with another identity; queued pointers to the old one go stale."""
        clone = Node(
            identity,
            self.owners,
            being_deleted=self.being_deleted,
            deleting_dependents=self.deleting_dependents,
            virtual=self.virtual,
            resource_version=self.resource_version,
            finalizers=self.finalizers,
        )
        if self.dependents:
            copied = set(self.dependents)
            if cython.compiled:
                PyObject_GC_UnTrack(copied)  # type: ignore[name-defined]  # noqa: F821
            clone.dependents = copied
        else:
            clone.dependents = NO_DEPENDENTS
        return clone

    def __repr__(self) -> str:
        flags = [
            name
            for name, on in (
                ("beingDeleted", self.being_deleted),
                ("deletingDependents", self.deleting_dependents),
                ("virtual", self.virtual),
            )
            if on
        ]
        return f"<Node {self.identity}{' ' + ','.join(flags) if flags else ''}>"


class UIDToNode(dict[str, Node]):
    """The graph: UID -> Node."""

    def check_invariants(self) -> None:
        """Raise AssertionError if the owner/dependent links are inconsistent."""
        for uid, node in self.items():
            if node.uid != uid:
                raise AssertionError(f"node {node!r} stored under uid {uid}")
            for dep in node.dependents:
                if not any(ref.uid == uid for ref in dep.owners):
                    raise AssertionError(f"{dep!r} is a dependent of {node!r} without a ref")
            for ref in node.owners:
                owner = self.get(ref.uid)
                if owner is not None and node not in owner.dependents:
                    raise AssertionError(f"{node!r} missing from dependents of {owner!r}")


def _probe() -> None:
    """A plain function, unless this module was compiled (see :data:`COMPILED`)."""


#: True when this module runs compiled by Cython (the optional build,
#: docs/performance.md, "The compiled core"). The pure-Python modules are the
#: reference and the fallback.
COMPILED: bool = not isinstance(_probe, FunctionType)

_set_identity_fields = tuple(
    vars(ObjectReference)[f].__set__ for f in ("api_version", "kind", "name", "uid", "namespace")
)
_new_object = object.__new__


@cython.annotation_typing(False)  # (compiled: a str subclass, as ObjectReference takes it)
def new_identity(
    api_version: str, kind: str, name: str, uid: str, namespace: str | None
) -> ObjectReference:
    """ObjectReference(...) without the frozen dataclass's per-field __setattr__ detour."""
    ident: ObjectReference = _new_object(ObjectReference)
    s_av, s_kind, s_name, s_uid, s_ns = _set_identity_fields
    s_av(ident, api_version)
    s_kind(ident, kind)
    s_name(ident, name)
    s_uid(ident, uid)
    s_ns(ident, namespace)
    return ident


@cython.annotation_typing(False)  # (compiled: a str subclass, as Node takes it)
def new_node(
    api_version: str,
    kind: str,
    name: str,
    uid: str,
    namespace: str | None,
    owners: tuple[OwnerReference, ...],
    being_deleted: bool,
    deleting_dependents: bool,
    resource_version: str | None,
    finalizers: tuple[str, ...],
) -> Node:
    """A node for an observed object (the graph builder's hot path)."""
    node: Node = Node.__new__(Node)  # without __init__: no identity to build
    node.owners = owners
    node.dependents = NO_DEPENDENTS
    node.being_deleted = being_deleted
    node.deleting_dependents = deleting_dependents
    node.virtual = False
    node.resource_version = resource_version
    node.finalizers = finalizers
    node.api_version = api_version
    node.kind = kind
    node.name = name
    node.uid = uid
    node.namespace = namespace
    return node
