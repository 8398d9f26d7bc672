"""The record a trace of a fused function writes (nclx._probe's probes
write it, nclx._trace turns it into a program), and why a trace fails."""
import warnings

import numpy as np

from nclx._ncl.blockplan import MAX_SLOTS, MAX_STEPS
from nclx.errors import NclxError

__all__ = ["Untraceable", "StateChanged"]


class Untraceable(NclxError):
    """The function cannot be fused; str() says why (callers run it eagerly)."""


class StateChanged(Untraceable):
    """A step ran under other error handling or warning filters than the
    call's: this call runs eagerly, and the answer is not kept (another
    thread may have changed the process's warning filters meanwhile)."""


class _Tape:
    def __init__(self, ninputs, ndim=1):
        self.ndim = ndim             # of the arrays the probes stand for
        self.steps = []
        self.nslots = ninputs
        self.constants = []          # (slot, value converted to its loop dtype)
        self.reduced = None          # (kind, chars, slot) once a sum/prod ended it
        self.wheres = []             # per step, where eager NumPy would report
        self.reduce_where = None     # its flags (_where_of); the reduction's
        self.elisions = []           # (step, temporary's slot, itemsize): eager NumPy
        #                              swaps its operands where the temporary reaches
        #                              256 KiB (nclx._elide)
        self.wide = set()            # slots over the arrays' elements (not 0-d alone)
        self.poisoned = None         # why, once a probe refused something (kept even
        #                              where the function catches the exception)
        # the floating-point error handling and warning filters of the call:
        # the executor reports under these, so a step traced under others
        # (an np.errstate or warnings.catch_warnings inside the function) is eager
        self.err = np.geterr()
        self.errcall = np.geterrcall()
        self.filters = list(warnings.filters)     # by content: another thread's
        #                                           catch_warnings() copies the list
        self.state_changed = False

    def new_slot(self):
        self.nslots += 1
        return self.nslots - 1

    def refuse(self, why):
        """The Untraceable to raise for ``why``; the trace fails even where the
        function catches it."""
        self.poisoned = self.poisoned or why
        return Untraceable(why)

    def check_state(self, what):
        if len(self.steps) >= MAX_STEPS or self.nslots >= MAX_SLOTS:
            # the executor would refuse the program: stop here (before, a
            # 2,000-term expression traced every step three times, each
            # step's checks growing with the steps: 12 s before it ran
            # eagerly in 1 s; review 23)
            raise self.refuse(f"{what}: one step more than the executor takes ({len(self.steps)} "
                              f"steps over {self.nslots} operands and temporaries so far; the "
                              f"executor runs at most {MAX_STEPS} steps over {MAX_SLOTS})")
        if np.geterrcall() is not self.errcall or np.geterr() != self.err:
            # np.errstate is the calling context's: set inside the function
            raise self.refuse(f"{what} under an np.errstate or np.seterr set inside the "
                              f"function (a fused run reports under the caller's)")
        if warnings.filters != self.filters:
            # the warning filters are the process's: another thread may have
            # changed them meanwhile, so this answer is not kept at once
            self.state_changed = True
            raise self.refuse(f"{what} under warning filters set inside the function "
                              f"(a fused run warns under the caller's)")
