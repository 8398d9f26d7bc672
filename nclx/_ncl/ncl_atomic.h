/* Stateless atomic helpers shared by the registry's reader side
   (walk.pyx) and writer side (registry.pyx).  The state they guard (the
   reader count, the hook depth) lives in walk.pyx alone. */
#ifndef NCL_ATOMIC_H
#define NCL_ATOMIC_H
static inline void *ncl_load_ptr(void *const *p) { return __atomic_load_n((void **)p, __ATOMIC_ACQUIRE); }
static inline void ncl_store_ptr(void **p, void *v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline int ncl_load_int(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void ncl_add_int(int *p, int v) { __atomic_add_fetch(p, v, __ATOMIC_ACQ_REL); }
static inline void ncl_or_int(int *p, int v) { __atomic_or_fetch(p, v, __ATOMIC_RELAXED); }
static inline void ncl_add_long(long *p, long v) { __atomic_add_fetch(p, v, __ATOMIC_RELAXED); }
#endif
