"""Parallel .npy I/O never leaves a rank waiting: a failure on one rank
only while preparing its part (its datatypes) is raised on every rank, and
the ranks go on together.  Each scenario runs under ``mpiexec`` in a
subprocess with a watchdog (dap_helpers)."""
import textwrap

from dap_helpers import assert_raised_everywhere, run_ranks

BROKEN = textwrap.dedent("""
    import nclx.dap.npyfile as npyfile
    import nclx.dap.npyload as npyload
    from nclx.dap.iotypes import IOPlan

    class Broken(IOPlan):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            if rank == N - 1:
                self.free()
                raise RuntimeError("the plan failed on the last rank")
    npyfile.IOPlan = npyload.IOPlan = Broken
    # the MPI-IO path's plan (one node maps its saves without one; the
    # mapped store failing on one rank: tests/mpi/test_npyio_mpi.py)
    npyfile.npymap.MAPPED_WRITES = False
    path = comm.bcast(os.path.abspath("x.npy") if rank == 0 else None)
    if rank == 0:
        np.save(path, np.arange(12.0 * N).reshape(4 * N, 3))
    comm.Barrier()
""")


def _scenario(op):
    call = ("step(lambda: dap.load_npy(path, comm=comm).shape)" if op == "load" else
            "step(lambda: dap.DistArray.from_global(np.arange(4.0 * N), comm=comm)"
            ".save_npy(path))")
    return BROKEN + call + "\nstep(lambda: comm.allreduce(1))\n"


def _check(tmp_path, op):
    steps, ended, report = run_ranks(tmp_path, 3, _scenario(op))
    assert_raised_everywhere(steps, ended, report, types=("DapError",))
    assert all("rank 2 of 3 failed" in s[0] for s in steps), report
    assert all(s[1] == "OK 3" for s in steps), report     # and the ranks go on together


def test_a_plan_failing_on_one_rank_during_a_load(tmp_path):
    _check(tmp_path, "load")


def test_a_plan_failing_on_one_rank_during_a_save(tmp_path):
    _check(tmp_path, "save")
