from typing import Any

import numpy as np
import numpy.typing as npt

CAST: np.ufunc

def convert(
    a: npt.ArrayLike, dtype: npt.DTypeLike, casting: str = "unsafe"
) -> npt.NDArray[Any]: ...
