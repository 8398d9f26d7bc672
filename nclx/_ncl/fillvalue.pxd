# A fill value as one element's bytes (nclx._ncl.fillvalue), for nclx._ncl.creating.
cimport numpy as cnp

cdef bint ncl_fill_value(object fill, cnp.dtype descr, unsigned char *out) except -1
