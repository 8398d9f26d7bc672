"""Checks of the Client's and the Server's numeric options, at construction:
a ValueError naming the option (review 22: before, ``timeout=0`` gave a
BlockingIOError at connect, ``-1`` "Timeout value out of range", ``"30"`` a
TypeError, and ``max_frame=-1``, ``Server(timeout=-1)``, ``shm_size=-1``
were taken)."""
import math
import numbers

__all__ = ["check_count", "check_rate", "check_seconds", "MAX_SECONDS", "MAX_COUNT"]

#: the longest timeout taken (about 31 years): far below what Python's
#: sockets and thread joins take (``threading.TIMEOUT_MAX``, about 9.2e9 s),
#: with room for the per-byte allowance added to it (before, 1e12 passed
#: the check and a server's reader thread died at its first join: review 22)
MAX_SECONDS = 1e9
#: the largest count taken: a C ``long`` and room to add to it (before,
#: ``shm_size=2**64`` passed the check and failed in C; review 22)
MAX_COUNT = 2 ** 62


def check_seconds(name, value, *, none_ok=False):
    """``value`` as a positive, finite number of seconds (None if ``none_ok``)."""
    if value is None and none_ok:
        return None
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or not 0 < value <= MAX_SECONDS):
        raise ValueError(f"{name} must be a positive, finite number of seconds (at most "
                         f"{MAX_SECONDS:g}){' or None' if none_ok else ''}, not {value!r}")
    return float(value)


def check_count(name, value, *, minimum=1, none_ok=False, maximum=MAX_COUNT):
    """``value`` as an int of at least ``minimum`` and at most ``maximum``
    (None if ``none_ok``)."""
    if value is None and none_ok:
        return None
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or not minimum <= value <= maximum):
        what = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        most = "2**62" if maximum == MAX_COUNT else str(maximum)
        raise ValueError(f"{name} must be {what} (at most {most}){' or None' if none_ok else ''}, "
                         f"not {value!r}")
    return int(value)


def check_rate(name, value, *, none_ok=False):
    """``value`` as a positive, finite number of bytes a second (None if
    ``none_ok``; review 27: ``min_rate="30"`` gave a bare TypeError at
    construction and ``min_rate=True`` was taken)."""
    if value is None and none_ok:
        return None
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or not value > 0):
        raise ValueError(f"{name} must be a positive, finite number of bytes a second"
                         f"{' or None' if none_ok else ''}, not {value!r}")
    return float(value)
