"""nclx.ledger: record every loop call ordinary NumPy code makes.

>>> import numpy as np, nclx.ledger
>>> a = np.arange(100_000)
>>> with nclx.ledger.recording() as led:
...     b = a + a
...     s = b.sum()
>>> sorted({r.op for r in led.records()} - {'copy'})
['add']
>>> print(led.table())            # doctest: +SKIP
op    kind         dtypes              calls  elements  ms  ...
add   elementwise  int64,int64->int64      1    100000  0.05
add   reduce       int64,int64->int64      1    100000  0.03
copy  call         int64->int64            1         1  0.00
...

(The copy, before NumPy 2.5: NumPy's reduction copies the first element
into its result; every copy of a dtype to itself is a row of the ``copy``
call op.  NumPy 2.5's reduction makes no such copy.)

The ledger is a C node at the front of every funnel chain: it timestamps the
rest of the chain and adds to per-signature counters with atomic adds, so it
works while loops run on several threads and costs two clock reads per call.

A fused run (``nclx.evaluate``, ``@nclx.fuse``) stays fused while ledgers
record and adds one call per step to them, as the same code run eagerly
records one call per ufunc call (see docs/fused.md).
"""
import contextlib
import itertools
import sys
import threading
from collections import namedtuple

from nclx._ncl import entries as _entries
from nclx._ncl import forksafe as _forksafe
from nclx._ncl import install as _install
from nclx._ncl import ledger as _cledger
from nclx._ncl import hooks as _hooks
from nclx._ncl import spec as _spec
from nclx._ncl.dtypes import fixed_width as _fixed_width

#: One row of a ledger: ``op`` (ufunc name, or the call op: sort, argsort,
#: extract, random, zeros, ...), ``kind`` ("elementwise", "reduce", or
#: "call" for the Sort, Mask, RNG and Create subsystems), ``dtypes``
#: (fixed-width names, the written operand last), ``elements``, ``calls``,
#: ``ns`` (time spent in the loops) and ``subsystem`` (NCLib's: compare,
#: binary, unary, isunary, ternary, convert, reduce, sort, mask, rng, create).
Record = namedtuple("Record", "op kind dtypes elements calls ns subsystem")


def _subsystem(op, kind):
    if kind == "call":
        return _spec.CALL_OPS[op][0]
    return "reduce" if kind == "reduce" else _spec.SUBSYSTEM_OF_KIND[_spec.OPS[op][0]]

_ids = itertools.count()
_lock = threading.RLock()    # RLock: a fork from inside its critical section (forksafe)
_forksafe.guard(sys.modules[__name__], "_lock")
_recording = []          # the Ledgers recording now, in start order


def _active():
    """(ledgers recording now, how many funnel nodes they have linked)."""
    with _lock:
        return tuple(_recording), sum(len(led._handles) for led in _recording)


def _add_fused(ledgers, rows):
    """Add a fused run's rows -- (entry slot, reduce (0/1), elements, ns,
    calls: the loop calls eager NumPy makes for the step) -- to ``ledgers``."""
    if not rows:
        return
    named = []
    for slot, reduce, elements, ns, calls in rows:
        op, chars, _ = _entries.slot_info(slot)
        named.append(((op, "reduce" if reduce else "elementwise",
                       tuple(_fixed_width(c) for c in chars)), elements, ns, calls))
    for led in ledgers:
        with led._extra_lock:
            for key, elements, ns, calls in named:
                c0, e0, n0 = led._extra.get(key, (0, 0, 0))
                led._extra[key] = (c0 + calls, e0 + elements, n0 + ns)


class Ledger:
    """Counters of loop calls; filled while :func:`recording` is active."""

    def __init__(self):
        self._table = _cledger.LedgerTable()
        self._handles = []
        self._extra = {}             # fused runs' rows: (op, kind, dtypes) -> counters
        self._extra_lock = threading.RLock()
        _forksafe.guard(self, "_extra_lock")
        self.name = f"ledger#{next(_ids)}"

    def _start(self):
        addr = _cledger.ledger_hook_address()
        data = self._table.address
        with _lock:
            try:
                for sub in _hooks.SUBSYSTEMS:
                    h = _hooks.register_c("funnel", sub, addr, data, name=self.name,
                                          keepalive=self._table)
                    self._handles.append(h)
                    h._pin()           # hooks.reset() leaves it to the recording
            except BaseException:
                for h in self._handles:
                    h.remove()
                self._handles.clear()
                raise
            _recording.append(self)

    def _stop(self):
        with _lock:
            if self in _recording:
                _recording.remove(self)
            for h in self._handles:
                h.remove()
            self._handles.clear()

    def records(self):
        """The calls recorded, one :class:`Record` per (op, kind, dtypes)."""
        merged = {}
        for op, kind, dtypes, calls, elements, ns in self._table.rows():
            key = (op, kind, dtypes)
            c0, e0, n0 = merged.get(key, (0, 0, 0))
            merged[key] = (c0 + calls, e0 + elements, n0 + ns)
        with self._extra_lock:
            extra = list(self._extra.items())
        for key, (calls, elements, ns) in extra:
            c0, e0, n0 = merged.get(key, (0, 0, 0))
            merged[key] = (c0 + calls, e0 + elements, n0 + ns)
        return [Record(op, kind, dtypes, elements, calls, ns, _subsystem(op, kind))
                for (op, kind, dtypes), (calls, elements, ns) in merged.items()]

    def total_ns(self):
        return sum(r.ns for r in self.records())

    def clear(self):
        self._table.clear()
        with self._extra_lock:
            self._extra.clear()

    def table(self):
        """A readable summary, slowest first."""
        rows = sorted(self.records(), key=lambda r: r.ns, reverse=True)
        head = ("op", "kind", "dtypes", "calls", "elements", "ms", "ns/elem", "subsystem")
        body = []
        for r in rows:
            sig = ",".join(r.dtypes[:-1]) + "->" + r.dtypes[-1]
            per = r.ns / r.elements if r.elements else 0.0
            body.append((r.op, r.kind, sig, str(r.calls), str(r.elements),
                         f"{r.ns / 1e6:.3f}", f"{per:.2f}", r.subsystem))
        if not body:
            return "(no loop calls recorded)"
        widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
        lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
        lines.append("  ".join("-" * w for w in widths))
        for row in body:
            lines.append("  ".join(c.ljust(w) if i < 3 or i == 7 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(row, widths))))
        total = sum(r.ns for r in rows) / 1e6
        lines.append(f"total {sum(r.calls for r in rows)} calls, {total:.3f} ms in loops")
        return "\n".join(lines)

    def __repr__(self):
        return f"<nclx Ledger {self.name}: {len(self.records())} signatures>"


@contextlib.contextmanager
def recording():
    """Record every loop call made inside the block; yields a :class:`Ledger`.

    Installs nclx for the block (counted with every other block, in every
    thread) and records the calls of all threads while it is active.
    """
    led = Ledger()
    with _install.installed():
        led._start()
        try:
            yield led
        finally:
            led._stop()
