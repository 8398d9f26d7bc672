"""What ``python -m nclx demo`` shows: nclx kernels at work on real arrays.

One module per section, run in this order by :func:`run`:

1. ``ufuncs``: nclx.ufuncs are real NumPy ufuncs
2. ``identical``: bit-identical to NumPy, edge cases included
3. ``speed``: speed against stock NumPy
4. ``install``: ordinary NumPy code through nclx's hooks
5. ``checked``: integer overflow raises instead of wrapping
5b. ``elementwise``: unary math, IsUnary, Ternary, Convert, threaded
5c. ``sort``: np.sort / np.argsort on nclx's threads
5c2. ``copies``: NumPy's copies of a dtype to itself on nclx's threads
5d. ``mask``: boolean selection and assignment (nclx.mask), threaded
5e. ``create``: nclx.empty/zeros/full..., aligned, first touch on the team
5f. ``random``: nclx.random.Generator, counter-based streams on the team
5g. ``recycle``: install(recycle=True), freed array memory reused (NEP 49)
5h. ``fused``: nclx.evaluate / @nclx.fuse on the block executor
6. ``dap``: a distributed array on MPI ranks (``run_dap_rank`` is one rank)
6b. ``dapnumpy``: plain NumPy code on a DistArray (where, norm, redistribute, .npy I/O)
7. ``heat``: the heat example's halo exchange on MPI ranks
8. ``storage``: GDP-3 storages
9. ``types``: DyND-style types and ragged arrays
10. ``ipc``: Arrow dissociated IPC between processes

``_common`` holds what they share: headings, the median timer, mpiexec.
"""
import nclx
from nclx.demo import (checked, copies, create, dap, dapnumpy, elementwise, fused, heat,
                       identical, install, ipc, mask, random, recycle, sort, speed, storage, types,
                       ufuncs)

__all__ = ["run"]


def run():
    """Print every section; return the exit status (1 if an MPI part failed)."""
    cfg = nclx.config()
    print(f"nclx {cfg['nclx']} on NumPy {cfg['numpy']}: kernels built for "
          f"{', '.join(cfg['isa_builds'])}; running the {cfg['isa_selected']} build; "
          f"OpenMP {'on' if cfg['openmp'] else 'off'}")
    for show in (ufuncs.run, identical.run, speed.run, install.run, checked.run,
                 elementwise.run, sort.run, copies.run, mask.run, create.run, random.run, recycle.run,
                 fused.run):
        show()
    rc, mpiexec = dap.run()
    if mpiexec is not None:       # sections 6b and 7 run only where section 6 ran and passed
        rc = dapnumpy.run(mpiexec)
        rc = heat.run(mpiexec) or rc
    rc = storage.run() or rc
    rc = types.run() or rc
    return ipc.run() or rc
