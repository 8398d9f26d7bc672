"""Checks of the Client's and the Server's numeric options, at construction:
a ValueError naming the option (review 22: before, ``timeout=0`` gave a
BlockingIOError at connect, ``-1`` "Timeout value out of range", ``"30"`` a
TypeError, and ``max_frame=-1``, ``Server(timeout=-1)``, ``shm_size=-1``
were taken)."""
import math
import numbers

__all__ = ["check_count", "check_seconds"]


def check_seconds(name, value, *, none_ok=False):
    """``value`` as a positive, finite number of seconds (None if ``none_ok``)."""
    if value is None and none_ok:
        return None
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or not value > 0):
        raise ValueError(f"{name} must be a positive, finite number of seconds"
                         f"{' or None' if none_ok else ''}, not {value!r}")
    return float(value)


def check_count(name, value, *, minimum=1, none_ok=False):
    """``value`` as an int of at least ``minimum`` (None if ``none_ok``)."""
    if value is None and none_ok:
        return None
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or value < minimum):
        what = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ValueError(f"{name} must be {what}{' or None' if none_ok else ''}, "
                         f"not {value!r}")
    return int(value)
