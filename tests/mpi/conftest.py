"""Every test in tests/mpi runs under a hang guard and ends on all ranks
together: a regression that leaves a rank waiting in a collective ends this
process after HANG_GUARD_S seconds with every thread's traceback (mpiexec then
ends the others) instead of hanging the suite, and a barrier after each test
keeps a test that failed on one rank from leaving the others waiting in the
next test's collectives."""
import faulthandler
import os
import sys
import threading

import pytest
from mpi4py import MPI

HANG_GUARD_S = 60


@pytest.fixture(autouse=True)
def hang_guard(request):
    comm = MPI.COMM_WORLD
    capman = request.config.pluginmanager.getplugin("capturemanager")

    def hung():
        try:
            if capman is not None:
                capman.suspend_global_capture(in_=True)
            sys.stderr.write(f"\nHANG GUARD: rank {comm.rank}/{comm.size} spent more than "
                             f"{HANG_GUARD_S} s in {request.node.nodeid} (a rank is waiting in a "
                             f"collective the others left)\n")
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            sys.stderr.flush()
        finally:
            os._exit(70)

    timer = threading.Timer(HANG_GUARD_S, hung)
    timer.daemon = True
    timer.start()
    try:
        yield
        comm.Barrier()          # every rank leaves the test; no rank is stuck
    finally:
        timer.cancel()
