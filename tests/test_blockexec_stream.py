"""The block executor with its result written by non-temporal stores
(nclx._ncl.blockrun: the last step's block staged in scratch, then
ncl_stream_copy): with the threshold at 0 every contiguous result of a
program of cheap steps (blockplan.STREAM_OPS) is streamed, and the
executor's tests rerun here -- values, dtypes, ``out=`` (an operand or
overlapping one), errstate modes -- hold as they do for plain stores.  The
streamed programs among them: 2*a+b*b, (a > b) * a, boolean logic, and the
overflow, underflow and invalid cases of the errstate test; programs with
a division, sqrt or exp rerun with plain stores."""
import numpy as np
import pytest

from nclx._ncl import blockexec as bx, copying, streamprobe

from test_blockexec import (  # noqa: F401  (tests and fixtures run again, streamed)
    _settings, blocks, test_elementwise_equals_eager, test_large_and_default_threads,
    test_out_given_and_written_in_place, test_out_is_an_operand,
    test_out_partially_overlaps_an_operand, test_errstate_modes_as_eager,
    test_one_warning_per_step_in_order, test_integer_divide_by_zero_reported_as_numpy,
    two_a_plus_bb, _operands, _quiet, _same)


@pytest.fixture(autouse=True)
def streamed():
    old = copying.tune(stream_bytes=0)
    adapting = streamprobe.adapt(False)         # every eligible result streamed
    try:
        yield
    finally:
        copying.tune(*old)
        streamprobe.adapt(adapting)


def test_results_are_streamed_from_the_threshold_on():
    program, eager, _ = two_a_plus_bb("f8")
    copying.tune(stream_bytes=8 * 1000)
    for n, want in ((999, 0), (1000, 1), (100_003, 1)):
        ops = _operands(eager, "f8", n)
        before = bx.stream_runs()
        _same(_quiet(bx.execute, program, ops, threads=2), _quiet(eager, *ops))
        assert bx.stream_runs() - before == want, n


def test_programs_with_costly_steps_are_not_streamed():
    """exp, sqrt and divisions keep plain stores (blockplan.STREAM_OPS)."""
    from test_blockexec import exp_neg_aa, hypot_expr, a_minus_b_over_a_plus_b, greater_times
    for case, want in ((exp_neg_aa, 0), (hypot_expr, 0), (a_minus_b_over_a_plus_b, 0),
                       (greater_times, 1)):
        program, eager, _ = case("f8")
        ops = _operands(eager, "f8", 10_000)
        before = bx.stream_runs()
        _same(_quiet(bx.execute, program, ops, threads=2), _quiet(eager, *ops))
        assert bx.stream_runs() - before == want, case.__name__


def test_a_nan_sums_second_run_is_not_streamed():
    """A float sum that is NaN is computed once more, whole, then reduced by
    NumPy: that result is read at once, so plain stores (found by review)."""
    from test_blockexec import sum_ab
    a = np.arange(1 << 16, dtype=np.float64)
    a[5] = np.nan
    b = np.ones(1 << 16)
    before = bx.stream_runs()
    got = bx.execute(sum_ab("f8"), [a, b], threads=2)
    assert bx.stream_runs() == before
    assert np.asarray(got).tobytes() == np.add.reduce(a * b).tobytes()


def test_runs_of_nothing_are_not_counted():
    """An empty result streams nothing (counted before the run, found by review)."""
    program, _, _ = two_a_plus_bb("f8")
    before = bx.stream_runs()
    got = bx.execute(program, [np.empty(0), np.empty(0), np.array(2.0)], threads=2)
    assert got.shape == (0,) and bx.stream_runs() == before


def test_reductions_are_not_streamed():
    from test_blockexec import sum_ab
    a = np.arange(100_000, dtype=np.float64)
    before = bx.stream_runs()
    got = bx.execute(sum_ab("f8"), [a, a], threads=2)
    assert bx.stream_runs() == before
    assert np.asarray(got).tobytes() == np.add.reduce(a * a).tobytes()


@pytest.fixture
def probing():
    streamprobe.adapt(True)
    streamprobe.reset()
    yield
    streamprobe.reset()


def test_probes_go_each_way_in_turn_then_keep_one(probing):
    """With the probes on, the first 2 * PROBES results of a program's size
    class are written each way in turn (the same bytes either way), then
    the way measured faster is kept for that class; results the executor
    allocates and results given as out= are probed apart."""
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", 20_000)
    want = _quiet(eager, *ops)
    k = 2 * streamprobe.PROBES
    before = bx.stream_runs()
    for _ in range(k):
        _same(_quiet(bx.execute, program, ops, threads=2), want)
    assert bx.stream_runs() - before == k // 2
    (found,) = bx.stream_probes(program)
    assert found["result"] == "allocated" and found["threads"] == "team"
    assert found["bytes"] == (0, 1 << 22) and found["decided"] is None
    assert all(t > 0 for t in found["ns_per_mib"])
    before = bx.stream_runs()
    for _ in range(3):
        _same(_quiet(bx.execute, program, ops, threads=2), want)
    (found,) = bx.stream_probes(program)
    plain, streamed = found["ns_per_mib"]
    assert found["decided"] == ("streamed" if streamed < plain else "plain")
    assert bx.stream_runs() - before == (3 if found["decided"] == "streamed" else 0)
    out = np.empty_like(want)
    _quiet(bx.execute, program, ops, out=out, threads=1)
    _same(out, want)
    kinds = {(p["result"], p["threads"]): p["decided"] for p in bx.stream_probes(program)}
    assert kinds[("out=", "one")] is None and len(kinds) == 2


def test_each_program_probes_for_itself(probing):
    """Two programs called in turn are each timed both ways (found by
    review: one shared count per size class gave one program every plain
    call and the other every streamed one, so the faster program's way won)."""
    cases = [two_a_plus_bb("f8"), two_a_plus_bb("f4")]
    ops = [_operands(eager, dt, 20_000) for (_, eager, _), dt in zip(cases, ("f8", "f4"))]
    for _ in range(2 * streamprobe.PROBES):
        for (program, eager, _), o in zip(cases, ops):
            _same(_quiet(bx.execute, program, o, threads=1), _quiet(eager, *o))
    for program, _, _ in cases:
        (found,) = bx.stream_probes(program)
        assert all(t > 0 for t in found["ns_per_mib"]), found


def test_probes_per_way_are_read_at_each_decision(probing, monkeypatch):
    monkeypatch.setattr(streamprobe, "PROBES", 1)
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", 20_000)
    for _ in range(3):
        _same(_quiet(bx.execute, program, ops, threads=1), _quiet(eager, *ops))
    (found,) = bx.stream_probes(program)
    assert found["decided"] in ("plain", "streamed")


def test_a_decision_is_probed_again_after_reprobe_calls(probing, monkeypatch):
    """A class's decision is not for ever (noticed in review: a decision
    taken in a noisy moment was kept for the program's life): after
    REPROBE calls made its way the class probes again, both ways in turn,
    and the next interval is twice as long."""
    monkeypatch.setattr(streamprobe, "PROBES", 1)
    monkeypatch.setattr(streamprobe, "REPROBE", 3)
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", 20_000)
    want = _quiet(eager, *ops)

    def state():
        (found,) = bx.stream_probes(program)
        return found["decided"], found["rounds"]

    def call():
        before = bx.stream_runs()
        _same(_quiet(bx.execute, program, ops, threads=1), want)
        return bx.stream_runs() - before

    assert [call() for _ in range(2)] == [0, 1]          # a probe each way
    call()                                                # decides
    first = state()
    assert first[0] in ("plain", "streamed") and first[1] == 0
    kept = 1 if first[0] == "streamed" else 0
    assert [call() for _ in range(2)] == [kept, kept]     # the decided way, REPROBE - 1 more
    assert state() == first
    assert [call() for _ in range(2)] == [0, 1]           # probing again, both ways
    assert state() == (None, 1)
    call()
    second = state()
    assert second[0] in ("plain", "streamed") and second[1] == 1
    kept = 1 if second[0] == "streamed" else 0
    assert [call() for _ in range(5)] == [kept] * 5       # 2 * REPROBE now
    assert state() == second
    call()
    assert state() == (None, 2)


def test_reset_forgets_every_programs_probes(probing):
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", 20_000)
    _same(_quiet(bx.execute, program, ops, threads=1), _quiet(eager, *ops))
    assert len(bx.stream_probes(program)) == 1
    streamprobe.reset()
    assert bx.stream_probes(program) == []


def test_sizes_fall_in_their_classes(probing):
    program, eager, _ = two_a_plus_bb("f8")
    for n, lo in ((1 << 19, 1 << 22), ((1 << 20) + 8, 1 << 23)):      # 4 MiB, 8 MiB + 64 B
        ops = _operands(eager, "f8", n)
        _same(_quiet(bx.execute, program, ops, threads=1), _quiet(eager, *ops))
    assert sorted(p["bytes"] for p in bx.stream_probes(program)) == [(1 << 22, 1 << 23),
                                                                      (1 << 23, 1 << 24)]


def test_a_forked_child_of_a_threaded_parent_probes_as_one_thread(probing):
    """In a forked child of a threaded parent every call runs on one thread:
    its probes are filed under one thread, not the parent's team (found by
    review)."""
    import os
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", 1 << 17)
    _same(_quiet(bx.execute, program, ops, threads=2), _quiet(eager, *ops))
    assert {p["threads"] for p in bx.stream_probes(program)} == {"team"}
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            streamprobe.reset()
            _same(_quiet(bx.execute, program, ops, threads=2), _quiet(eager, *ops))
            code = 0 if [p["threads"] for p in bx.stream_probes(program)] == ["one"] else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
