"""NumPy functions on DistArrays, registered with :func:`nclx.dap.implements`.

One module per family; importing this package registers them all.
"""
from nclx.dap.functions import reductions  # noqa: F401 - registers
from nclx.dap.functions import elementwise  # noqa: F401 - registers
from nclx.dap.functions import creation  # noqa: F401 - registers
from nclx.dap.functions import statistics  # noqa: F401 - registers
from nclx.dap.functions import argext  # noqa: F401 - registers
from nclx.dap.functions import nanfunctions  # noqa: F401 - registers
from nclx.dap.functions import linalg  # noqa: F401 - registers
