/*
 * The bit-width dtype layer: nclx kernels are written per fixed-width type,
 * and NumPy's C-named type numbers (byte, short, int, long, longlong, ...)
 * map onto them.  On LP64 Linux NumPy's 'l' and 'q' are both int64, so both
 * map to NCL_INT64 and share one kernel.
 */
#ifndef NCLX_NCL_DTYPES_H
#define NCLX_NCL_DTYPES_H

#include <Python.h>
#include <numpy/ndarraytypes.h>

#include "ncl_spec.h"   /* ncl_dtype, ncl_dtype_names, ncl_dtype_sizes */

static inline int ncl_signed_of_bits(int bits)
{
    switch (bits) {
        case 8: return NCL_INT8;
        case 16: return NCL_INT16;
        case 32: return NCL_INT32;
        case 64: return NCL_INT64;
    }
    return NCL_NOTYPE;
}

static inline int ncl_unsigned_of_bits(int bits)
{
    switch (bits) {
        case 8: return NCL_UINT8;
        case 16: return NCL_UINT16;
        case 32: return NCL_UINT32;
        case 64: return NCL_UINT64;
    }
    return NCL_NOTYPE;
}

/* NumPy type number -> fixed-width nclx type, or NCL_NOTYPE. */
static inline int ncl_dtype_from_typenum(int typenum)
{
    switch (typenum) {
        case NPY_BOOL: return NCL_BOOL;
        case NPY_BYTE: return ncl_signed_of_bits(NPY_BITSOF_CHAR);
        case NPY_UBYTE: return ncl_unsigned_of_bits(NPY_BITSOF_CHAR);
        case NPY_SHORT: return ncl_signed_of_bits(NPY_BITSOF_SHORT);
        case NPY_USHORT: return ncl_unsigned_of_bits(NPY_BITSOF_SHORT);
        case NPY_INT: return ncl_signed_of_bits(NPY_BITSOF_INT);
        case NPY_UINT: return ncl_unsigned_of_bits(NPY_BITSOF_INT);
        case NPY_LONG: return ncl_signed_of_bits(NPY_BITSOF_LONG);
        case NPY_ULONG: return ncl_unsigned_of_bits(NPY_BITSOF_LONG);
        case NPY_LONGLONG: return ncl_signed_of_bits(NPY_BITSOF_LONGLONG);
        case NPY_ULONGLONG: return ncl_unsigned_of_bits(NPY_BITSOF_LONGLONG);
        case NPY_FLOAT: return NPY_BITSOF_FLOAT == 32 ? NCL_FLOAT32 : NCL_NOTYPE;
        case NPY_DOUBLE: return NPY_BITSOF_DOUBLE == 64 ? NCL_FLOAT64 : NCL_NOTYPE;
    }
    return NCL_NOTYPE;
}

static inline const char *ncl_dtype_name(int t)
{
    return (t >= 0 && t < NCL_NTYPES) ? ncl_dtype_names[t] : NULL;
}

#endif
