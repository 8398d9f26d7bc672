from collections.abc import Callable, Sequence
from typing import Any, SupportsIndex, TypeVar

import numpy as np
import numpy.typing as npt

from nclx.storage.core import Storage

_S = TypeVar("_S", bound=StorageBase)

class HostBlock:
    @property
    def nbytes(self) -> int: ...
    @property
    def address(self) -> int: ...

class StorageBase:
    _buf: Any
    _host: Any
    _dev: Any
    _dims: Any
    _halo: Any
    _layout: Any
    _alignment: Any
    _aligned_index: Any

class Recipe:
    @property
    def resolved(self) -> dict[str, Any]: ...
    @property
    def plan(self) -> Any: ...

def new_storage(
    cls: type[_S],
    buf: Any,
    host: Any,
    dev: Any,
    dims: tuple[Any, ...],
    halo: tuple[Any, ...],
    layout: tuple[Any, ...],
    alignment: Any,
    aligned_index: Any,
) -> _S: ...
def make_recipe(resolved: dict[str, Any], plan: Any, order: int) -> Recipe: ...
def host_field(rc: Recipe, zero: bool) -> tuple[npt.NDArray[Any], npt.NDArray[np.uint8], int]: ...
def cache_key(shape: Any, dtype: Any, kwargs: dict[str, Any]) -> tuple[Any, ...] | None: ...
class Creator:
    @property
    def recipes(self) -> dict[Any, Recipe]: ...
    def __init__(
        self,
        resolve: Callable[[Any, Any, dict[str, Any]], Recipe],
        allocate: Callable[[dict[str, Any], Any, bool], Storage],
        cpu_class: type[StorageBase],
        cpu_buffer: Any,
    ) -> None: ...
    def create(self, shape: Any, dtype: npt.DTypeLike, kwargs: dict[str, Any], zero: bool) -> Storage: ...
    def empty(
        self, shape: SupportsIndex | Sequence[SupportsIndex], dtype: npt.DTypeLike = ..., **kwargs: Any
    ) -> Storage: ...
    def zeros(
        self, shape: SupportsIndex | Sequence[SupportsIndex], dtype: npt.DTypeLike = ..., **kwargs: Any
    ) -> Storage: ...
