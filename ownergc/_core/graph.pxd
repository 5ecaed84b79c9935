# Declarations for the optional compiled build (docs/performance.md, "The
# compiled core"): Node as an extension type. graph.py stays the reference.
cdef extern from "Python.h":
    # A set of dependents holds only nodes, which the cyclic GC does not track:
    # the set is taken out of its lists as well (issue 19).
    void PyObject_GC_UnTrack(object)

cdef class Node:
    cdef public object api_version, kind, name, uid, namespace
    cdef public object owners, dependents
    cdef public object being_deleted, deleting_dependents, virtual
    cdef public object resource_version, finalizers
