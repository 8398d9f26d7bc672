/* Mapping a fresh output's pages before it is written.
 *
 * A page fault per 4 KiB page costs a trap, the kernel's zeroing of the
 * page and the return; MADV_POPULATE_WRITE (Linux 5.14) maps and zeroes a
 * whole range in one call, which measured about a third less than the
 * faults a writing loop takes (80 MB: 8 ms against 12 ms on the 2-core VM
 * of docs/benchmarks.md).  Pages already mapped cost a walk of their page
 * tables.  Elsewhere, or where the kernel refuses it, nothing happens: the
 * writes fault as before. */
#ifndef NCL_PREFAULT_H
#define NCL_PREFAULT_H
#include <stddef.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

static inline void ncl_prefault(char *p, size_t nbytes)
{
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t lo = ((size_t)p + pg - 1) & ~(pg - 1), hi = ((size_t)p + nbytes) & ~(pg - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)p; (void)nbytes;
#endif
}
/* The same, only where the range is ``NCL_PREFAULT_FROM`` bytes or more and
 * its first whole page is not mapped yet (mincore): a fresh mapping.  A
 * range already mapped (glibc's heap, a block nclx's recycler reuses) would
 * pay the walk for nothing, which measured more than the gain on 1 MB. */
#define NCL_PREFAULT_FROM ((size_t)4 << 20)

static inline void ncl_prefault_fresh(char *p, size_t nbytes)
{
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    unsigned char in = 1;
    if (nbytes < NCL_PREFAULT_FROM)
        return;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t lo = ((size_t)p + pg - 1) & ~(pg - 1);
    if (mincore((void *)lo, pg, &in) != 0 || (in & 1))
        return;
    ncl_prefault(p, nbytes);
#else
    (void)p; (void)nbytes;
#endif
}
#endif
