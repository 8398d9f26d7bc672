"""NumPy functions on DistArrays, registered with :func:`nclx.dap.implements`.

One module per family; importing this package registers them all.
"""
from nclx.dap.functions import io, reductions  # noqa: F401 - registers
