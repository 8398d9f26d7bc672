"""``python -m nclx bench`` runs and prints its table."""
import subprocess
import sys


def test_python_m_nclx_bench_quick_prints_a_row_per_case():
    proc = subprocess.run([sys.executable, "-m", "nclx", "bench", "--quick", "--sizes", "20000",
                           "--repeats", "3"], capture_output=True, text=True, cwd="/", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "float64" in line]
    assert [r.split("|")[1].strip() for r in rows] == ["add", "sum", "sqrt"]
    assert "split thresholds per op" in proc.stdout
