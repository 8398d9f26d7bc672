/* Freed C API nodes wait here before their memory goes back to malloc.
 *
 * A C library that calls hook_remove twice (or after hooks.reset()) holds a
 * stale pointer; hook_remove refuses an address with no live node, but once
 * malloc gives that memory to a new node the pointer names the new node.
 * Keeping the last NCL_QUARANTINE freed C API nodes out of malloc's hands
 * makes such a pointer refused for that long (the registry never reads a
 * node in the ring).  Used with the GIL held (registry.pyx), never by loops.
 */
#ifndef NCL_QUARANTINE_H
#define NCL_QUARANTINE_H

#include <stddef.h>

#define NCL_QUARANTINE 1024

static void *ncl_quarantine_ring[NCL_QUARANTINE];
static size_t ncl_quarantine_next = 0;

/* Put p in the ring; return the pointer it displaces (NULL while the ring
 * fills), which the caller frees. */
static inline void *ncl_quarantine(void *p)
{
    void *old = ncl_quarantine_ring[ncl_quarantine_next];
    ncl_quarantine_ring[ncl_quarantine_next] = p;
    ncl_quarantine_next = (ncl_quarantine_next + 1) % NCL_QUARANTINE;
    return old;
}

#endif
