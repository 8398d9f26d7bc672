"""The build: kernels are vectorised, documented examples run."""
import doctest
import glob
import re
import os
import shutil
import subprocess

import pytest

import nclx
from nclx._ncl import ufuncs


def _disassembly(isa):
    mod = ufuncs.kernel_module(isa)
    objdump = shutil.which("objdump")
    assert objdump, "objdump (binutils, installed with gcc) is needed to inspect the kernels"
    return subprocess.run([objdump, "-d", "--no-show-raw-insn", mod.__file__],
                          capture_output=True, text=True, check=True).stdout


def test_baseline_kernels_use_packed_sse_instructions():
    asm = _disassembly("baseline")
    for insn in ("addpd", "mulps", "paddq", "sqrtpd"):
        assert f"\t{insn} " in asm or f" {insn} " in asm, f"no packed {insn}: loops not vectorised"


@pytest.mark.skipif("avx2" not in ufuncs.available_isas(), reason="CPU without AVX2")
def test_avx2_kernels_use_256_bit_registers():
    asm = _disassembly("avx2")
    ymm_lines = [line for line in asm.splitlines() if "%ymm" in line]
    assert len(ymm_lines) > 1000, "the AVX2 build is not vectorised with 256-bit registers"
    assert any("vpaddq" in line and "%ymm" in line for line in ymm_lines)
    assert any("vaddpd" in line and "%ymm" in line for line in ymm_lines)
    assert not any("vfmadd" in line for line in asm.splitlines()), "FMA would change float bits"


@pytest.mark.parametrize("module", ["nclx.ufuncs", "nclx.hooks", "nclx.ledger", "nclx.checked"])
def test_docstring_examples_run(module):
    import importlib
    mod = importlib.import_module(module)
    try:
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    finally:
        nclx.uninstall()
        nclx.hooks.reset()
    assert result.attempted > 0
    assert result.failed == 0


def test_python_m_nclx_demo_runs():
    """The demo runs every section; its nclx.dap section really runs on 4 MPI
    ranks under mpiexec (tools/test installs mpi4py and the mpich wheel)."""
    import re
    import sys
    proc = subprocess.run([sys.executable, "-m", "nclx", "demo"], capture_output=True, text=True,
                          cwd="/", timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for part in ("nclx.ufuncs are real NumPy ufuncs", "ledger", "OverflowError", "nclx.dap",
                 "5b. Unary math", "['cast', 'fma', 'multiply']"):
        assert part in proc.stdout
    # the elementwise section: every installed result has stock NumPy's bits
    rows = re.findall(r"^np\.\S+\(.*?(True|False)$", proc.stdout, flags=re.M)
    assert rows and set(rows) == {"True"}, proc.stdout[-3000:]
    assert "not found: pip install 'nclx[mpi]'" not in proc.stdout, "MPI part did not run"
    ranks = set(re.findall(r"^rank (\d+)/4: local block ", proc.stdout, flags=re.M))
    assert ranks == {"0", "1", "2", "3"}, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"^rank 0/4: b\.sum\(\) = 144\.0 ", proc.stdout, flags=re.M), proc.stdout[-3000:]
    # halo exchange restored every padding cell (rank 0 wraps to global 11: 2 * 11 + 1)
    assert "rank 0: b's block [-1.  1.  3.  5. -1.] -> exchange_halos() -> [23.  1.  3.  5.  7.]" \
        in proc.stdout, proc.stdout[-3000:]
    # section 6b: NumPy functions, a redistribution and MPI-IO on 4 ranks, checked on each rank
    assert "6b. plain NumPy code on a DistArray" in proc.stdout, proc.stdout[-3000:]
    assert re.search(r"^all 4 ranks agree with NumPy$", proc.stdout, flags=re.M), \
        proc.stdout[-3000:]
    assert "np.asarray(A) -> TypeError" in proc.stdout
    assert re.search(r"random 'u' partition \(in windows, one Alltoallw each\): equals NumPy: "
                     r"True; memory above the new block at most \d\.\d%", proc.stdout), \
        proc.stdout[-3000:]
    heat = re.search(r"^checksum (\S+)$", proc.stdout, flags=re.M)
    assert heat and "4 rank(s), 400 x 400, 50 steps" in proc.stdout, proc.stdout[-3000:]
    from nclx.examples.heat import serial
    assert abs(float(heat.group(1)) - serial(400, 50).sum()) < 1e-9
    assert "8. nclx.storage" in proc.stdout and "StorageError: halo=(1, -1)" in proc.stdout
    assert "9. nclx.types" in proc.stdout and "(same offsets: True)" in proc.stdout
    assert "the values buffer shared: True" in proc.stdout and "var_dim arrmeta" in proc.stdout
    assert "offsets[2] = 2 is less than offsets[1] = 3" in proc.stdout
    assert "10. nclx.ipc" in proc.stdout and "equal to the original: True" in proc.stdout
    assert "mapped read-only): True -> zero copy" in proc.stdout
    assert "after `del got`: 0 (free_data sent)" in proc.stdout


def test_entries_are_named_by_signature():
    """Each loop entry's C name says what it runs (``_entry_add_lll``), one
    name per (op, signature), so a profiler shows it."""
    import re
    from nclx._ncl import spec
    names = [spec.entry_symbol(op, chars) for op, chars in spec.all_char_signatures()]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"_entry_[a-z0-9_]+_[A-Za-z]+", n) for n in names), names[:5]
    assert spec.entry_symbol("add", "lll") == "_entry_add_lll"
    assert spec.entry_symbol("less", "ll?") == "_entry_less_llo"


def test_entry_names_reach_the_symbol_table():
    """The built module carries those names (perf, gdb, callgrind read them)."""
    from nclx._ncl import entries
    nm = shutil.which("nm")
    assert nm, "nm (binutils, installed with gcc) is needed to read the symbol table"
    out = subprocess.run([nm, entries.__file__], capture_output=True, text=True).stdout
    if "no symbols" in out or not out.strip():
        pytest.skip("the installed entries module is stripped: no symbol table to read")
    assert "_entry_add_lll" in out and "_entry_exp_dd" in out
    assert not re.search(r"__entry_[0-9]+\b", out)


def test_every_python_file_is_installed():
    """Found when a new module (nclx/dap/plancache.py) was left out of its
    meson.build: the staged tree had it, the installed package did not,
    and every nclx.dap import failed.  Each .py and .pyi file of the
    source tree is named in its directory's meson.build."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "nclx")
    missing = []
    for d, _, files in os.walk(root):
        if "__pycache__" in d:
            continue
        sources = [f for f in files if f.endswith((".py", ".pyi"))]
        if not sources:
            continue
        build = os.path.join(d, "meson.build")
        text = open(build).read() if os.path.exists(build) else ""
        missing += [os.path.relpath(os.path.join(d, f), root) for f in sources
                    if f"'{f}'" not in text and f'"{f}"' not in text]
    assert not missing, f"not installed by any meson.build: {missing}"
