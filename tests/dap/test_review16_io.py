"""Single-process checks of the sixteenth look at nclx.dap's .npy I/O (the
multi-rank ones are tests/mpi/test_review16_io_mpi.py): the header written
by np.save's own writer, warnings included; the header parser on a file
object; ``max_header_size`` checked before any file is opened; and items
copied whole (structured dtypes with bytes between or after their fields)
where a read fills padding cells and where the shared mapping stores a
rank's box.  Each check marked "before" failed on the code before its fix.
"""
import io
import math
import warnings

import numpy as np
import pytest

from nclx.dap import DapError, Distribution, npymap
from nclx.dap.iotypes import _dim_selections, fill_duplicates, raw_items, selections
from nclx.dap.npyheader import header_bytes, parse_header, read_header
from nclx.dap.npyio import _header_limit

GAPS = np.dtype({"names": ["a", "b"], "formats": ["u1", "<i4"], "offsets": [0, 4],
                 "itemsize": 12})


def _gapped(n):
    raw = ((np.arange(n * GAPS.itemsize) * 7) % 251 + 1).astype(np.uint8)
    return np.frombuffer(raw.tobytes(), GAPS)


def _warned(fn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn()
    return out, [(w.category, str(w.message)) for w in seen]


HEADERS = {
    "1.0": (np.dtype(">f8"), (3, 4)),
    "2.0": (np.dtype([(f"f{i}", "i1") for i in range(4000)]), (2,)),
    "3.0": (np.dtype([("\u03b1", "<i2"), ("b", "u1")]), (5, 0)),
    "metadata": (np.dtype(np.int16, metadata={"unit": "m"}), ()),
    "gaps": (GAPS, (7,)),
}


@pytest.mark.parametrize("name", list(HEADERS))
def test_header_bytes_are_np_saves_with_its_warnings(name):
    """before: formats 2.0 and 3.0 were written without np.save's warning."""
    dtype, shape = HEADERS[name]
    got, got_warnings = _warned(lambda: header_bytes(dtype, shape))
    buf = io.BytesIO()
    _, want_warnings = _warned(lambda: np.save(buf, np.zeros(shape, dtype)))
    assert buf.getvalue()[:len(got)] == got
    assert got_warnings == want_warnings


@pytest.mark.parametrize("name", [n for n in HEADERS if n != "metadata"])
def test_parse_header_reads_what_np_save_wrote(name, tmp_path):
    dtype, shape = HEADERS[name]
    path = tmp_path / "x.npy"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.save(path, np.zeros(shape, dtype))
    with open(path, "rb") as f:
        got = parse_header(f, max_header_size=10 ** 6)
    assert got[:3] == (dtype, shape, False)
    assert got == read_header(path, 10 ** 6)


def test_parse_header_names_a_cut_header():
    buf = io.BytesIO()
    np.save(buf, np.arange(3.0))
    with pytest.raises(DapError, match="not a .npy file"):
        parse_header(io.BytesIO(buf.getvalue()[:40]))


@pytest.mark.parametrize("value,want", [(20000, 20000), (np.int64(7), 7), (1e5, 100000),
                                        (np.float32(64.0), 64), (-1, -1), (10 ** 30, 10 ** 30)])
def test_integral_max_header_sizes_are_taken(value, want):
    assert _header_limit(value) == (want, None)


@pytest.mark.parametrize("value,kind", [("x", TypeError), (None, TypeError), (True, TypeError),
                                        (np.bool_(True), TypeError), ([1], TypeError),
                                        (2.5, ValueError), (math.nan, ValueError),
                                        (math.inf, ValueError)])
def test_other_max_header_sizes_are_named(value, kind):
    limit, error = _header_limit(value)
    assert limit is None and type(error) is kind
    assert "max_header_size" in str(error) and repr(value) in str(error)


def test_a_long_max_header_size_value_is_shortened_in_the_message():
    _, error = _header_limit("y" * 1000)
    assert len(str(error)) < 200


def test_raw_items_copy_every_byte():
    g = _gapped(4)
    plain = np.zeros(4, GAPS)
    plain[...] = g
    assert plain.tobytes() != g.tobytes()           # NumPy's copy skips the gaps
    whole = np.zeros(4, GAPS)
    raw_items(whole)[...] = raw_items(g)
    assert whole.tobytes() == g.tobytes()


@pytest.mark.parametrize("shape,kw", [((5,), dict(padding=[2], periodic=[True])),
                                      ((4, 3), dict(padding=[1, 1], periodic=[True, True]))])
def test_fill_duplicates_copies_every_byte(shape, kw):
    """before: a wrapped padding cell of a structured dtype with gaps kept 0
    in its gap bytes."""
    dist = Distribution.from_shape(shape, nprocs=1, **kw)
    g = _gapped(math.prod(shape)).reshape(shape)
    gi = [m.global_from_local(np.arange(m.local_size)) % m.size for m in dist.maps(0)]
    want = raw_items(g)[np.ix_(*gi)]
    block = np.zeros(want.shape, GAPS)
    sel = selections(dist, 0)
    read = raw_items(g)[np.ix_(*[f for f, _, _ in sel])]         # what the file view reads
    raw_items(block)[np.ix_(*[p for _, p, _ in sel])] = read
    fill_duplicates(block, sel)
    assert block.tobytes() == want.tobytes()


@pytest.mark.parametrize("old", [b"", b"\xee" * 4096], ids=["new-file", "older-file"])
def test_a_mapped_box_store_writes_every_byte(tmp_path, old):
    """before: the gap bytes kept the older file's bytes (or 0)."""
    g = _gapped(6).reshape(2, 3)
    path = str(tmp_path / "box.npy")
    with open(path, "wb") as f:
        f.write(old)
    header = header_bytes(GAPS, g.shape)
    dist = Distribution.from_shape(g.shape, nprocs=1, padding=[1, 0], periodic=[True, False])
    block = np.zeros(dist.local_shape(0), GAPS)
    raw_items(block)[1:-1] = raw_items(g)          # the owned cells; padding left 0
    npymap.prepare(path, header, g.nbytes)
    npymap.write_cells(path, len(header), dist, 0, block)
    want = io.BytesIO()
    np.save(want, g)
    with open(path, "rb") as f:
        assert f.read() == want.getvalue()
