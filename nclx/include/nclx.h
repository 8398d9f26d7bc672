/*
 * nclx's plain C API (the NCLib proposal's "master head").
 *
 * Compiled code (C, C++, Cython, anything with a C ABI) reaches nclx through
 * one capsule, ``nclx._C_API_2`` (NCLX_CAPSULE_NAME; ``nclx._C_API`` is an
 * alias of the same object), holding a versioned table of functions:
 *
 *     #include "nclx.h"          // nclx.get_include() is the folder
 *     if (import_nclx() < 0) return NULL;    // in the module's init, GIL held
 *     ncl_loop_fn add = NCLX_API->kernel(NCL_OP_ADD, dtypes, 3);
 *     ncl_node *node = NCLX_API->hook_add(NCLX_API->funnel_chain(NCL_SUB_BINARY),
 *                                         "mine", my_hook, state, free, NCL_FRONT, NULL);
 *
 * The structures below are also what Cython sees (nclx/_ncl/ncl.pxd declares
 * them from this header), so C and Cython hooks share one definition.
 *
 * Threading: functions marked "GIL" must be called with the GIL held;
 * kernels, call_next and hook functions run without it, possibly on several
 * threads at once (the threader splits large calls).
 */
#ifndef NCLX_H
#define NCLX_H

#include <stddef.h>
#include <stdint.h>
#include "ncl_spec.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCLX_API_VERSION 2   /* 2: NCL_MAX_ARGS 4 (ternary ops) */
/* The capsule's name carries the version: a module built against another
 * layout of ncl_call fails in import_nclx() instead of misreading fields
 * (version 1's name was "nclx._C_API"; nclx._C_API is kept as an alias of
 * the capsule, whose name no longer matches it). */
#define NCLX_CAPSULE_NAME "nclx._C_API_2"

typedef intptr_t ncl_intp;     /* NumPy's npy_intp */

/* NumPy's inner-loop signature, as every nclx kernel has it. */
typedef void (*ncl_loop_fn)(char **args, const ncl_intp *dimensions,
                            const ncl_intp *steps, void *data);

typedef struct ncl_node ncl_node;
typedef struct ncl_chain ncl_chain;
typedef struct ncl_call ncl_call;

/* A hook: return 0 when done (after punting with call_next or not). */
typedef int (*ncl_hook_fn)(ncl_node *node, ncl_call *call);
/* Called once on a hook's user pointer when its node is freed. */
typedef void (*ncl_destroy_fn)(void *user);

enum { NCL_MAX_ARGS = 4 };

enum ncl_level { NCL_LEVEL_PYTHON = 0, NCL_LEVEL_FUNNEL = 1, NCL_LEVEL_KERNEL = 2 };

/* Where hook_add links a node: front of the chain, back (just before the
 * chain's default nodes), or before / after the node named by anchor. */
enum ncl_position { NCL_FRONT = 0, NCL_BACK = 1, NCL_BEFORE = 2, NCL_AFTER = 3 };

/* node flags */
enum {
    NCL_NODE_DEFAULT = 1,   /* part of the default chain: never freed or removed */
    NCL_NODE_LINKED = 2,    /* currently reachable from the chain head */
    NCL_NODE_PYTHON = 4,    /* obj is a Python callable */
    NCL_NODE_CAPI = 8       /* linked by hook_add: the only nodes hook_remove takes */
};

/* What hooks report to the calling thread (chunks may run on workers). */
enum { NCL_STATUS_INT_OVERFLOW = 1 };
typedef struct { int flags; long count; } ncl_status;

/* Modes of the thread that made the call (they travel to worker threads). */
enum { NCL_CALLER_CHECKED = 1 };

/* One loop call as it travels down a funnel chain, then a kernel chain. */
struct ncl_call {
    char **args;
    const ncl_intp *dimensions;
    const ncl_intp *steps;
    void *data;                 /* NumPy's innerloopdata, for its original loop */
    ncl_loop_fn numpy_loop;     /* NumPy's original loop for this signature; NULL
                                   for nclx's own ops (fma, where, cast) */
    ncl_loop_fn nclx_loop;      /* nclx's kernel for this signature; for the ops
                                   NumPy's loops serve (exp, isnan, clip, ...) it
                                   is NumPy's loop: always pass call->data */
    ncl_chain *kernel_chain;    /* the (op, dtype) chain the funnel ends in */
    int slot;                   /* index of the replaced (op, signature) entry */
    int op;                     /* enum ncl_op */
    int subsystem;              /* enum ncl_subsystem */
    int nargs;                  /* inputs + output */
    int typenums[NCL_MAX_ARGS]; /* NumPy type numbers */
    int dtypes[NCL_MAX_ARGS];   /* ncl_dtype of each operand */
    int prefer_numpy;           /* the "nclx" node runs NumPy's loop (measured faster) */
    int caller_flags;           /* NCL_CALLER_* of the calling thread */
    ncl_status *status;         /* shared by every chunk of one call */
    const void *policy;         /* nclx-internal: how this signature may be split */
};

struct ncl_node {
    ncl_hook_fn fn;
    void *data;                 /* the hook's own data (user pointer) */
    void *obj;                  /* a Python object the node owns a reference to, or NULL */
    ncl_node *next;
    ncl_node *prev;
    ncl_chain *chain;
    ncl_node *retired_next;
    ncl_destroy_fn destroy;     /* called on data when the node is freed, or NULL */
    int flags;
    char *name;                 /* owned copy (static for default nodes) */
};

struct ncl_chain {
    ncl_node *head;
    ncl_node *default_head;     /* head of the chain as reset() leaves it */
    int level;                  /* enum ncl_level */
    int index;                  /* subsystem (python/funnel) or kernel number */
    int nuser;                  /* user nodes linked anywhere in the chain */
    char name[64];
};

/* The function table in the capsule nclx._C_API_2. */
typedef struct nclx_api {
    unsigned int version;       /* NCLX_API_VERSION of the nclx that filled it */
    unsigned int size;          /* sizeof(nclx_api) there */
    /* nclx's kernel for (op, fixed-width dtypes: inputs then output), or
     * NULL when there is none.  Call it like any NumPy inner loop (data NULL). */
    ncl_loop_fn (*kernel)(int op, const int *dtypes, int ndtypes);
    /* enum ncl_op of an op name ("add"; a call op's too: "sort", after the
     * elementwise ops, as call->op shows it), -1 if unknown. */
    int (*op_index)(const char *name);
    /* ncl_dtype of a NumPy type number, NCL_NOTYPE if nclx has no kernels for it. */
    int (*dtype_of_typenum)(int typenum);
    /* Chains: a subsystem's funnel chain; the kernel chain of (op, dtypes)
     * (NULL + Python exception when there is none: GIL).  A call op's kernel
     * chain ("sort_float64") takes its operands' dtypes: sort (data),
     * argsort (values, NCL_INT64 indices), extract (NCL_BOOL condition, arr,
     * out), as docs/hooks.md's C API table lists them (spec.CALL_OPS);
     * kernel() has none for them. */
    ncl_chain *(*funnel_chain)(int subsystem);
    ncl_chain *(*kernel_chain)(int op, const int *dtypes, int ndtypes);
    /* Link a C hook (GIL).  name is copied; destroy(user) runs when the node
     * is freed (after hook_remove, once no loop is inside a chain).  Returns
     * the node, or NULL with a Python exception set (bad position, unknown
     * anchor, duplicate name). */
    ncl_node *(*hook_add)(ncl_chain *chain, const char *name, ncl_hook_fn fn, void *user,
                          ncl_destroy_fn destroy, int position, const char *anchor);
    /* Unlink a node added with hook_add (GIL); 0, or -1 with an exception
     * (ValueError for NULL, an address with no live node, or a node that
     * hook_add did not make: a stale pointer whose memory a Python hook or
     * checked()/ledger node took now).  A freed hook_add node's memory is
     * reused only after 1024 more are freed; past that, a stale pointer whose
     * address another hook_add node took is not told apart from it: remove
     * each node once. */
    int (*hook_remove)(ncl_node *node);
    /* Pass a call on to the node after node ("punt"); no GIL needed. */
    int (*call_next)(ncl_node *node, ncl_call *call);
    /* Report a status (NCL_STATUS_INT_OVERFLOW, count) to the calling thread. */
    void (*status_add)(ncl_call *call, int flag, long count);
} nclx_api;

#ifndef NCLX_NO_IMPORT
#include <Python.h>

static const nclx_api *NCLX_API = NULL;

/* Import nclx's C API (GIL held).  0, or -1 with a Python exception set. */
static int import_nclx(void)
{
    const nclx_api *api = (const nclx_api *)PyCapsule_Import(NCLX_CAPSULE_NAME, 0);
    if (api == NULL) {
        return -1;
    }
    if (api->version != NCLX_API_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "this module was compiled against nclx C API version %d, the "
                     "installed nclx provides version %u", NCLX_API_VERSION, api->version);
        return -1;
    }
    if (api->size < sizeof(nclx_api)) {
        PyErr_Format(PyExc_ImportError,
                     "this module was compiled against an nclx C API table of %zu bytes, "
                     "the installed nclx (version %u) provides %u bytes: rebuild it against "
                     "the installed nclx.h", sizeof(nclx_api), api->version, api->size);
        return -1;
    }
    NCLX_API = api;
    return 0;
}
#endif

#ifdef __cplusplus
}
#endif
#endif
