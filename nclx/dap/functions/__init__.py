"""NumPy functions on DistArrays, registered with :func:`nclx.dap.implements`.

One module per family; importing this package registers them all.
"""
from nclx.dap.functions import reductions  # noqa: F401 - registers
from nclx.dap.functions import rearrange  # noqa: F401 - registers
from nclx.dap.functions import sorting  # noqa: F401 - registers
from nclx.dap.functions import quantiles  # noqa: F401 - registers
from nclx.dap.functions import medians  # noqa: F401 - registers
from nclx.dap.functions import histograms  # noqa: F401 - registers
from nclx.dap.functions import scans  # noqa: F401 - registers
from nclx.dap.functions import uniques  # noqa: F401 - registers
from nclx.dap.functions import io  # noqa: F401 - registers
from nclx.dap.functions import elementwise  # noqa: F401 - registers
from nclx.dap.functions import creation  # noqa: F401 - registers
from nclx.dap.functions import statistics  # noqa: F401 - registers
from nclx.dap.functions import average  # noqa: F401 - registers
from nclx.dap.functions import argext  # noqa: F401 - registers
from nclx.dap.functions import nanfunctions  # noqa: F401 - registers
from nclx.dap.functions import linalg  # noqa: F401 - registers
from nclx.dap.functions import nonzero  # noqa: F401 - registers
