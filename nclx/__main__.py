"""``python -m nclx demo | info | bench``."""
import argparse
import sys

import nclx
from nclx.bench import main as bench_main

# The imports inside main() are lazy on purpose: each command imports only
# the module it runs, so that `python -m nclx bench` never imports mpi4py or
# pyarrow (which the demo, `bench halo` and `bench ipc` need) and no command
# pays for the others' import time.


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nclx", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="show the kernels at work on real arrays")
    sub.add_parser("info", help="print nclx.show_config()")
    sub.add_parser("bench", help="stock NumPy against nclx.install() (--help for options)",
                   add_help=False)
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["demo-dap"]:  # one rank of the demo's MPI section (mpiexec starts it)
        from nclx.demo.dap import run_dap_rank   # lazy: only the ranks mpiexec starts run this
        return run_dap_rank()
    if argv[:1] == ["demo-dap-numpy"]:  # one rank of the demo's section 6b (mpiexec starts it)
        from nclx.demo.dapnumpy import run_rank   # lazy: only the ranks mpiexec starts run this
        return run_rank()
    if argv[:2] == ["bench", "halo"]:   # halo exchange against hand-written mpi4py (mpiexec)
        from nclx.dap.bench_halo import launch   # lazy: only `bench halo` needs nclx.dap
        return launch(argv[2:])
    if argv[:2] == ["bench", "redistribute"]:   # redistribute against hand-written Alltoallw
        from nclx.dap.bench_redistribute import cli   # lazy: only this command needs nclx.dap
        return cli(argv[2:])
    if argv[:2] == ["bench", "ipc"]:    # nclx.ipc against Arrow Flight and a plain socket
        from nclx.ipc.bench import main as ipc_bench   # lazy: nclx.ipc imports pyarrow
        return ipc_bench(argv[2:])
    if argv[:1] == ["bench"]:
        return bench_main(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "info":
        nclx.show_config()
        return 0
    if args.command == "demo":
        from nclx.demo import run   # lazy: the demo imports every subpackage
        return run()
    return 2  # unreachable: argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
