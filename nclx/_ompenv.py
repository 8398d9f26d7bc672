"""How long nclx's OpenMP workers spin between parallel regions.

libgomp's workers, once a parallel region ends, spin waiting for the next
one (``GOMP_SPINCOUNT``, 300,000 turns by default: milliseconds) before they
sleep.  While another process keeps a core busy, a spinning worker takes
that core's time from the thread that would run next (nclx's caller, or a
worker still computing), and each parallel region waits for it: measured on
a 2-CPU VM with one busy process, ``nclx.evaluate("2*a+b*b")`` of 1e6
float64 on 2 threads took 2.6-11.5 ms against 1.5 ms for numexpr and 1.9
for stock NumPy (docs/benchmarks.md, "Workers that spin").  With 10,000
turns the same call took 1.8-3.0 ms, and nothing changed on an idle
machine (``OMP_WAIT_POLICY=passive``, no spinning at all, made the
smallest split calls up to 2x slower there).

libgomp reads its settings once, when it is loaded (the first import of an
nclx module linked to it), so :func:`before_load` puts
``GOMP_SPINCOUNT=10000`` in the environment just before that unless the
user chose a policy (``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` set) or a
libgomp is already loaded (then nothing would change), and
:func:`after_load` takes it out again, so that child processes start with
the environment they were given.
"""
import os

__all__ = ["SPINCOUNT", "before_load", "after_load", "applied"]

#: libgomp's spin count nclx asks for
SPINCOUNT = "10000"

_applied = None         # what before_load() did, for applied()
_put = False            # whether the variable is nclx's, to take out again


def _libgomp_loaded():
    """Whether a libgomp is mapped in this process already (Linux: read
    from /proc/self/maps; elsewhere: assumed not)."""
    try:
        with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
            return any("libgomp" in line for line in maps)
    except OSError:
        return False


def before_load():
    """Ask libgomp for :data:`SPINCOUNT` turns (see the module doc)."""
    global _applied, _put
    if _applied is not None and _libgomp_loaded():
        # an import of nclx that failed after libgomp loaded: libgomp read
        # what was decided then (review 23: a retry reported "libgomp was
        # loaded before nclx")
        return
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        _applied = "the user's setting"
    elif _libgomp_loaded():
        _applied = "libgomp was loaded before nclx: its settings stand"
    else:
        os.environ["GOMP_SPINCOUNT"] = SPINCOUNT
        _put = True
        _applied = SPINCOUNT


def after_load():
    """Take nclx's ``GOMP_SPINCOUNT`` out of the environment again."""
    global _put
    if _put and os.environ.get("GOMP_SPINCOUNT") == SPINCOUNT:
        del os.environ["GOMP_SPINCOUNT"]
    _put = False


def applied():
    """:data:`SPINCOUNT` when nclx set libgomp's spin count, else why not."""
    return _applied
