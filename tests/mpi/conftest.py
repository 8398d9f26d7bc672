"""tests/mpi runs only under mpiexec (tests/test_mpi_suite.py starts it):
a single-process pytest run collects nothing here."""
from mpi4py import MPI

if MPI.COMM_WORLD.Get_size() == 1:
    collect_ignore_glob = ["test_*.py"]
