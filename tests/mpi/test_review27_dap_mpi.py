"""Review 27 (docs audit of docs/dap.md), on 1-6 ranks; each test failed
before its fix:

- ``redistribute`` of an ndarray or a list raised AttributeError "... has no
  attribute 'comm'" (now DapTypeError, as the halo exchange and save_npy);
- ``Distribution.from_shape(10)`` / ``DistArray.from_shape(5)`` raised
  "'int' object is not iterable" (NumPy takes an int shape), and a scalar
  ``padding=1`` / ``periodic=True`` -- docs/dap.md's own halo example --
  "must give one value per dimension (1), not 1";
- ``np.sort`` / ``np.partition`` of a 'u' dimension owning an index twice
  named no index;
- ``np.roll(a, k)`` of a 1-D DistArray moved the data four times."""
import numpy as np
import pytest

import nclx.dap as dap
from mpi_helpers import collective_assert, comm
from nclx.dap import Distribution
from nclx.dap.validate import DapError, DapTypeError

N = comm.size


@pytest.mark.parametrize("bad", [np.arange(4.0), [1, 2], 3.0, None])
def test_redistribute_of_no_distarray_is_a_dap_type_error(bad):
    with pytest.raises(DapTypeError, match="redistribute of a .*: it needs a DistArray"):
        dap.redistribute(bad, "c")


def test_an_int_shape_is_numpys_one_dimension():
    d = Distribution.from_shape(10, nprocs=N)
    assert d.shape == (10,) and d == Distribution.from_shape((10,), nprocs=N)
    a = dap.DistArray.from_shape(5, comm=comm, fill=2.0)
    assert a.shape == (5,) and a.gather(root=None).tolist() == [2.0] * 5
    for bad in (True, 2.5, "7"):
        with pytest.raises((DapTypeError, TypeError)):
            Distribution.from_shape(bad, nprocs=N)


def test_scalar_padding_periodic_and_block_size_apply_to_every_dimension():
    one = Distribution.from_shape((12,), nprocs=N, padding=1, periodic=True)
    assert one == Distribution.from_shape((12,), nprocs=N, padding=[1], periodic=[True])
    two = Distribution.from_shape((6, 8), ("b", "c"), nprocs=N, padding=np.int64(1),
                                  periodic=False, block_size=2)
    assert two == Distribution.from_shape((6, 8), ("b", "c"), nprocs=N, padding=[1, 1],
                                          periodic=[False, False], block_size=[2, 2])
    # docs/dap.md's halo example, as written there
    g = np.arange(12.0)
    a = dap.DistArray.from_global(g, comm=comm, padding=1, periodic=True)
    a.exchange_halos()
    assert a.gather(root=None).tobytes() == g.tobytes()
    for bad, name in ((1.5, "padding"), ("1", "padding"), (-1, "padding")):
        with pytest.raises(DapError, match=name):
            Distribution.from_shape((12,), nprocs=N, padding=bad)
    with pytest.raises(DapError, match="one value per dimension"):
        Distribution.from_shape((6, 8), nprocs=N, padding=[1])


def _doubled_u(n=8):
    """A 'u' dimension in which rank 0 also holds rank 1's first index."""
    per = [list(range(r, n, N)) for r in range(N)]
    per[0] = per[0] + [per[1][0]]
    dims = [({"dist_type": "u", "size": n, "indices": np.array(per[r], dtype=np.int64),
              "proc_grid_size": N, "proc_grid_rank": r},) for r in range(N)]
    return Distribution.from_dim_data_per_rank(dims), per


@pytest.mark.parametrize("fn", ["sort", "partition", "argsort"])
def test_sort_of_a_u_dimension_owned_twice_names_the_index(fn):
    if N == 1:
        pytest.skip("one rank cannot hold an index twice: refused when the map is built")
    dist, per = _doubled_u()
    a = dap.DistArray(np.arange(len(per[comm.rank]), dtype=float), dist, comm=comm)
    twice = per[1][0]
    args = (a, 2) if fn == "partition" else (a,)
    with pytest.raises(DapError, match=rf"global index {twice} is owned by 2 grid coordinates"):
        getattr(np, fn)(*args)


@pytest.mark.parametrize("shift", [3, -1, 0, (1, 2), 10**20])
def test_roll_of_a_1d_array_moves_once(monkeypatch, shift):
    import nclx.dap.functions.rearrange as rearrange
    g = np.arange(11.0)
    a = dap.DistArray.from_global(g, comm=comm, dist="c")

    def refused(*args, **kw):
        raise AssertionError("a 1-D roll went through ravel/reshape")
    monkeypatch.setattr(rearrange, "ravel", refused)
    monkeypatch.setattr(rearrange, "reshape", refused)
    r = np.roll(a, shift)
    collective_assert(r.distribution == a.distribution, "layout changed")
    assert r.gather(root=None).tobytes() == np.roll(g, shift).tobytes()
