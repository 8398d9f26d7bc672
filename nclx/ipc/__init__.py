"""Arrow's Dissociated IPC protocol for CPU processes, over TCP and shared memory.

IPC metadata and bodies travel as separate messages matched by sequence
number; with ``shm=True`` bodies stay in a shared-memory segment and only
their (offset, length) pairs travel, so a client on the same machine gets
pyarrow tables and NumPy arrays that are views of the server's memory.

>>> import numpy as np, pyarrow as pa, nclx.ipc as ipc
>>> with ipc.Server({b"t": pa.table({"x": [1, 2, 3]})}, shm=True) as srv:
...     ipc.fetch(srv.uri, b"t").column("x").to_pylist()
[1, 2, 3]
>>> srv = ipc.serve_arrays({"a": np.arange(6).reshape(2, 3)}, shm=True)
>>> ipc.fetch_array(srv.uri, "a").sum()
np.int64(15)
>>> srv.close()

Server: :class:`Server` (``.uri``, ``start``, ``serve_forever``, ``close``),
:func:`serve_arrays`.  Client: :func:`fetch`, :func:`stream`,
:func:`fetch_array`, :class:`Client` (one connection, many requests).
Errors: :class:`ProtocolError` (ValueError), :class:`RemoteError`,
:class:`UnknownTicketError`, :class:`ConnectionLostError`.
Command line: ``python -m nclx.ipc serve|fetch`` (docs/ipc.md).
"""
from nclx.ipc.client import Client
from nclx.ipc.stream import BatchStream
from nclx.ipc.oneshot import fetch, fetch_array, stream
from nclx.ipc.errors import (
    ConnectionLostError,
    ProtocolError,
    RemoteError,
    UnknownTicketError,
)
from nclx.ipc.server import Server
from nclx.ipc.tensor import array_to_table, table_to_array
from nclx.ipc.uri import Endpoint, parse_uri


def serve_arrays(arrays, *, uri="tcp://127.0.0.1:0", shm=False, **kw):
    """A started :class:`Server` of NumPy arrays: ``{"name": ndarray}``.

    Each array travels as one row of Arrow's fixed-shape tensor type under
    the ticket ``name.encode()``; values may also be DistArrays (their local
    block) or nclx storages.  ``kw`` go to :class:`Server`.  An array of more
    than 2**31 - 1 values (Arrow's fixed_size_list size is an int32; two per
    complex element) is a ValueError naming it.
    """
    data = {}
    for name, arr in dict(arrays).items():
        if not isinstance(name, str):
            raise TypeError(f"array names must be str, not {type(name).__name__} ({name!r})")
        try:
            data[name.encode()] = array_to_table(arr)
        except ValueError as exc:      # too many values for one tensor
            raise ValueError(f"array {name!r}: {exc}") from None
    return Server(data, uri=uri, shm=shm, **kw).start()


__all__ = ["Server", "serve_arrays", "Client", "BatchStream", "fetch", "stream", "fetch_array",
           "array_to_table", "table_to_array", "Endpoint", "parse_uri", "ProtocolError",
           "RemoteError", "UnknownTicketError", "ConnectionLostError"]
