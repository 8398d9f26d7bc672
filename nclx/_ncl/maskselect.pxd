# Selection by a mask, NumPy's way (nclx._ncl.maskselect).
cdef object select_extract(object condition, object arr)
cdef object select_compress(object condition, object a, object axis, object out)
