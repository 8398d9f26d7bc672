import numpy as np

equal: np.ufunc
not_equal: np.ufunc
less: np.ufunc
less_equal: np.ufunc
greater: np.ufunc
greater_equal: np.ufunc
add: np.ufunc
subtract: np.ufunc
multiply: np.ufunc
true_divide: np.ufunc
floor_divide: np.ufunc
remainder: np.ufunc
maximum: np.ufunc
minimum: np.ufunc
bitwise_and: np.ufunc
bitwise_or: np.ufunc
bitwise_xor: np.ufunc
negative: np.ufunc
absolute: np.ufunc
invert: np.ufunc
sqrt: np.ufunc
divide: np.ufunc
mod: np.ufunc
bitwise_not: np.ufunc
NAMES: tuple[str, ...]
def loop_signatures(op: str) -> list[str]: ...
def ufuncs_for(isa: str | None = ...) -> dict[str, np.ufunc]: ...
def selected_isa() -> str: ...
