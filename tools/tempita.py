#!/usr/bin/env python3
"""Expand a Tempita template (``*.in``) into a source file.

Used by meson's custom_target at build time; generated sources are never
committed.  ``-D name=value`` pairs become template variables.
"""
import argparse
import sys

from Cython import Tempita


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("infile")
    parser.add_argument("-o", "--outfile", required=True)
    parser.add_argument("-D", dest="defines", action="append", default=[],
                        metavar="NAME=VALUE")
    parser.add_argument("--namespace", action="append", default=[],
                        metavar="MODULE.py",
                        help="a Python file whose public names the template sees")
    args = parser.parse_args(argv)
    namespace = {}
    for path in args.namespace:
        module_ns = {"__name__": "_tempita_namespace", "__file__": path}
        with open(path, encoding="utf-8") as fh:
            exec(compile(fh.read(), path, "exec"), module_ns)
        namespace.update({k: v for k, v in module_ns.items() if not k.startswith("__")})
    for item in args.defines:
        name, _, value = item.partition("=")
        namespace[name] = value
    with open(args.infile, encoding="utf-8") as fh:
        template = Tempita.Template(fh.read(), name=args.infile)
    text = template.substitute(**namespace)
    with open(args.outfile, "w", encoding="utf-8") as fh:
        fh.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
