/* The recycling data allocator (NEP 49 handler) behind install(recycle=True).
 *
 * Every block carries a 64-byte header in front of the data NumPy sees, so
 * free() and realloc() know how a block was made whatever size NumPy passes:
 *   - small (< NCL_RC_MIN requested bytes): NumPy's default handler's own
 *     functions (its small-block cache included), called with header + data
 *     bytes: small arrays cost what they cost in stock NumPy;
 *   - big: an anonymous private mapping of `length` bytes (a size class:
 *     a multiple of 64 KiB below 2 MiB, of 2 MiB from there, 2 MiB-aligned
 *     and madvise'd MADV_HUGEPAGE), kept on a free list of its class when
 *     freed while the cache is active and under its cap, else unmapped.
 * calloc never takes a cached (dirty) block: big zeroed blocks are fresh
 * mappings, so the kernel's zero pages stay untouched until written.
 * One pthread mutex guards the cache (never the GIL); pthread_atfork holds
 * it across fork() and re-initialises it in the child.
 * tracemalloc: NumPy's PyDataMem_User* wrappers track every block this
 * handler returns (domain 389047); the handler itself uses malloc/mmap,
 * which tracemalloc does not see, so nothing is counted twice.
 */
#ifndef NCL_RECYCLE_H
#define NCL_RECYCLE_H

#include <Python.h>
#include <numpy/arrayobject.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NCL_RC_HDR 64
#define NCL_RC_MIN ((size_t)1 << 20)
#define NCL_RC_HUGE ((size_t)2 << 20)
#define NCL_RC_STEP ((size_t)64 << 10)
#define NCL_RC_NBUCKETS 64
#define NCL_RC_SMALL 0x6e636c78736d6c31ULL /* block made by malloc */
#define NCL_RC_BIG 0x6e636c7862696731ULL   /* block made by mmap */

typedef struct ncl_rc_hdr {
    uint64_t magic;
    size_t length;               /* mapped bytes (big) */
    size_t size;                 /* bytes NumPy asked for */
    struct ncl_rc_hdr *next;     /* free-list link while cached */
    char pad[NCL_RC_HDR - 32];
} ncl_rc_hdr;

typedef struct {
    pthread_mutex_t lock;
    ncl_rc_hdr *bucket[NCL_RC_NBUCKETS];
    size_t cap, cached_bytes, cached_blocks;
    uint64_t hits, misses, mapped, unmapped;
    int active;                  /* cache frees (install(recycle=True)) */
    int hugepages;
} ncl_rc_state;

/* NumPy's default handler (its capsule's pointer), set once at import */
static PyDataMem_Handler *ncl_rc_small;

static void *ncl_rc_small_malloc(size_t n) {
    return ncl_rc_small->allocator.malloc(ncl_rc_small->allocator.ctx, n);
}
static void *ncl_rc_small_calloc(size_t n) {
    return ncl_rc_small->allocator.calloc(ncl_rc_small->allocator.ctx, 1, n);
}
static void *ncl_rc_small_realloc(void *p, size_t n) {
    return ncl_rc_small->allocator.realloc(ncl_rc_small->allocator.ctx, p, n);
}
static void ncl_rc_small_free(void *p, size_t n) {
    ncl_rc_small->allocator.free(ncl_rc_small->allocator.ctx, p, n);
}

static ncl_rc_state ncl_rc = {PTHREAD_MUTEX_INITIALIZER, {0}, (size_t)1 << 30,
                              0, 0, 0, 0, 0, 0, 0, 1};

static void ncl_rc_prepare(void) { pthread_mutex_lock(&ncl_rc.lock); }
static void ncl_rc_parent(void) { pthread_mutex_unlock(&ncl_rc.lock); }
static void ncl_rc_child(void) { pthread_mutex_init(&ncl_rc.lock, NULL); }

/* `default_capsule`: NumPy's default handler; -1 with a Python error */
static int ncl_rc_init(PyObject *default_capsule) {
    ncl_rc_small = (PyDataMem_Handler *)PyCapsule_GetPointer(default_capsule, "mem_handler");
    if (!ncl_rc_small) return -1;
    if (pthread_atfork(ncl_rc_prepare, ncl_rc_parent, ncl_rc_child) != 0) {
        PyErr_SetString(PyExc_OSError, "nclx recycle: pthread_atfork failed");
        return -1;
    }
    return 0;
}

/* the mapped length for `size` bytes of data (0 on overflow) */
static size_t ncl_rc_class(size_t size) {
    if (size > SIZE_MAX - NCL_RC_HDR - NCL_RC_HUGE) return 0;
    size_t need = size + NCL_RC_HDR;
    size_t g = need < NCL_RC_HUGE ? NCL_RC_STEP : NCL_RC_HUGE;
    return (need + g - 1) / g * g;
}

static size_t ncl_rc_bucket(size_t length) {
    return (length / NCL_RC_STEP) % NCL_RC_NBUCKETS;
}

static ncl_rc_hdr *ncl_rc_map(size_t length) {
    char *p;
    if (length < NCL_RC_HUGE) {
        p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
    } else {
        /* over-map by 2 MiB, keep the 2 MiB-aligned part */
        char *raw = mmap(NULL, length + NCL_RC_HUGE, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) return NULL;
        p = (char *)(((uintptr_t)raw + NCL_RC_HUGE - 1) & ~(uintptr_t)(NCL_RC_HUGE - 1));
        if (p > raw) munmap(raw, (size_t)(p - raw));
        size_t tail = (size_t)(raw + length + NCL_RC_HUGE - (p + length));
        if (tail) munmap(p + length, tail);
#ifdef MADV_HUGEPAGE
        if (ncl_rc.hugepages) madvise(p, length, MADV_HUGEPAGE);
#endif
    }
    __atomic_add_fetch(&ncl_rc.mapped, 1, __ATOMIC_RELAXED);
    ncl_rc_hdr *h = (ncl_rc_hdr *)p;
    h->magic = NCL_RC_BIG;
    h->length = length;
    h->next = NULL;
    return h;
}

static void ncl_rc_unmap(ncl_rc_hdr *h) {
    h->magic = 0;
    __atomic_add_fetch(&ncl_rc.unmapped, 1, __ATOMIC_RELAXED);
    munmap((void *)h, h->length);
}

/* a cached block of exactly `length` bytes, or NULL */
static ncl_rc_hdr *ncl_rc_take(size_t length) {
    ncl_rc_hdr *found = NULL;
    pthread_mutex_lock(&ncl_rc.lock);
    ncl_rc_hdr **link = &ncl_rc.bucket[ncl_rc_bucket(length)];
    while (*link && (*link)->length != length) link = &(*link)->next;
    if (*link) {
        found = *link;
        *link = found->next;
        found->next = NULL;
        ncl_rc.cached_bytes -= length;
        ncl_rc.cached_blocks -= 1;
        ncl_rc.hits += 1;
    } else {
        ncl_rc.misses += 1;
    }
    pthread_mutex_unlock(&ncl_rc.lock);
    return found;
}

static void *ncl_rc_malloc(void *ctx, size_t size) {
    (void)ctx;
    ncl_rc_hdr *h;
    if (size < NCL_RC_MIN) {
        h = ncl_rc_small_malloc(size + NCL_RC_HDR);
        if (!h) return NULL;
        h->magic = NCL_RC_SMALL;
    } else {
        size_t length = ncl_rc_class(size);
        if (!length) return NULL;
        h = ncl_rc_take(length);
        if (!h && !(h = ncl_rc_map(length))) return NULL;
    }
    h->size = size;
    return (char *)h + NCL_RC_HDR;
}

static void *ncl_rc_calloc(void *ctx, size_t nelem, size_t elsize) {
    (void)ctx;
    size_t size;
    ncl_rc_hdr *h;
    if (__builtin_mul_overflow(nelem, elsize, &size)) return NULL;
    if (size < NCL_RC_MIN) {
        h = ncl_rc_small_calloc(size + NCL_RC_HDR);
        if (!h) return NULL;
        h->magic = NCL_RC_SMALL;
    } else {
        size_t length = ncl_rc_class(size);
        if (!length || !(h = ncl_rc_map(length))) return NULL;   /* fresh zero pages */
    }
    h->size = size;
    return (char *)h + NCL_RC_HDR;
}

static void ncl_rc_free(void *ctx, void *ptr, size_t size) {
    (void)ctx; (void)size;
    if (!ptr) return;
    ncl_rc_hdr *h = (ncl_rc_hdr *)((char *)ptr - NCL_RC_HDR);
    if (h->magic == NCL_RC_SMALL) {
        h->magic = 0;
        ncl_rc_small_free(h, h->size + NCL_RC_HDR);
        return;
    }
    if (h->magic != NCL_RC_BIG) {
        /* not a block of this handler: leaking it is the only safe thing */
        fprintf(stderr, "nclx recycle: free of a block it did not allocate (%p), ignored\n", ptr);
        return;
    }
    int kept = 0;
    pthread_mutex_lock(&ncl_rc.lock);
    if (ncl_rc.active && ncl_rc.cached_bytes + h->length <= ncl_rc.cap) {
        ncl_rc_hdr **head = &ncl_rc.bucket[ncl_rc_bucket(h->length)];
        h->next = *head;
        *head = h;
        ncl_rc.cached_bytes += h->length;
        ncl_rc.cached_blocks += 1;
        kept = 1;
    }
    pthread_mutex_unlock(&ncl_rc.lock);
    if (!kept) ncl_rc_unmap(h);
}

static void *ncl_rc_realloc(void *ctx, void *ptr, size_t size) {
    if (!ptr) return ncl_rc_malloc(ctx, size);
    ncl_rc_hdr *h = (ncl_rc_hdr *)((char *)ptr - NCL_RC_HDR);
    if (h->magic == NCL_RC_SMALL && size < NCL_RC_MIN) {
        ncl_rc_hdr *n = ncl_rc_small_realloc(h, size + NCL_RC_HDR);
        if (!n) return NULL;
        n->size = size;
        return (char *)n + NCL_RC_HDR;
    }
    if (h->magic == NCL_RC_BIG && size >= NCL_RC_MIN && size + NCL_RC_HDR <= h->length
            && size + NCL_RC_HDR >= h->length / 2) {
        h->size = size;   /* fits its mapping and uses at least half of it */
        return ptr;
    }
    if (h->magic != NCL_RC_SMALL && h->magic != NCL_RC_BIG) return NULL;
    void *n = ncl_rc_malloc(ctx, size);
    if (!n) return NULL;
    memcpy(n, ptr, h->size < size ? h->size : size);
    ncl_rc_free(ctx, ptr, h->size);
    return n;
}

/* unmap cached blocks until at most `keep` bytes stay cached; bytes released */
static size_t ncl_rc_trim(size_t keep) {
    ncl_rc_hdr *out = NULL;
    size_t released = 0;
    pthread_mutex_lock(&ncl_rc.lock);
    for (int b = 0; b < NCL_RC_NBUCKETS && ncl_rc.cached_bytes > keep; b++) {
        while (ncl_rc.bucket[b] && ncl_rc.cached_bytes > keep) {
            ncl_rc_hdr *h = ncl_rc.bucket[b];
            ncl_rc.bucket[b] = h->next;
            ncl_rc.cached_bytes -= h->length;
            ncl_rc.cached_blocks -= 1;
            h->next = out;
            out = h;
        }
    }
    pthread_mutex_unlock(&ncl_rc.lock);
    while (out) {
        ncl_rc_hdr *next = out->next;
        released += out->length;
        ncl_rc_unmap(out);
        out = next;
    }
    return released;
}

static PyDataMem_Handler ncl_rc_handler = {
    "nclx_recycle", 1,
    {NULL, ncl_rc_malloc, ncl_rc_calloc, ncl_rc_realloc, ncl_rc_free}
};

#endif
