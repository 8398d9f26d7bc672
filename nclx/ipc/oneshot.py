"""One-call fetching: ``fetch``, ``fetch_array`` and ``stream`` each open
their own connection (a :class:`~nclx.ipc.client.Client`) and close it once
the data no longer needs it -- on shared memory, when the last view of the
server's segment is released."""
import weakref

from nclx.ipc import tensor
from nclx.ipc.client import Client, _ticket
from nclx.ipc.stream import BatchStream

__all__ = ["fetch", "fetch_array", "stream"]


def fetch(uri, ticket, **kw):
    """The dataset under ``ticket`` as a pyarrow Table.

    On shared memory the table's buffers are views of the server's segment:
    its ``free_data`` goes when the last of them is released (the connection
    closes then).  ``kw`` go to :class:`Client` (timeout, max_frame, copy).
    """
    client = Client(uri, **kw)
    try:
        table = client.fetch(ticket)
    except BaseException:
        client.close()
        raise
    _close_when_released(client)
    return table


def fetch_array(uri, name, **kw):
    """The NumPy array served under ``name`` (see :func:`serve_arrays`)."""
    return tensor.table_to_array(fetch(uri, name, **kw))


def stream(uri, ticket, **kw):
    """A :class:`BatchStream` on its own connection; use it in a ``with``
    block, or iterate it to the end (the connection then closes once the
    last shared-memory view is released)."""
    client = Client(uri, **kw)
    try:
        s = BatchStream(client, _ticket(ticket), owns_client=True)
    except BaseException:
        client.close()
        raise
    weakref.finalize(s, _close_when_released, client)
    return s


def _close_when_released(client):
    if client._closed:
        return
    client._auto_close = True
    if not client._leases and client._active is None:
        client.close()
