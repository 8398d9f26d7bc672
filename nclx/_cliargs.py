"""Argument types of nclx's command lines: a bad number is the parser's
error naming the option (before, ``--sizes -5`` or ``--repeats 0`` ran and
ended in a traceback, ``--ranks 0`` reached mpiexec; review 23)."""
import argparse
import math

__all__ = ["positive_int", "non_negative_int", "positive_float"]


def _int_at_least(text, low):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < low:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least {low}")
    return v


def positive_int(text):
    """An int >= 1."""
    return _int_at_least(text, 1)


def non_negative_int(text):
    """An int >= 0."""
    return _int_at_least(text, 0)


def positive_float(text):
    """A finite float > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number above 0")
    return v
