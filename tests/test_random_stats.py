"""The distributions of nclx.random.Generator: Kolmogorov-Smirnov against
the exact CDF at alpha = 1e-6 (fixed seeds: a pass is a pass every run),
moments within six standard errors, the ziggurats' tails, chi-square for
integers and for the orders of permutation, on several threads and blocks."""
import math
from itertools import permutations

import numpy as np
import pytest

import nclx
import nclx.random as R

ALPHA = 1e-6
_erf = np.frompyfunc(math.erf, 1, 1)


@pytest.fixture(autouse=True)
def two_threads():
    keep = nclx.get_num_threads()
    nclx.set_num_threads(2)
    yield
    nclx.set_num_threads(keep)


def normal_cdf(x):
    return 0.5 * (1.0 + np.asarray(_erf(np.asarray(x, np.float64) / math.sqrt(2.0)), np.float64))


def ks(x, cdf):
    """Kolmogorov-Smirnov statistic of sample x against cdf, and its
    asymptotic critical value at ALPHA."""
    x = np.sort(np.asarray(x, np.float64))
    n = x.size
    f = cdf(x)
    i = np.arange(1, n + 1)
    d = max(np.max(i / n - f), np.max(f - (i - 1) / n))
    return d, math.sqrt(-0.5 * math.log(ALPHA / 2) / n)


def assert_ks(x, cdf):
    d, crit = ks(x, cdf)
    assert d < crit, (d, crit)


def chi2_ok(counts, expected):
    counts, expected = np.asarray(counts, float), np.asarray(expected, float)
    df = counts.size - 1
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    assert chi2 < df + 6 * math.sqrt(2 * df) + 10, (chi2, df)


def test_ks_detects_a_wrong_distribution():
    x = R.Generator(1).standard_normal(200_000)
    assert ks(x, normal_cdf)[0] < ks(x, normal_cdf)[1]
    assert ks(x * 1.05, normal_cdf)[0] > ks(x, normal_cdf)[1]
    assert ks(x + 0.05, normal_cdf)[0] > ks(x, normal_cdf)[1]
    assert ks(np.abs(x), normal_cdf)[0] > ks(x, normal_cdf)[1]


def test_ziggurat_constants_are_marsaglia_tsangs():
    # r of 256 layers of equal area (JSS 2000): 3.6541528853610088, 7.69711747013104972
    from nclx._ncl.rng import ziggurat
    rn, xn = ziggurat("normal")
    re_, xe = ziggurat("exponential")
    assert abs(rn - 3.6541528853610088) < 1e-12 and abs(re_ - 7.69711747013104972) < 1e-12
    for x, f, v_tail in ((xn, lambda t: math.exp(-t * t / 2), math.sqrt(math.pi / 2) * math.erfc(rn / math.sqrt(2))),
                         (xe, lambda t: math.exp(-t), math.exp(-re_))):
        v = x[1] * f(x[1]) + v_tail
        assert abs(x[0] * f(x[1]) - v) < 1e-15
        areas = [x[i] * (f(x[i + 1] if i < 255 else 0.0) - f(x[i])) for i in range(1, 256)]
        assert max(abs(a - v) for a in areas) < 1e-13 * 256


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("block", [R.default_block, 1000, 1 << 20])
def test_standard_normal_ks_and_moments(dtype, block):
    x = R.Generator(11, block=block).standard_normal(400_000, dtype=dtype)
    assert x.dtype == dtype
    assert_ks(x, normal_cdf)
    n = x.size
    x = x.astype(np.float64)
    assert abs(x.mean()) < 6 / math.sqrt(n)
    assert abs(x.var() - 1) < 6 * math.sqrt(2 / n)
    assert abs(np.mean(x ** 3)) < 6 * math.sqrt(15 / n)
    assert abs(np.mean(x ** 4) - 3) < 6 * math.sqrt(96 / n)


def test_normal_loc_scale_ks():
    x = R.Generator(12).normal(3.0, 2.5, 300_000)
    assert_ks(x, lambda t: normal_cdf((t - 3.0) / 2.5))
    x = R.Generator(12).normal([0.0, 10.0], [1.0, 0.5], (150_000, 2))
    assert_ks(x[:, 0], normal_cdf)
    assert_ks(x[:, 1], lambda t: normal_cdf((t - 10.0) / 0.5))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_normal_tail_beyond_r(dtype):
    """The base layer's tail (|x| > r) has its exact mass and shape."""
    from nclx._ncl.rng import ziggurat
    r = ziggurat("normal")[0]
    x = np.abs(R.Generator(13).standard_normal(4_000_000, dtype=dtype).astype(np.float64))
    tail = x[x > r]
    p = math.erfc(r / math.sqrt(2))
    want = p * x.size
    assert abs(tail.size - want) < 6 * math.sqrt(want)
    assert_ks(tail, lambda t: (normal_cdf(t) - normal_cdf(r)) / (1 - normal_cdf(r)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exponential_ks_moments_tail(dtype):
    from nclx._ncl.rng import ziggurat
    x = R.Generator(14).exponential(2.0, 4_000_000, dtype=dtype).astype(np.float64)
    assert x.min() >= 0
    assert_ks(x[:400_000], lambda t: 1 - np.exp(-t / 2.0))
    n = x.size
    assert abs(x.mean() - 2) < 6 * 2 / math.sqrt(n)
    assert abs(x.var() - 4) < 6 * math.sqrt(8 * 16 / n)
    r = ziggurat("exponential")[0]
    tail = x[x / 2 > r] / 2
    want = math.exp(-r) * n
    assert abs(tail.size - want) < 6 * math.sqrt(want)
    assert_ks(tail - r, lambda t: 1 - np.exp(-t))


def test_exponential_array_scale():
    x = R.Generator(15).exponential([[1.0], [3.0]], (2, 200_000))
    assert_ks(x[0], lambda t: 1 - np.exp(-t))
    assert_ks(x[1], lambda t: 1 - np.exp(-t / 3))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_uniform_ks(dtype):
    x = R.Generator(16).uniform(-2.0, 6.0, 300_000, dtype=dtype)
    assert x.dtype == dtype and x.min() >= -2 and x.max() < 6
    assert_ks(x, lambda t: (t + 2.0) / 8.0)
    assert_ks(R.Generator(16).random(300_000, dtype=dtype), lambda t: t)


@pytest.mark.parametrize("low,high,dtype", [
    (0, 10, np.int64), (-100, 100, np.int8), (0, 256, np.uint8), (0, 2, bool),
    (-7, 1000, np.int16), (5, 3 * 10**9 + 5, np.uint32), (0, 3 * 2**62, np.uint64),
    (-(2**62), 2**62 + 12345, np.int64)])
def test_integers_chi_square(low, high, dtype):
    n = 600_000
    x = R.Generator(17).integers(low, high, n, dtype=dtype)
    assert x.dtype == np.dtype(dtype)
    v = x.astype(object) if np.dtype(dtype).itemsize == 8 else x.astype(np.int64)
    assert min(v) >= low and max(v) < high
    span = high - low
    cells = min(span, 64)
    idx = np.array([(int(t) - low) * cells // span for t in v]) if span > 2**40 else \
        ((v.astype(np.int64) - low) * cells // span)
    counts = np.bincount(idx, minlength=cells)
    # each cell holds floor or ceil of span / cells values
    sizes = np.array([((k + 1) * span + cells - 1) // cells - (k * span + cells - 1) // cells
                      for k in range(cells)], float)
    chi2_ok(counts, n * sizes / span)


def test_integers_full_range_bits_and_array_bounds():
    x = R.Generator(18).integers(0, 2**64, 200_000, dtype=np.uint64)
    bits = np.unpackbits(x.view(np.uint8)).reshape(-1, 64).mean(axis=0)
    assert np.all(np.abs(bits - 0.5) < 6 * 0.5 / math.sqrt(x.size))
    hi = np.array([3, 5, 1000, 2**40])
    y = R.Generator(18).integers(0, hi, (200_000, 4))
    for j, h in enumerate(hi[:3]):
        chi2_ok(np.bincount(y[:, j], minlength=h), np.full(h, y.shape[0] / h))
    assert y[:, 3].max() < 2**40 and y[:, 3].max() > 2**39


@pytest.mark.parametrize("n,block", [(4, R.default_block), (5, 2)])
def test_permutation_orders_uniform(n, block):
    g = R.Generator(19, block=block)
    orders = {p: i for i, p in enumerate(permutations(range(n)))}
    reps = 200 * len(orders)
    counts = np.zeros(len(orders))
    for _ in range(reps):
        counts[orders[tuple(g.permutation(n).tolist())]] += 1
    chi2_ok(counts, np.full(len(orders), reps / len(orders)))


@pytest.mark.parametrize("n", [2**18 + 5, 1_500_001])
def test_bucket_permutation_mixes_everywhere(n):
    """Sanders' bucket shuffle: positions and values independent (a 16 x 16
    table of position range x value range is flat), values a permutation."""
    p = R.Generator(20).permutation(n)
    assert np.array_equal(np.sort(p), np.arange(n))
    table = np.zeros((16, 16))
    np.add.at(table, (np.arange(n) * 16 // n, p * 16 // n), 1)
    chi2_ok(table.ravel(), np.full(256, n / 256))
    rho = np.corrcoef(np.arange(n), p)[0, 1]
    assert abs(rho) < 6 / math.sqrt(n)
