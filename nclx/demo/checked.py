"""Section 5 of ``python -m nclx demo``: integer overflow raises instead of wrapping."""
import numpy as np

import nclx
from nclx.demo._common import section


def run():
    section("5. nclx.checked(): integer overflow raises instead of wrapping")
    prices = np.array([3_000_000_000, 2], dtype=np.int64)
    print(f"stock NumPy: {prices} * 4_000_000_000 = {prices * 4_000_000_000}  (wrapped silently)")
    try:
        with nclx.checked():
            prices * 4_000_000_000
    except OverflowError as exc:
        print(f"with nclx.checked(): OverflowError: {exc}")
    print(f"NumPy restored: nclx.is_installed() = {nclx.is_installed()}")
