"""What every section of ``python -m nclx demo`` shares: headings, the
median timer and running a command under mpiexec."""
import os
import signal
import subprocess
import sys

from nclx._timing import find_mpiexec, median_time

__all__ = ["section", "median_time", "find_mpiexec", "run_mpiexec", "RANKS", "MPI_TIMEOUT"]

RANKS = 4
MPI_TIMEOUT = 120  # seconds for mpiexec and its 4 ranks (a few on 2 cores)


def section(title):
    """Print a section heading, underlined."""
    print()
    print(title)
    print("-" * len(title))


def run_mpiexec(mpiexec, args):
    """(exit status, stdout) of ``mpiexec -n RANKS python ARGS`` within MPI_TIMEOUT."""
    # A session of its own, so that on a timeout the whole group (mpiexec,
    # its process manager and the ranks) is killed; stdin from /dev/null, as
    # mpiexec would otherwise forward the terminal to rank 0.
    proc = subprocess.Popen([mpiexec, "-n", str(RANKS), sys.executable] + list(args),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=MPI_TIMEOUT)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # the group ended meanwhile
            pass
        out, _ = proc.communicate()
        return 1, out + f"\nmpiexec did not finish within {MPI_TIMEOUT} s: killed"
    return proc.returncode, out
