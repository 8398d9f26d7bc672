"""threadpoolctl sees nclx's thread team.

nclx's team reads OpenMP's limit (``omp_get_max_threads()``), which
``threadpool_limits(k, "openmp")`` lowers; but a limit that is not below
OpenMP's default -- the core count, or ``OMP_NUM_THREADS`` -- looks like no
limit at all, so ``threadpool_limits(2)`` on a 2-core machine left
``nclx.set_num_threads(8)`` at 8 threads (review 23).  Here nclx registers a
threadpoolctl controller of its own (user API "openmp", internal API
"nclx"): every ``threadpool_limits`` that reaches OpenMP libraries sets
nclx's thread count for its block and puts nclx's setting back after it.
Registered at import where threadpoolctl (3.5 or later: ``register``) is
installed; nclx does not depend on it.
"""
import importlib.util
import os

__all__ = ["register"]

_registered = False
_paths = {}          # a library's path -> whether it is nclx's team module


def _ours(path):
    hit = _paths.get(path)
    if hit is None:
        from nclx._ncl import team       # (late: see register())
        hit = _paths[path] = os.path.realpath(path or "") == os.path.realpath(team.__file__)
    return hit


def register():
    """Register nclx's controller with threadpoolctl (once; False where
    threadpoolctl is missing or too old)."""
    global _registered
    if _registered:
        return True
    if importlib.util.find_spec("threadpoolctl") is None:
        return False
    import threadpoolctl
    if not hasattr(threadpoolctl, "register"):
        return False
    # here, not at the top: nclx imports this module before libgomp may load
    # (nclx._ompenv), and team links it
    from nclx import _build_info
    from nclx._ncl import team        # (the same reason)

    class NclxTeam(threadpoolctl.LibController):
        """nclx's thread team (found as nclx/_ncl/team's extension module)."""
        user_api = "openmp"
        internal_api = "nclx"
        filename_prefixes = ("team.cpython",)

        def set_additional_attributes(self):
            # another library of that name is not nclx's team: listed by
            # threadpoolctl, but never read or set (review 23)
            if not _ours(self.filepath):
                self.internal_api = "not nclx (a module named like nclx's team)"

        def get_num_threads(self):
            # nclx's setting, which a block's end restores (get_num_threads()
            # may give less: OMP_THREAD_LIMIT, a forked child); 1 for a
            # foreign library (None broke get_original_num_threads())
            return team.get_setting() if _ours(self.filepath) else 1

        def set_num_threads(self, num_threads):
            if _ours(self.filepath):
                team.set_num_threads(min(max(int(num_threads), 1), 64))

        def get_version(self):
            return _build_info.VERSION if _ours(self.filepath) else None

    threadpoolctl.register(NclxTeam)
    _registered = True
    return True
