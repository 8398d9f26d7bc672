"""Section 7 of ``python -m nclx demo``: halo exchange at work, the heat
example (nclx.examples.heat) on RANKS MPI ranks."""
from nclx.demo._common import RANKS, run_mpiexec, section
from nclx.examples.heat import serial


def run(mpiexec):
    """Run the heat example under ``mpiexec`` and compare its checksum with
    a serial NumPy run; return the exit status."""
    section(f"7. Halo exchange at work: the heat example on {RANKS} MPI ranks")
    args = ["-m", "nclx.examples.heat", "--n", "400", "--steps", "50", "--quiet"]
    print(f"mpiexec -n {RANKS} python {' '.join(args)}   (2-D Jacobi, block-block, "
          "padding 1 refreshed by exchange_halos each step)")
    rc, out = run_mpiexec(mpiexec, args)
    print(out.rstrip())
    if rc != 0 or "checksum " not in out:
        print(f"mpiexec exited with {rc}")
        return 1
    print(f"serial NumPy run of the same definition: checksum {float(serial(400, 50).sum())!r} "
          "(the same field to 1e-12; the sums add in another order)")
    return 0
