from typing import Any

import numpy as np
import numpy.typing as npt

def kernel_for(op: str, dtype: npt.DTypeLike) -> bool: ...
def segment_reduce(
    op: str,
    values: npt.NDArray[Any],
    offsets: npt.NDArray[np.integer[Any]],
    out: npt.NDArray[Any],
    empty: npt.NDArray[np.uint8] | None = None,
    identity: object = None,
    threads: int = 1,
    flags: list[int] | None = None,
) -> bool: ...
