"""Argument types of nclx's command lines: a bad number is the parser's
error naming the option (before, ``--sizes -5`` or ``--repeats 0`` ran and
ended in a traceback, ``--ranks 0`` reached mpiexec; review 23)."""
import argparse
import math

__all__ = ["positive_int", "non_negative_int", "positive_float"]


def positive_int(text):
    """An int >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 1")
    return v


def non_negative_int(text):
    """An int >= 0."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 0")
    return v


def positive_float(text):
    """A finite float > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number above 0")
    return v
