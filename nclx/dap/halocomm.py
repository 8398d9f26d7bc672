"""The communicator, tags and agreement of halo exchange plans
(:mod:`nclx.dap.halo`).

Every plan on a communicator sends on one duplicate of it (kept on the
communicator: :mod:`nclx.dap.commstate`) and takes its own range of tags,
so exchanges of several arrays in flight never meet; the ranks agree on
each plan (its layout and its tag range) in the record every nclx.dap
agreement starts with, before any message.
"""
import hashlib
import sys
import threading

from nclx._ncl import forksafe as _forksafe
from nclx.dap.agreekeys import layout_differences, layout_key, operation_of
from nclx.dap.collective import allgather_checked
from nclx.dap.commstate import kept
from nclx.dap.fold import agree
from nclx.dap.validate import DapError

__all__ = ["take_tags", "shared_comm", "agree_plan"]

_LOCK = threading.RLock()
_forksafe.guard(sys.modules[__name__], "_LOCK")   # a fork's child gets it free


def _free_state(state):
    if state["comm"] is not None:
        state["comm"].Free()


def _state(comm):
    """This communicator's exchange state: its duplicate, plans built so far."""
    return kept(comm, "halo", lambda: {"comm": None, "next": 0}, _free_state)


def take_tags(comm, regions, MPI):
    """The first of ``regions`` tags for a new exchange plan on ``comm``: the
    plans on one communicator take consecutive ranges, whatever their number
    of dimensions (wrapping to 0 past the tag bound), so two exchanges in
    flight never share a tag.  Taken after the plan's agreement, so every
    rank takes the same ranges as long as the ranks build their plans in
    the same order.  None when the regions alone need more than half the
    tags (18 dimensions and more)."""
    ub = MPI.COMM_WORLD.Get_attr(MPI.TAG_UB) or 32767
    if regions > (ub + 1) // 2:
        return None
    state = _state(comm)
    with _LOCK:
        start = state["next"]
        if start + regions > ub + 1:
            start = 0
        state["next"] = start + regions
    return start


def shared_comm(comm):
    """One duplicate of ``comm`` for every exchange plan on it (kept on
    ``comm``, freed with it); plans keep apart by their tags (before, each
    DistArray's plan held a duplicate of its own, and MPICH ran out of
    communicators after about 2,000 arrays).  The duplicate is made
    collectively, right after the first plan's agreement."""
    state = _state(comm)
    if state["comm"] is None:
        state["comm"] = comm.Dup()
    return state["comm"]


def agree_plan(da, error):
    """One ``Allreduce`` (the fold's record with the layout's fingerprint)
    when every rank sees the same layout and none failed; else one allgather
    of every rank's error and its whole view of the layout (its
    Distribution's columns): every rank must see the same layout, or
    the plans would not match (a rank waiting for cells its neighbour does
    not send, or a message truncated on one side only).  On any difference
    every rank raises the same DapError naming, per dimension, the groups of
    ranks that disagree and the padding each group sees.  (A DistArray's
    constructor already agrees on its layout; this catches one built past
    it.)"""
    # the record every agreement starts with (a rank in another nclx.dap
    # operation meets this one there); the allgather that reports runs only
    # on a failure or a difference
    key = hashlib.sha1(repr(layout_key(da.distribution)).encode()).hexdigest()
    if agree(da.comm, key, error, "halo exchange"):
        return
    views = allgather_checked(da.comm, ("halo exchange",
                                        [list(col) for col in da.distribution._dims]),
                              error, "halo exchange")
    others = [(r, operation_of(v)) for r, v in enumerate(views)
              if not (isinstance(v, tuple) and len(v) == 2 and v[0] == "halo exchange")]
    if others:
        raise DapError("halo exchange: the ranks made different calls (another operation "
                       "runs on some ranks: " + ", ".join(f"rank {r}: {op}"
                                                          for r, op in others[:8]) + ")")
    lines = layout_differences([v[1] for v in views])
    if lines:
        raise DapError("halo exchange: every rank must hold the same Distribution\n"
                       + "\n".join(lines))
