# Declarations for the compiled build (docs/performance.md, "The compiled core"):
# the builder as an extension type, and Node's fields read directly (cimported).
# graph_builder.py stays the reference.
from ownergc._core.graph cimport Node

cdef class GraphBuilder:
    cdef dict _graph
    cdef dict _namespaces
    cdef dict _ref_cache
    cdef public object absent_owner_cache
    cdef public object attempt_to_delete
    cdef public object attempt_to_delete_rate_limited
    cdef public object attempt_to_orphan
    cdef public object events

    cdef tuple _parse_owner_references(self, object raw)
    cdef tuple _parsed(self, object entry)
    cdef Node _observe(self, Node node, object observed)
    cdef _add_dependent_to_owners(self, Node node, object owners)
    cdef _remove_node(self, Node node, tuple key)
