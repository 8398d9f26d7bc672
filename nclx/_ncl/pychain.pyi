from collections.abc import Callable
from typing import Any

class PyCall:
    ufunc: Any
    method: str
    inputs: tuple[Any, ...]
    kwargs: dict[str, Any]
    @property
    def subsystem(self) -> str: ...
    def next(self) -> Any: ...

def run_python_chain(
    subsystem: int,
    ufunc: Any,
    method: str,
    inputs: tuple[Any, ...],
    kwargs: dict[str, Any],
    final: Callable[[Any, str, tuple[Any, ...], dict[str, Any]], Any],
) -> Any: ...
