"""nclx.dap.collective on any number of ranks: ``agree``, ``agree_same`` and
``allgather_checked`` return on every rank when no rank failed, and otherwise
raise the same DapError on every rank, naming each failing rank, its error
and (agree_same) what each group of ranks passed."""
import pytest

from mpi_helpers import comm, raised_everywhere, rank
from nclx.dap import DapError, collective

size = comm.size
last = size - 1


def test_agree_returns_on_every_rank_when_no_rank_failed():
    assert collective.agree(comm, None, "step") is None
    assert collective.agree_same(comm, ("x", 3), what="step") == ("x", 3)
    assert collective.allgather_checked(comm, rank * 10) == [r * 10 for r in range(size)]

def test_agree_raises_on_every_rank_naming_each_failing_rank():
    failing = [r for r in range(size) if r % 2 == 1] or [0]
    error = KeyError(f"boom {rank}") if rank in failing else None
    msg = raised_everywhere(collective.agree, comm, error, "the step")
    assert msg.startswith("the step: ")
    for r in failing:
        assert f"rank {r}: KeyError: 'boom {r}'" in msg
    for r in set(range(size)) - set(failing):
        assert f"rank {r}:" not in msg
    count = f"rank {failing[0]} of {size} failed" if len(failing) == 1 else \
        f"{len(failing)} of {size} ranks failed"
    assert count in msg

def test_agree_keeps_the_local_exception_as_the_cause():
    error = ValueError("bad") if rank == last else None
    with pytest.raises(DapError) as info:
        collective.agree(comm, error)
    assert (info.value.__cause__ is error) if rank == last else info.value.__cause__ is None

def test_agree_same_names_the_ranks_that_disagree_and_what_they_passed():
    value = ("shape", 7 if rank == last and size > 1 else 5)
    if size == 1:
        assert collective.agree_same(comm, value, what="op") == value
        return
    msg = raised_everywhere(collective.agree_same, comm, value, what="op",
                            describe=lambda v: f"<{v[1]}>")
    who = "rank 0" if size == 2 else f"ranks 0-{size - 2}"
    assert f"{who} passed <5>" in msg and f"rank {last} passed <7>" in msg

def test_a_value_that_cannot_be_pickled_is_this_ranks_error_not_a_hang():
    value = (lambda: None) if rank == last else 1
    msg = raised_everywhere(collective.allgather_checked, comm, value, what="exchange")
    assert f"rank {last}: " in msg and ("Pickl" in msg or "pickle" in msg)
