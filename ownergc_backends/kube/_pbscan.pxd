# Declarations for the compiled build (docs/kube-backend.md, "Decoding"):
# the reader as an extension type whose primitives are C methods.
# _pbscan.py stays the reference.

cdef class _Reader:
    cdef bytes data
    cdef Py_ssize_t pos
    cdef Py_ssize_t end

    cdef unsigned long long varint(self) except? 0xFFFFFFFFFFFFFFFF
    cdef Py_ssize_t length(self) except -1
    cdef str text(self)
    cdef skip(self, Py_ssize_t wire)
