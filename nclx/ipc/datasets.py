"""What a server sends: datasets turned into IPC messages.

A dataset is *static* (a Table, RecordBatch or array, serialized once at
its first request and kept) or a *factory* (a zero-argument callable
returning a RecordBatchReader, called per request).  ``_encode`` writes an
IPC stream with pyarrow, into a region of the shared segment (sized first
on a MockOutputStream, so one copy) or into memory, and ``_split`` cuts it
into messages: flatbuffer, MessageInfo, body and the body's offset in the
segment.
"""
import threading

import pyarrow as pa

from nclx.ipc import tensor
from nclx.ipc.flatbuf import WITH_BODY, parse_message

_NO_ROOM = object()


class _Message:
    """One IPC message ready to send: flatbuffer, info, body (packed) and,
    in shared memory, the body's segment offset and region."""
    __slots__ = ("meta", "info", "body", "seg_offset", "region")

    def __init__(self, meta, info, body, seg_offset=None, region=None):
        self.meta, self.info, self.body = meta, info, body
        self.seg_offset, self.region = seg_offset, region


def _write_stream(sink, schema, batches):
    with pa.ipc.new_stream(sink, schema) as w:
        for b in batches:
            w.write_batch(b)


def _split(buf, base=None, region=None):
    """The messages of the IPC stream in ``buf`` (``base``: segment address)."""
    out = []
    for msg in pa.ipc.MessageReader.open_stream(pa.BufferReader(buf)):
        meta = msg.metadata
        info = parse_message(meta)
        if info.header_type not in WITH_BODY:
            out.append(_Message(meta, info, None))
            continue
        body = msg.body
        if body is None or body.size == 0:
            body = pa.py_buffer(b"")
            where = meta.address + meta.size
        else:
            where = body.address
        seg = None if base is None else where - base
        out.append(_Message(meta, info, body, seg, region))
    return out


def _encode(schema, batches, segment=None, pinned=False):
    """Serialize into the segment (None if it has no room) or into memory."""
    if segment is None:
        sink = pa.BufferOutputStream()
        _write_stream(sink, schema, batches)
        return _split(sink.getvalue())
    mock = pa.MockOutputStream()
    _write_stream(mock, schema, batches)
    region = segment.allocate(mock.size(), pinned=pinned)
    if region is None:
        return _NO_ROOM
    view = segment.pa_view(region.start, mock.size())
    _write_stream(pa.FixedSizeBufferWriter(view), schema, batches)
    return _split(view, view.address - region.start, region)


def _as_table(obj):
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    return None


class _Dataset:
    def __init__(self, ticket, obj):
        self.ticket = ticket
        self.lock = threading.Lock()
        self.cached = None
        self.factory = None
        table = _as_table(obj)
        if table is None and callable(obj):
            self.factory = obj
        elif table is None:
            try:
                table = tensor.array_to_table(obj)
            except TypeError as exc:
                raise TypeError(f"dataset {ticket!r}: {exc} (a Table, RecordBatch, "
                                f"RecordBatchReader factory or NumPy array)") from None
            except ValueError as exc:      # more values than one tensor holds
                raise ValueError(f"dataset {ticket!r}: {exc}") from None
        self.table = table

    def batches(self, batch_bytes):
        t = self.table
        rows = t.num_rows
        if rows and t.nbytes > batch_bytes:
            return t.to_batches(max_chunksize=max(1, batch_bytes * rows // t.nbytes))
        return t.to_batches()

    def stream_size(self, batch_bytes):
        mock = pa.MockOutputStream()
        _write_stream(mock, self.table.schema, self.batches(batch_bytes))
        return mock.size()
