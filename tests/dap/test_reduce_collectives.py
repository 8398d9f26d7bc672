"""Each reduction of a DistArray is one MPI collective (two for a result over
1 KiB, three when both the reduced and the kept axes are distributed) and never an
``MPI_Allgather``: counted by interposing the MPI library (the PMPI
profiling interface).  ``mpi_count_shim.c`` is compiled here with the C
compiler against the mpich wheel's ``mpi.h`` and LD_PRELOADed into an
``mpiexec -n 4`` run; each rank counts every collective it calls (the
large-count ``_c`` variants too) around one reduction, after a first call
of the same reduction (communicators a 2-D grid's axis reduction splits
once are cached)."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from dap_helpers import mpiexec, run

HERE = os.path.dirname(os.path.abspath(__file__))

SCENARIO = textwrap.dedent("""
    import ctypes, json
    import numpy as np
    from mpi4py import MPI
    import nclx.hooks as hooks
    import nclx.dap as dap

    comm = MPI.COMM_WORLD
    rank, N = comm.Get_rank(), comm.Get_size()
    lib = ctypes.CDLL(None)
    lib.nclx_count.argtypes = [ctypes.c_char_p]
    lib.nclx_count.restype = ctypes.c_long
    lib.nclx_count_total.restype = ctypes.c_long
    NAMES = ["Allgather", "Allgatherv", "Allreduce", "Reduce", "Bcast", "Gather", "Gatherv",
             "Barrier", "Comm_split"]

    g = np.arange(48.0).reshape(8, 6) - 20.0
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1), padding=[1, 0])
    b = dap.DistArray.from_global(g, comm=comm, grid_shape=(2, N // 2))
    # an axis reduction whose result (1000 float64) exceeds the first record's room
    w = dap.DistArray.from_global(np.ones((8, 1000)), comm=comm, grid_shape=(N, 1))
    cases = {
        "np.sum": lambda: np.sum(a), "np.prod": lambda: np.prod(a), "np.min": lambda: np.min(a),
        "np.max": lambda: np.max(a), "np.mean": lambda: np.mean(a),
        "np.any": lambda: np.any(a), "np.all": lambda: np.all(a),
        "da.sum(axis=0)": lambda: a.sum(axis=0), "da.sum(axis=1)": lambda: a.sum(axis=1),
        "np.add.reduce(A, axis=0)": lambda: np.add.reduce(a, axis=0),
        "int sum": lambda: np.sum(a > 0, dtype=np.int64),
        "grid 2x2 sum(axis=0)": lambda: b.sum(axis=0),
        "large sum(axis=0)": lambda: w.sum(axis=0),
    }

    def flaky(call):
        if rank == 1:
            raise RuntimeError("hook failed on rank 1")
        return call.next()

    def hooked():
        with hooks.register("python", "reduce", flaky):
            try:
                np.sum(a)
            except Exception as exc:
                return type(exc).__name__
        return "no error"

    cases["hook raising on rank 1"] = hooked
    out = {}
    for name, f in cases.items():
        f()
        comm.Barrier()
        lib.nclx_count_reset()
        f()
        out[name] = {n: lib.nclx_count(n.encode()) for n in NAMES}
        out[name]["total"] = lib.nclx_count_total()
    with open(f"counts{rank}.json", "w") as fh:
        json.dump(out, fh)
""")


def _build_shim(tmp_path):
    cc = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the MPI counting shim")
    prefix = sys.prefix
    include = os.path.join(prefix, "include")
    libdir = os.path.join(prefix, "lib")
    assert os.path.exists(os.path.join(include, "mpi.h")), \
        f"mpi.h not found under {include} (the mpich wheel installs it)"
    shim = tmp_path / "libcount.so"
    proc = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I", include,
                           os.path.join(HERE, "mpi_count_shim.c"), "-o", str(shim),
                           "-L", libdir, "-lmpi", f"-Wl,-rpath,{libdir}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return shim


def test_each_reduction_is_one_collective_and_no_allgather(tmp_path):
    launcher = mpiexec()
    assert launcher, "mpiexec not found: tools/test installs it (pip install mpich)"
    shim = _build_shim(tmp_path)
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    rc, out = run([launcher, "-n", "4", "-genv", "LD_PRELOAD", str(shim), sys.executable,
                   str(script)], tmp_path)
    assert rc == 0, out[-3000:]
    bad = []
    for r in range(4):
        counts = json.loads((tmp_path / f"counts{r}.json").read_text())
        for name, c in counts.items():
            # a 2-D grid's axis reduction whose reduced and kept axes are both
            # distributed: the agreement over all ranks, the data over the
            # reduced axis, the verdict over all; a result larger than the
            # first record's room (nclx.dap.fold.INLINE): the agreement, then
            # the data
            want = {"grid 2x2 sum(axis=0)": 3, "large sum(axis=0)": 2}.get(name, 1)
            if c["total"] != want or c["Allgather"] or c["Allgatherv"] or \
                    c["Allreduce"] != want:
                bad.append(f"rank {r} {name}: {c}")
    assert not bad, "\n".join(bad)
