"""Halo exchanges never leave a rank waiting: a rank that cannot take part
(a read-only block with padding to fill, a layout one transport cannot
describe) is found before the first message, or sends the same bytes
another way.  Each scenario runs under ``mpiexec`` in a subprocess with a
watchdog (dap_helpers)."""
from dap_helpers import assert_raised_everywhere, run_ranks


def test_read_only_export_on_one_rank(tmp_path):
    """Defect: DAP allows a read-only buffer; a rank whose imported block is
    read-only raised BufferError when its persistent receive was created
    (after the plan was agreed), the others waited for its messages for
    ever.  Now from_distarray itself refuses buffers writeable on some
    ranks only, on every rank (found by review: an elementwise out= into
    it raised on the read-only ranks alone)."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        base = dap.DistArray.from_shape((4 * N,), comm=comm, padding=[1], periodic=[True])
        buf = base._block.copy()
        if rank == 0:
            buf.flags.writeable = False
        export = {"__version__": "0.10.0", "buffer": buf,
                  "dim_data": base.__distarray__()["dim_data"]}
        step(lambda: (dap.from_distarray(export, comm=comm), "ok")[1])
    """)
    assert_raised_everywhere(steps, ended, report, types=("DapError",))
    assert all("writeable" in s[0] for s in steps), report


def test_read_only_export_on_every_rank_is_taken_and_written_nowhere(tmp_path):
    steps, ended, report = run_ranks(tmp_path, 2, """
        base = dap.DistArray.from_shape((4 * N,), comm=comm)
        buf = base._block.copy()
        buf.flags.writeable = False
        export = {"__version__": "0.10.0", "buffer": buf,
                  "dim_data": base.__distarray__()["dim_data"]}
        a = dap.from_distarray(export, comm=comm)
        step(lambda: (np.add(base, 1.0, out=a), "ok")[1])
        step(lambda: (a.gather(root=None), "ok")[1])
    """)
    assert all(ended), report
    assert all(s[0].startswith("EXC ValueError") and s[1] == "OK 'ok'" for s in steps), report


def test_method_datatype_with_one_fortran_ordered_block(tmp_path):
    """Was a hang: exchange_halos(da, 'datatype') when one rank's block is
    not C-contiguous raised on that rank after the plan was agreed, the
    others waited for its messages for ever.  Now a rank that cannot use
    datatypes sends the same bytes packed (docs/dap.md), so both complete."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        base = dap.DistArray.from_shape((4 * N, 6), comm=comm, grid_shape=(N, 1),
                                        padding=[1, 0], periodic=[True, False])
        buf = np.asfortranarray(base._block) if rank == 0 else base._block
        export = {"__version__": "0.10.0", "buffer": buf,
                  "dim_data": base.__distarray__()["dim_data"]}
        a = dap.from_distarray(export, comm=comm)
        step(lambda: (a.exchange_halos(), "ok")[1])            # default: works
        step(lambda: dap.exchange_halos(a, "datatype") or "ok")
    """)
    assert all(ended), f"a rank was left waiting:\n{report}"
    assert all(s == ["OK 'ok'", "OK 'ok'"] for s in steps), report


def test_big_endian_with_one_fortran_ordered_block(tmp_path):
    """Defect: a '>f8' block that is not C-contiguous takes the packed
    transport, whose Irecv cannot describe a non-native byte order
    (BufferError) -- raised on that rank only, after the plan was agreed,
    while the C-contiguous ranks wait for its messages."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        g = np.arange(4.0 * N * 5).reshape(4 * N, 5).astype(">f8")
        base = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1), padding=[1, 0],
                                         periodic=[True, False])
        buf = np.asfortranarray(base._block) if rank == 0 else base._block
        export = {"__version__": "0.10.0", "buffer": buf,
                  "dim_data": base.__distarray__()["dim_data"]}
        a = dap.from_distarray(export, comm=comm)
        want = a._block.copy()
        pad = np.ones(want.shape, bool)
        pad[a.distribution.owned_slices(rank)] = False
        a._block[pad] = -1.0
        step(lambda: (a.exchange_halos(), bool(np.array_equal(a._block, want)))[1])
    """)
    assert all(ended), f"a rank was left waiting:\n{report}"
    assert all(s[:1] == ["OK True"] for s in steps) or \
        all(s[:1] and s[0].startswith("EXC DapError") for s in steps), report
