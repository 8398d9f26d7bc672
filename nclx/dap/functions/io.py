"""``np.save`` of a DistArray: parallel ``.npy`` output (collective)."""
import os

import numpy as np

from nclx.dap.registry import implements


@implements(np.save)
def save(file, arr, allow_pickle=True):
    """``np.save(path, da)``: :meth:`DistArray.save_npy` (every rank calls
    it; each writes its own part through MPI-IO).  ``file`` must be a path
    (``.npy`` appended when missing, as NumPy does); an open file object is
    refused: the ranks cannot share it.  ``allow_pickle`` has no effect (a
    DistArray never holds Python objects)."""
    if not isinstance(file, (str, os.PathLike)):
        raise TypeError(f"np.save of a DistArray needs a path, not a {type(file).__name__}: "
                        f"every rank writes its own part of the file (MPI-IO)")
    file = os.fspath(file)
    if not file.endswith(".npy"):
        file += ".npy"
    arr.save_npy(file)
