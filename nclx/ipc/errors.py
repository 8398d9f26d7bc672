"""The exceptions of nclx.ipc.

``ProtocolError`` is raised by the side that received bytes breaking the
protocol (it names the field, sequence number, offset or value);
``RemoteError`` by a client whose server reported an error in an error
frame (docs/ipc.md); ``UnknownTicketError`` when that error is an unknown
ticket; ``ConnectionLostError`` when the peer went away mid-frame or
mid-stream.
"""
from nclx.errors import NclxError


class ProtocolError(NclxError, ValueError):
    """Bytes on the wire that break the Dissociated IPC protocol or nclx's
    TCP framing: the message names the offending field and value."""


class ConnectionLostError(ProtocolError, ConnectionError):
    """The peer closed the connection in the middle of a frame or a stream."""


class RemoteError(NclxError, RuntimeError):
    """The server reported an error (an nclx error frame).

    ``code`` is the machine-readable kind ('unknown_ticket', 'protocol',
    'dataset'), ``detail`` the server's message.
    """

    def __init__(self, code, detail):
        super().__init__(f"server error ({code}): {detail}")
        self.code = code
        self.detail = detail


class UnknownTicketError(RemoteError, LookupError):
    """The server has no dataset under the requested ticket."""

    def __init__(self, ticket, detail=None):
        detail = detail or f"unknown ticket {ticket!r}"
        super().__init__("unknown_ticket", detail)
        self.ticket = ticket

    def __str__(self):  # LookupError's KeyError-like quoting is not wanted
        return f"server error (unknown_ticket): {self.detail}"
