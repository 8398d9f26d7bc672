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
    DistArray never holds Python objects).

    Only ranks passing a DistArray come here: NumPy calls this override
    when an argument is a DistArray, so on a rank passing an ndarray
    ``np.save`` is NumPy's own, writes the whole file at once and takes
    part in no collective.  The DistArray ranks cannot tell such a rank from
    a slow one (they wait in the save's first agreement until its next
    nclx.dap call on their communicator, then every rank raises), so this
    cannot be refused here; where a rank may hold an ndarray, call
    ``nclx.dap.save_npy(path, x, comm=comm)`` on every rank instead: a rank
    without a DistArray then joins that agreement and every rank raises at
    once (a rank passing ``comm=`` meets ranks in ``np.save(path, da)``
    when ``comm`` is the DistArray's own communicator)."""
    if not isinstance(file, (str, os.PathLike)):
        raise TypeError(f"np.save of a DistArray needs a path, not a {type(file).__name__}: "
                        f"every rank writes its own part of the file (MPI-IO)")
    file = os.fspath(file)
    if not file.endswith(".npy"):
        file += ".npy"
    arr.save_npy(file)
