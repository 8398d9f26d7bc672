"""Helpers of the .npy I/O review tests (tests/mpi/test_review16_io*_mpi.py)."""
import numpy as np
from mpi4py import MPI

from mpi_helpers import HUNG, rank

comm = MPI.COMM_WORLD

#: a structured dtype with bytes between and after its fields
GAPS = np.dtype({"names": ["a", "b"], "formats": ["u1", "<i4"], "offsets": [0, 4],
                 "itemsize": 12})


def same_everywhere(got):
    """(every rank got the same, what each rank got)."""
    every = comm.allgather(got)
    return all(g == every[0] for g in every), every


def np_save(path, g):
    """np.save on rank 0, then a barrier."""
    if rank == 0:
        np.save(path, g)
    comm.Barrier()


def file_bytes(path):
    """The file's bytes, read on rank 0, on every rank."""
    return comm.bcast(open(path, "rb").read() if rank == 0 else None, root=0)


def free(sub):
    """Free a communicator unless a hung call may still use it."""
    if not HUNG:
        sub.Free()


def raw(a):
    """``a``'s items as raw bytes (np.void of its itemsize)."""
    return a.view(np.dtype((np.void, a.dtype.itemsize)))
