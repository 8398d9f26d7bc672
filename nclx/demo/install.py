"""Section 4 of ``python -m nclx demo``: ordinary NumPy code through nclx's hooks."""
import numpy as np

import nclx
from nclx.demo._common import median_time, section


def run():
    section("4. nclx.install(): ordinary NumPy code through nclx's hooks")
    with nclx.ledger.recording() as led:
        _small_program()
    print("with nclx.ledger.recording() as led:  # a small NumPy program, unchanged")
    print(led.table())
    x = np.random.default_rng(3).standard_normal(2_000_003) * 1e6
    stock = x.sum()
    with nclx.installed():
        t_nclx = median_time(lambda: x.sum(), repeat=9)
        threaded = x.sum()
    t_stock = median_time(lambda: x.sum(), repeat=9)
    print(f"\nx.sum() of 2e6 float64 on {nclx.get_num_threads()} thread(s): stock {t_stock * 1e3:.3f} ms, "
          f"installed {t_nclx * 1e3:.3f} ms; same bits: {threaded.tobytes() == stock.tobytes()} "
          f"(split on NumPy's pairwise points)")


def _small_program():
    """What the ledger watches: a few lines of everyday NumPy."""
    rng = np.random.default_rng(2)
    temps = rng.normal(15.0, 8.0, size=(365, 24))
    daily_max = temps.max(axis=1)
    hot = daily_max > 25.0
    mean = temps.mean()
    anomalies = np.abs(temps - mean)
    counts = np.arange(1_000_000) % 7
    return hot.sum(), anomalies.sum(), np.sqrt(anomalies).sum(), (counts == 3).sum()
