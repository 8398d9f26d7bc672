/* The exception a C hook left set, raised by the caller: -1 when one is
   set (Cython: ``int ncl_raise_pending() except -1``).  For the paths that
   run an entry directly rather than through a ufunc or a call op (review
   27: nclx.convert's one-segment path and nclx.sort/argsort's lane loops
   returned their result with it set: Python's SystemError "returned a
   result with an exception set"). */
#ifndef NCL_PENDING_H
#define NCL_PENDING_H
#include <Python.h>

static int ncl_raise_pending(void) { return PyErr_Occurred() ? -1 : 0; }

#endif
