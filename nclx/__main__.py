"""``python -m nclx demo | info``."""
import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nclx", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="show the kernels at work on real arrays")
    sub.add_parser("info", help="print nclx.show_config()")
    args = parser.parse_args(argv)
    if args.command == "info":
        import nclx
        nclx.show_config()
        return 0
    if args.command == "demo":
        from nclx.demo import run
        return run()
    return 2  # unreachable: argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
