from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from nclx._fused_program import Program

def threshold(value: int | None = None) -> int: ...
def block_bytes(value: int | None = None) -> int: ...
def block_elements(program: Program) -> int: ...
def release() -> None: ...
def execute(
    program: Program,
    operands: Sequence[npt.NDArray[Any]],
    out: npt.NDArray[Any] | None = None,
    threads: int | None = None,
    ledger: list[tuple[int, int, int, int]] | None = None,
) -> npt.NDArray[Any] | np.generic: ...
