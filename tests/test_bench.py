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


def test_python_m_nclx_bench_imports_no_mpi_arrow_or_demo():
    """The lazy imports of nclx.__main__: the plain bench needs neither
    mpi4py nor pyarrow, nor the demo, dap or ipc packages."""
    code = ("import sys; from nclx.__main__ import main; "
            "main(['bench', '--quick', '--sizes', '1000', '--repeats', '1', '--budget', '0.001']); "
            "print(sorted(m for m in ('mpi4py', 'pyarrow', 'nclx.demo', 'nclx.dap', 'nclx.ipc') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines()[-1] == "[]"
