"""Shared-memory segments: the server's (read-write, with an allocator) and
the client's read-only mapping of it.

The server creates one POSIX shared-memory segment
(``multiprocessing.shared_memory.SharedMemory``), reserves its pages up
front (``posix_fallocate``: a full /dev/shm is an OSError at start, never a
SIGBUS while writing), and carves it into 64-byte aligned regions, one per
placed dataset or batch.  A region lives until the server frees it (see
server.py for who holds it); the client maps the segment read-only, so it
can never write into the server's data, and does not register it with
multiprocessing's resource tracker (which would unlink the server's segment
when the client exits, Python < 3.13).
"""
import mmap
import os
import secrets
import stat
import threading
from bisect import bisect_right, insort

import pyarrow as pa

from nclx.ipc.errors import ProtocolError

ALIGN = 64


def _round_up(n, a=ALIGN):
    return (n + a - 1) // a * a


class Region:
    """``[start, start + size)`` of a segment; ``pinned`` regions (datasets
    placed once) live as long as the server, others until ``refs`` drops to 0
    after ``sealed``."""
    __slots__ = ("start", "size", "refs", "pinned", "sealed", "freed")

    def __init__(self, start, size, pinned):
        self.start, self.size, self.pinned = start, size, pinned
        self.refs = 0
        self.sealed = False
        self.freed = False

    @property
    def end(self):
        return self.start + self.size

    def __repr__(self):
        return f"Region({self.start}:{self.end}, refs={self.refs}, pinned={self.pinned})"


class Segment:
    """The server's segment: ``name`` (what the URI's remote_handle carries),
    ``size``, ``view(start, n)`` (a writable memoryview), ``allocate(n)`` /
    ``free(region)`` (first fit, 64-byte aligned), ``region_at(offset)``."""

    def __init__(self, size, prefix="nclx"):
        from multiprocessing import shared_memory
        size = max(_round_up(size, 4096), 4096)
        name = f"{prefix}_{os.getpid()}_{secrets.token_hex(6)}"
        self._shm = shared_memory.SharedMemory(name=name, create=True, size=size)
        try:
            fd = getattr(self._shm, "_fd", -1)
            if fd >= 0 and hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, size)
        except OSError as exc:
            self._shm.close()
            self._shm.unlink()
            raise OSError(exc.errno, f"cannot reserve {size} bytes of shared memory for "
                          f"segment {name!r}: {exc.strerror}") from None
        self.name = self._shm.name
        self.size = size
        self._lock = threading.Lock()
        self._free = [(0, size)]          # sorted (start, size) holes
        self._starts = []                 # sorted region starts
        self._regions = {}                # start -> Region
        self._closed = False

    def view(self, start, n):
        """A writable memoryview of ``[start, start + n)``."""
        if start < 0 or n < 0 or start + n > self.size:
            raise ValueError(f"[{start}, {start + n}) is outside the segment of {self.size}")
        return self._shm.buf[start:start + n]

    def pa_view(self, start, n):
        """A mutable pyarrow Buffer over ``[start, start + n)``."""
        return pa.py_buffer(self.view(start, n))

    def allocate(self, nbytes, *, pinned=False):
        """A new Region of at least ``nbytes`` (+64 bytes of slack, so that no
        buffer offset ends a region), or None if no hole is large enough."""
        need = _round_up(nbytes + ALIGN)
        with self._lock:
            if self._closed:
                return None
            for i, (start, size) in enumerate(self._free):
                if size >= need:
                    if size == need:
                        del self._free[i]
                    else:
                        self._free[i] = (start + need, size - need)
                    region = Region(start, need, pinned)
                    insort(self._starts, start)
                    self._regions[start] = region
                    return region
        return None

    def free(self, region):
        """Return ``region`` to the free list (coalescing neighbours)."""
        with self._lock:
            if region.freed or self._regions.get(region.start) is not region:
                return
            region.freed = True
            del self._regions[region.start]
            self._starts.remove(region.start)
            holes = self._free
            holes.append((region.start, region.size))
            holes.sort()
            merged = [holes[0]]
            for start, size in holes[1:]:
                pstart, psize = merged[-1]
                if pstart + psize == start:
                    merged[-1] = (pstart, psize + size)
                else:
                    merged.append((start, size))
            self._free[:] = merged

    def region_at(self, offset):
        """The live Region containing ``offset``, or None."""
        with self._lock:
            i = bisect_right(self._starts, offset) - 1
            if i < 0:
                return None
            region = self._regions[self._starts[i]]
            return region if offset < region.end else None

    @property
    def free_bytes(self):
        with self._lock:
            return sum(size for _, size in self._free)

    def close(self):
        """Unlink the segment; unmap it once nothing here still exports it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._shm.unlink()
        except FileNotFoundError:
            pass
        try:
            self._shm.close()
        except BufferError:
            # a view of it is still referenced in this process (a cached
            # pyarrow buffer): the mapping goes when that view does
            pass


class Mapping:
    """A client's read-only mapping of a server's segment.

    ``address``/``size``; ``view(offset, length)`` checks the range and returns
    a read-only memoryview (a new object each time: the caller can watch it
    with weakref.finalize to learn when pyarrow lets go of it).
    """

    def __init__(self, name):
        self.name = name
        self.identity = None        # (st_dev, st_ino) of the mapped segment (POSIX)
        fd = None
        try:
            import _posixshmem
            # O_NONBLOCK: a FIFO of that name in /dev/shm opened read-only
            # would wait for a writer for ever (before, Client() hung there)
            fd = _posixshmem.shm_open("/" + name, os.O_RDONLY | os.O_NONBLOCK, mode=0o600)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ProtocolError(f"remote_handle names {name!r}, which is not a "
                                    f"shared-memory segment (a FIFO, directory or device)")
            size = st.st_size
            self.identity = (st.st_dev, st.st_ino)
            if size == 0:
                raise OSError(f"shared-memory segment {name!r} is empty")
            self._mmap = mmap.mmap(fd, size, prot=mmap.PROT_READ)
            self._shm = None
        except ImportError:                 # pragma: no cover - no POSIX shm (Windows)
            from multiprocessing import shared_memory
            self._shm = shared_memory.SharedMemory(name=name)
            self._mmap = self._shm.buf
            size = self._shm.size
        except FileNotFoundError:
            raise ProtocolError(f"remote_handle names shared-memory segment {name!r}, "
                                f"which does not exist (server gone?)") from None
        except OSError as exc:
            if exc.errno is None:
                raise
            # ELOOP (a symbolic link), EACCES (another user's), ENODEV, ...
            raise OSError(exc.errno, f"cannot map shared-memory segment {name!r} (the URI's "
                          f"remote_handle): {exc.strerror}") from None
        finally:
            if fd is not None:
                os.close(fd)
        self.size = size
        self._view = memoryview(self._mmap)
        self._pa = pa.py_buffer(self._view)
        self.address = self._pa.address

    def check_current(self, why):
        """Raise ProtocolError unless the segment's name still names the
        segment mapped here (same device and inode): after a server restart
        the old one is unlinked, or the name reused, and offsets from the
        new server must never be read in the old mapping (``why``: what
        happened, for the message)."""
        if self.identity is None:           # pragma: no cover - no POSIX shm
            return
        import _posixshmem
        fd = None
        try:
            fd = _posixshmem.shm_open("/" + self.name, os.O_RDONLY | os.O_NONBLOCK, mode=0o600)
            st = os.fstat(fd)
            now = (st.st_dev, st.st_ino)
        except FileNotFoundError:
            now = None
        except OSError as exc:
            raise ProtocolError(f"{why}: cannot open shared-memory segment {self.name!r} "
                                f"again: {exc.strerror}") from None
        finally:
            if fd is not None:
                os.close(fd)
        if now != self.identity:
            state = "no longer exists" if now is None else "is another segment now"
            raise ProtocolError(f"{why}: shared-memory segment {self.name!r} (the URI's "
                                f"remote_handle) {state}: the server was restarted; open a "
                                f"new Client with its new URI")

    def check(self, offset, length, what):
        if offset > self.size or length > self.size - offset:
            raise ProtocolError(f"{what}: [offset {offset}, +{length}) lies outside the "
                                f"shared-memory segment of {self.size} bytes")

    def view(self, offset, length):
        self.check(offset, length, "buffer")
        return self._view[offset:offset + length]

    def contains(self, address):
        return self.address <= address < self.address + self.size
