"""Probe of the OpenMP runtime this build was compiled against."""

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int ncl_openmp_enabled(void) { return 1; }
    static int ncl_omp_max_threads(void) { return omp_get_max_threads(); }
    static int ncl_openmp_version(void) { return _OPENMP; }
    #else
    static int ncl_openmp_enabled(void) { return 0; }
    static int ncl_omp_max_threads(void) { return 1; }
    static int ncl_openmp_version(void) { return 0; }
    #endif
    """
    int ncl_openmp_enabled()
    int ncl_omp_max_threads()
    int ncl_openmp_version()


def openmp_enabled():
    """True when nclx was compiled with OpenMP (else prange runs serially)."""
    return bool(ncl_openmp_enabled())


def max_threads():
    """omp_get_max_threads(), or 1 without OpenMP."""
    return ncl_omp_max_threads()


def openmp_version():
    """The _OPENMP date macro (e.g. 201511), 0 without OpenMP."""
    return ncl_openmp_version()
