from collections.abc import Callable
from typing import Any, TypeAlias

import numpy.typing as npt

from nclx._ncl.registry import HookError as HookError
from nclx._ncl.registry import LEVELS as LEVELS
from nclx._ncl.registry import POSITIONS as POSITIONS
from nclx._ncl.registry import SUBSYSTEMS as SUBSYSTEMS
from nclx._ncl.registry import collect as collect
from nclx._ncl.registry import reset as reset
from nclx._ncl.targets import kernel_chain_name as kernel_chain_name

# a subsystem name (python, funnel levels); (op, dtype or dtypes) or a kernel name (kernel level)
_Target: TypeAlias = str | tuple[str, Any]

class Kernel:
    def __call__(self, inputs: list[npt.NDArray[Any]], out: npt.NDArray[Any]) -> Any: ...
    def reduce(self, values: npt.NDArray[Any], acc: npt.NDArray[Any]) -> Any: ...

class Handle:
    @property
    def level(self) -> str: ...
    @property
    def target(self) -> Any: ...
    @property
    def name(self) -> str: ...
    @property
    def hook(self) -> Any: ...
    def remove(self) -> None: ...
    def _pin(self) -> None: ...
    @property
    def removed(self) -> bool: ...
    @property
    def errors(self) -> int: ...
    @property
    def last_error(self) -> BaseException | None: ...
    def __enter__(self) -> Handle: ...
    def __exit__(self, *exc: object) -> bool: ...

def chain(level: str, target: _Target) -> list[str]: ...
def chains() -> dict[tuple[str, str], list[str]]: ...
def register(
    level: str,
    target: _Target,
    hook: Callable[..., Any] | Kernel,
    position: str = "front",
    *,
    name: str | None = None,
    before: str | None = None,
    after: str | None = None,
) -> Handle: ...
def register_c(
    level: str,
    target: _Target,
    fn_address: int,
    data_address: int = 0,
    *,
    name: str,
    keepalive: object = None,
    position: str = "front",
    before: str | None = None,
    after: str | None = None,
) -> Handle: ...
