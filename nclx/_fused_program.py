"""The program the block executor (nclx._ncl.blockexec) runs: ufunc steps on
numbered slots, optionally ending in a sum or a product.

Slots ``0 .. ninputs-1`` are the operands in order; the others are
temporaries, each written by exactly one step before any step reads it.
``result`` is the slot the last step writes; with ``reduce`` ("sum" or
"prod") that slot is then reduced as ``np.add.reduce`` /
``np.multiply.reduce`` would, on the loop ``reduce_chars`` (e.g. "ddd").
Programs are hashable: the executor resolves each once and caches it.
"""
from collections import namedtuple

__all__ = ["Step", "Program"]

#: one ufunc call: NumPy ufunc, its loop's type characters (inputs then
#: output, e.g. "ddd", "dd?", "ff"), the slots it reads, the slot it writes
Step = namedtuple("Step", "ufunc chars ins out")

_ProgramBase = namedtuple("Program", "steps nslots ninputs result reduce reduce_chars")


class Program(_ProgramBase):
    """Steps, slot count, operand count, result slot, optional final reduction."""

    __slots__ = ()

    def __new__(cls, steps, nslots, ninputs, result, reduce=None, reduce_chars=None):
        steps = tuple(Step(s[0], s[1], tuple(s[2]), s[3]) for s in steps)
        return super().__new__(cls, steps, nslots, ninputs, result, reduce, reduce_chars)
