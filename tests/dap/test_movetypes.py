"""nclx.dap.movetypes on one rank: the segments computed from block and
cyclic parameters list exactly the local indices a brute-force search over
the global indices finds, in global order; padded block buffers split into
pieces in local order; a datatype selects those elements, in that order."""
import itertools

import numpy as np
import pytest
from mpi4py import MPI

from nclx.dap import Distribution
from nclx.dap.movetypes import block_type, element_type, held, segments


def _expand(segs):
    out = []
    for s in segs:
        if s[0] == "vec":
            _, start, count, blen, stride = s
            out += [start + i * stride + j for i in range(count) for j in range(blen)]
        else:
            for a, n in zip(s[1], s[2]):
                out += list(range(int(a), int(a) + int(n)))
    return out


def _brute(mine, other):
    loc = mine._owned_local()
    g = mine.global_from_local(loc)
    keep = other.owns(g)
    return [int(i) for _, i in sorted(zip(g[keep], loc[keep]))]


def _columns(n, P):
    out = []
    for kw in (dict(dist="b"), dict(dist="c"), dict(dist="c", block_size=[2]),
               dict(dist="c", block_size=[3]), dict(dist="b", padding=[1])):
        try:
            d = Distribution.from_shape((n,), nprocs=P, **kw)
        except Exception:       # padding wider than a block
            continue
        out.append([d.maps(r)[0] for r in range(P)])
    return out


@pytest.mark.parametrize("n", [0, 1, 5, 12, 13])
def test_segments_match_a_brute_force_search(n):
    for P1, P2 in itertools.product((1, 2, 3, 4), repeat=2):
        for col1 in _columns(n, P1):
            for col2 in _columns(n, P2):
                for mine, other in itertools.product(col1, col2):
                    got = _expand(segments(mine, other))
                    assert got == _brute(mine, other), (n, mine, other)


def test_held_pieces_cover_a_padded_periodic_buffer_in_local_order():
    d = Distribution.from_shape((10,), nprocs=3, padding=[2], periodic=[True])
    for r in range(3):
        m = d.maps(r)[0]
        local = []
        for piece in held(m):
            g = np.arange(piece.lo, piece.hi)
            local += list(g - piece.start)
            assert np.all((g >= 0) & (g < 10))
        assert local == list(range(m.local_size))
        want = m.global_from_local(np.arange(m.local_size)) % 10
        got = np.concatenate([np.arange(p.lo, p.hi) for p in held(m)])
        assert np.array_equal(got, want)


def test_block_type_selects_the_segments_in_order():
    block = np.arange(6 * 7, dtype=np.float64).reshape(6, 7)
    segs = [[("vec", 4, 3, 1, -2)], [("vec", 1, 2, 2, 3), ("idx", np.array([0]), np.array([1]))]]
    elem, _ = element_type(block.dtype, MPI)
    t, off = block_type(segs, block.strides, elem, MPI)
    rows, cols = _expand(segs[0]), _expand(segs[1])
    got = np.full(len(rows) * len(cols), np.nan)
    try:        # the datatype on the send side, plain doubles on the receive side
        src = np.frombuffer(block.tobytes()[off:], np.float64)
        MPI.COMM_SELF.Sendrecv([src, 1, t], 0, 0, [got, MPI.DOUBLE], 0, 0)
    finally:
        t.Free()
    assert np.array_equal(got, block[np.ix_(rows, cols)].ravel())
