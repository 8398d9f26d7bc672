"""The ``.npy`` header: written by ``np.save``'s own writer (formats 1.0,
2.0, 3.0, its warnings included) and read with NumPy's own checks, for
:mod:`nclx.dap.npyfile` (rank 0 reads or writes it; every rank its part of
the data), and the file that holds it: every rank checks that the file it
opened holds rank 0's header (a read: :func:`header_again`) or is the file
rank 0 wrote the header into (a save: :func:`file_identity`,
:func:`other_file`); a failed save leaves that file empty
(:func:`empty_file`)."""
import ast
import errno
import io
import math
import os
import stat
import struct

import numpy as np
# np.save's own header writer, its version choice and warnings (private:
# numpy is pinned below 2.6, as for nclx.dap's histogram helpers; NumPy
# 2.0 keeps it in numpy.lib.format, later ones in numpy.lib._format_impl)
try:
    from numpy.lib import _format_impl as _NPY
except ImportError:                 # NumPy 2.0
    from numpy.lib import format as _NPY

from nclx.dap.collective import describe_error
from nclx.dap.validate import DapError

__all__ = ["descr_of", "empty_file", "file_identity", "header_again", "header_again_fd",
           "header_bytes", "open_file", "other_file", "parse_header", "read_header"]

_FMT = np.lib.format


def _check_dtype(dtype):
    if dtype.hasobject:
        raise DapError(f"dtype {dtype} holds Python objects: only fixed-width dtypes can be "
                       f"read or written by MPI-IO (np.save pickles object arrays)")
    if dtype.itemsize == 0:
        raise DapError(f"dtype {dtype.str} has items of 0 bytes: a DistArray cannot hold them "
                       f"(np.load reads such a file)")


def descr_of(dtype):
    """The header's ``descr`` of ``dtype``, with ``np.save``'s warning for
    metadata the file cannot keep (a UserWarning; an exception under an
    'error' filter), through :func:`header_bytes`, which every rank of a
    save calls: every rank warns, or raises, as ``np.save`` would (before,
    rank 0 alone did: under ``-W error`` on other ranks than 0 the file was
    written; found by review)."""
    _check_dtype(dtype)
    return _FMT.dtype_to_descr(dtype)


def header_bytes(dtype, shape):
    """The .npy header NumPy's ``np.save`` writes for a C-order array of
    ``dtype`` and ``shape``, by np.save's own header writer: format 1.0,
    2.0 when it exceeds 65535 bytes, 3.0 for field names that need UTF-8,
    with np.save's UserWarning for the last two ("Stored array in format
    2.0 ..."; before, nclx wrote them without it: found by review).  Every
    rank of a save calls it, so every rank warns (or, under an 'error'
    filter, raises) as np.save would, also for :func:`descr_of`'s warning."""
    d = {"descr": descr_of(dtype), "fortran_order": False,
         "shape": tuple(int(s) for s in shape)}
    buf = io.BytesIO()
    _NPY._write_array_header(buf, d)        # version None: np.save's choice and warnings
    return buf.getvalue()


def _read_header_3_0(f, max_header_size):
    """(shape, fortran_order, dtype) of a format 3.0 header (no public reader)."""
    (hlen,) = struct.unpack("<I", f.read(4))
    # a header the file is too short for first, as np.load (which reads it
    # before it compares with the limit): before, one longer than the limit
    # and than the file was called too long (found by review); the bytes
    # left are counted, not read, so a length near 4 GiB allocates nothing
    here = f.tell()
    left = f.seek(0, io.SEEK_END) - here
    f.seek(here)
    if left < hlen:
        # np.load's words; before, the short header was parsed and the file
        # called truncated (its data, not its header; found by review)
        raise ValueError(f"EOF: reading array header, expected {hlen} bytes got {left}")
    if hlen > max_header_size:
        raise ValueError(f"header length {hlen} is over max_header_size={max_header_size}")
    text = f.read(hlen)
    try:
        d = ast.literal_eval(text.decode("utf8"))
    except (SyntaxError, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot parse the header: {exc}") from None
    if not isinstance(d, dict) or set(d) != set(_FMT.EXPECTED_KEYS):
        raise ValueError(f"the header is not a dict with keys {sorted(_FMT.EXPECTED_KEYS)}")
    shape, fortran = d["shape"], d["fortran_order"]
    if not (isinstance(shape, tuple) and all(isinstance(x, int) and x >= 0 for x in shape)):
        raise ValueError(f"shape is not a tuple of sizes: {shape!r}")
    if not isinstance(fortran, bool):
        raise ValueError(f"fortran_order is not a bool: {fortran!r}")
    return shape, fortran, _FMT.descr_to_dtype(d["descr"])


def parse_header(f, max_header_size=10000):
    """``(dtype, shape, fortran_order, data_offset)`` of the .npy header at
    the start of the binary file object ``f`` (format 1.0, 2.0 or 3.0), read
    from it with NumPy's checks; DapError for a bad header, one over
    ``max_header_size`` bytes (as np.load), a subarray or an object dtype.
    The data is not looked at (:func:`read_header` checks its length)."""
    try:
        version = _FMT.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = _FMT.read_array_header_1_0(f, max_header_size)
        elif version == (2, 0):
            shape, fortran, dtype = _FMT.read_array_header_2_0(f, max_header_size)
        elif version == (3, 0):
            shape, fortran, dtype = _read_header_3_0(f, max_header_size)
        else:
            raise ValueError(f"format version {version} is not 1.0, 2.0 or 3.0")
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - ValueError, tokenize.TokenError, ...
        if "max_header_size" in str(exc) or "is large" in str(exc):
            raise DapError(f"the header is longer than max_header_size={max_header_size} "
                           f"bytes (np.load's safety limit): pass a larger max_header_size "
                           f"if the file is trusted") from None
        raise DapError(f"not a .npy file: {describe_error(exc)}") from None
    offset = f.tell()
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in shape):
        raise DapError(f"not a .npy file: shape {shape!r} is not a tuple of integers")
    if dtype.subdtype is not None:
        # NumPy makes such an array's items dimensions of the array: each rank
        # read into a block of another shape and raised its own message
        # (before; found by review)
        descr = (_FMT.dtype_to_descr(dtype.base), dtype.shape)
        raise DapError(f"not a .npy file nclx can read: descr {descr!r} is a subarray dtype "
                       f"(items of shape {dtype.shape}), which no array has (np.load cannot "
                       f"read it either)")
    _check_dtype(dtype)
    return dtype, tuple(shape), bool(fortran), offset


def open_file(path, flags, what, mode=0o666):
    """``os.open(path, flags)`` that never blocks: a FIFO (or socket) is
    refused with a DapError naming it -- MPI-IO reads and writes each
    rank's cells at their offsets, which a pipe cannot serve -- instead of
    waiting for its other end (before, rank 0 blocked in ``open()`` and the
    other ranks in a collective, for ever; found by review).  The file
    descriptor, blocking again."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, mode)
    except OSError as exc:
        # ENXIO: a FIFO opened for writing with no reader
        if exc.errno == errno.ENXIO and _is_pipe(path):
            raise _pipe_error(path, what) from None
        raise
    try:
        if _is_pipe(fd):
            raise _pipe_error(path, what)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_pipe(path_or_fd):
    try:
        st = os.fstat(path_or_fd) if isinstance(path_or_fd, int) else os.stat(path_or_fd)
    except OSError:
        return False
    return stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode)


def _pipe_error(path, what):
    return DapError(f"{os.fsdecode(path)!r} is a FIFO or socket: {what} reads and writes each "
                    f"rank's part at its offset in the file (MPI-IO), which a pipe cannot "
                    f"serve; use a regular file")


def read_header(path, max_header_size=10000):
    """``(dtype, shape, fortran_order, data_offset)`` of a .npy file (format
    1.0, 2.0 or 3.0); DapError for a bad header (or one over
    ``max_header_size`` bytes, as np.load), an object dtype or a file
    shorter than its data, OSError when it cannot be opened, np.load's
    EOFError for an empty file."""
    with os.fdopen(open_file(path, os.O_RDONLY, "load_npy"), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise EOFError("No data left in file")        # np.load's, for an empty file
        dtype, shape, fortran, offset = parse_header(f, max_header_size)
    nbytes = math.prod(shape) * dtype.itemsize     # Python ints: no int64 wrap-around
    have = size - offset
    if have < nbytes:
        raise DapError(f"the file is truncated: {have} bytes of data, its header announces "
                       f"{nbytes} (shape {shape}, dtype {dtype})")
    return dtype, shape, fortran, offset


def header_again(fh, head, local_error):
    """None when the header read through this rank's handle ``fh`` is the
    one rank 0 read before the open (``head``: dtype, shape, fortran order,
    data offset), else a DapError: the file was replaced or rewritten in
    between, or this rank opened another file of that name (a link that
    differs between nodes).  Before, the data of the file opened was read
    as the layout of the header rank 0 had read: silently wrong values
    (found by review).  One independent read of the header's bytes, no
    collective; npyfile's ``_finish`` agrees on the error (``local_error``:
    an MPI error as an OSError)."""
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
    offset = head[3]
    raw = bytearray(offset)
    status = MPI.Status()
    try:
        fh.Read_at(0, [raw, MPI.BYTE], status)
        again = bytes(raw[:status.Get_count(MPI.BYTE)])
    except Exception as exc:  # noqa: BLE001 - reported as a changed header
        again = local_error(exc)
    return _same_header(again, head)


def header_again_fd(fd, head):
    """:func:`header_again` through the open file descriptor ``fd`` (the
    one a read then reads the cells through: a file replaced after the
    handle's check is not read under the old header; review 26)."""
    try:
        again = os.pread(fd, head[3], 0)
    except OSError as exc:
        again = exc
    return _same_header(again, head)


def _same_header(raw, head):
    """None when ``raw`` (the first bytes of the file, at most the header's
    length, or the exception reading them) parses as ``head``, else the
    DapError saying what was found."""
    if isinstance(raw, BaseException):
        again = describe_error(raw)
    else:
        try:
            # at most ``offset`` bytes of header: a longer one is another header
            again = parse_header(io.BytesIO(raw), head[3])
        except Exception as exc:  # noqa: BLE001 - reported as a changed header
            again = describe_error(exc)
    if isinstance(again, tuple) and again == tuple(head):
        return None

    def text(h):
        return f"descr {np.lib.format.dtype_to_descr(h[0])!r}, shape {h[1]}, " \
               f"fortran_order {h[2]}"
    seen = again if isinstance(again, str) else text(again)
    return DapError(f"the file opened has another header than the one rank 0 read "
                    f"({text(head)}): {seen} "
                    f"(the file was replaced or rewritten meanwhile, or the path names "
                    f"another file on this rank)")


def file_identity(path=None, fd=None):
    """``(node, st_dev, st_ino)`` of the file ``path`` names on this rank (or
    of the open ``fd``), or ``(None, the error)``."""
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
    try:
        st = os.fstat(fd) if fd is not None else os.stat(path)
    except (OSError, TypeError, ValueError) as exc:
        return None, describe_error(exc)
    return MPI.Get_processor_name(), st.st_dev, st.st_ino


def other_file(mine, ref):
    """None when this rank's file ``mine`` is ``ref``, the file rank 0 wrote
    the header into (:func:`file_identity`), else what differs.  On one
    node, one device and inode; across nodes the inode alone: a network file
    system's device number is each node's own."""
    if ref is None or ref[0] is None:
        return f"rank 0 cannot name the file it wrote the header into " \
               f"({None if ref is None else ref[1]})"
    if mine[0] is None:
        return f"the path names no file on this rank ({mine[1]}); rank 0 wrote the header " \
               f"into {_named(ref, ref)}"
    if mine[2] == ref[2] and (mine[0] != ref[0] or mine[1] == ref[1]):
        return None
    return f"the path names another file on this rank ({_named(mine, ref)}) than the one " \
           f"rank 0 wrote the header into ({_named(ref, mine)}): a link, mount or " \
           f"working directory that differs between the ranks?"


def _named(ident, other):
    text = f"device {os.major(ident[1])}:{os.minor(ident[1])}, inode {ident[2]}"
    return text if ident[0] == other[0] else f"{text} on node {ident[0]}"


def empty_file(path, written):
    """Rank 0, after a failed save: cut the file it wrote the header into
    (``written``) to 0 bytes, if ``path`` still names that regular file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == tuple(written[1:]):
            os.ftruncate(fd, 0)
    except OSError:
        pass
    finally:
        os.close(fd)
