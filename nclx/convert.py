"""nclx.convert: NCLib's Convert subsystem -- fixed-width casts through the
Convert chain.

``nclx.convert(a, dtype, casting="unsafe")`` equals ``a.astype(dtype,
casting=casting)`` -- values, layout (order 'K'), errors and floating-point
warnings ("invalid value encountered in cast") -- for the fixed-width dtypes
bool, int8..int64, uint8..uint64, float32 and float64.  It runs nclx's cast
kernels through the entries, so the call walks the "convert" funnel chain
(ledger row ``cast``, user hooks) and splits across nclx's threads above the
split threshold.  A contiguous, aligned, native ndarray calls its entry
directly (nclx._ncl.casts); anything else goes through ``nclx.ufuncs.cast``.

``ndarray.astype`` itself is not reached by ``install()``: NumPy 2's casts
are private ArrayMethods, not ufunc loops (docs/hooks.md says what was
tried).
"""
from nclx._ncl.casts import convert

__all__ = ["convert"]
