"""One collective that carries both a reduction's data and the ranks'
agreement on errors.

Each rank sends one record: a header (a bit per failing rank, the lowest
failing rank's error as text, a flag for an error while combining, the
floating-point flags met while combining) and its partial result.  ``MPI_Allreduce`` with a user-defined, *non-commutative*
operation combines the records: the failure bits are or-ed, the lowest
failing rank's message is kept, and while no rank has failed the partial
results are combined with the ufunc in ascending rank order (MPI fixes that
order for a non-commutative operation; MPI also gives every rank the same
result of an ``Allreduce``: the same bits on every rank, and the same
grouping on every run for a given communicator and size).  A failure stops
the combining; an exception raised by the ufunc while combining (an
integer overflow under ``nclx.checked()``) is carried to every rank as
well, and floating-point errors met while combining floats are recorded and
then warned or raised on every rank as its ``np.errstate`` says, with
NumPy's message for a reduction ("overflow encountered in reduce").

So a reduction is one collective and a rank whose own step failed is never
left out: it still sends its record, with its error instead of data.  The
record is one element of a contiguous byte type, so MPI never splits it.

The first record of every call has one size, whatever the call: the header
and :data:`INLINE` bytes of payload.  ``MPI_Allreduce`` needs the same size
on every rank; ranks that called differently (another axis, dtype, function)
would otherwise send records of different sizes, which MPI cannot match (a
"message truncated" abort, or a hang).  With one size the call's key
(its description and the payload's shape and dtype) differs instead, and
every rank raises a DapError.  A payload larger than :data:`INLINE` goes in
a second ``Allreduce``, once the first has shown that every rank made the
same call and none failed.  The reductions, the NumPy functions of the
registry, ``redistribute``, ``gather`` and DistArray's elementwise calls
under ``np.errstate(...='raise')`` all start with this record
(:func:`agree`), so ranks calling different ones of them meet in the same
collective and are told so.  (The halo exchange, ``from_global`` and the
.npy I/O start with other collectives: a rank calling one of them while
the others call another operation is not caught.)
"""
import math
import sys
import threading
import zlib

import numpy as np

from nclx._ncl import forksafe as _forksafe
from nclx.dap.collective import describe_error
from nclx.dap.keydiff import describe_mismatch, fields_of, key_text
from nclx._fpflags import fp_may_raise
from nclx.dap.verdict import MISMATCH, OTHER_CALL, raise_verdict

__all__ = ["allreduce_agreed", "raise_verdict", "agree", "agreed_call", "guarded_call", "INLINE"]

_MSG = 240                     # bytes of the carried error message
INLINE = 1024                  # payload bytes carried in the first (fixed-size) record
_INTS = 28                     # msg_rank, combine, fp, key, mismatch, kind, other kind
_ctx = threading.local()       # the ufunc and layout of the reduction in flight
_OP = []                       # the MPI operation, made once


def _layout(nranks):
    """(failure bits' offset, message offset, header size): five int32 (the
    lowest failing rank, a combine-error flag, the floating-point flags met
    while combining, the call's key, a flag for ranks whose keys differ), a
    bit per rank, the message; padded to 16 bytes so the payload after it is
    aligned."""
    nb = (nranks + 7) // 8
    size = _INTS + nb + _MSG
    return _INTS, _INTS + nb, size + (-size) % 16


def _combine(inbuf, inoutbuf, datatype):
    """The MPI user function: ``inout = in (lower ranks) op inout``.

    The header is read and written through memoryviews (Python ints, no
    NumPy scalars): MPI calls this once per combining step of every
    reduction and agreement, so its cost is most of a small reduction's."""
    ufunc, (bits, msg, size), spec = _ctx.current
    a = memoryview(inbuf).cast("B")
    b = memoryview(inoutbuf).cast("B")
    ia, ib = a[:_INTS].cast("i"), b[:_INTS].cast("i")
    ib[2] = ib[2] | ia[2]
    if ia[3] != ib[3] or ia[4]:
        ib[4] = 1                                   # different calls on some ranks
    if ia[5] != ib[5] or ia[6]:
        ib[6] = 1                                   # ... of different kinds
    if ia[0] >= 0:                                  # a lower rank failed: its message
        ib[0] = ia[0]
        b[msg:size] = a[msg:size]
    failed = int.from_bytes(a[bits:msg], "little")
    if failed:
        b[bits:msg] = (failed | int.from_bytes(b[bits:msg], "little")).to_bytes(msg - bits,
                                                                                  "little")
    if ib[0] >= 0 or ib[1] or ib[4]:
        return
    if ia[1]:
        ib[1] = ia[1]
        b[msg:size] = a[msg:size]
        return
    if spec is None:
        return
    shape, dtype, count, floating = spec
    pa = np.frombuffer(inbuf, dtype, count, size).reshape(shape)
    pb = np.frombuffer(inoutbuf, dtype, count, size).reshape(shape)
    flags = []
    try:
        # floating-point errors are recorded, then warned or raised on every
        # rank after the collective (raise_verdict), not on the combining
        # one; integers keep their own errors (nclx.checked()'s OverflowError)
        if floating:
            with np.errstate(all="call", call=lambda kind, flag: flags.append(flag)):
                ufunc(pa, pb, out=pb)
        else:
            ufunc(pa, pb, out=pb)
    except Exception as exc:  # noqa: BLE001 - carried to every rank
        ib[1] = 1
        _put(b, msg, size, describe_error(exc))
    for f in flags:
        ib[2] = ib[2] | f


def _put(buf, start, stop, text):
    """``text`` (UTF-8, cut to fit, zero-padded) into bytes ``[start, stop)``
    of ``buf`` (a uint8 array or a byte memoryview)."""
    raw = text.encode("utf-8", "replace")[:stop - start]
    memoryview(buf).cast("B")[start:stop] = raw + bytes(stop - start - len(raw))


_LOCK = threading.RLock()   # _OP and _TYPES: threads may reduce on their own communicators
_forksafe.guard(sys.modules[__name__], "_LOCK")   # free in a fork's child


def _op():
    with _LOCK:
        if not _OP:
            from mpi4py import MPI
            _OP.append(MPI.Op.Create(_combine, commute=False))
        return _OP[0]


_TYPES = {}          # record size -> [committed contiguous byte type, users] (few sizes)
_MAX_TYPES = 64


def _take_type(nbytes):
    """The record type of ``nbytes`` bytes, marked in use until
    :func:`_give_type`: at most :data:`_MAX_TYPES` are kept, and only types no
    thread is using are freed (before, a thread could free the type another
    thread had just taken for its Allreduce: MPICH heap corruption)."""
    with _LOCK:
        entry = _TYPES.pop(nbytes, None)
        if entry is None:
            from mpi4py import MPI
            entry = [MPI.BYTE.Create_contiguous(nbytes).Commit(), 0]
        _TYPES[nbytes] = entry                  # the most recently used last
        entry[1] += 1
        excess = len(_TYPES) - _MAX_TYPES
        if excess > 0:                          # the oldest unused ones go
            for size in [k for k, e in _TYPES.items() if e[1] == 0][:excess]:
                _TYPES.pop(size)[0].Free()
        return entry


def _give_type(entry):
    with _LOCK:
        entry[1] -= 1


def allreduce_agreed(comm, ufunc, partial, spec, error, combine_error=None, fp=0, key="",
                     kind="reduce"):
    """Combine ``partial`` (an array of ``spec = (shape, dtype)``; no payload
    when ``spec`` is None) over ``comm`` with ``ufunc``, carrying this rank's
    ``error`` (an exception or None), an error met while combining
    elsewhere (``combine_error``, its text) and floating-point flags
    (``fp``): one ``Allreduce`` when the payload fits in :data:`INLINE`
    bytes, else two (none on one rank).  ``key`` (a string: the call's
    operation and arguments, or ``(name, value)`` fields, which a mismatch's
    DapError names; the payload's shape and dtype are added) must
    be the same on every rank; where it is not, every rank gets a mismatch
    (``combine`` is :data:`MISMATCH`) instead of a silently wrong
    combination, an MPI abort or a hang.  ``kind`` names the kind of call
    (ranks whose kinds differ get :data:`OTHER_CALL`).

    Returns ``(verdict, value)``: ``verdict`` is None when every rank
    succeeded and no floating-point flag was met while combining, else
    ``(failing comm ranks, lowest failing rank, its message (for a
    mismatch: what differs), combine error message or None, floating-point
    flags)`` -- the same on every rank;
    ``value`` the combined partial (in rank order) or None on a failure."""
    nranks, rank = comm.Get_size(), comm.Get_rank()
    if nranks == 1:
        if error is not None:
            return ([rank], rank, describe_error(error), None, fp), None
        if combine_error is not None:
            return ([], -1, None, combine_error, fp), None
        value = None if spec is None else np.array(partial, copy=True)
        return (([], -1, None, None, fp) if fp else None), value
    nbytes = 0
    key = fields_of(key)
    if spec is not None:
        nbytes = math.prod(spec[0]) * np.dtype(spec[1]).itemsize
        key += (("partial result", f"shape {tuple(spec[0])}, dtype {np.dtype(spec[1]).str}"),)
    if nbytes <= INLINE:
        return _allreduce_record(comm, ufunc, partial, spec, INLINE, error, combine_error, fp,
                                 key, kind)
    # the same call everywhere and no failure first, then the payload
    verdict, _ = _allreduce_record(comm, ufunc, None, None, INLINE, error, combine_error, fp,
                                   key + (("payload", "large"),), kind)
    if verdict is not None and (verdict[0] or verdict[3] is not None):
        return verdict, None
    fp = 0 if verdict is None else verdict[4]
    return _allreduce_record(comm, ufunc, partial, spec, nbytes, None, None, fp, key, kind)


def _allreduce_record(comm, ufunc, partial, spec, room, error, combine_error, fp, key, kind):
    """One ``Allreduce`` of a record of the header and ``room`` payload bytes."""
    nranks, rank = comm.Get_size(), comm.Get_rank()
    layout = bits, msg, size = _layout(nranks)
    send = np.zeros(size + room, np.uint8)
    ints = send[:_INTS].view(np.int32)
    ints[0], ints[2] = -1, fp
    ints[3] = zlib.crc32(key_text(key).encode()) & 0x7FFFFFFF
    ints[5] = zlib.crc32(kind.encode()) & 0x7FFFFFFF
    if error is not None:
        send[bits + rank // 8] = 1 << (rank % 8)
        ints[0] = rank
        _put(send, msg, size, describe_error(error))
    elif combine_error is not None:
        ints[1] = 1
        _put(send, msg, size, combine_error)
    elif spec is not None:
        payload = np.ascontiguousarray(partial, dtype=spec[1]).ravel()
        send[size:size + payload.nbytes].view(spec[1])[...] = payload
    recv = np.empty_like(send)
    entry = _take_type(send.size)
    rtype = entry[0]
    prev = getattr(_ctx, "current", None)
    combine_spec = None         # what _combine reads: shape, dtype, count, floating
    if spec is not None:
        dt = np.dtype(spec[1])
        combine_spec = (tuple(spec[0]), dt, math.prod(spec[0]), dt.kind in "fc")
    _ctx.current = (ufunc, layout, combine_spec)
    try:
        comm.Allreduce([send, 1, rtype], [recv, 1, rtype], op=_op())
    finally:
        _ctx.current = prev
        _give_type(entry)
    ints = recv[:_INTS].view(np.int32)
    flags = int(ints[2])
    if ints[6]:                     # another kind of call met this one: nothing else counts
        return ([], -1, None, OTHER_CALL, flags), None
    if ints[4] and ints[0] < 0:
        # every rank is here: one more collective names what differs (nclx.dap.keydiff)
        return ([], -1, describe_mismatch(comm, key) or None, MISMATCH, flags), None
    if ints[0] >= 0 or ints[1]:
        failed = [int(r) for r in np.flatnonzero(
            np.unpackbits(recv[bits:msg], bitorder="little")[:nranks])]
        text = recv[msg:size].tobytes().rstrip(b"\0").decode("utf-8", "replace")
        return ((failed, int(ints[0]), text if failed else None,
                 None if failed else text, flags), None)
    verdict = ([], -1, None, None, flags) if flags else None
    if combine_spec is None:
        return verdict, None
    shape, dt, count, _ = combine_spec
    return verdict, recv[size:size + count * dt.itemsize].view(dt).reshape(shape).copy()


def agree(comm, key, error=None, what=None):
    """Every rank of ``comm`` made the same call (``key``, a string) and none
    failed (``error``): one ``Allreduce`` of the same record the reductions
    send first, so ranks calling different nclx.dap operations meet and are
    told so (a DapError on every rank).  Returns False where every rank
    called :func:`agree` but the keys differ or some rank failed, without
    raising, for a caller that reports the ranks' values and errors itself
    (every rank returns False then)."""
    verdict, _ = allreduce_agreed(comm, np.add, None, None, error, key=key, kind="agree")
    if verdict is not None and (verdict[3] == MISMATCH or verdict[0]):
        return False
    raise_verdict(verdict, comm.Get_size(), comm.Get_rank(), what, error)
    return True


def agreed_call(comm, fn, key, what, inner_agreed=False, report=None):
    """``fn()`` on every rank of ``comm``, then one agreement: an exception on
    any rank is raised on every rank (that rank's own, a DapError naming it
    elsewhere), so no rank goes on alone after a local computation failed
    (DistArray's elementwise calls under ``np.errstate(...='raise')``).

    ``inner_agreed``: ``fn`` may itself agree on ``comm`` (a DistArray
    subclass's ``__init__`` calling DistArray's): an error raised by that
    agreement was raised on every rank at once, so it goes up without a
    second collective, which the other ranks would never join.

    ``report``: ``fn()`` returns ``(result, flags)`` (floating-point flag
    bits it recorded); the flags are ORed over the ranks in the same
    collective and ``report(flags)`` is called on every rank where any rank
    met one and none failed (an elementwise call's ``call``/``log`` modes:
    one report for the whole array, as NumPy's)."""
    error = result = None
    fp = 0
    try:
        result = fn()
        if report is not None:
            result, fp = result
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        if inner_agreed and getattr(exc, "_nclx_agreed", False):
            raise
        error = exc
    # a kind of its own: ranks in :func:`agree` go on to an allgather when
    # only the keys differ, so meeting them must be OTHER_CALL (raised at once)
    verdict, _ = allreduce_agreed(comm, np.add, None, None, error, fp=fp, key=key,
                                  kind="call")
    if report is not None and verdict is not None and not verdict[0] and verdict[3] is None:
        report(verdict[4])
        return result
    raise_verdict(verdict, comm.Get_size(), comm.Get_rank(), what, error)
    return result


def guarded_call(comm, fn, key, what):
    """``fn()``, agreed (:func:`agreed_call`) over ``comm`` where a
    floating-point flag can raise (:func:`nclx._fpflags.fp_may_raise`) only: a local step
    whose error would be raised on the ranks meeting it alone (the others
    going on to their next collective)."""
    if fp_may_raise():
        return agreed_call(comm, fn, key, what)
    return fn()
