# Declarations for the compiled build (docs/performance.md, "The compiled core"):
# the builder as an extension type, and Node's fields read directly (cimported).
# graph_builder.py stays the reference.
from ownergc._core.graph cimport Node

cdef extern from "Python.h":
    # Objects that hold no container the collector must see (strings, flags,
    # untracked nodes) are taken out of the cyclic GC's lists (issue 19).
    void PyObject_GC_UnTrack(object)
    # Sets a slot of an OwnerReference as object.__setattr__ does (its frozen
    # dataclass __init__, skipped on the hot path).
    int PyObject_GenericSetAttr(object, object, object) except -1

cdef class _Parsed:
    cdef readonly object ref
    cdef readonly tuple owners
    cdef readonly object controller, block
    cdef readonly str uid, name, kind, api_version

cdef class GraphBuilder:
    cdef dict _graph
    cdef dict _namespaces
    cdef dict _ref_cache
    cdef _Parsed _last_parsed
    cdef Node _last_owner
    cdef public object absent_owner_cache
    cdef public object attempt_to_delete
    cdef public object attempt_to_delete_rate_limited
    cdef public object attempt_to_orphan
    cdef public object events

    # (a C call from process_list; the same method from Python)
    cpdef Node process_upsert(self, object obj, str api_version, str kind, object old_obj=*)
    cdef tuple _parse_owner_references(self, object raw)
    cdef _Parsed _parsed(self, object entry)
    cdef Node _observe(self, Node node, object observed)
    cdef _add_dependent_to_owners(self, Node node, object owners)
    cdef _remove_node(self, Node node, tuple key)

cdef set _dependents_of_one(Node node)
cdef object _new_owner_reference(str api_version, str kind, str name, str uid, object controller, object block)
cdef _Parsed _new_parsed(object ref)
