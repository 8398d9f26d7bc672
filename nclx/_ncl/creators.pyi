from typing import Any

import numpy as np
import numpy.typing as npt

def empty(
    shape: Any, dtype: npt.DTypeLike = None, order: str = "C", *, device: Any = None,
    like: Any = None, align: int | None = None, touch: bool = False,
) -> npt.NDArray[Any]: ...
def zeros(
    shape: Any, dtype: npt.DTypeLike = None, order: str = "C", *, device: Any = None,
    like: Any = None, align: int | None = None, touch: bool = False,
) -> npt.NDArray[Any]: ...
def ones(
    shape: Any, dtype: npt.DTypeLike = None, order: str = "C", *, device: Any = None,
    like: Any = None, align: int | None = None, touch: bool = False,
) -> npt.NDArray[Any]: ...
def full(
    shape: Any, fill_value: Any, dtype: npt.DTypeLike = None, order: str = "C", *,
    device: Any = None, like: Any = None, align: int | None = None, touch: bool = False,
) -> npt.NDArray[Any]: ...
def empty_like(
    prototype: npt.ArrayLike, dtype: npt.DTypeLike = None, order: str = "K",
    subok: bool = True, shape: Any = None, *, device: Any = None, align: int | None = None,
    touch: bool = False,
) -> np.ndarray: ...
def zeros_like(
    a: npt.ArrayLike, dtype: npt.DTypeLike = None, order: str = "K", subok: bool = True,
    shape: Any = None, *, device: Any = None, align: int | None = None, touch: bool = False,
) -> np.ndarray: ...
def ones_like(
    a: npt.ArrayLike, dtype: npt.DTypeLike = None, order: str = "K", subok: bool = True,
    shape: Any = None, *, device: Any = None, align: int | None = None, touch: bool = False,
) -> np.ndarray: ...
def full_like(
    a: npt.ArrayLike, fill_value: Any, dtype: npt.DTypeLike = None, order: str = "K",
    subok: bool = True, shape: Any = None, *, device: Any = None, align: int | None = None,
    touch: bool = False,
) -> np.ndarray: ...
