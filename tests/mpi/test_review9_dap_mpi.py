"""Defects found by the ninth review round of nclx.dap (each test failed on
the code before its fix)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert

comm = MPI.COMM_WORLD


def _outcome(fn, *args, **kw):
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared with NumPy's
        return type(exc).__name__, str(exc)
    if isinstance(r, dap.DistArray):
        r = r.gather(root=None)
    r = np.asarray(r)
    return "ok", r.dtype.str, r.shape, r.tobytes()


_CASES = {
    "complex128": lambda: (np.arange(4 * N + 1) * (0.3 - 1.7j)).astype(np.complex128),
    "complex64 big-endian": lambda: (np.arange(4 * N + 1) * (1.1 + 0.2j)).astype(">c8"),
    "timedelta64": lambda: np.arange(4 * N + 1).astype("m8[s]"),
}


@pytest.mark.parametrize("name", sorted(_CASES))
@pytest.mark.parametrize("fn", [np.var, np.std])
def test_var_squares_deviations_as_numpy(name, fn):
    """Found by review: var squared every non-complex deviation with
    multiply(x, x): timedelta64 raised multiply's UFuncTypeError where NumPy
    raises square's TypeError (its text too); complex squares are NumPy's
    re**2 + im**2."""
    g = _CASES[name]()
    for dist in ("b", "c"):
        x = dap.DistArray.from_global(g, comm=comm, dist=dist)
        got, want = _outcome(fn, x), _outcome(fn, g)
        if want[0] == "ok" and got[:3] == want[:3]:
            # the sum across ranks is reassociated: 1e-12 relative (docs/dap.md)
            ok = np.allclose(np.frombuffer(got[3], got[1]), np.frombuffer(want[3], want[1]),
                             rtol=1e-12 if got[1][-1] == "8" else 1e-6)
        else:
            ok = got == want
        collective_assert(ok, f"{dist}: {got} != NumPy's {want}")
