"""Section 6 of ``python -m nclx demo``: a distributed array (nclx.dap) on
RANKS MPI ranks.  :func:`run` starts ``mpiexec -n RANKS python -m nclx
demo-dap``; each of those ranks runs :func:`run_dap_rank`."""
import importlib.util
import re

import numpy as np

from nclx.dap import DistArray
from nclx.demo._common import RANKS, find_mpiexec, run_mpiexec, section

_RANK_LINE = re.compile(r"^rank (\d+)/(\d+): local block ", re.M)


def run():
    """Run :func:`run_dap_rank` on RANKS ranks under mpiexec, print what
    they printed and check that every rank reported its block.  Returns
    (exit status, mpiexec): mpiexec is None when it or mpi4py is missing
    (exit status 0: the section is skipped) or when the ranks failed (1)."""
    section(f"6. nclx.dap: a distributed array on {RANKS} MPI ranks")
    mpiexec = find_mpiexec()
    missing = [name for name, absent in (("mpi4py", importlib.util.find_spec("mpi4py") is None),
                                         ("mpiexec", mpiexec is None)) if absent]
    if missing:
        print(f"{' and '.join(missing)} not found: pip install 'nclx[mpi]' (mpi4py and the mpich "
              f"wheel, which brings mpiexec) to see this part; tools/demo installs it")
        return 0, None
    print(f"mpiexec -n {RANKS} python -m nclx demo-dap: a = DistArray.from_global("
          f"np.arange(12.0), dist='b', padding=[1], periodic=[True]); b = a * 2 + 1; "
          f"b's padding set to -1, then b.exchange_halos()")
    rc, out = run_mpiexec(mpiexec, ["-m", "nclx", "demo-dap"])
    print(out.rstrip())
    ranks = {int(m.group(1)) for m in _RANK_LINE.finditer(out) if int(m.group(2)) == RANKS}
    if rc != 0 or ranks != set(range(RANKS)):
        print(f"mpiexec exited with {rc}; ranks heard from: {sorted(ranks)}")
        return 1, None
    return 0, mpiexec


def run_dap_rank():
    """One rank of section 6 (``python -m nclx demo-dap``, started by
    mpiexec): each rank describes its block; rank 0 gathers the descriptions
    and prints them in rank order (lines printed by several ranks at once
    can interleave mid-line in mpiexec's output), then the reduction and the
    gathered global array."""
    from mpi4py import MPI   # optional dependency (the mpi extra): only the ranks need it

    comm = MPI.COMM_WORLD
    a = DistArray.from_global(np.arange(12.0), dist="b", padding=[1], periodic=[True], comm=comm)
    dd = a.__distarray__()["dim_data"][0]
    mine = (f"rank {comm.rank}/{comm.size}: local block {np.asarray(a.local)} (a storage, halo "
            f"{a.local.halo[0]}), start/stop {dd['start']}/{dd['stop']}")
    lines = comm.gather(mine, root=0)
    b = a * 2 + 1
    block = np.asarray(b.local)
    owned = b.distribution.owned_slices(comm.rank)
    keep = block[owned].copy()
    block[...] = -1.0
    block[owned] = keep
    before = block.copy()
    b.exchange_halos()
    after = comm.gather(f"rank {comm.rank}: b's block {before} -> exchange_halos() -> {block}",
                        root=0)
    total, full = b.sum(), b.gather(root=0)
    if comm.rank == 0:
        print("\n".join(lines))
        print("\n".join(after))
        print(f"rank 0/{comm.size}: b.sum() = {total} (Allreduce over the owned cells); "
              f"b.gather() = {full}")
    return 0
